"""Generate the documentation's measured figures from the published results (``results/*.json``).

A document marks each figure it takes from a published run, and this module rewrites the text between the marks
from the record, so a figure is changed by changing its record (and regenerating), never by hand::

    fused finds <!-- result: locomo-evidence fused evidence_recall ci -->67.7 (63.8–71.6)<!-- /result --> of it

    <!-- result-table: locomo-evidence evidence_recall by=category -->
    | RAG | 1 (n 74) | ... |
    <!-- /result -->

An inline mark is ``<!-- result: NAME STRATEGY METRIC [FORMAT] [vs=OTHER] [category=C] -->`` (words split as a
shell does, so a variant's name with spaces is quoted): NAME is a record in ``results/``, METRIC one of
:data:`gemrag.eval.published.SCORED_METRICS`; FORMAT is ``mean`` (default, ``67.7``), ``ci`` (``67.7 (63.8–71.6)``),
``interval`` (``63.8–71.6``), ``n`` (questions) or, with ``vs=OTHER`` (the paired test of STRATEGY minus OTHER),
``mean`` (``+9.3``), ``ci`` (``+9.3 (+6.0 to +12.8, p < 0.001)``), ``interval``, ``p`` (``p < 0.001``), ``short``
(``+9.3, p < 0.001``) or ``n``. Scores are in % with one decimal.

METRIC may also be a cost, ``costs.FIELD`` (FIELD a key of :data:`gemrag.eval.published_costs.COST_FORMATS`:
``llm_calls``, ``prompt_tokens``, ``completion_tokens``, ``answer_seconds``, ``retrieval_seconds_p50`` ...): the
strategy's figure from the record's costs block, FORMAT ``mean`` (its default format: ``422`` tokens, ``16.0`` s),
``n`` (the records it is over) or a Python format spec (``.1f``); with ``vs=OTHER``, FORMAT ``change`` gives the
relative change from OTHER's (``−11 %``).

A paired mark is ``<!-- result-pair: NAME METRIC [FORMAT] -->``: NAME a paired comparison of two published runs in
``results/paired/`` (:mod:`gemrag.eval.paired`); FORMAT is ``before`` or ``after`` (either run's mean, ``55.1``) or
one of the ``vs=`` formats above for the difference after minus before (default ``ci``). With METRIC
``costs.FIELD`` it shows the pairing's costs: FORMAT ``before`` or ``after`` (``after:.1f`` with a format spec),
``n`` or ``change`` (after against before, relative, ``+13 %``; the default). FORMAT ``higher`` or ``lower`` counts
the paired questions the metric scored higher (lower) after than before, and ``<!-- result-pair: NAME answers
changed -->`` the questions whose answer changed, case aside (:attr:`gemrag.eval.paired.PairedRuns.answers_changed`).

A table mark is ``<!-- result-table: NAME METRIC[,METRIC...] [by=category] [strategies=A,B] [format=ci|mean] -->``:
one row per strategy, one column per metric (or, ``by=category``, per question category and ``all`` for the first
metric), then a line naming the record.

A rows mark is ``<!-- result-rows: NAME COLUMN [COLUMN...] [where=..] [group=..] [list=..] -->``: the rows of a
benchmark's record (``results/NAME.json`` with a ``kind``: ``forgetting``, ``erase-cost``) as a table, a column per
field with its format (:mod:`gemrag.eval.publish_rows`).

    python -m gemrag.eval.publish_docs            # rewrite README.md and docs/**/*.md in place
    python -m gemrag.eval.publish_docs --check    # exit 1, naming each figure that differs from its record

The marks are generic: any page may use them, whatever the run (retrieval, answers, a benchmark that writes a
:class:`~gemrag.eval.published.PublishedRun` or a record of its own rows).
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gemrag.errors import InputError
from gemrag.eval.paired import PairedRuns, load_paired
from gemrag.eval.publish_rows import load_record, rows_table
from gemrag.eval.published import Comparison, Interval, PublishedRun, load_published
from gemrag.eval.published_costs import COST_FORMATS, cost_value

__all__ = ["MARK", "differences", "documents", "main", "render", "render_file"]

#: A marked block: its kind (``result``, ``result-table``, ``result-pair``, ``result-rows``), its spec and the
#: generated text between the marks.
MARK = re.compile(
    r"<!-- (?P<kind>result|result-table|result-pair|result-rows): (?P<spec>[^>]*?) -->(?P<body>.*?)<!-- /result -->",
    re.S,
)
#: Column headers of the metrics in a generated table.
HEADERS = {
    "accuracy": "accuracy", "f1": "F1", "em": "EM", "recall@2": "R@2", "recall@5": "R@5",
    "evidence_recall": "evidence recall", "judged": "judged",
}  # fmt: skip


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def _signed(x: float) -> str:
    value = f"{100 * x:+.1f}".replace("-", "−")
    return "+0.0" if value in ("−0.0", "+0.0") else value


def _p(p: float) -> str:
    if p < 0.001:
        return "p < 0.001"
    return f"p {p:.3f}" if p < 0.1 else f"p {p:.2f}"


def _metric_text(value: Interval, fmt: str) -> str:
    formats = {
        "mean": lambda: _pct(value.mean),
        "ci": lambda: f"{_pct(value.mean)} ({_pct(value.low)}–{_pct(value.high)})",
        "interval": lambda: f"{_pct(value.low)}–{_pct(value.high)}",
        "n": lambda: str(value.n),
    }
    if fmt not in formats:
        raise InputError(f"format {fmt!r}: use one of {', '.join(formats)}")
    return formats[fmt]()


def _cost_text(field: str, value: float, n: int, fmt: str) -> str:
    """One cost figure (:data:`gemrag.eval.published_costs.COST_FORMATS`): its default format (``mean``), the
    records behind it (``n``) or a Python format spec (``.1f``)."""
    if fmt == "n":
        return str(n)
    spec = COST_FORMATS[field][0] if fmt == "mean" else fmt
    try:
        return format(value, spec)
    except ValueError as exc:
        raise InputError(f"format {fmt!r} of {field}: use mean, n or a format spec such as .1f") from exc


def _change(after: float, before: float) -> str:
    """The relative change from ``before`` to ``after`` in whole per cent (``−11 %``, ``+13 %``)."""
    if before == 0:
        raise InputError("a change from 0 has no relative size")
    value = f"{100 * (after - before) / before:+.0f}".replace("-", "−")
    return f"{'+0' if value in ('−0', '+0') else value} %"


def _costs(run: PublishedRun, strategy: str, metric: str, fmt: str, keys: dict[str, str]) -> str:
    """A ``result`` mark of a cost, ``costs.FIELD``: its value, or with ``vs=OTHER`` and FORMAT ``change`` the
    relative change from OTHER's."""
    field = metric.removeprefix("costs.")
    if "category" in keys:
        raise InputError(f"{metric}: costs are per strategy, not per category")
    if strategy not in run.strategies:
        raise KeyError(f"{run.name}: no strategy {strategy!r} (has {', '.join(run.strategies)})")
    value, n = cost_value(run.strategies[strategy].costs, field, f"{run.name}: {strategy}")
    if "vs" not in keys:
        return _cost_text(field, value, n, fmt)
    if keys["vs"] not in run.strategies or fmt != "change":
        raise InputError(f"{metric} vs={keys['vs']}: FORMAT change, OTHER a strategy of {run.name}")
    other, _ = cost_value(run.strategies[keys["vs"]].costs, field, f"{run.name}: {keys['vs']}")
    return _change(value, other)


