"""The ``result-rows`` mark of :mod:`gemrag.eval.publish_docs`: a Markdown table of the rows of a benchmark's record.

A benchmark's record (``results/NAME.json`` with a ``kind``, written by ``benchmarks/results_record.py``) keeps its
figures as a list of JSON objects, one per measured case (``rows`` or ``results``). The mark

    <!-- result-rows: NAME COLUMN [COLUMN...] [where=FIELD:VALUE[,FIELD:VALUE...]] [group=FIELD[,FIELD...]]
         [list=KEY] [as=value] -->

renders that list as a table, one line per row (in the record's order), then a line naming the record with its
date, code and machine load. The words are split as a shell does, so a column with spaces is quoted.

* ``COLUMN`` is ``FIELD[:SPEC[:HEADER]]``. ``FIELD`` is a key of the rows, a dotted path into nested objects
  (``after_rebuild.hits``; a number picks an item of a list: ``precision_ci.0``), ``A/B`` (the ratio of two
  fields) or ``count`` (the rows a line stands for). ``SPEC`` is
  a Python format spec (``,`` gives ``232,804``, ``.2f`` gives ``0.04``, ``,.0f``; empty: the value as it is);
  ``HEADER`` the column's title (default: ``FIELD``, the record's own name). A row without the field shows ``–``
  (a field that no row of the record has is an error, as is a typo).
* ``where=`` keeps the rows whose fields equal the values (compared as text: ``where=backend:sqlite``; several
  conditions separated by commas must all hold; ``FIELD:A|B`` accepts either value; booleans are ``true`` and
  ``false``).
* ``group=`` makes one line per distinct value of these fields (in the order they first appear): a numeric field is
  summed over the group's rows (``true`` counts 1), a text field shows its distinct values joined by ``, `` (a group
  of one row shows its values as they are).
* ``list=`` names the list (default: ``rows``, else ``results``).
* ``as=value`` renders the one cell of a mark with one column whose rows make one line, inline, without table or
  caption (a figure quoted in a sentence: ``about <!-- result-rows: erase-cost marks_bytes_per_entry:,
  where=entries:1000000 as=value -->993<!-- /result --> bytes``).

The table is generic over what the record holds: a later run with more strategies or scenarios adds lines, never
needs a new mark.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gemrag.errors import InputError

__all__ = ["OPTIONS", "load_record", "rows_table"]

OPTIONS = ("where", "group", "list", "as")
"""The option words of a ``result-rows`` mark (``OPTION=VALUE``); every other word is a column."""
_MISSING = object()


def load_record(name: str, root: Path) -> dict[str, Any]:
    """The benchmark record ``root/NAME.json`` as a JSON object.

    Raises:
        InputError: a bad name, a missing or unreadable file, or not a JSON object (the message names the file).
    """
    if not name or name.startswith(".") or not all(c.isascii() and (c.isalnum() or c in "-_.") for c in name):
        raise InputError(f"record name {name!r}: a file of results/ (letters, digits, '-', '_' and '.')")
    path = root / f"{name}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise InputError(f"{path}: no record named {name!r}") from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: not a readable JSON record ({exc})") from exc
    if not isinstance(data, dict):
        raise InputError(f"{path}: not a record (a JSON object)")
    return data


def _get(row: Any, path: str) -> Any:
    """The value at the dotted ``path`` of ``row`` (a numeric part indexes a list), or :data:`_MISSING`."""
    for part in path.split("."):
        if isinstance(row, list) and part.isdigit() and int(part) < len(row):
            row = row[int(part)]  # an item of a list: ``precision_ci.0``
        elif not isinstance(row, dict) or part not in row:
            return _MISSING
        else:
            row = row[part]
    return row


def _combine(values: list[Any]) -> Any:
    """One group's values of a field (module docstring): numbers (and booleans) summed, texts' distinct values; the
    value itself for a group of one row."""
    if len(values) == 1:
        return values[0]
    present = [v for v in values if v is not _MISSING and v is not None]
    if not present:
        return _MISSING if all(v is _MISSING for v in values) else None
    if all(isinstance(v, (int, float)) for v in present):
        return sum(present)
    return ", ".join(dict.fromkeys(str(v) for v in present))


def _text(value: Any, spec: str) -> str:
    if value is _MISSING or value is None:
        return "–"
    if isinstance(value, bool) and not spec:
        return "yes" if value else "no"
    try:
        return format(value, spec)
    except (TypeError, ValueError) as exc:
        raise InputError(f"format {spec!r} does not apply to {value!r}") from exc


def _column(word: str, rows: Sequence[dict[str, Any]]) -> tuple[str, Callable[[list[dict[str, Any]]], str]]:
    """``(header, cell)`` of one column word: ``cell`` renders the rows a line stands for."""
    field, spec, header = (word.split(":", 2) + ["", ""])[:3]
    if field == "count":
        return header or field, lambda group: _text(len(group), spec)
    parts = field.split("/")
    if len(parts) > 2 or not all(parts):
        raise InputError(f"column {word!r}: give FIELD[:SPEC[:HEADER]], FIELD a key, a dotted path or A/B")
    for part in parts:
        if all(_get(r, part) is _MISSING for r in rows):
            raise InputError(f"column {word!r}: no row has {part!r}")

    def cell(group: list[dict[str, Any]]) -> str:
        values = [_combine([_get(r, p) for r in group]) for p in parts]
        if len(values) == 2:
            a, b = values
            ok = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
            values = [a / b if ok and b else _MISSING]
        return _text(values[0], spec)

    return header or field, cell


def _plain(value: Any) -> str:
    """A value as ``where=`` compares it: as JSON writes a boolean or ``null``, any other value as text."""
    return json.dumps(value) if value is None or isinstance(value, bool) else str(value)


def _where(spec: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for condition in spec.split(","):
        field, sep, wanted = condition.partition(":")
        if not sep or not field:
            raise InputError(f"where={spec}: give FIELD:VALUE[,FIELD:VALUE...]")
        if all(_get(r, field) is _MISSING for r in rows):
            raise InputError(f"where={spec}: no row has {field!r}")
        accepted = set(wanted.split("|"))
        rows = [r for r in rows if _plain(_get(r, field)) in accepted]
    return rows


def _groups(spec: str | None, rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    if spec is None:
        return [[r] for r in rows]
    fields = [f for f in spec.split(",") if f]
    for field in fields:
        if all(_get(r, field) is _MISSING for r in rows):
            raise InputError(f"group={spec}: no row has {field!r}")
    out: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault(tuple(str(_get(r, f)) for f in fields), []).append(r)
    return list(out.values())


def _caption(record: dict[str, Any], name: str) -> str:
    """The line naming the record: its date, code and the machine's load."""
    parts = []
    if isinstance(record.get("date"), str):
        parts.append(record["date"][:10])
    commit = _get(record, "code.commit")
    if isinstance(commit, str):
        parts.append(f"code {commit[:7]}" + (" with uncommitted changes" if commit.endswith("-dirty") else ""))
    cpus, load = _get(record, "machine.cpus"), _get(record, "machine.load")
    if isinstance(cpus, int):
        parts.append(f"{cpus} CPUs")
    if isinstance(load, list) and load:
        parts.append(f"load average {' to '.join(f'{x:.1f}' for x in load)}")
    return f"From the record `results/{name}.json`" + (f" ({', '.join(parts)})." if parts else ".")


