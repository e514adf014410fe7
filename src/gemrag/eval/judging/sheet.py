"""Blind judging sheets: the acceptance test's replies judged outside gemrag (by hand or by any other judge).

The paper's judge is an LLM (Zeng, "HLGraphRAG", section 4, Figure 4.1). A small embedded judge can be noise
(``benchmarks/judge_agreement.py`` measures it), and people, a stronger model or another tool may judge better; a
sheet lets them do it without rerunning the replay:

1. ``gemrag eval cmu_dog PATH --out DIR --sheet sheet.jsonl`` writes one line per generated reply: an opaque
   ``item`` id, the ``movie``, what the replying speaker was reading (``content``), the other speaker's message
   (``dialogue1``), the generated reply (``candidate``), the real reply (``correct``) and ``"verdict": null``. The
   lines are in a random order and name neither the strategy nor the run, so the judge is blind to both;
   ``DIR/judging-sheet-key.json`` maps the ids back (its random ``salt`` is kept, so a rewritten sheet keeps its ids).
2. The judge fills each ``verdict`` with ``choke``, ``inaccurate`` or ``correct`` (or leaves it null: unjudged).
3. ``gemrag eval cmu_dog PATH --out DIR --verdicts sheet.jsonl`` reports the counts and Mann-Whitney tests with those
   verdicts in ``DIR/results-<file stem>.{md,json}``; the LLM judge's ``results.md`` stays as it was.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gemrag.errors import InputError
from gemrag.eval.judging.prompts import Verdict

__all__ = ["KEY_FILE", "apply_verdicts", "read_verdicts", "write_sheet"]

#: The file in the output directory that maps sheet ids to records.
KEY_FILE = "judging-sheet-key.json"

#: ``(conversation_id, turn) -> (movie, content, dialogue1)``: what the judge is shown besides the two replies.
TurnInputs = Callable[[str, int], tuple[str, str, str]]


def _record_key(rec: dict[str, Any]) -> list[Any]:
    return [rec["conversation_id"], int(rec["turn"]), rec["strategy"], int(rec["run"])]


def _item_id(salt: str, key: Sequence[Any]) -> str:
    return hashlib.sha256(json.dumps([salt, *key]).encode()).hexdigest()[:12]


def _salt(out_dir: Path) -> str:
    path = out_dir / KEY_FILE
    if path.is_file():
        try:
            return str(json.loads(path.read_text(encoding="utf-8"))["salt"])
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(f"{path} is not a judging-sheet key file: {exc}") from exc
    return secrets.token_hex(8)


def write_sheet(records: Sequence[dict[str, Any]], inputs: TurnInputs, sheet: Path, out_dir: Path) -> int:
    """Write the blind judging sheet of ``records`` to ``sheet`` and its key to ``out_dir /`` :data:`KEY_FILE`.

    Args:
        records: acceptance records (:func:`gemrag.eval.acceptance.runner.replay`); those without a generated reply
            (an error) are left out.
        inputs: the judge's inputs of a turn (:data:`TurnInputs`).
        sheet: the JSONL file to write (its folder is created).
        out_dir: the evaluation's output directory.

    Returns:
        The number of items written.
    """
    salt = _salt(out_dir)
    items: list[dict[str, Any]] = []
    keys: dict[str, list[Any]] = {}
    for rec in records:
        if not rec.get("generated"):
            continue
        key = _record_key(rec)
        item = _item_id(salt, key)
        movie, content, dialogue1 = inputs(rec["conversation_id"], int(rec["turn"]))
        keys[item] = key
        items.append(
            {
                "item": item,
                "movie": movie,
                "content": content,
                "dialogue1": dialogue1,
                "candidate": rec["generated"],
                "correct": rec["real"],
                "verdict": None,
            }
        )
    items.sort(key=lambda it: it["item"])  # ids are salted hashes: a random order, no strategy or run in it
    sheet.parent.mkdir(parents=True, exist_ok=True)
    sheet.write_text("".join(json.dumps(it, ensure_ascii=False) + "\n" for it in items), encoding="utf-8")
    key_text = json.dumps({"salt": salt, "items": keys}, indent=1)
    (out_dir / KEY_FILE).write_text(key_text, encoding="utf-8")
    return len(items)


def read_verdicts(path: Path, labels: Sequence[str] | None = None) -> dict[str, str | None]:
    """Read a filled sheet (or any JSONL of ``{"item": ..., "verdict": ...}``; other keys are ignored).

    Args:
        path: the filled sheet.
        labels: the verdicts allowed (compared in lower case), e.g. ``("correct", "incorrect")`` for the factual
            correctness sheets of ``benchmarks/factual_agreement.py``; None: the acceptance test's three classes.

    Returns:
        ``{item: verdict}``; verdicts are normalized as the LLM judge's (:class:`Verdict`: case, "Inaccuracy"), or
        lower-cased when ``labels`` are given; null stays None (unjudged).

    Raises:
        InputError: a missing or unreadable file, a line that is not a JSON object with a string ``item``, an item
            given twice, or a verdict other than choke / inaccurate / correct (or ``labels``) / null (with its line
            number).
    """
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the verdicts file {path}: {exc}") from exc
    out: dict[str, str | None] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise InputError(f"{path}:{number}: not JSON ({exc})") from exc
        if not isinstance(row, dict) or not isinstance(row.get("item"), str):
            raise InputError(f'{path}:{number}: expected an object with a string "item"')
        if row["item"] in out:
            raise InputError(f"{path}:{number}: item {row['item']} appears twice")
        value = row.get("verdict")
        if labels is not None and value is not None:
            word = str(value).strip().lower()
            if word not in labels:
                raise InputError(f"{path}:{number}: verdict {value!r} is not one of {', '.join(labels)}")
            out[row["item"]] = word
            continue
        try:
            out[row["item"]] = None if value is None else Verdict(verdict=value).verdict
        except ValidationError as exc:
            raise InputError(f"{path}:{number}: verdict {value!r} is not choke, inaccurate or correct") from exc
    return out


def apply_verdicts(
    records: Sequence[dict[str, Any]], verdicts: dict[str, str | None], out_dir: Path
) -> list[dict[str, Any]]:
    """Copies of ``records`` whose ``verdict`` comes from ``verdicts`` (ids mapped through the sheet's key).

    A record with a reply but no verdict in the file is unjudged (``judge_error`` says so); records with an error
    keep it.

    Raises:
        InputError: no key file in ``out_dir`` (write the sheet first), or a verdict for an item the key does not
            know (a sheet of another output directory).
    """
    path = out_dir / KEY_FILE
    if not path.is_file():
        raise InputError(f"{path} not found: write the sheet first (--sheet FILE) in this output directory")
    salt = _salt(out_dir)
    known = set(json.loads(path.read_text(encoding="utf-8")).get("items", {}))
    unknown = sorted(set(verdicts) - known)
    if unknown:
        raise InputError(f"{len(unknown)} verdict(s) for items this output directory's sheet lacks: {unknown[:3]}")
    out = []
    for rec in records:
        new = dict(rec)
        if not rec.get("error"):
            item = _item_id(salt, _record_key(rec))
            new["verdict"] = verdicts.get(item)
            new["judge_error"] = None if new["verdict"] else "no verdict in the verdicts file"
        out.append(new)
    return out