def _diff_text(c: Comparison, fmt: str) -> str:
    interval = f"{_signed(c.low)} to {_signed(c.high)}"
    formats = {
        "mean": lambda: _signed(c.diff),
        "ci": lambda: f"{_signed(c.diff)} ({interval}, {_p(c.p)})",
        "interval": lambda: interval,
        "p": lambda: _p(c.p),
        "short": lambda: f"{_signed(c.diff)}, {_p(c.p)}",
        "n": lambda: str(c.n),
    }
    if fmt not in formats:
        raise InputError(f"format {fmt!r} with vs=: use one of {', '.join(formats)}")
    return formats[fmt]()


class _Records:
    """The published runs read so far (each file once)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.runs: dict[str, PublishedRun] = {}
        self.pairs: dict[str, PairedRuns] = {}
        self.records: dict[str, dict[str, Any]] = {}

    def __call__(self, name: str) -> PublishedRun:
        if name not in self.runs:
            self.runs[name] = load_published(name, self.root)
        return self.runs[name]

    def paired(self, name: str) -> PairedRuns:
        """The paired comparison ``results/paired/NAME.json``."""
        if name not in self.pairs:
            self.pairs[name] = load_paired(name, self.root)
        return self.pairs[name]

    def record(self, name: str) -> dict[str, Any]:
        """A benchmark's record ``results/NAME.json`` as JSON (:func:`gemrag.eval.publish_rows.load_record`)."""
        if name not in self.records:
            self.records[name] = load_record(name, self.root)
        return self.records[name]


