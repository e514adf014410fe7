"""Repeated runs of a QA evaluation (``gemrag eval --runs N``): how each run samples its answers, and the mean and
spread of each score over the runs.

UnWeaver's paper (section 3) reports Factual Correctness "over 5 evaluation runs in order to get variance of the mean
Factual Correctness for each method". In gemrag the chunks, the index and the retrieval are deterministic (the same
for every run: LLM calls of a build are greedy and cached), so what varies between runs is the answer: with N > 1
each run ``r`` samples the free-form answers at :data:`ANSWER_TEMPERATURE` with seed ``seed + r`` (N = 1 stays
greedy, as before the option). The judge stays greedy. Multiple-choice answers are structured and greedy, so runs
would repeat themselves: ``--runs`` applies to free-form kinds only.

Cost: each extra run repeats every answer and its judgement (about 1 answer call and 3 judge calls per question and
strategy; the reference's decomposition is cached after the first), plus the retrievals (milliseconds); nothing of
the build.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["ANSWER_TEMPERATURE", "RUN_METRICS", "Sampling", "repeats_markdown", "run_spread"]

#: Sampling temperature of the answers when ``runs > 1`` (the acceptance test's replies use the same).
ANSWER_TEMPERATURE = 0.7
#: Record keys whose per-run means get a spread (answer scores: the retrieval is the same in every run).
RUN_METRICS = ("f1", "em", "judged", "accuracy")


@dataclass(frozen=True)
class Sampling:
    """How the answers of the ``runs`` repetitions are drawn: run ``r`` samples at ``temperature`` with seed
    ``seed + r`` when ``runs > 1``; a single run is greedy.

    Raises:
        ValueError: ``runs < 1``, ``seed < 0`` or a negative temperature.
    """

    runs: int = 1
    seed: int = 0
    temperature: float = ANSWER_TEMPERATURE

    def __post_init__(self) -> None:
        if self.runs < 1 or self.seed < 0 or self.temperature < 0:
            raise ValueError("runs must be >= 1, seed >= 0 and temperature >= 0")

    def of(self, run: int) -> tuple[float, int | None]:
        """``(temperature, seed)`` of run number ``run`` (0-based): ``(0.0, None)`` for a single greedy run."""
        return (0.0, None) if self.runs == 1 else (self.temperature, self.seed + run)

    def fingerprint(self) -> dict[str, Any]:
        """What the records depend on, for the output directory's ``run.json`` (``{}`` for one greedy run, as before
        the option existed)."""
        if self.runs == 1:
            return {}
        return {"sampling": {"temperature": self.temperature, "seed": self.seed}}


def run_spread(records: Sequence[dict[str, Any]], runs: int) -> dict[str, dict[str, Any]]:
    """Mean and spread over the runs of each of :data:`RUN_METRICS`, for one strategy's records.

    Args:
        records: the strategy's records (``run`` 0 .. runs - 1; a record without ``run`` is run 0).
        runs: the number of runs.

    Returns:
        ``{metric: {"per_run": [mean of run 0, ...], "mean", "std" (sample standard deviation of the per-run
        means; 0 for one run), "min", "max", "n" (questions per run, the smallest)}}`` for the metrics some record
        has (scores in [0, 1]); a run without any score of a metric leaves that metric out.
    """
    out: dict[str, dict[str, Any]] = {}
    for metric in RUN_METRICS:
        per_run: list[float] = []
        sizes: list[int] = []
        for r in range(runs):
            values = [_value(rec, metric) for rec in records if int(rec.get("run", 0)) == r]
            scores = [v for v in values if v is not None]
            if not scores:
                break
            per_run.append(sum(scores) / len(scores))
            sizes.append(len(scores))
        if len(per_run) != runs:
            continue
        std = statistics.stdev(per_run) if runs > 1 else 0.0
        out[metric] = {"per_run": per_run, "mean": statistics.fmean(per_run), "std": std}
        out[metric] |= {"min": min(per_run), "max": max(per_run), "n": min(sizes)}
    return out


def _value(rec: dict[str, Any], metric: str) -> float | None:
    value = rec.get("correct") if metric == "accuracy" else rec.get(metric)
    return None if value is None else float(value)


def repeats_markdown(repeats: dict[str, dict[str, dict[str, Any]]], runs: int) -> list[str]:
    """The report's section of :func:`run_spread` per strategy: mean ± std (min–max) in %, one column per metric;
    ``[]`` for a single run."""
    if runs <= 1 or not repeats:
        return []
    metrics = [m for m in RUN_METRICS if any(m in spread for spread in repeats.values())]
    names = {"f1": "F1", "em": "EM", "judged": "Judged", "accuracy": "Acc"}
    lines = ["", f"## Over {runs} runs (answers sampled, seed per run): mean ± std (min–max), %", ""]
    lines += ["| RAG | " + " | ".join(names[m] for m in metrics) + " |", "|---|" + "---|" * len(metrics)]
    for name, spread in repeats.items():
        cells = []
        for m in metrics:
            s = spread.get(m)
            cells.append(
                "—"
                if s is None
                else f"{100 * s['mean']:.1f} ± {100 * s['std']:.1f} ({100 * s['min']:.1f}–{100 * s['max']:.1f})"
            )
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines
