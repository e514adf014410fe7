"""How well does a memory tell an unanswerable question? Abstention measured on the records of ``gemrag eval`` runs,
without any LLM call: by the evidence score (``[answer] abstain_below``), by the model's own declines, and by both.

    python benchmarks/abstention.py SOURCE [SOURCE...] [--memory ROOT] [--thresholds 0.2,0.3,...] [--no-evidence]
        [--dataset PATH] [--json OUT.json] [--publish NAME]

A SOURCE is a run directory of ``gemrag eval`` (with or without ``--no-answer``) or a published run
(``results/NAME.records.jsonl.gz`` or ``results/NAME.json``); a run still going (no ``results.json`` yet) is read
with ``--dataset`` naming its dataset file, its records so far counted. A question is *unanswerable* when the
dataset says so (:func:`gemrag.eval.categories.is_unanswerable`: LoCoMo's adversarial category 5, a Qasper question
every annotator marked "Unanswerable", a SQuAD 2.0 ``is_impossible`` question). Three detectors, each per strategy:

* ``evidence`` (run directories only): abstain when the evidence score is below a threshold t. The context the
  answer read (``context``: node ids, in the order retrieved) is read from the run's memory (``RUN_DIR/memories/
  <memory>``, or ``ROOT/<memory>`` for a run made with ``--memory ROOT``; opened read-only, a memory of an older
  schema through an upgraded temporary copy) and scored by
  :func:`gemrag.answers.shaping.evidence_score` (the best cosine between the question and a sentence of the
  context) with the embedder of the default configuration (MiniLM). Also its ROC AUC (0.5 = chance).
* ``model`` (answered records): the answer declines, by :func:`declined`: the memory abstained ("Not found in the
  memory.") or the answer says what LoCoMo's scorer accepts for category 5 ("not mentioned", "no information
  available"; the option a model picks for a category-5 question is recorded as the option's text, so picking
  "Not mentioned in the conversation" declines).
* ``evidence or model``: either of the two, per threshold (answered records of a run directory).

For each: the questions abstained, the precision (the share of them that are unanswerable), the recall (the share of
the unanswerable questions abstained), the answerable questions lost (count and share of the answerable ones), each
share with its 95 % percentile-bootstrap interval (:func:`gemrag.eval.stats.bootstrap_ci` over the questions the
share is taken of; none where that set is empty). ``--publish NAME`` writes the figures as the record
``results/NAME.json`` (list ``rows``: one per source, strategy, detector and threshold; list ``summary``: one per
source and strategy), for the documentation's ``result-rows`` marks.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gemrag.answers.reading import NOT_FOUND
from gemrag.eval.categories import is_unanswerable
from gemrag.eval.datasets import Question
from gemrag.eval.locomo_scoring import declines
from gemrag.eval.stats import bootstrap_ci

sys.path.insert(0, str(Path(__file__).resolve().parent))  # results_record (benchmarks/ is no package)
from results_record import write_record  # noqa: E402

__all__ = [
    "KeptVectors",
    "auc",
    "declined",
    "detect",
    "load_source",
    "measure",
    "node_texts",
    "score_evidence",
    "sweep",
]

EVIDENCE, MODEL, EITHER = "evidence", "model", "evidence or model"


def declined(record: dict[str, Any]) -> bool:
    """Whether an answered record declines: the memory abstained on weak evidence (``reading["abstained"]``, the
    answer :data:`gemrag.answers.reading.NOT_FOUND`) or the answer passes LoCoMo's category-5 rule
    (:func:`gemrag.eval.locomo_scoring.declines`: it contains "not mentioned" or "no information available"), the
    rule that scores a category-5 answer correct. False for a record without an answer."""
    answer = str(record.get("answer") or "")
    reading = record.get("reading") or {}
    return bool(reading.get("abstained")) or answer.strip() == NOT_FOUND or declines(answer)


def _share(flags: Sequence[bool]) -> tuple[float | None, list[float] | None]:
    """``(share, [low, high])`` of the true flags with its 95 % bootstrap interval; ``(None, None)`` when empty."""
    if not flags:
        return None, None
    mean, low, high = bootstrap_ci([float(f) for f in flags])
    return mean, [low, high]


def detect(abstains: Sequence[bool], unanswerable: Sequence[bool]) -> dict[str, Any]:
    """The figures of one abstention detector over the same questions.

    Args:
        abstains: per question, whether the detector abstains, shape ``(n,)``.
        unanswerable: per question, the dataset's label, shape ``(n,)``.

    Returns:
        ``questions``, ``unanswerable``, ``abstained``, ``hits`` (unanswerable among the abstained),
        ``answerable_lost`` (count); ``precision`` = hits / abstained, ``recall`` = hits / unanswerable, ``lost_share``
        = answerable_lost / answerable questions, each a fraction in [0, 1] (None where its denominator is 0) with
        ``<name>_ci`` = ``[low, high]`` (95 % percentile bootstrap, seed 0) or None.

    Raises:
        ValueError: the two sequences differ in length.
    """
    if len(abstains) != len(unanswerable):
        raise ValueError(f"{len(abstains)} decisions for {len(unanswerable)} labels")
    pairs = list(zip(abstains, unanswerable, strict=True))
    hits = sum(a and u for a, u in pairs)
    out: dict[str, Any] = {
        "questions": len(pairs),
        "unanswerable": sum(u for _, u in pairs),
        "abstained": sum(a for a, _ in pairs),
        "hits": hits,
        "answerable_lost": sum(a and not u for a, u in pairs),
    }
    for name, flags in (
        ("precision", [u for a, u in pairs if a]),
        ("recall", [a for a, u in pairs if u]),
        ("lost_share", [a for a, u in pairs if not u]),
    ):
        out[name], out[f"{name}_ci"] = _share(flags)
    return out


def auc(scores: list[dict[str, Any]]) -> float | None:
    """ROC AUC of a *low* ``score`` as the detector of an ``unanswerable`` question (ties count one half); None when
    either class is empty."""
    pos = [s["score"] for s in scores if s["unanswerable"]]
    neg = [s["score"] for s in scores if not s["unanswerable"]]
    if not pos or not neg:
        return None
    wins = sum((p < n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def sweep(scores: list[dict[str, Any]], thresholds: Sequence[float], model: bool = False) -> list[dict[str, Any]]:
    """:func:`detect` per threshold t of abstaining when ``score < t`` (``model``: or when the record ``declined``),
    each with its ``threshold``."""
    labels = [s["unanswerable"] for s in scores]
    return [
        {"threshold": t} | detect([s["score"] < t or (model and s["declined"]) for s in scores], labels)
        for t in thresholds
    ]


# -- reading the sources ------------------------------------------------------------------------------------------
def load_source(source: Path, dataset: Path | None = None) -> dict[str, Any]:
    """The records of a run directory or a published run, with the dataset's labels.

    Args:
        source: a run directory or ``results/NAME.records.jsonl.gz`` / ``results/NAME.json``.
        dataset: the run's dataset file, for a run directory that has no ``results.json`` yet (a run still going:
            its kind and model are read from ``run.json``); None: the path ``results.json`` names.

    Returns:
        ``{"name", "kind", "llm", "records", "questions"?, "run_dir"?}`` (``llm``: the answering model, None
        unknown): every record gets ``unanswerable`` (bool); a run directory also gives ``questions`` (id ->
        question text, for the evidence score) and ``run_dir``.

    Raises:
        FileNotFoundError: a run directory without ``records.jsonl``, or without ``results.json`` and ``dataset``.
        gemrag.errors.InputError: a published run that is missing or unreadable; a record's question not in the
            dataset.
    """
    from gemrag.errors import InputError
    from gemrag.eval.loading import load_dataset
    from gemrag.eval.published import load_published, load_records
    from gemrag.eval.run_files import read_jsonl

    if source.is_dir():
        if dataset is None and not (source / "results.json").is_file():
            raise FileNotFoundError(f"{source}: no results.json (a run still going? give --dataset PATH)")
        if dataset is None:
            results = json.loads((source / "results.json").read_text(encoding="utf-8"))
            meta, llm = results["dataset"], (results.get("models") or {}).get("llm")
        else:
            run = json.loads((source / "run.json").read_text(encoding="utf-8"))
            meta, llm = {"kind": run["dataset"].split(":", 1)[0], "path": str(dataset)}, run.get("llm")
        data = load_dataset(meta["kind"], Path(meta["path"]))
        by_id = {q.id: q for q in data.questions}
        records = read_jsonl(source / "records.jsonl")
        if missing := sorted({r["question_id"] for r in records} - set(by_id)):
            raise InputError(f"{source}: questions not in {meta['path']}: {', '.join(missing[:5])}")
        for rec in records:
            rec["unanswerable"] = is_unanswerable(meta["kind"], by_id[rec["question_id"]])
        questions = {q.id: q.question for q in data.questions}
        return {
            "name": source.name,
            "kind": meta["kind"],
            "llm": llm,
            "records": records,
            "questions": questions,
            "run_dir": source,
        }
    name = source.name.removesuffix(".json").removesuffix(".records.jsonl.gz")
    run = load_published(name, source.parent)
    records = load_records(run, source.parent)
    for rec in records:  # a published record keeps its category and gold answers, enough for the label
        question = Question(
            id=str(rec["question_id"]),
            doc_ids=[str(rec.get("group") or "")],
            question=str(rec["question_id"]),
            answers=list(rec.get("gold_answers") or []),
            category=rec.get("category"),
        )
        rec["unanswerable"] = is_unanswerable(run.dataset.kind, question)
    return {"name": name, "kind": run.dataset.kind, "llm": run.models.get("llm"), "records": records}


def node_texts(directory: Path, ids: Sequence[int]) -> dict[int, str]:
    """The texts of nodes ``ids`` of the memory at ``directory``, opened read-only; a memory of an older schema
    (which a read-only open refuses) is read from a temporary copy upgraded there, the original untouched.

    Raises:
        gemrag.errors.GemragError: not a memory this version can read.
    """
    from gemrag.errors import GemragError
    from gemrag.store import open_store

    def read(where: Path, readonly: bool) -> dict[int, str]:
        store = open_store(where, readonly=readonly)
        try:
            return {n.id: n.text for n in store.nodes_by_id(list(ids)).values()}
        finally:
            store.close()

    try:
        return read(directory, True)
    except GemragError as exc:
        if "older gemrag" not in str(exc):
            raise
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / directory.name
        shutil.copytree(directory, copy, ignore=shutil.ignore_patterns("*.lock"))
        return read(copy, False)


class KeptVectors:
    """An embedder whose vectors are kept per text for the run: the sentences of a memory's contexts recur across
    questions, so each is embedded once (rows as the wrapped :class:`gemrag.models.Embedder` gives them: float32,
    L2-normalized, shape ``(n, dim)``)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.vectors: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def embed(self, texts: Sequence[str]) -> Any:
        """The vectors of ``texts``, embedding only the ones not seen before (in one call)."""
        import numpy as np

        new = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        if new:
            self.vectors.update(zip(new, self.inner.embed(new), strict=True))
        return np.stack([self.vectors[t] for t in texts]) if texts else self.inner.embed([])


