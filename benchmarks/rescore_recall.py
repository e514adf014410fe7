"""Re-score the Recall@k of ``gemrag eval`` output directories with the rule of issue 38, without any LLM call; or
re-score a published result (``results/NAME.json``) from its committed per-question records alone.

    python benchmarks/rescore_recall.py RUN_DIR [RUN_DIR ...] [--dataset PATH] [--json OUT.json]
    python benchmarks/rescore_recall.py --published NAME [NAME ...] [--results DIR]

``--published``: every per-question record of ``results/NAME.records.jsonl.gz`` is scored again from its ranking
(:func:`gemrag.eval.published.rescore_record`: Recall@k from the documents of each ranked hit, LoCoMo's evidence
recall from the turns each context node covers), the figures are aggregated again (:func:`score_records`: the same
bootstrap) and compared with those ``results/NAME.json`` publishes; the exit status is 1 when one differs.

The rule (:func:`gemrag.eval.metrics.first_passages`, :func:`gemrag.eval.metrics.document_recall_at_k`): R@k is the
share of a question's gold documents found among the documents of the first k passages (chunk hits; derived nodes
such as summaries take no rank) of the strategy's one ranking of max(B, 5) nodes, the same for every strategy,
UnWeaver's committees included. Before it, a ranked strategy's R@k counted the first k *distinct* documents of that
ranking, and a committee (``nested = False``) the documents of a separately elected k-chunk committee.

Every record holds its ranking (``retrieved``: node ids and kinds, best first), so the new figure needs only the
memory the record was retrieved from (``RUN_DIR/memories/<memory>``, named in ``index.jsonl``; opened read-only): it
maps each chunk to the dataset document it came from (the stored document's ``source``). COVID-QA's answer recall
(records with ``recall_from`` "answer span ...") also needs the questions' gold answers: the dataset file named in
``RUN_DIR/results.json`` (or ``--dataset``); without it those records are left out (reported). Old = the record's
stored ``recall@k``; records already scored by the new rule (``recall_rule``) give old = new.

Prints, per directory and strategy: questions scored, old and new mean R@2 and R@5 (in %). Limits: memories kept in
PostgreSQL (``--memory``) are not read; two dataset documents with identical texts share one stored document, whose
``source`` names only the first, so a gold document that is the second of such a pair is not found (the runner maps
both).
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gemrag.errors import InputError
from gemrag.eval.loading import load_dataset
from gemrag.eval.metrics import RECALL_KS, RECALL_RULE, recall_at_ks
from gemrag.eval.published import load_published, load_records, rescore_record, score_records
from gemrag.eval.run_files import read_jsonl
from gemrag.store import open_store
from gemrag.types import Hit

__all__ = ["rescore", "rescore_dir", "rescore_published"]


class _MemoryView:
    """The chunks of one evaluation memory, read-only: ``text`` and the dataset document ids of each chunk id."""

    def __init__(self, directory: Path) -> None:
        if not directory.is_dir():
            raise FileNotFoundError(f"{directory}: no such memory (records of a --memory PostgreSQL run?)")
        store = open_store(directory, readonly=True)
        try:
            sources = {int(d["id"]): str(d["source"]) for d in store.documents()}
            chunks = store.nodes("chunk")
        finally:
            store.close()
        self.documents = set(sources.values())
        self.text = {c.id: c.text for c in chunks}
        self.docs = {c.id: [sources[c.doc_id]] if c.doc_id in sources else [] for c in chunks}

    def ranking(self, record: dict[str, Any]) -> list[Hit]:
        """The record's ranking as hits (chunk texts from the memory; derived nodes keep an empty text)."""
        return [
            Hit(int(r["id"]), str(r["kind"]), float(r.get("score", 0.0)), self.text.get(int(r["id"]), ""))
            for r in record.get("retrieved") or []
        ]


def rescore(
    record: dict[str, Any], memory: _MemoryView, answers: dict[str, list[str]] | None
) -> dict[str, float] | None:
    """The new ``{"recall@k": value}`` of one record, or None when it has no Recall@k (no gold, an error) or its
    answer spans are unknown (``answers`` None)."""
    if record.get("error") or all(record.get(f"recall@{k}") is None for k in RECALL_KS):
        return None
    ranking = memory.ranking(record)
    gold = record.get("gold_passages") or []
    docs = lambda hit: memory.docs.get(hit.node_id, [])  # noqa: E731
    if gold and set(gold) <= memory.documents:
        return recall_at_ks(ranking, RECALL_KS, docs, gold=gold)
    if "answer span" in str(record.get("recall_from")):
        spans = (answers or {}).get(str(record["question_id"]))
        if spans is None:
            return None
        return recall_at_ks(ranking, RECALL_KS, docs, answers=spans)
    return None


def _answers(run_dir: Path, dataset: Path | None) -> dict[str, list[str]] | None:
    """Gold answers by question id, from ``dataset`` or the file ``results.json`` names (None: not readable)."""
    try:
        meta = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))["dataset"]
        path = dataset or Path(meta["path"])
        if not path.is_file():
            return None
        return {q.id: list(q.answers) for q in load_dataset(meta["kind"], path).questions}
    except (OSError, KeyError, ValueError):
        return None


def _mean(values: Sequence[float]) -> float:
    return 100 * sum(values) / len(values) if values else math.nan


