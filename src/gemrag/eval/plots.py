"""PNG plots of an evaluation (matplotlib, Agg; no display needed).

* ``<metric>.png`` for each score metric with data (accuracy, F1, EM, Recall@2, Recall@5, evidence recall, HARD
  accuracy, judged): one bar per strategy with its 95% bootstrap interval as error bars;
* ``ablation_<key>.png`` for each ablated setting (``questions``: the configured strategy's, ``remem.top_k``: a named
  strategy's): the primary metric against the swept value with
  error bars, and the share of summary nodes on a second axis (the GEM-RAG paper's Figure 2).

matplotlib is an optional dependency (``pip install 'gemrag[eval]'``); without it :func:`write_plots` warns
and writes nothing.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gemrag.eval.aggregates import METRICS, configured_strategy
from gemrag.eval.results import EvalResults
from gemrag.eval.variants import sweep_label

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["write_plots"]

_LABELS = {
    "accuracy": "accuracy (%)",
    "hard_accuracy": "HARD accuracy (%)",
    "f1": "answer F1 (%)",
    "em": "exact match (%)",
    "recall@2": "passage Recall@2 (%)",
    "recall@5": "passage Recall@5 (%)",
    "evidence_recall": "evidence recall (%)",
    "judged": "judged factual correctness (%)",
}


def _label(metric: str) -> str:
    """The axis label of a metric of :data:`gemrag.eval.aggregates.METRICS` (one without a label: its table header)."""
    return _LABELS.get(metric, f"{METRICS.get(metric, metric)} (%)")


def _errors(cis: list[dict[str, float]]) -> tuple[list[float], list[list[float]]]:
    means = [100 * c["mean"] for c in cis]
    below = [100 * (c["mean"] - c["low"]) for c in cis]
    above = [100 * (c["high"] - c["mean"]) for c in cis]
    return means, [below, above]


def _bar_plot(ax: Axes, names: list[str], cis: list[dict[str, float]], label: str, reference: str | None) -> None:
    """Bars of the runs ``names`` with their CIs; the reference run and its variants (``reference[...]``) in blue."""
    means, yerr = _errors(cis)
    positions = list(range(len(names)))
    ours = [reference is not None and (n == reference or n.startswith(f"{reference}[")) for n in names]
    colors = ["#1f77b4" if highlighted else "#8c8c8c" for highlighted in ours]
    ax.bar(positions, means, yerr=yerr, capsize=5, color=colors, edgecolor="black", linewidth=0.6)
    for x, mean, c in zip(positions, means, cis, strict=True):
        ax.annotate(
            f"{mean:.1f}", (x, 100 * c["high"]), xytext=(0, 3), textcoords="offset points", ha="center", fontsize=9
        )
    tilt = len(names) > 4 or max(len(n) for n in names) > 12
    ax.set_xticks(positions, names, rotation=25 if tilt else 0, ha="right" if tilt else "center")
    ax.set_ylabel(label)
    ax.set_ylim(0, min(110, max(100 * c["high"] for c in cis) * 1.15 + 5))
    ax.grid(axis="y", alpha=0.3)


def _sweep_plot(ax: Axes, param: str, rows: list[dict[str, Any]], label: str) -> None:
    """Draw the metric (``label``) of the sweep ``rows`` against the swept value, named ``param`` on the x axis."""
    values = [r["value"] for r in rows]
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
    xs = values if numeric else list(range(len(values)))
    means, yerr = _errors([r["metric"] for r in rows])
    line = ax.errorbar(xs, means, yerr=yerr, marker="o", capsize=5, color="#1f77b4", label=label, zorder=3)
    ax.set_xlabel(param)
    ax.set_ylabel(label)
    ax.set_ylim(0, 105)
    if not numeric:
        ax.set_xticks(xs, [str(v) for v in values])
        ax.set_xlim(-0.5, len(values) - 0.5)
    else:
        ax.set_xticks(xs)
    ax.grid(alpha=0.3)
    shares = [r["summary_share"] for r in rows]
    if any(s is not None for s in shares):
        twin = ax.twinx()
        (share,) = twin.plot(xs, [100 * (s or 0.0) for s in shares], "s--", color="#d62728", label="% summary nodes")
        twin.set_ylabel("% summary nodes in context", color="#d62728")
        twin.set_ylim(0, 105)
        ax.legend(handles=[line, share], loc="lower right", fontsize=9)


def write_plots(results: EvalResults) -> list[Path]:
    """Write the PNGs into ``results.out_dir`` and return their paths (none without matplotlib)."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        warnings.warn("plots need matplotlib: pip install 'gemrag[eval]'", stacklevel=2)
        return []
    s, d = results.summary, results.dataset
    written: list[Path] = []
    for metric in METRICS:
        names = [n for n in results.runs if s.aggregates[n][metric]]
        if not names:
            continue
        cis = [s.aggregates[n][metric] for n in names]
        width = max(5.0, 0.12 * sum(max(len(n), 6) for n in names) + 2)
        fig = Figure(figsize=(min(width, 14.0), 4.5), layout="constrained")
        ax = fig.subplots()
        _bar_plot(ax, names, cis, _label(metric), s.reference)
        n = max(c["n"] for c in cis)
        title = _label(metric).removesuffix(" (%)")
        ax.set_title(f"{d['name']}: {title}\n95% bootstrap CI, n = {n} questions, B = {results.budget}", fontsize=11)
        path = results.out_dir / f"{metric.replace('@', '_at_')}.png"
        fig.savefig(path, dpi=120)
        written.append(path)
    for param, rows in s.sweeps.items():
        rows = [r for r in rows if r["metric"]]
        if not rows or s.metric is None:
            continue
        fig = Figure(figsize=(6.0, 4.2), layout="constrained")
        ax = fig.subplots()
        swept = sweep_label(param, configured_strategy(results))
        _sweep_plot(ax, swept, rows, _label(s.metric))
        title = _label(s.metric).removesuffix(" (%)")
        ax.set_title(f"{d['name']}: {title} vs {swept}\n95% bootstrap CI, B = {results.budget}", fontsize=11)
        path = results.out_dir / f"ablation_{param}.png"
        fig.savefig(path, dpi=120)
        written.append(path)
    return written
