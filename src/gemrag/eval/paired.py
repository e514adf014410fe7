"""Paired comparisons between two published runs, kept as data (``results/paired/NAME.json``).

One evaluation compares its strategies with each other (:attr:`gemrag.eval.published.PublishedRun.comparisons`); a
setting of ``[answer]`` (the reading, context shaping, time-aware reading) is compared by running the same questions
twice, once per setting, and publishing each run. :func:`pair_published` pairs the per-question scores of the two
published records (:func:`gemrag.eval.published.load_records`) and writes a :class:`PairedRuns`: per metric both
means and the paired bootstrap of ``after`` minus ``before`` (:func:`gemrag.eval.stats.paired_bootstrap_diff`, 10,000
resamples, seed 0, questions in sorted id order, as ``benchmarks/paired_runs.py`` over run directories). The
documentation's ``<!-- result-pair: NAME METRIC FORMAT -->`` marks are generated from these records
(:mod:`gemrag.eval.publish_docs`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gemrag.errors import InputError
from gemrag.eval.publish import check_publish_name
from gemrag.eval.published import (
    N_RESAMPLES,
    SCORED_METRICS,
    SEED,
    Comparison,
    load_published,
    load_records,
    per_question,
)
from gemrag.eval.stats import paired_bootstrap_diff

__all__ = ["PAIRED_DIR", "PairedMetric", "PairedRuns", "load_paired", "pair_published", "paired_names", "write_paired"]

#: The folder of ``results/`` holding the paired comparisons.
PAIRED_DIR = "paired"


class PairedMetric(BaseModel):
    """One metric of a paired comparison.

    Attributes:
        before, after: the two runs' means over the paired questions, in [0, 1].
        comparison: the paired bootstrap of ``after`` minus ``before`` (:class:`gemrag.eval.published.Comparison`:
            its ``strategy`` is the ``after`` record's name, its ``reference`` the ``before`` one's).
    """

    model_config = ConfigDict(extra="forbid")
    before: float
    after: float
    comparison: Comparison


class PairedRuns(BaseModel):
    """A paired comparison of two published runs over the questions both scored (``results/paired/NAME.json``).

    Attributes:
        name: the record's name. before, after: the two published records' names (``results/NAME.json``).
        strategies: the strategy of ``before`` and of ``after`` that are paired (``["fused", "fused"]``).
        categories: the question categories kept (``[]``: all). date: when the pairing was written (ISO 8601, UTC).
        metrics: per metric of :data:`gemrag.eval.published.SCORED_METRICS` both runs scored, a :class:`PairedMetric`.
    """

    model_config = ConfigDict(extra="forbid")
    name: str
    before: str
    after: str
    strategies: list[str]
    categories: list[str] = Field(default_factory=list)
    date: str
    metrics: dict[str, PairedMetric]

    def metric(self, metric: str) -> PairedMetric:
        """The paired figures of one metric.

        Raises:
            KeyError: the pairing has no such metric (the message names those it has).
        """
        if metric not in self.metrics:
            raise KeyError(f"paired {self.name}: no {metric!r} (has {', '.join(self.metrics) or 'none'})")
        return self.metrics[metric]


def pair_published(
    name: str,
    before: str,
    after: str,
    root: Path,
    *,
    strategies: Sequence[str] | None = None,
    categories: Sequence[str] = (),
    metrics: Sequence[str] = SCORED_METRICS,
) -> PairedRuns:
    """Pair two published runs' per-question scores.

    Args:
        name: the pairing's name. before, after: published records in ``root``. strategies: the strategy of
            ``before`` and of ``after`` to pair (default: the first strategy of each). categories: keep only
            questions of these categories (``()``: all). metrics: the metrics to pair (those both runs scored).

    Returns:
        The :class:`PairedRuns` (not written; see :func:`write_paired`).

    Raises:
        InputError: a missing record or strategy, a bad name, or no metric scored on a shared question.
    """
    check_publish_name(name)
    runs = [load_published(before, root), load_published(after, root)]
    chosen = list(strategies) if strategies else [next(iter(r.strategies), "") for r in runs]
    if len(chosen) != 2:
        raise InputError(f"paired {name}: give two strategies (of {before} and of {after}), not {chosen}")
    for run, strategy in zip(runs, chosen, strict=True):
        if strategy not in run.strategies:
            raise InputError(f"{run.name}: no strategy {strategy!r} (has {', '.join(run.strategies)})")
    keep = {str(c) for c in categories}
    sides = []
    for run, strategy in zip(runs, chosen, strict=True):
        records = [r for r in load_records(run, root) if r["strategy"] == strategy]
        sides.append([r for r in records if not keep or str(r.get("category")) in keep])
    out: dict[str, PairedMetric] = {}
    for metric in metrics:
        b, a = per_question(sides[0], metric), per_question(sides[1], metric)
        common = sorted(set(a) & set(b))
        if not common:
            continue
        xs, ys = [a[q] for q in common], [b[q] for q in common]
        diff, low, high, p = paired_bootstrap_diff(xs, ys, n_resamples=N_RESAMPLES, seed=SEED)
        out[metric] = PairedMetric(
            before=sum(ys) / len(ys),
            after=sum(xs) / len(xs),
            comparison=Comparison(
                strategy=after, reference=before, metric=metric, n=len(common), diff=diff, low=low, high=high, p=p
            ),
        )
    if not out:
        raise InputError(f"paired {name}: {before} and {after} share no scored question")
    return PairedRuns(
        name=name,
        before=before,
        after=after,
        strategies=chosen,
        categories=sorted(keep),
        date=datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
        metrics=out,
    )


def write_paired(paired: PairedRuns, root: Path) -> Path:
    """Write ``root/paired/NAME.json`` and return its path."""
    path = root / PAIRED_DIR / f"{paired.name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(paired.model_dump_json(indent=1) + "\n", encoding="utf-8")
    return path


def paired_names(root: Path) -> list[str]:
    """The names of the paired comparisons in ``root/paired``, sorted."""
    folder = root / PAIRED_DIR
    return sorted(p.stem for p in folder.glob("*.json")) if folder.is_dir() else []


def load_paired(name: str, root: Path) -> PairedRuns:
    """Read ``root/paired/NAME.json``.

    Raises:
        InputError: missing, not JSON or not a :class:`PairedRuns` (the message names the file).
    """
    path = root / PAIRED_DIR / f"{name}.json"
    try:
        return PairedRuns.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError as exc:
        raise InputError(f"{path}: no paired comparison named {name!r} (has {', '.join(paired_names(root))})") from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, ValidationError) as exc:
        raise InputError(f"{path}: not a paired comparison ({exc})") from exc
