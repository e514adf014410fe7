"""How well does weak evidence tell an unanswerable question? Abstention (``[answer] abstain_below``) measured on the
records of ``gemrag eval`` runs, without any LLM call.

    python benchmarks/abstention.py RUN_DIR [--memory ROOT] [--thresholds 0.2,0.3,...] [--json OUT.json]

For each record, the context the answer read (``context``: node ids, in the order retrieved) is read from the run's
memory (``RUN_DIR/memories/<memory>``, or ``ROOT/<memory>`` for a run made with ``--memory ROOT``; opened read-only)
and scored by :func:`gemrag.answers.shaping.evidence_score` (the best cosine between the question and a sentence of the
context, with the embedder of the default configuration: MiniLM). A question is *unanswerable* when the dataset says
so: LoCoMo's adversarial category 5, a Qasper answer "Unanswerable", a COVID-QA ``is_impossible`` question.

Prints, per strategy and threshold t: the questions the memory would abstain from (score < t), the abstention's
precision (the share of those that are unanswerable) and recall (the share of unanswerable questions abstained), the
answerable questions lost, and the ROC AUC of the score as a detector of unanswerable questions (0.5 = chance).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from gemrag.answers.shaping import evidence_score
from gemrag.config import load_config
from gemrag.eval.loading import load_dataset
from gemrag.eval.report import read_jsonl
from gemrag.models.factory import build_embedder
from gemrag.store import open_store

__all__ = ["auc", "score_run", "sweep"]


def _questions(run_dir: Path) -> dict[str, tuple[str, bool]]:
    """Per question id of the run's dataset (the file ``results.json`` names): its text and whether it is
    unanswerable by the dataset's own label."""
    meta = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))["dataset"]
    data = load_dataset(meta["kind"], Path(meta["path"]))
    out = {}
    for q in data.questions:
        label = (meta["kind"] == "locomo" and q.category == "5") or bool(q.metadata.get("is_impossible"))
        out[q.id] = (q.question, label or [a.strip().lower() for a in q.answers] == ["unanswerable"])
    return out


def score_run(run_dir: Path, memory_root: Path | None = None) -> list[dict[str, Any]]:
    """``[{"question_id", "strategy", "question", "score", "unanswerable"}]`` for every answered record of a run.

    Raises:
        FileNotFoundError: no records, no results.json, or a record's memory is missing.
    """
    records = read_jsonl(run_dir / "records.jsonl")
    questions = _questions(run_dir)
    memory_of = {(e["group"], e["strategy"]): e["memory"] for e in read_jsonl(run_dir / "index.jsonl")}
    embedder = build_embedder(load_config().embedder)
    texts: dict[str, dict[int, str]] = {}
    out = []
    for rec in records:
        if rec.get("error") or not rec.get("context"):
            continue
        name = memory_of[(rec["group"], rec["strategy"])]
        if name not in texts:
            directory = (memory_root or run_dir / "memories") / name
            if not directory.is_dir():
                raise FileNotFoundError(f"{directory}: no such memory")
            store = open_store(directory, readonly=True)
            try:
                mine = {
                    i for r in records if memory_of[(r["group"], r["strategy"])] == name for i in r.get("context") or []
                }
                texts[name] = {n.id: n.text for n in store.nodes_by_id(sorted(mine)).values()}
            finally:
                store.close()
        question, unanswerable = questions[rec["question_id"]]
        context = [texts[name].get(i, "") for i in rec["context"]]
        out.append(
            {
                "question_id": rec["question_id"],
                "strategy": rec["strategy"],
                "score": evidence_score(question, context, embedder),
                "unanswerable": unanswerable,
            }
        )
    return out


def auc(scores: list[dict[str, Any]]) -> float:
    """ROC AUC of a *low* score as the detector of an unanswerable question (ties count one half); nan when either
    class is empty."""
    pos = [s["score"] for s in scores if s["unanswerable"]]
    neg = [s["score"] for s in scores if not s["unanswerable"]]
    if not pos or not neg:
        return float("nan")
    wins = sum((p < n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def sweep(scores: list[dict[str, Any]], thresholds: list[float]) -> list[dict[str, Any]]:
    """Per threshold: ``abstained``, ``precision``, ``recall`` (in %; nan where undefined), ``answerable_lost``."""
    total_un = sum(s["unanswerable"] for s in scores)
    rows = []
    for t in thresholds:
        out = [s for s in scores if s["score"] < t]
        hit = sum(s["unanswerable"] for s in out)
        rows.append(
            {
                "threshold": t,
                "abstained": len(out),
                "precision": 100 * hit / len(out) if out else float("nan"),
                "recall": 100 * hit / total_un if total_un else float("nan"),
                "answerable_lost": len(out) - hit,
            }
        )
    return rows


def main() -> None:
    """Command line (module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--memory", type=Path, default=None, help="the --memory ROOT the run kept its memories in")
    parser.add_argument("--thresholds", default="0.1,0.2,0.3,0.4,0.5")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    scores = score_run(args.run_dir, args.memory)
    thresholds = [float(t) for t in args.thresholds.split(",")]
    report = {}
    for strategy in sorted({s["strategy"] for s in scores}):
        mine = [s for s in scores if s["strategy"] == strategy]
        un = sum(s["unanswerable"] for s in mine)
        report[strategy] = {"n": len(mine), "unanswerable": un, "auc": auc(mine), "sweep": sweep(mine, thresholds)}
        print(f"{strategy}: {len(mine)} questions, {un} unanswerable, ROC AUC {report[strategy]['auc']:.3f}")
        print("| threshold | abstained | precision % | recall % | answerable lost |\n|---|---|---|---|---|")
        for r in report[strategy]["sweep"]:
            print(
                f"| {r['threshold']:.2f} | {r['abstained']} | {r['precision']:.1f} | {r['recall']:.1f} | "
                f"{r['answerable_lost']} |"
            )
    if args.json:
        args.json.write_text(json.dumps({"scores": scores, "report": report}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