def score_evidence(source: dict[str, Any], memory_root: Path | None = None) -> dict[tuple[str, str], float]:
    """The evidence score of every record of a run directory with a context: ``{(question_id, strategy): score}``.

    Raises:
        FileNotFoundError: a record's memory is missing.
    """
    from gemrag.answers.shaping import evidence_score
    from gemrag.config import load_config
    from gemrag.eval.run_files import read_jsonl
    from gemrag.models.factory import build_embedder

    run_dir: Path = source["run_dir"]
    memory_of = {(e["group"], e["strategy"]): e["memory"] for e in read_jsonl(run_dir / "index.jsonl")}
    records = [  # a run still going has records of a group its index does not list yet: left out
        r
        for r in source["records"]
        if not r.get("error") and r.get("context") and (r["group"], r["strategy"]) in memory_of
    ]
    embedder = KeptVectors(build_embedder(load_config().embedder))
    texts: dict[str, dict[int, str]] = {}
    out = {}
    for rec in records:
        name = memory_of[(rec["group"], rec["strategy"])]
        if name not in texts:
            directory = (memory_root or run_dir / "memories") / name
            if not directory.is_dir():
                raise FileNotFoundError(f"{directory}: no such memory")
            mine = {i for r in records if memory_of[(r["group"], r["strategy"])] == name for i in r["context"]}
            texts[name] = node_texts(directory, sorted(mine))
        context = [texts[name].get(i, "") for i in rec["context"]]
        question = source["questions"][rec["question_id"]]
        out[(rec["question_id"], rec["strategy"])] = evidence_score(question, context, embedder)
    return out


