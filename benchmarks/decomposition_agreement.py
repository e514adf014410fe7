"""How close the ``iterative`` strategy's steps come to MuSiQue's gold decompositions, from a ``gemrag eval`` run.

MuSiQue (Trivedi et al. 2022, TACL) ships each question's ``question_decomposition``: one gold sub-question per hop
(``#k`` standing for hop k's answer), its answer and its supporting paragraph. ``gemrag eval`` records the trace of
every ``iterative`` retrieval (``records.jsonl``, key ``trace``): its steps' queries and, in ``"decompose"`` mode, the
sub-questions as the model wrote them and the sub-answers it read. This script compares them, per hop i (by
position), with no LLM call:

* ``query F1``: SQuAD token F1 (:func:`gemrag.eval.metrics.token_f1`) of the query step i + 1 retrieved (step 1 is
  the question itself; in ``"decompose"`` mode the sub-question with its ``#k`` filled, in ``"ircot"`` mode the
  query the model wrote) against gold sub-question i with its ``#k`` filled by the gold answers — did the step look
  for the right thing;
* ``written F1`` (decompose): the sub-question as written against the gold one as written (``#k`` in both);
* ``answer F1`` / ``answer EM`` (decompose): the model's answer of sub-question i against gold hop i's answer (only
  the answers the budget paid for: ``answered`` counts them);
* ``hops``: the questions whose number of model steps after the question equals the gold number of hops, and the
  mean of each.

A hop the model did not reach (fewer steps than gold hops) scores 0 for its query; ``reached`` counts those reached.

    python benchmarks/decomposition_agreement.py RUN_DIR [--data MUSIQUE.json] [--strategy NAME] [--json]

``--data`` defaults to the dataset path recorded in ``RUN_DIR/results.json``. Prints one markdown table per run
(strategy) whose records carry a trace; exits 2 when the run or the data is missing, 1 when no record has a trace.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from gemrag.eval.loaders._io import read_records
from gemrag.eval.metrics import exact_match, token_f1

PLACEHOLDER = re.compile(r"#(\d+)")


def fill(text: str, answers: Sequence[str]) -> str:
    """``text`` with each ``#k`` (1-based) replaced by ``answers[k - 1]`` (left as is when there is none)."""
    return PLACEHOLDER.sub(lambda m: answers[int(m.group(1)) - 1] if 0 < int(m.group(1)) <= len(answers) else "", text)