def rescore_dir(run_dir: Path, dataset: Path | None = None) -> dict[str, dict[str, Any]]:
    """Old and new Recall@k of every strategy of one ``gemrag eval`` output directory.

    Returns:
        ``{strategy: {"n", "skipped", "old@k", "new@k" (means in %, k in RECALL_KS), "changed"}}``: ``n`` records
        re-scored, ``skipped`` records with a Recall@k that could not be (answer spans unknown), ``changed`` records
        whose value moved. Records written by the new rule give old = new.

    Raises:
        FileNotFoundError: the directory has no ``records.jsonl``, or a record's memory is missing.
    """
    if not (run_dir / "records.jsonl").is_file():
        raise FileNotFoundError(f"{run_dir}: no records.jsonl (not a gemrag eval output directory)")
    records = read_jsonl(run_dir / "records.jsonl")
    memory_of = {(e["group"], e["strategy"]): e["memory"] for e in read_jsonl(run_dir / "index.jsonl")}
    views: dict[str, _MemoryView] = {}
    answers = _answers(run_dir, dataset) if any("answer span" in str(r.get("recall_from")) for r in records) else {}
    out: dict[str, dict[str, Any]] = {}
    for rec in records:
        name = memory_of.get((rec["group"], rec["strategy"]))
        if name is None:
            raise FileNotFoundError(f"{run_dir}/index.jsonl: no build of {rec['strategy']} in group {rec['group']}")
        if name not in views:
            views[name] = _MemoryView(run_dir / "memories" / name)
        row = out.setdefault(rec["strategy"], {"n": 0, "skipped": 0, "changed": 0, "old": [], "new": []})
        new = rescore(rec, views[name], answers)
        if new is None:
            scored = any(rec.get(f"recall@{k}") is not None for k in RECALL_KS) and not rec.get("error")
            row["skipped"] += int(scored)
            continue
        old = {key: float(rec[key]) for key in new} if rec.get("recall_rule") != RECALL_RULE else new
        row["n"] += 1
        row["changed"] += int(old != new)
        row["old"].append(old)
        row["new"].append(new)
    for row in out.values():
        for k in RECALL_KS:
            row[f"old@{k}"] = _mean([o[f"recall@{k}"] for o in row["old"]])
            row[f"new@{k}"] = _mean([o[f"recall@{k}"] for o in row["new"]])
        del row["old"], row["new"]
    return out


def rescore_published(name: str, root: Path) -> list[dict[str, Any]]:
    """Re-score a published result from its committed per-question records.

    Returns:
        One row per strategy and metric the records re-score: ``strategy``, ``metric``, ``published`` and
        ``rescored`` (means in %, with their intervals ``published_ci`` / ``rescored_ci``) and ``same`` (mean,
        interval and n all equal).

    Raises:
        InputError: no such record, or its records file is missing.
    """
    run = load_published(name, root)
    records = load_records(run, root)
    kind = run.dataset.kind
    rescored = [dict(r, scores={**r["scores"], **rescore_record(r, kind)}) for r in records]
    again, _ = score_records(rescored, list(run.strategies))
    metrics = {m for r in records for m in rescore_record(r, kind)}
    rows = []
    for strategy, result in run.strategies.items():
        for metric in sorted(metrics & set(result.metrics)):
            old, new = result.metrics[metric], again[strategy].metrics[metric]
            rows.append(
                {
                    "strategy": strategy,
                    "metric": metric,
                    "published": 100 * old.mean,
                    "rescored": 100 * new.mean,
                    "published_ci": [100 * old.low, 100 * old.high],
                    "rescored_ci": [100 * new.low, 100 * new.high],
                    "n": new.n,
                    "same": old == new,
                }
            )
    return rows


def _published(names: Sequence[str], root: Path) -> int:
    differ = 0
    for name in names:
        print(f"\n{root / name}.json\n")
        print("| strategy | metric | n | published | re-scored | same |")
        print("|---|---|---|---|---|---|")
        for r in rescore_published(name, root):
            cis = [f"{r[k + '_ci'][0]:.1f}–{r[k + '_ci'][1]:.1f}" for k in ("published", "rescored")]
            print(
                f"| {r['strategy']} | {r['metric']} | {r['n']} | {r['published']:.1f} ({cis[0]}) | "
                f"{r['rescored']:.1f} ({cis[1]}) | {'yes' if r['same'] else 'NO'} |"
            )
            differ += not r["same"]
    return 1 if differ else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Print one markdown table per output directory (old vs new R@k per strategy), or per published result
    (published vs re-scored figures; exit 1 when one differs)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dirs", nargs="*", type=Path, metavar="RUN_DIR")
    parser.add_argument("--dataset", type=Path, help="the dataset file (COVID-QA answer spans), if moved")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--published", nargs="+", metavar="NAME", help="re-score these published results instead")
    parser.add_argument("--results", type=Path, default=Path("results"), help="where they are (default results/)")
    args = parser.parse_args(argv)
    if args.published:
        try:
            return _published(args.published, args.results)
        except InputError as exc:
            print(f"error: {exc}")
            return 2
    if not args.run_dirs:
        parser.error("give RUN_DIR ... or --published NAME ...")
    everything: dict[str, Any] = {}
    for run_dir in args.run_dirs:
        rows = rescore_dir(run_dir, args.dataset)
        everything[str(run_dir)] = rows
        print(f"\n{run_dir}\n")
        print("| strategy | questions | R@2 old | R@2 new | R@5 old | R@5 new | changed | not re-scored |")
        print("|---|---|---|---|---|---|---|---|")
        for name, r in rows.items():
            figures = " | ".join(f"{r[f'{side}@{k}']:.1f}" for k in RECALL_KS for side in ("old", "new"))
            print(f"| {name} | {r['n']} | {figures} | {r['changed']} | {r['skipped']} |")
    if args.json:
        args.json.write_text(json.dumps(everything, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
