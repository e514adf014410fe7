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

From published records instead of run directories (``results/NAME.json`` and its per-question records; no run
directory needed), and with ``--write NAME`` kept as data in ``results/paired/NAME.json``
(:mod:`gemrag.eval.paired`), whose figures the documentation's ``<!-- result-pair: NAME ... -->`` marks show:

    python benchmarks/paired_runs.py --published covid10-plain covid10-shape --metric f1 --metric em \
        --write covid10-shape-vs-plain

A side may pool several published runs of disjoint questions, joined by ``+`` (the same protocol measured in parts;
a question found in two of them is refused); the pairing keeps both sides' costs over the paired questions too:

    python benchmarks/paired_runs.py --published locomo26-temporal-plain+locomo3041-temporal-plain \
        locomo26-temporal-dates+locomo3041-temporal-dates --metric f1 --metric em --write locomo-temporal-dates-vs-plain
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from gemrag.errors import InputError
from gemrag.eval.paired import pair_published, write_paired
from gemrag.eval.stats import paired_bootstrap_diff


def _records(directory: Path) -> dict[tuple[str, str], dict[str, object]]:
    """``(strategy, question_id) -> record`` of ``directory/records.jsonl`` (a later record of a pair wins)."""
    out = {}
    for line in (directory / "records.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            out[(r["strategy"], r["question_id"])] = r
    return out


def _published(args: argparse.Namespace) -> int:
    """Pair two published records (``args.before``/``args.after`` are record names, several pooled joined by ``+``);
    print one row per metric and the costs of both sides and, with ``--write``, keep the pairing in
    ``results/paired/``. Returns the exit status (2 on bad input)."""
    try:
        paired = pair_published(
            args.write or f"{args.after}-vs-{args.before}".replace("+", "_"),
            str(args.before),
            str(args.after),
            args.results,
            strategies=args.pair,
            categories=[c.strip() for c in args.category.split(",")] if args.category else (),
            metrics=[("accuracy" if m == "correct" else m) for m in args.metric or ["recall@5"]],
        )
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("| run | metric | n | before % | after % | Δ points (95% CI) | p | higher / lower |")
    print("|---|---|---|---|---|---|---|---|")
    for metric, m in paired.metrics.items():
        c = m.comparison
        print(
            f"| {paired.after} vs {paired.before} | {metric} | {c.n} | {100 * m.before:.1f} | {100 * m.after:.1f} | "
            f"{100 * c.diff:+.1f} ({100 * c.low:+.1f} to {100 * c.high:+.1f}) | {c.p:.3f} | {m.higher} / {m.lower} |"
        )
    if paired.answers_changed is not None:
        print(f"answers changed (case aside): {paired.answers_changed}")
    for side, costs in paired.costs.items():
        print(
            f"{side}: {costs.answers} answers, LLM calls {costs.llm_calls}, tokens prompt {costs.prompt_tokens} / "
            f"completion {costs.completion_tokens}, median answer s {costs.answer_seconds} (n {costs.answer_seconds_n})"
        )
    if args.write:
        print(f"written: {write_paired(paired, args.results)}")
    return 0


def main() -> int:
    """Parse the arguments and print one markdown table row per (run, metric)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", help="output directory (or, with --published, a record's name; A1+A2 pools)")
    parser.add_argument("after", help="output directory (or, with --published, a record's name; B1+B2 pools)")
    parser.add_argument("--published", action="store_true", help="BEFORE and AFTER name records in --results")
    parser.add_argument("--results", type=Path, default=Path("results"), help="published records (default: results)")
    parser.add_argument("--write", metavar="NAME", help="with --published: keep the pairing as results/paired/NAME")
    parser.add_argument("--metric", action="append", help="record key: recall@2, recall@5, f1, em, correct")
    parser.add_argument("--pair", nargs=2, metavar=("BEFORE_RUN", "AFTER_RUN"), help="compare these two runs")
    parser.add_argument("--category", help="comma-separated question categories to keep (default: all)")
    args = parser.parse_args()
    if args.published:
        return _published(args)
    metrics = args.metric or ["recall@5"]
    before, after = _records(Path(args.before)), _records(Path(args.after))
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