def gold_decompositions(path: Path) -> dict[str, list[dict[str, Any]]]:
    """``question id -> [{"question", "answer"}]`` of every record of the MuSiQue file ``path`` (JSON list or JSON
    lines) that has a ``question_decomposition``.

    Raises:
        InputError: the file is missing or not JSON.
    """
    records, _ = read_records(path)
    out = {}
    for record in records:
        rec = record.value if isinstance(record.value, dict) else {}
        hops = rec.get("question_decomposition")
        if isinstance(hops, list) and "id" in rec:
            out[str(rec["id"])] = [{"question": str(h["question"]), "answer": str(h["answer"])} for h in hops]
    return out


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def agreement(records: Iterable[dict[str, Any]], gold: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Agreement of one run's traced records with the gold decompositions (module docstring).

    Args:
        records: ``gemrag eval`` records of one run; those without ``trace`` or without a gold decomposition are
            skipped.
        gold: :func:`gold_decompositions`.

    Returns:
        ``{"questions", "same_hops", "failures", "by_hop": {i: {"n", "reached", "query_f1", "written_f1",
        "answered", "answer_f1", "answer_em"}}}``: means in [0, 1] (None when nothing was measured), hops 1-based.
    """
    by_hop: dict[int, dict[str, list[float]]] = {}
    questions = same = failures = 0
    for rec in records:
        trace, hops = rec.get("trace"), gold.get(str(rec.get("question_id")))
        if not trace or not hops:
            continue
        questions += 1
        failures += bool(trace.get("failures"))
        gold_answers = [h["answer"] for h in hops]
        queries = [s["query"] for s in trace.get("steps", [])[1:]]
        written = trace.get("subquestions") or []
        answers = {int(k): v for k, v in (trace.get("answers") or {}).items()}
        same += len(queries) == len(hops)
        for i, hop in enumerate(hops, start=1):
            row = by_hop.setdefault(i, {k: [] for k in ("query_f1", "reached", "written_f1", "answer_f1", "answer_em")})
            reached = i <= len(queries)
            row["reached"].append(float(reached))
            row["query_f1"].append(token_f1(queries[i - 1], fill(hop["question"], gold_answers)) if reached else 0.0)
            if trace.get("mode") == "decompose":
                row["written_f1"].append(token_f1(written[i - 1], hop["question"]) if i <= len(written) else 0.0)
                if i in answers:
                    row["answer_f1"].append(token_f1(answers[i], hop["answer"]))
                    row["answer_em"].append(exact_match(answers[i], hop["answer"]))
    table = {
        i: {
            "n": len(row["reached"]),
            "reached": int(sum(row["reached"])),
            "query_f1": _mean(row["query_f1"]),
            "written_f1": _mean(row["written_f1"]),
            "answered": len(row["answer_f1"]),
            "answer_f1": _mean(row["answer_f1"]),
            "answer_em": _mean(row["answer_em"]),
        }
        for i, row in sorted(by_hop.items())
    }
    return {"questions": questions, "same_hops": same, "failures": failures, "by_hop": table}


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}"


def markdown(name: str, result: dict[str, Any]) -> str:
    """One run's agreement as a markdown table (scores in %)."""
    lines = [
        f"### {name}: {result['questions']} questions, {result['same_hops']} with as many steps as gold hops, "
        f"{result['failures']} with a failed pass",
        "",
        "| hop | n | reached | query F1 | written F1 | answered | answer F1 | answer EM |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for i, row in result["by_hop"].items():
        lines.append(
            f"| {i} | {row['n']} | {row['reached']} | {_pct(row['query_f1'])} | {_pct(row['written_f1'])} | "
            f"{row['answered']} | {_pct(row['answer_f1'])} | {_pct(row['answer_em'])} |"
        )
    return "\n".join(lines)


def _dataset_path(run_dir: Path) -> Path | None:
    results = run_dir / "results.json"
    if not results.is_file():
        return None
    path = json.loads(results.read_text(encoding="utf-8")).get("dataset", {}).get("path")
    return Path(path) if path else None


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the arguments, print the tables (or JSON); the exit code as in the module docstring."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path, help="a gemrag eval output directory (records.jsonl)")
    ap.add_argument("--data", type=Path, help="the MuSiQue file (default: the path in RUN_DIR/results.json)")
    ap.add_argument("--strategy", action="append", help="only these runs (repeatable; default: every traced run)")
    ap.add_argument("--json", action="store_true", help="print JSON instead of markdown")
    args = ap.parse_args(argv)
    records_path = args.run_dir / "records.jsonl"
    data = args.data or _dataset_path(args.run_dir)
    if not records_path.is_file() or data is None or not data.is_file():
        print(f"need {records_path} and the MuSiQue file (--data; got {data})", file=sys.stderr)
        return 2
    gold = gold_decompositions(data)
    runs: dict[str, list[dict[str, Any]]] = {}
    for line in records_path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            rec = json.loads(line)
            if rec.get("trace") and (not args.strategy or rec["strategy"] in args.strategy):
                runs.setdefault(rec["strategy"], []).append(rec)
    if not runs:
        print("no record carries a trace (run an iterative strategy first)", file=sys.stderr)
        return 1
    results = {name: agreement(recs, gold) for name, recs in runs.items()}
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print("\n\n".join(markdown(name, result) for name, result in results.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