def rows_table(spec: str, load: Callable[[str], dict[str, Any]]) -> str:
    """The generated text of ``<!-- result-rows: SPEC -->`` (module docstring), the record read by ``load(name)``: a
    table with its caption, or with ``as=value`` one cell.

    Raises:
        InputError: a bad spec, a field no row has, a format that does not apply, or no such list in the record.
    """
    words = shlex.split(spec)
    options = dict(w.split("=", 1) for w in words if w.split("=", 1)[0] in OPTIONS and "=" in w)
    columns = [w for w in words if not (w.split("=", 1)[0] in OPTIONS and "=" in w)]
    if len(columns) < 2:
        raise InputError(f"<!-- result-rows: {spec} -->: give NAME COLUMN [COLUMN...] [where=..] [group=..] [list=..]")
    name = columns.pop(0)
    record = load(name)
    key = options.get("list") or next((k for k in ("rows", "results") if k in record), "rows")
    rows = record.get(key)
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise InputError(f"results/{name}.json: no list of rows {key!r} (give list=KEY)")
    try:
        chosen = _where(options["where"], rows) if "where" in options else rows
        made = [_column(c, rows) for c in columns]
        groups = _groups(options.get("group"), chosen)
        if options.get("as", "table") not in ("table", "value"):
            raise InputError(f"as={options['as']}: use as=value (one cell, inline) or leave it out (a table)")
        if options.get("as") == "value":
            if len(made) != 1 or len(groups) != 1:
                raise InputError(f"as=value needs one column and one line, not {len(made)} and {len(groups)}")
            return made[0][1](groups[0])
        lines = ["| " + " | ".join(h for h, _ in made) + " |", "|" + "---|" * len(made)]
        lines += ["| " + " | ".join(cell(g) for _, cell in made) + " |" for g in groups]
    except InputError as exc:
        raise InputError(f"<!-- result-rows: {spec} -->: {exc}") from exc
    lines += ["", _caption(record, name)]
    return "\n\n" + "\n".join(lines) + "\n\n"  # blank lines: the comments stay out of the table's block