def _split(spec: str) -> tuple[list[str], dict[str, str]]:
    words = shlex.split(spec)
    return [w for w in words if "=" not in w], dict(w.split("=", 1) for w in words if "=" in w)


def _inline(spec: str, records: _Records) -> str:
    words, keys = _split(spec)
    if len(words) not in (3, 4):
        raise InputError(f"<!-- result: {spec} -->: give NAME STRATEGY METRIC [FORMAT] [vs=OTHER] [category=C]")
    run, strategy, metric = records(words[0]), words[1], words[2]
    fmt = words[3] if len(words) == 4 else "mean"
    try:
        if metric.startswith("costs."):
            return _costs(run, strategy, metric, fmt, keys)
        if "vs" in keys:
            return _diff_text(run.comparison(strategy, keys["vs"], metric), fmt)
        return _metric_text(run.metric(strategy, metric, keys.get("category")), fmt)
    except KeyError as exc:
        raise InputError(str(exc.args[0])) from exc


def _pair(spec: str, records: _Records) -> str:
    words, _ = _split(spec)
    if len(words) not in (2, 3):
        raise InputError(f"<!-- result-pair: {spec} -->: give NAME METRIC [FORMAT]")
    fmt = words[2] if len(words) == 3 else "ci"
    if words[1].startswith("costs."):
        return _pair_costs(records.paired(words[0]), words[1].removeprefix("costs."), fmt)
    if words[1] == "answers":
        return _counted(records.paired(words[0]).answers_changed, spec, fmt == "changed")
    try:
        figures = records.paired(words[0]).metric(words[1])
    except KeyError as exc:
        raise InputError(str(exc.args[0])) from exc
    if fmt in ("before", "after"):
        return _pct(figures.before if fmt == "before" else figures.after)
    if fmt in ("higher", "lower"):
        return _counted(figures.higher if fmt == "higher" else figures.lower, spec, True)
    return _diff_text(figures.comparison, fmt)


def _counted(count: int | None, spec: str, known: bool) -> str:
    """A paired count as text (``14``).

    Raises:
        InputError: ``known`` is False (a format the count does not have), or the pairing was written before such
            counts were kept (re-pair it: ``benchmarks/paired_runs.py --published ... --write NAME``).
    """
    if not known:
        raise InputError(f"<!-- result-pair: {spec} -->: the answers' figure is 'changed'")
    if count is None:
        raise InputError(f"<!-- result-pair: {spec} -->: the pairing has no such count; pair it again to count it")
    return str(count)


def _pair_costs(paired: PairedRuns, field: str, fmt: str) -> str:
    """A ``result-pair`` mark of a cost: FORMAT ``before`` or ``after`` (``after:.1f``: with a format spec), ``n``
    (the after side's records) or ``change`` (after against before, relative; the default)."""
    try:
        (before, _), (after, n) = (cost_value(paired.costs.get(s), field, f"paired {paired.name}: {s}") for s in
                                   ("before", "after"))  # fmt: skip
    except KeyError as exc:
        raise InputError(str(exc.args[0])) from exc
    side, _, spec = (fmt if fmt != "ci" else "change").partition(":")
    if side in ("before", "after"):
        return _cost_text(field, before if side == "before" else after, n, spec or "mean")
    if side == "n" and not spec:
        return str(n)
    if side == "change" and not spec:
        return _change(after, before)
    raise InputError(f"format {fmt!r} of costs.{field}: use before, after (before:.1f), n or change")