def measure(
    source: dict[str, Any], thresholds: Sequence[float], evidence: dict[tuple[str, str], float] | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(summary, rows)`` of one source: per strategy a summary (questions, unanswerable, answered, ROC AUC of the
    evidence score) and the rows of each detector the records allow (module docstring), each naming its ``source``,
    ``strategy``, ``detector`` and ``threshold`` (None for ``model``)."""
    summary, rows = [], []
    for strategy in sorted({r["strategy"] for r in source["records"]}):
        mine = [r for r in source["records"] if r["strategy"] == strategy and not r.get("error")]
        answered = [r for r in mine if r.get("answer") is not None]
        head = {"source": source["name"], "strategy": strategy, "llm": source.get("llm") if answered else None}
        scored = [
            {
                "score": evidence[key],
                "unanswerable": r["unanswerable"],
                "declined": declined(r),
                "answered": r.get("answer") is not None,
            }
            for r in mine
            if evidence is not None and (key := (r["question_id"], strategy)) in evidence
        ]
        both = [s for s in scored if s["answered"]]
        summary.append(
            head
            | {
                "questions": len(mine),
                "unanswerable": sum(r["unanswerable"] for r in mine),
                "answered": len(answered),
                "scored": len(scored),
                "auc": auc(scored),
            }
        )
        rows += [head | {"detector": EVIDENCE} | r for r in sweep(scored, thresholds)] if scored else []
        if answered:
            labels = [r["unanswerable"] for r in answered]
            rows.append(head | {"detector": MODEL, "threshold": None} | detect([declined(r) for r in answered], labels))
        rows += [head | {"detector": EITHER} | r for r in sweep(both, thresholds, model=True)] if both else []
    return summary, rows


def _pct(value: float | None, ci: list[float] | None) -> str:
    if value is None:
        return "–"
    return f"{100 * value:.1f}" + (f" ({100 * ci[0]:.1f}–{100 * ci[1]:.1f})" if ci else "")


def print_report(summary: list[dict[str, Any]], rows: list[dict[str, Any]]) -> None:
    """Print each source and strategy's summary line and a Markdown table of its detectors."""
    for s in summary:
        score = "–" if s["auc"] is None else f"{s['auc']:.3f}"
        print(
            f"\n{s['source']} {s['strategy']}: {s['questions']} questions, {s['unanswerable']} unanswerable, "
            f"{s['answered']} answered, ROC AUC of the evidence score {score}"
        )
        print("| detector | threshold | abstained | precision % | recall % | answerable lost (% of answerable) |")
        print("|---|---|---|---|---|---|")
        for r in rows:
            if (r["source"], r["strategy"]) == (s["source"], s["strategy"]):
                t = "–" if r["threshold"] is None else f"{r['threshold']:.2f}"
                print(
                    f"| {r['detector']} | {t} | {r['abstained']} | {_pct(r['precision'], r['precision_ci'])} | "
                    f"{_pct(r['recall'], r['recall_ci'])} | {r['answerable_lost']} "
                    f"({_pct(r['lost_share'], r['lost_share_ci'])}) |"
                )


def main() -> int:
    """Command line (module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sources", type=Path, nargs="+", help="run directories or results/NAME.records.jsonl.gz")
    parser.add_argument("--memory", type=Path, default=None, help="the --memory ROOT the runs kept their memories in")
    parser.add_argument("--dataset", type=Path, default=None, help="the dataset file of a run without results.json")
    parser.add_argument("--thresholds", default="0.1,0.2,0.3,0.4,0.5")
    parser.add_argument("--no-evidence", action="store_true", help="skip the evidence score (no embedder)")
    parser.add_argument("--json", type=Path, default=None, help="also write the summary and rows to this file")
    parser.add_argument("--publish", metavar="NAME", help="also write the figures as the record results/NAME.json")
    args = parser.parse_args()
    started, load0, code = time.perf_counter(), os.getloadavg()[0], None
    try:
        thresholds = [float(t) for t in args.thresholds.split(",")]
    except ValueError:
        parser.error(f"--thresholds {args.thresholds!r}: give numbers separated by commas")
    if any(math.isnan(t) for t in thresholds):
        parser.error("--thresholds: nan is no threshold")
    from gemrag.errors import GemragError

    summary, rows = [], []
    try:
        if args.publish:
            from gemrag.eval.publish_origin import check_publish_name, code_version

            check_publish_name(args.publish)
            code = code_version()
        for path in args.sources:
            if not path.exists():
                parser.error(f"{path}: no such run directory or published record")
            source = load_source(path, args.dataset)
            evidence = None if args.no_evidence or "run_dir" not in source else score_evidence(source, args.memory)
            more_summary, more_rows = measure(source, thresholds, evidence)
            summary += more_summary
            rows += more_rows
    except (GemragError, FileNotFoundError) as exc:
        parser.error(str(exc))
    print_report(summary, rows)
    figures = {"thresholds": thresholds, "summary": summary, "rows": rows}
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1), encoding="utf-8")
    if args.publish:
        load = (load0, os.getloadavg()[0])
        seconds = time.perf_counter() - started
        path = write_record(args.publish, "abstention", figures, argv=None, seconds=seconds, load=load, code=code)
        print(f"published: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
