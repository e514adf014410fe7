"""Paired comparisons between two published runs, kept as data (``results/paired/NAME.json``).

One evaluation compares its strategies with each other (:attr:`gemrag.eval.published.PublishedRun.comparisons`); a
setting of ``[answer]`` (the reading, context shaping, time-aware reading) is compared by running the same questions
twice, once per setting, and publishing each run. :func:`pair_published` pairs the per-question scores of the two
published records (:func:`gemrag.eval.published.load_records`) and writes a :class:`PairedRuns`: per metric both
means and the paired bootstrap of ``after`` minus ``before`` (:func:`gemrag.eval.stats.paired_bootstrap_diff`, 10,000
resamples, seed 0, questions in sorted id order, as ``benchmarks/paired_runs.py`` over run directories). The
documentation's ``<!-- result-pair: NAME METRIC FORMAT -->`` marks are generated from these records
(:mod:`gemrag.eval.publish_docs`).

A side of a pairing may pool several published runs over disjoint questions (``A1+A2``: the same protocol measured
in parts, e.g. one conversation and then two others): their per-question records are taken together, as one run's
would be, and a question found in two parts of one side is refused. A pairing also keeps what answering cost on each
side over the paired questions (:class:`gemrag.eval.published_costs.Costs`, ``costs["before"]`` and
``costs["after"]``), so the documentation shows the pooled tokens and seconds from the records too.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gemrag.errors import InputError
from gemrag.eval.publish_origin import check_publish_name
from gemrag.eval.published import (
    N_RESAMPLES,
    SCORED_METRICS,
    SEED,
    Comparison,
    load_published,
    load_records,
    per_question,
)
from gemrag.eval.published_costs import Costs, answer_costs
from gemrag.eval.stats import paired_bootstrap_diff

__all__ = [
    "PAIRED_DIR",
    "PairedMetric",
    "PairedRuns",
    "answers_changed",
    "load_paired",
    "pair_published",
    "paired_names",
    "write_paired",
]

#: The folder of ``results/`` holding the paired comparisons.
PAIRED_DIR = "paired"


class PairedMetric(BaseModel):
    """One metric of a paired comparison.

    Attributes:
        before, after: the two runs' means over the paired questions, in [0, 1].
        comparison: the paired bootstrap of ``after`` minus ``before`` (:class:`gemrag.eval.published.Comparison`:
            its ``strategy`` is the ``after`` record's name, its ``reference`` the ``before`` one's).
        higher, lower: how many paired questions scored higher (lower) after than before (questions; None in a
            pairing written before they were counted).
    """

    model_config = ConfigDict(extra="forbid")
    before: float
    after: float
    comparison: Comparison
    higher: int | None = None
    lower: int | None = None


class PairedRuns(BaseModel):
    """A paired comparison of two published runs over the questions both scored (``results/paired/NAME.json``).

    Attributes:
        name: the record's name. before, after: the published records' names (``results/NAME.json``); several
            runs pooled over disjoint questions are joined by ``+`` (``locomo26-plain+locomo3041-plain``).
        strategies: the strategy of ``before`` and of ``after`` that are paired (``["fused", "fused"]``).
        categories: the question categories kept (``[]``: all). date: when the pairing was written (ISO 8601, UTC).
        metrics: per metric of :data:`gemrag.eval.published.SCORED_METRICS` both runs scored, a :class:`PairedMetric`.
        costs: ``"before"`` and ``"after"``: what answering cost on each side, over the records of the questions
            both sides have (``{}`` in a pairing written before costs were kept).
        answers_changed: how many of the questions both sides answered have a different answer after than before,
            case and spacing aside (:func:`answers_changed`; None in a pairing written before they were counted, or
            when a side has no answers, as a retrieval-only run).
    """

    model_config = ConfigDict(extra="forbid")
    name: str
    before: str
    after: str
    strategies: list[str]
    categories: list[str] = Field(default_factory=list)
    date: str
    metrics: dict[str, PairedMetric]
    costs: dict[str, Costs] = Field(default_factory=dict)
    answers_changed: int | None = None

    def metric(self, metric: str) -> PairedMetric:
        """The paired figures of one metric.

        Raises:
            KeyError: the pairing has no such metric (the message names those it has).
        """
        if metric not in self.metrics:
            raise KeyError(f"paired {self.name}: no {metric!r} (has {', '.join(self.metrics) or 'none'})")
        return self.metrics[metric]


def _names(side: str | Sequence[str]) -> list[str]:
    """The published runs of one side: ``"A1+A2"`` or ``["A1", "A2"]`` -> ``["A1", "A2"]``."""
    names = side.split("+") if isinstance(side, str) else [n for part in side for n in part.split("+")]
    if not names or not all(names) or len(set(names)) < len(names):
        raise InputError(f"{side!r}: give published records' names, several (each once) joined by '+'")
    return names


def _side(names: Sequence[str], strategy: str | None, root: Path, keep: set[str]) -> tuple[str, list[dict[str, Any]]]:
    """``(strategy, records)`` of one side: the strategy's records of every run named (default: each run's first
    strategy, which must be the same in all), in the categories kept.

    Raises:
        InputError: a missing record or strategy, or a question found in two of the runs (pooling needs disjoint
            questions).
    """
    runs = [load_published(n, root) for n in names]
    chosen = strategy or next(iter(runs[0].strategies), "")
    records: list[dict[str, Any]] = []
    owner: dict[str, str] = {}
    for run in runs:
        if chosen not in run.strategies:
            raise InputError(f"{run.name}: no strategy {chosen!r} (has {', '.join(run.strategies)})")
        mine = [r for r in load_records(run, root) if r["strategy"] == chosen]
        mine = [r for r in mine if not keep or str(r.get("category")) in keep]
        for q in dict.fromkeys(str(r["question_id"]) for r in mine):
            if owner.setdefault(q, run.name) != run.name:
                raise InputError(f"question {q!r} is in {owner[q]} and {run.name}: pool runs of disjoint questions")
        records += mine
    return chosen, records


def pair_published(
    name: str,
    before: str | Sequence[str],
    after: str | Sequence[str],
    root: Path,
    *,
    strategies: Sequence[str] | None = None,
    categories: Sequence[str] = (),
    metrics: Sequence[str] = SCORED_METRICS,
) -> PairedRuns:
    """Pair two published runs' per-question scores (each side possibly several runs pooled).

    Args:
        name: the pairing's name. before, after: published records in ``root``: one name, or several over disjoint
            questions (``"A1+A2"`` or ``["A1", "A2"]``) whose records are pooled. strategies: the strategy of
            ``before`` and of ``after`` to pair (default: the first strategy of each side's first run).
            categories: keep only questions of these categories (``()``: all). metrics: the metrics to pair (those
            both sides scored).

    Returns:
        The :class:`PairedRuns` (not written; see :func:`write_paired`), with both sides' costs over the questions
        both have.

    Raises:
        InputError: a missing record or strategy, a bad name, a question in two runs of one side, or no metric
            scored on a shared question.
    """
    check_publish_name(name)
    names = [_names(before), _names(after)]
    labels = ["+".join(n) for n in names]
    if strategies is not None and len(strategies) != 2:
        raise InputError(f"paired {name}: give two strategies (of {labels[0]} and of {labels[1]}), not {strategies}")
    keep = {str(c) for c in categories}
    picked = [_side(n, strategies[i] if strategies else None, root, keep) for i, n in enumerate(names)]
    sides = [records for _, records in picked]
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
                strategy=labels[1], reference=labels[0], metric=metric, n=len(common), diff=diff, low=low, high=high,
                p=p,
            ),
            higher=sum(x > y for x, y in zip(xs, ys, strict=True)),
            lower=sum(x < y for x, y in zip(xs, ys, strict=True)),
        )  # fmt: skip
    if not out:
        raise InputError(f"paired {name}: {labels[0]} and {labels[1]} share no scored question")
    shared = {str(r["question_id"]) for r in sides[0]} & {str(r["question_id"]) for r in sides[1]}
    costs = {
        side: answer_costs(r for r in records if str(r["question_id"]) in shared)
        for side, records in zip(("before", "after"), sides, strict=True)
    }
    return PairedRuns(
        name=name,
        before=labels[0],
        after=labels[1],
        strategies=[strategy for strategy, _ in picked],
        categories=sorted(keep),
        date=datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
        metrics=out,
        costs=costs,
        answers_changed=answers_changed(sides[0], sides[1]),
    )


def _answers(records: Sequence[dict[str, Any]]) -> dict[str, str]:
    """``{question id: answer}`` of the records that have an answer, case and runs of spaces aside (the first run's
    answer when a question was answered in several)."""
    out: dict[str, str] = {}
    for r in records:
        if isinstance(r.get("answer"), str):
            out.setdefault(str(r["question_id"]), " ".join(str(r["answer"]).lower().split()))
    return out


def answers_changed(before: Sequence[dict[str, Any]], after: Sequence[dict[str, Any]]) -> int | None:
    """How many questions answered on both sides have a different answer ``after`` than ``before``, case and runs of
    spaces aside ("Latin" and "latin" are the same answer); None when either side has no answer (retrieval only)."""
    b, a = _answers(before), _answers(after)
    if not a or not b:
        return None
    return sum(a[q] != b[q] for q in set(a) & set(b))


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
