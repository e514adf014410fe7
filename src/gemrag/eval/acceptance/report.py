"""Counts, Mann-Whitney U tests and reports of the acceptance test (Zeng, "HLGraphRAG", section 5 and Appendix).

Per strategy and run: the numbers of chokes, inaccuracies, correct replies, unjudged replies (the judge's answer
stayed malformed) and errors (retrieval or generation failed), as the paper's Figure 5.1 (means over runs) and
Figure 5.4 (chokes per run). Between each pair of neighbouring strategies (in the order given) the per-run choke
counts are compared with the Mann-Whitney U test (``scipy.stats.mannwhitneyu``; the paper's Appendix uses the
one-sided ``alternative="greater"``: "the first strategy chokes more"; the two-sided p is reported beside it). With
n runs per side and no ties the smallest one-sided p is ``1 / C(2n, n)`` (0.05 for 3 runs, 0.004 for 5), so a handful
of runs cannot show significance at 0.05 whatever the difference: the paper ran 15.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import mannwhitneyu

from gemrag.eval.judging.prompts import VERDICTS

__all__ = ["COUNT_KEYS", "markdown_acceptance", "mann_whitney", "run_counts", "summarize_acceptance"]

COUNT_KEYS = (*VERDICTS, "unjudged", "errors", "turns")


def run_counts(records: Sequence[dict[str, Any]], strategy: str, runs: int) -> list[dict[str, int]]:
    """Counts of one strategy per run ``0 .. runs - 1``: each class of :data:`VERDICTS`, ``unjudged`` (no verdict,
    no error), ``errors`` (retrieval or generation failed) and ``turns`` (records of the run)."""
    out = []
    for r in range(runs):
        counts = dict.fromkeys(COUNT_KEYS, 0)
        for rec in records:
            if rec["strategy"] != strategy or rec["run"] != r:
                continue
            counts["turns"] += 1
            if rec.get("error"):
                counts["errors"] += 1
            elif rec.get("verdict") in VERDICTS:
                counts[rec["verdict"]] += 1
            else:
                counts["unjudged"] += 1
        out.append(counts)
    return out


def mann_whitney(a: Sequence[float], b: Sequence[float]) -> dict[str, Any] | None:
    """Mann-Whitney U test of two samples (e.g. chokes per run of two strategies), shape ``(n_a,)`` and ``(n_b,)``.

    Returns:
        ``{"u", "p_greater", "p_two_sided", "n"}``: U of ``a``, the one-sided p of "``a`` tends to be greater" (the
        paper's Appendix) and the two-sided p (scipy's default method: exact for small samples without ties,
        else the normal approximation with tie correction); None when a sample is empty.
    """
    if not len(a) or not len(b):
        return None
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    greater = mannwhitneyu(x, y, alternative="greater")
    two = mannwhitneyu(x, y, alternative="two-sided")
    return {
        "u": float(greater.statistic),
        "p_greater": float(greater.pvalue),
        "p_two_sided": float(two.pvalue),
        "n": [len(x), len(y)],
    }


def summarize_acceptance(
    records: Sequence[dict[str, Any]],
    strategies: Sequence[str],
    runs: int,
    meta: dict[str, Any],
    pairs: Sequence[tuple[str, str]] | None = None,
) -> dict[str, Any]:
    """The results of an acceptance test.

    Args:
        records: the judged turns (:func:`gemrag.eval.acceptance.runner.replay`).
        strategies: run names in report order.
        runs: runs per strategy. meta: dataset, models and settings, copied into the result.
        pairs: ``(a, b)`` comparisons, each one-sided "a chokes more" as the paper's Appendix (default: neighbours
            in ``strategies``; the default rows use :data:`gemrag.eval.acceptance.runner.PAPER_PAIRS`).

    Returns:
        ``meta`` plus ``counts`` (per strategy, one dict per run, :func:`run_counts`), ``means`` (per strategy, the
        mean of each count over its complete runs and ``acceptance``, the share of judged replies that are not
        chokes), ``complete_runs`` (per strategy: runs with every turn recorded; only they enter the means and
        tests), ``comparisons`` (one per neighbouring pair: ``a``, ``b``, ``metric`` "chokes" and
        :func:`mann_whitney`'s fields) and ``records``.
    """
    turns = int(meta.get("dataset", {}).get("turns_per_run", 0))
    counts = {s: run_counts(records, s, runs) for s in strategies}
    complete = {s: [c for c in counts[s] if c["turns"] and c["turns"] >= turns] for s in strategies}
    means: dict[str, dict[str, float | None]] = {}
    for s in strategies:
        done = complete[s]
        means[s] = {k: (float(np.mean([c[k] for c in done])) if done else None) for k in COUNT_KEYS}
        judged = sum(c[v] for c in done for v in VERDICTS)
        means[s]["acceptance"] = (sum(c["inaccurate"] + c["correct"] for c in done) / judged) if judged else None
    comparisons = []
    for a, b in pairs if pairs is not None else zip(strategies, strategies[1:], strict=False):
        test = mann_whitney([c["choke"] for c in complete[a]], [c["choke"] for c in complete[b]])
        empty = dict.fromkeys(("u", "p_greater", "p_two_sided", "n"))
        comparisons.append({"a": a, "b": b, "metric": "chokes", **(test or empty)})
    return {
        **meta,
        "counts": counts,
        "complete_runs": {s: len(complete[s]) for s in strategies},
        "means": means,
        "comparisons": comparisons,
        "records": list(records),
    }


def _num(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def markdown_acceptance(results: dict[str, Any]) -> str:
    """``results.md``: the means table (the paper's Figure 5.1), chokes per run (Figure 5.4) and the Mann-Whitney
    table (Figure 5.5)."""
    ds, models, st = results["dataset"], results["models"], results["settings"]
    lines = [
        f"# Acceptance test on CMU DoG `{ds['name']}`",
        "",
        f"{ds['conversations']} conversation(s) over {ds['movies']} movie(s), {ds['turns_per_run']} generated turns "
        f"per run; {st['runs']} run(s) (seeds {st['seed']}..{st['seed'] + st['runs'] - 1}), B = {st['budget']}, "
        f"temperature {st['temperature']}. Embedder `{models['embedder']}`, LLM `{models['llm']}`, judge "
        f"`{models['judge']}`.",
        "",
        "| Strategy | Chokes | Inaccuracies | Correct | Unjudged | Errors | Acceptance | Complete runs |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in results["strategies"]:
        m = results["means"][s]
        acc = "–" if m["acceptance"] is None else f"{100 * m['acceptance']:.1f}%"
        lines.append(
            f"| {s} | {_num(m['choke'])} | {_num(m['inaccurate'])} | {_num(m['correct'])} | {_num(m['unjudged'])} "
            f"| {_num(m['errors'])} | {acc} | {results['complete_runs'][s]}/{st['runs']} |"
        )
    lines += ["", "Means per run. Acceptance: (inaccurate + correct) / judged.", "", "## Chokes per run", ""]
    lines.append("| Strategy | " + " | ".join(f"R{r + 1}" for r in range(st["runs"])) + " |")
    lines.append("|---|" + "---|" * st["runs"])
    for s in results["strategies"]:
        row = [str(c["choke"]) if c["turns"] else "–" for c in results["counts"][s]]
        lines.append(f"| {s} | " + " | ".join(row) + " |")
    lines += ["", "## Mann-Whitney U on chokes per run (one-sided: the first chokes more)", ""]
    lines += ["| A vs B | U | p (A > B, one-sided) | p (two-sided) |", "|---|---|---|---|"]
    for c in results["comparisons"]:
        lines.append(
            f"| {c['a']} vs {c['b']} | {_num(c['u'])} | {_num(c['p_greater'], 4)} | {_num(c['p_two_sided'], 4)} |"
        )
    return "\n".join(lines) + "\n"


def write_acceptance(results: dict[str, Any], out_dir: Path, stem: str = "results") -> tuple[Path, Path]:
    """Write ``<stem>.json`` (everything, records included) and ``<stem>.md`` into ``out_dir``; return them."""
    out_dir = Path(out_dir)
    json_path, md_path = out_dir / f"{stem}.json", out_dir / f"{stem}.md"
    json_path.write_text(json.dumps(results, indent=2, default=str), encoding="utf-8")
    md_path.write_text(markdown_acceptance(results), encoding="utf-8")
    return json_path, md_path
