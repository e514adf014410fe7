"""Set ``gemrag eval locomo`` answers beside A-Mem's LoCoMo table, re-scored the way A-Mem scores, without a model.

    python benchmarks/amem_compare.py RUN_DIR [RUN_DIR ...] --data locomo.json [--out compare.md]
    python benchmarks/amem_compare.py --published A1+A2 --published B [--data locomo.json] [--write NAME]

Xu et al., "A-MEM: Agentic Memory for LLM Agents" (arXiv 2502.12110, NeurIPS 2025), Table 1, reports F1 per LoCoMo
category. This script reads each ``RUN_DIR/records.jsonl`` (one record per question and strategy, from ``gemrag eval
locomo``) and the dataset file the runs answered, and prints two Markdown tables:

1. F1 under A-Mem's scorer (:mod:`gemrag.eval.amem_scoring`: token-set F1, no stemming, category 5 against the trap
   answer): first A-Mem's published Qwen2.5-1.5B rows (A-Mem, LoCoMo's full-context baseline, MemGPT), then one row
   per strategy of the records, each cell the mean with its 95 % percentile-bootstrap interval and the number of
   questions, plus the count of questions without an answer;
2. the same questions under LoCoMo's official scorer (the records' own ``f1``, :mod:`gemrag.eval.locomo_scoring`),
   and evidence recall by turn (the records' ``evidence_recall``: the share of gold turns the context covered; no
   judge needed), per category.

A question without an answer (the record has ``error`` set) counts as F1 0 under both scorers and in the "no answer"
column; evidence recall averages the records that carry one (an errored question carries none). A record of a
retrieval-only run (``gemrag eval --no-answer``: no ``answer``, no ``error``) gives evidence recall only: it is
neither scored nor counted as unanswered, and a row without any answered question is left out of the F1 lines.
With ``--runs N`` records, each run r > 0 is a row of its own; with several RUN_DIRs rows are prefixed by the
directory as given. Nothing is written but ``--out``; re-running is cheap.

``--published NAME`` reads a published result's per-question records (``results/NAME.json`` and its records file;
no run directory needed) instead, several runs of disjoint questions pooled as ``A1+A2``; the question's category and
gold answer come from the records (A-Mem's reference for categories 1 to 4), so ``--data`` is needed only for
category 5 (its trap answer is not in the records). ``--write NAME`` keeps the figures as a record,
``results/NAME.json`` (kind ``amem-compare``: one row per records, strategy and category with n, A-Mem's F1 and
LoCoMo's F1 in % with their 95 % intervals), whose figures the documentation's ``result-rows`` marks show.

How A-Mem's columns map to LoCoMo's category numbers (column i = category i): A-Mem's ``aggregate_metrics`` groups
scores by the raw ``category`` integer of each question and emits them as ``category_1`` .. ``category_5`` in
numeric order, with no renaming; its README names them "1 Multi-hop, 2 Temporal, 3 Open-domain, 4 Single-hop,
5 Adversarial", Table 1's column order; LoCoMo's own ``task_eval/evaluation.py`` agrees (category 1 is scored as
comma-separated multi-hop answers, category 3 against the gold's first ``;`` part, category 5 by the adversarial
decline rule), as does :data:`gemrag.eval.categories.LOCOMO_CATEGORIES`.

What still differs from A-Mem's protocol, so the published rows are context, not a matched baseline:

* data: A-Mem answers all 10 conversations (1,986 questions); the usual gemrag set holds 3 of them (conv-26, conv-30,
  conv-41; 497 questions, conv-30 has no category 3), so only those conversations' questions are shared;
* sampling: A-Mem samples its answers (temperature 0.7, 0.5 for category 5; no seed: single stochastic runs);
  ``gemrag eval`` answers greedily unless ``--runs N``;
* retrieval and prompt: A-Mem retrieves its top-k notes (k tuned per model, not published) and their linked
  neighbours for LLM-generated keywords, and asks for a JSON ``{"answer": ...}`` with its own prompt per category;
  gemrag retrieves for the question with the run's budget and one short-answer prompt (with the decline sentence);
* category 5: A-Mem offers the two options ("Not mentioned in the conversation" and the trap answer) in a random
  order without letters; gemrag offers the same two as LoCoMo does, ``(a)``/``(b)`` in an order fixed per question,
  and the record's ``answer`` is the chosen option's text. A-Mem's category-5 reference is the trap, so its
  category-5 F1 rewards choosing the wrong option: that column is shown, never read as "better".
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gemrag.errors import InputError
from gemrag.eval.amem_scoring import amem_f1, amem_reference
from gemrag.eval.datasets import Question
from gemrag.eval.loading import load_dataset
from gemrag.eval.run_files import read_jsonl
from gemrag.eval.stats import bootstrap_ci

__all__ = ["CATEGORIES", "PUBLISHED", "Scores", "collect", "markdown", "rescore"]

#: A-Mem's Table 1 columns: LoCoMo category number and A-Mem's name for it.
CATEGORIES = (("1", "multi-hop"), ("2", "temporal"), ("3", "open domain"), ("4", "single hop"), ("5", "adversarial"))
#: A-Mem's Table 1, Qwen2.5-1.5B: F1 in % per column of :data:`CATEGORIES`, as published (10 conversations).
PUBLISHED = (
    ("A-Mem (published, Qwen2.5-1.5B)", (18.23, 24.32, 16.48, 23.63, 46.00)),
    ("LoCoMo full context (published, Qwen2.5-1.5B)", (9.05, 4.25, 9.91, 11.15, 40.38)),
    ("MemGPT (published, Qwen2.5-1.5B)", (10.44, 4.21, 13.42, 9.56, 31.51)),
)


@dataclass
class Scores:
    """One row's per-question scores (each in [0, 1]) by LoCoMo category (``"1"``..``"5"``).

    Attributes:
        amem: F1 under A-Mem's scorer.
        locomo: F1 under LoCoMo's official scorer (the record's ``f1``).
        evidence: evidence recall of the records that carry one.
        unanswered: questions without an answer (scored 0).
    """

    amem: dict[str, list[float]] = field(default_factory=dict)
    locomo: dict[str, list[float]] = field(default_factory=dict)
    evidence: dict[str, list[float]] = field(default_factory=dict)
    unanswered: int = 0


def _answered(record: dict[str, Any]) -> bool:
    return not record.get("error") and record.get("answer") is not None


def _retrieval_only(record: dict[str, Any]) -> bool:
    """A ``--no-answer`` record: nothing was asked of the LLM, so there is no F1 to score (not a failure)."""
    return not record.get("error") and record.get("answer") is None


def rescore(records: Sequence[dict[str, Any]], questions: dict[str, Question], prefix: str = "") -> dict[str, Scores]:
    """Re-score one run directory's records, one row per strategy (and per repeat ``run`` > 0).

    Args:
        records: ``records.jsonl`` entries (``question_id``, ``strategy``, ``answer``, ``error``, ``f1``,
            ``evidence_recall``, optional ``run``).
        questions: the dataset's questions by id (their category and reference come from here).
        prefix: put before every row name (``"dir: "``).

    Returns:
        ``{row name: Scores}`` in order of first appearance; questions outside categories 1-5 are left out.

    Raises:
        ValueError: a record's question is not in the dataset (another dataset file than the run's).
    """
    rows: dict[str, Scores] = {}
    for rec in records:
        q = questions.get(str(rec["question_id"]))
        if q is None:
            raise ValueError(f"question {rec['question_id']!r} is not in the dataset: pass the file the run answered")
        cat = str(q.category)
        if cat not in dict(CATEGORIES):
            continue
        run = int(rec.get("run", 0))
        row = rows.setdefault(f"{prefix}{rec['strategy']}" + (f" (run {run})" if run else ""), Scores())
        if rec.get("evidence_recall") is not None:
            row.evidence.setdefault(cat, []).append(float(rec["evidence_recall"]))
        if _retrieval_only(rec):
            continue
        answered = _answered(rec)
        row.unanswered += not answered
        row.amem.setdefault(cat, []).append(amem_f1(str(rec["answer"]), amem_reference(q)) if answered else 0.0)
        row.locomo.setdefault(cat, []).append(float(rec.get("f1") or 0.0) if answered else 0.0)
    return rows


def collect(run_dirs: Sequence[Path], data: Path) -> dict[str, Scores]:
    """The rows of every run directory, re-scored against the LoCoMo file ``data``.

    Raises:
        FileNotFoundError: a directory without ``records.jsonl``.
        ValueError: a record's question is not in ``data``.
        InputError: ``data`` is not a readable LoCoMo file.
    """
    questions = {q.id: q for q in load_dataset("locomo", data).questions}
    rows: dict[str, Scores] = {}
    for run_dir in run_dirs:
        path = run_dir / "records.jsonl"
        if not path.is_file():
            raise FileNotFoundError(f"{run_dir}: no records.jsonl (not a gemrag eval output directory)")
        rows.update(rescore(read_jsonl(path), questions, f"{run_dir}: " if len(run_dirs) > 1 else ""))
    return rows


def published_records(spec: str, root: Path) -> list[dict[str, Any]]:
    """The records of the published runs ``spec`` (``NAME`` or ``A1+A2``, pooled) in the shape :func:`rescore` reads
    (a run directory's ``records.jsonl``: the scores ``f1`` and ``evidence_recall`` at the top).

    Raises:
        InputError: a missing or unreadable record, or a question of one strategy in two of the runs pooled.
    """
    from gemrag.eval.published import load_published, load_records

    out: list[dict[str, Any]] = []
    owner: dict[tuple[str, str, int], str] = {}
    names = spec.split("+")
    if not all(names) or len(set(names)) < len(names):
        raise InputError(f"--published {spec}: give published records' names, several (each once) joined by '+'")
    for name in names:
        for rec in load_records(load_published(name, root), root):
            key = (str(rec["strategy"]), str(rec["question_id"]), int(rec.get("run") or 0))
            if owner.setdefault(key, name) != name:
                raise InputError(f"question {key[1]!r} is in {owner[key]} and {name}: pool runs of disjoint questions")
            scores = rec.get("scores") or {}
            out.append({**rec, **{k: scores[k] for k in ("f1", "evidence_recall") if k in scores}})
    return out


def record_questions(records: Sequence[dict[str, Any]]) -> dict[str, Question]:
    """The questions of published records, from their category and gold answers (A-Mem's reference of categories 1
    to 4 is the question's answer, :func:`gemrag.eval.amem_scoring.amem_reference`).

    Raises:
        ValueError: a category-5 question (A-Mem scores it against the trap answer, which the records do not keep:
            pass ``--data``).
    """
    out = {}
    for rec in records:
        if str(rec.get("category")) == "5":
            raise ValueError(f"question {rec['question_id']!r} is adversarial: its trap answer needs --data")
        qid = str(rec["question_id"])
        gold = [str(a) for a in rec.get("gold_answers") or []]
        out[qid] = Question(
            id=qid, doc_ids=["-"], question="", answer=gold[0] if gold else None, answers=gold,
            category=None if rec.get("category") is None else str(rec["category"]),
        )  # fmt: skip
    return out


def collect_published(specs: Sequence[str], root: Path, data: Path | None) -> dict[str, dict[str, Scores]]:
    """Per spec (``NAME`` or ``A1+A2``) its rows, re-scored from the published records (module docstring).

    Raises:
        InputError: a missing record, or a question in two runs pooled. ValueError: as :func:`record_questions`, or a
            record's question not in ``data``.
    """
    known = {q.id: q for q in load_dataset("locomo", data).questions} if data is not None else None
    out = {}
    for spec in specs:
        records = published_records(spec, root)
        out[spec] = rescore(records, known if known is not None else record_questions(records))
    return out


def record_rows(tables: dict[str, dict[str, Scores]]) -> list[dict[str, Any]]:
    """The rows of an ``amem-compare`` record: per records spec, strategy and category, n and A-Mem's and LoCoMo's
    F1 in % with their 95 % percentile-bootstrap intervals (:func:`gemrag.eval.stats.bootstrap_ci`, 10,000
    resamples, seed 0), and the unanswered questions (scored 0) of the strategy."""
    rows = []
    for spec, table in tables.items():
        for strategy, scores in table.items():
            for cat, _ in CATEGORIES:
                if not scores.amem.get(cat):
                    continue
                row: dict[str, Any] = {"records": spec, "strategy": strategy, "category": cat}
                row["n"] = len(scores.amem[cat])
                for key, values in (("amem_f1", scores.amem[cat]), ("locomo_f1", scores.locomo[cat])):
                    mean, low, high = bootstrap_ci(values)
                    row |= {key: 100 * mean, f"{key}_low": 100 * low, f"{key}_high": 100 * high}
                row["unanswered"] = scores.unanswered
                rows.append(row)
    return rows


def _cell(values: Sequence[float]) -> str:
    """``"mean (low–high), n N"`` in %, the 95 % percentile-bootstrap interval; ``"—"`` for no question."""
    if not values:
        return "—"
    mean, low, high = bootstrap_ci(values)
    return f"{100 * mean:.1f} ({100 * low:.1f}–{100 * high:.1f}), n {len(values)}"


def _row(name: str, cells: Sequence[str]) -> str:
    return "| " + " | ".join([name, *cells]) + " |"


def markdown(rows: dict[str, Scores]) -> str:
    """The two tables (A-Mem's scorer with the published rows; LoCoMo's scorer and evidence recall) with notes."""
    cats = [f"{name} (cat {cat})" for cat, name in CATEGORIES]
    lines = [
        "F1 under A-Mem's scorer (token sets, no stemming; category 5 against the trap answer), in %, "
        "95 % bootstrap interval, questions:",
        "",
        _row("system", [*cats, "no answer (F1 0)"]),
        "|" + "---|" * (len(cats) + 2),
    ]
    lines += [_row(name, [f"{v:.2f}" for v in values] + ["—"]) for name, values in PUBLISHED]
    lines += [
        _row(name, [_cell(s.amem.get(c, [])) for c, _ in CATEGORIES] + [str(s.unanswered)])
        for name, s in rows.items()
        if s.amem
    ]
    lines += [
        "",
        "The published rows are A-Mem's Table 1 over all 10 LoCoMo conversations; ours are over the questions the "
        "run answered. Adversarial (cat 5) under A-Mem's scorer is F1 against the dataset's trap answer, the wrong "
        "option: a higher figure means the trap was chosen more often, so that column is never read as better.",
        "",
        "The same questions under LoCoMo's official scorer (category 5: 100 iff the answer declines) and evidence "
        "recall by turn, in %, 95 % bootstrap interval, questions:",
        "",
        _row("system", cats),
        "|" + "---|" * (len(cats) + 1),
    ]
    for name, s in rows.items():
        if s.locomo:  # a retrieval-only row has evidence recall and no F1
            lines.append(_row(f"{name}: F1", [_cell(s.locomo.get(c, [])) for c, _ in CATEGORIES]))
        lines.append(_row(f"{name}: evidence recall", [_cell(s.evidence.get(c, [])) for c, _ in CATEGORIES]))
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Print the comparison tables (and write them to ``--out``, the published figures to ``--write``); exit status
    2 on a bad directory, record or dataset."""
    import os
    import sys
    import time

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dirs", nargs="*", type=Path, metavar="RUN_DIR", help="gemrag eval locomo output")
    parser.add_argument("--data", type=Path, help="the LoCoMo JSON file the runs answered (with --published: cat 5)")
    parser.add_argument("--published", action="append", default=[], metavar="NAME[+NAME]", help="published records")
    parser.add_argument("--results", type=Path, default=Path("results"), help="published records (default: results)")
    parser.add_argument("--write", metavar="NAME", help="with --published: keep the figures as results/NAME.json")
    parser.add_argument("--out", type=Path, help="also write the Markdown tables to this file")
    args = parser.parse_args(argv)
    if (
        bool(args.run_dirs) == bool(args.published)
        or (args.run_dirs and args.data is None)
        or (args.write and not args.published)
    ):
        parser.error("give RUN_DIR... --data FILE, or --published NAME... [--data FILE] [--write NAME]")
    started, load = time.monotonic(), os.getloadavg()[0]
    try:
        if args.published:
            tables = collect_published(args.published, args.results, args.data)
            rows = {f"{spec}: {k}" if len(tables) > 1 else k: v for spec, t in tables.items() for k, v in t.items()}
        else:
            rows = collect(args.run_dirs, args.data)
        text = markdown(rows)
    except (FileNotFoundError, ValueError, InputError) as exc:
        parser.error(str(exc))
    print(text, end="")
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    if args.write:
        sys.path.insert(0, str(Path(__file__).resolve().parent))  # results_record (benchmarks/ is no package)
        from results_record import write_record

        loads = (load, os.getloadavg()[0])
        path = write_record(
            args.write, "amem-compare", {"rows": record_rows(tables)}, argv=argv, seconds=time.monotonic() - started,
            load=loads, root=args.results,
        )  # fmt: skip
        print(f"written: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