def _table(spec: str, records: _Records) -> str:
    words, keys = _split(spec)
    if len(words) != 2:
        raise InputError(f"<!-- result-table: {spec} -->: give NAME METRIC[,METRIC...] [by=category] [strategies=..]")
    run, metrics = records(words[0]), [m for m in words[1].split(",") if m]
    names = [s for s in keys["strategies"].split(",") if s] if "strategies" in keys else list(run.strategies)
    fmt = keys.get("format", "ci")
    try:
        if keys.get("by") == "category":
            metric = metrics[0]
            first = run.strategies[names[0]]
            cats = [c for c in first.categories if metric in first.categories[c]]
            headers = [f"{c} (n {first.categories[c][metric].n})" for c in cats]
            headers.append(f"all (n {run.metric(names[0], metric).n})")
            rows = [
                [_metric_text(run.metric(s, metric, c), fmt) for c in cats] + [_metric_text(run.metric(s, metric), fmt)]
                for s in names
            ]
        elif keys.get("by") is None:
            headers = [HEADERS.get(m, m) for m in metrics]
            rows = [[_metric_text(run.metric(s, m), fmt) for m in metrics] for s in names]
        else:
            raise InputError(f"<!-- result-table: {spec} -->: by={keys['by']!r}: only by=category")
    except KeyError as exc:
        raise InputError(str(exc.args[0])) from exc
    lines = ["| RAG | " + " | ".join(headers) + " |", "|---|" + "---|" * len(headers)]
    lines += [f"| {name} | " + " | ".join(row) + " |" for name, row in zip(names, rows, strict=True)]
    lines += ["", f"Scores in %, 95 % intervals; from the published record `results/{run.name}.json`."]
    return "\n\n" + "\n".join(lines) + "\n\n"  # blank lines: the comments stay out of the table's block


def _rows(spec: str, records: _Records) -> str:
    return rows_table(spec, records.record)


def render(text: str, root: Path, source: str = "<text>") -> str:
    """``text`` with every marked block regenerated from the records in ``root``.

    Raises:
        InputError: a mark names a missing record, strategy, metric or category, or has a bad spec (the message
            names ``source`` and the line).
    """
    records = _Records(root)

    def one(match: re.Match[str]) -> str:
        try:
            kinds = {"result": _inline, "result-table": _table, "result-pair": _pair, "result-rows": _rows}
            body = kinds[match["kind"]](match["spec"], records)
        except InputError as exc:
            line = text.count("\n", 0, match.start()) + 1
            raise InputError(f"{source}:{line}: {exc}") from exc
        return f"<!-- {match['kind']}: {match['spec']} -->{body}<!-- /result -->"

    return MARK.sub(one, text)


def differences(text: str, root: Path, source: str = "<text>") -> list[str]:
    """One line per marked figure of ``text`` that differs from its record: ``SOURCE:LINE: SPEC: the document says
    '...', the record gives '...'`` (``[]`` when every figure is generated).

    Raises:
        InputError: as :func:`render`.
    """
    out = []
    for match in MARK.finditer(text):
        new = MARK.fullmatch(render(match.group(0), root, source))
        if new is not None and new["body"] != match["body"]:
            line = text.count("\n", 0, match.start()) + 1
            said, gives = (" ".join(b.split())[:80] for b in (match["body"], new["body"]))
            out.append(f"{source}:{line}: {match['spec']}: the document says {said!r}, the record gives {gives!r}")
    return out


def render_file(path: Path, root: Path) -> tuple[str, str]:
    """``(current text, regenerated text)`` of one document."""
    text = path.read_text(encoding="utf-8")
    return text, render(text, root, str(path))


def documents(repo: Path) -> list[Path]:
    """The documents that may hold marks: ``README.md`` and every ``docs/**/*.md`` of ``repo``."""
    return [p for p in [repo / "README.md", *sorted((repo / "docs").rglob("*.md"))] if p.is_file()]


def main(argv: Sequence[str] | None = None) -> int:
    """Rewrite (or with ``--check`` verify) the marked figures of the repository's documents.

    Returns:
        0 when everything is (now) generated, 1 with ``--check`` when a figure differs from its record, 2 on a bad
        mark (one ``error:`` line).
    """
    parser = argparse.ArgumentParser(description="Generate the documentation's figures from results/*.json.")
    parser.add_argument("--repo", type=Path, default=Path("."), help="the repository (default: .)")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a figure differs")
    args = parser.parse_args(argv)
    root = args.repo / "results"
    stale = []
    try:
        for path in documents(args.repo):
            text, new = render_file(path, root)
            if text == new:
                continue
            stale += differences(text, root, str(path)) if args.check else [f"{path}: regenerated from its records"]
            if not args.check:
                path.write_text(new, encoding="utf-8")
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for line in stale:
        print(line)
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
