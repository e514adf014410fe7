"""Paired bootstrap of one metric between two ``gemrag eval`` output directories: the same questions and runs
(strategies) evaluated twice under different settings (e.g. ``--set memory.chunk_titles=false`` against the default,
or ``--answer-form default`` against ``short``), which one evaluation cannot hold (its fingerprint is one setting).

    python benchmarks/paired_runs.py BEFORE_DIR AFTER_DIR --metric recall@5 [--metric f1 ...]
    python benchmarks/paired_runs.py DIR DIR --pair bm25 fused --metric f1   # two runs of one evaluation

Prints, per run present in both and per metric: questions paired, mean before / after (in %), the difference
after - before in points with its 95% paired-bootstrap interval and p (:func:`gemrag.eval.stats.paired_bootstrap_diff`,
10,000 resamples, seed 0). Questions missing from either side, or with no value, are left out of that pair.
``--pair B A`` compares run A of AFTER_DIR with run B of BEFORE_DIR instead (e.g. ``fused`` against its part ``bm25``
in one output directory, a comparison the evaluation's own report makes only against its ``--reference``).
``--category 1,2,3,4`` keeps the questions of those categories only (e.g. LoCoMo without its adversarial ones).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from gemrag.eval.stats import paired_bootstrap_diff


def _records(directory: Path) -> dict[tuple[str, str], dict[str, object]]:
    """``(strategy, question_id) -> record`` of ``directory/records.jsonl`` (a later record of a pair wins)."""
    out = {}
    for line in (directory / "records.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            out[(r["strategy"], r["question_id"])] = r
    return out


def main() -> None:
    """Parse the arguments and print one markdown table row per (run, metric)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--metric", action="append", help="record key: recall@2, recall@5, f1, em, correct")
    parser.add_argument("--pair", nargs=2, metavar=("BEFORE_RUN", "AFTER_RUN"), help="compare these two runs")
    parser.add_argument("--category", help="comma-separated question categories to keep (default: all)")
    args = parser.parse_args()
    metrics = args.metric or ["recall@5"]
    before, after = _records(args.before), _records(args.after)
    if args.category:
        keep = {c.strip() for c in args.category.split(",")}
        before = {k: r for k, r in before.items() if str(r.get("category")) in keep}
    if args.pair:  # rename both runs to one label, so the loop below pairs them
        label = f"{args.pair[1]} vs {args.pair[0]}"
        before = {(label, q): r for (s, q), r in before.items() if s == args.pair[0]}
        after = {(label, q): r for (s, q), r in after.items() if s == args.pair[1]}
    runs = sorted({s for s, _ in before} & {s for s, _ in after})
    print("| run | metric | n | before % | after % | Δ points (95% CI) | p |")
    print("|---|---|---|---|---|---|---|")
    for run in runs:
        for metric in metrics:
            pairs = [
                (float(b[metric]), float(after[key][metric]))  # type: ignore[arg-type]
                for key, b in sorted(before.items())
                if key[0] == run and key in after and b.get(metric) is not None and after[key].get(metric) is not None
            ]
            if not pairs:
                continue
            a = [p[1] for p in pairs]
            b = [p[0] for p in pairs]
            diff, low, high, p = paired_bootstrap_diff(a, b)
            print(
                f"| {run} | {metric} | {len(pairs)} | {100 * sum(b) / len(b):.1f} | {100 * sum(a) / len(a):.1f} | "
                f"{100 * diff:+.1f} ({100 * low:+.1f} to {100 * high:+.1f}) | {p:.3f} |"
            )


if __name__ == "__main__":
    main()
