"""What answering cost in a published run, computed from its per-question records alone.

A published run keeps, per strategy, a :class:`Costs` block beside its metrics (``results/NAME.json``,
:class:`gemrag.eval.published.StrategyResult`), computed by :func:`answer_costs` from the records of
``NAME.records.jsonl.gz`` when the run is published, and recomputed from those records alone for a run published
before the block existed (``python -m gemrag.eval.publish --refresh-costs NAME``). The documentation shows these
figures through its marks (``<!-- result: NAME STRATEGY costs.prompt_tokens -->``, :mod:`gemrag.eval.publish_docs`),
never typed by hand.

Each figure is per answer record (one question answered once; with ``--runs N`` each run's answer is a record):

* ``llm_calls``, ``prompt_tokens``, ``completion_tokens``: means over the records with an answer (tokens count
  every LLM call the answer made, a cached call with the usage of its original call, :mod:`gemrag.eval.costs`);
* ``answer_seconds``: the median wall-clock seconds of an answer over the records none of whose LLM calls came from
  the cache (``llm_cached == 0``: a cached answer takes milliseconds and says nothing of the model's speed), with
  their number ``answer_seconds_n``;
* ``retrieval_seconds_p50``/``_p95``: the percentiles of retrieval seconds over every record that has one;
* ``words_before``/``words_after``/``duplicates``: the words of the context before and after context shaping and the
  passages it merged away, means over the records whose reading reports them (``[answer] shape``), else ``None``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from statistics import mean, median
from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["COST_FORMATS", "Costs", "answer_costs", "cost_value"]

#: Every figure of :class:`Costs` a mark may show, with its default format (a Python format spec) and the count of
#: records it is computed over.
COST_FORMATS: dict[str, tuple[str, str]] = {
    "llm_calls": (".2f", "answers"),
    "prompt_tokens": (".0f", "answers"),
    "completion_tokens": (".1f", "answers"),
    "answer_seconds": (".1f", "answer_seconds_n"),
    "retrieval_seconds_p50": (".3f", "retrieval_n"),
    "retrieval_seconds_p95": (".3f", "retrieval_n"),
    "words_before": (".0f", "words_n"),
    "words_after": (".0f", "words_n"),
    "duplicates": (".2f", "words_n"),
}


class Costs(BaseModel):
    """One strategy's answer costs in a published run (module docstring); a figure without records is ``None``.

    Attributes:
        answers: records with an answer (the n of the means).
        llm_calls: LLM calls per answer (mean). prompt_tokens, completion_tokens: tokens per answer (means).
        answer_seconds: median seconds of an answer made without a cached LLM call; answer_seconds_n: those records.
        cached_answers: answers with at least one LLM call from the cache (left out of ``answer_seconds``).
        retrieval_seconds_p50, retrieval_seconds_p95: retrieval seconds (percentiles); retrieval_n: records timed.
        words_before, words_after: words of the context before and after context shaping (means); duplicates:
            passages merged away per answer (mean); words_n: records whose reading reports them.
    """

    model_config = ConfigDict(extra="forbid")
    answers: int
    llm_calls: float | None = None
    prompt_tokens: float | None = None
    completion_tokens: float | None = None
    answer_seconds: float | None = None
    answer_seconds_n: int = 0
    cached_answers: int = 0
    retrieval_seconds_p50: float | None = None
    retrieval_seconds_p95: float | None = None
    retrieval_n: int = 0
    words_before: float | None = None
    words_after: float | None = None
    duplicates: float | None = None
    words_n: int = 0


def _mean(values: Sequence[float], digits: int = 3) -> float | None:
    return round(mean(values), digits) if values else None


def _number(value: Any) -> float | None:
    """A record's numeric field as a float (``None`` when missing or not a number)."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def answer_costs(records: Iterable[Mapping[str, Any]]) -> Costs:
    """The :class:`Costs` of one strategy's published per-question records.

    Args:
        records: published records (``answer``, ``llm_calls``, ``llm_cached``, ``tokens.prompt_tokens`` and
            ``completion_tokens``, ``answer_seconds``, ``retrieval_seconds``, ``reading.words_before`` /
            ``words_after`` / ``duplicates``); a record without ``answer`` (retrieval only, or a failed retrieval)
            counts for the retrieval seconds alone.

    Returns:
        The costs; means rounded to 3 decimals, seconds to 6.
    """
    import numpy as np

    rows = list(records)
    answered = [r for r in rows if r.get("answer") is not None]
    tokens = [r.get("tokens") or {} for r in answered]
    fresh = [r for r in answered if r.get("llm_cached") == 0]  # a record without the count is not known fresh
    seconds = [s for r in fresh if (s := _number(r.get("answer_seconds"))) is not None]
    retrieval = [s for r in rows if (s := _number(r.get("retrieval_seconds"))) is not None]
    readings = [r["reading"] for r in answered if isinstance(r.get("reading"), dict)]
    shaped = [s for s in readings if "words_before" in s and "words_after" in s]
    p50, p95 = (float(x) for x in np.percentile(retrieval, [50, 95])) if retrieval else (None, None)
    return Costs(
        answers=len(answered),
        llm_calls=_mean([c for r in answered if (c := _number(r.get("llm_calls"))) is not None]),
        prompt_tokens=_mean([c for t in tokens if (c := _number(t.get("prompt_tokens"))) is not None]),
        completion_tokens=_mean([c for t in tokens if (c := _number(t.get("completion_tokens"))) is not None]),
        answer_seconds=round(median(seconds), 6) if seconds else None,
        answer_seconds_n=len(seconds),
        cached_answers=sum(1 for r in answered if (_number(r.get("llm_cached")) or 0) > 0),
        retrieval_seconds_p50=None if p50 is None else round(p50, 6),
        retrieval_seconds_p95=None if p95 is None else round(p95, 6),
        retrieval_n=len(retrieval),
        words_before=_mean([float(s["words_before"]) for s in shaped]),
        words_after=_mean([float(s["words_after"]) for s in shaped]),
        duplicates=_mean([float(len(s.get("duplicates") or [])) for s in shaped]),
        words_n=len(shaped),
    )


def cost_value(costs: Costs | None, field: str, owner: str) -> tuple[float, int]:
    """``(value, n)`` of one figure of ``costs`` (a key of :data:`COST_FORMATS`) and the records behind it.

    Args:
        owner: what the costs belong to, for the message (``"covid10-plain: fused"``).

    Raises:
        KeyError: no such figure, no costs block (a record published before it: refresh it), or a figure without
            records (``None``); the message says which.
    """
    if field not in COST_FORMATS:
        raise KeyError(f"{owner}: no cost {field!r} (costs are {', '.join(COST_FORMATS)})")
    if costs is None:
        raise KeyError(
            f"{owner}: no costs block (written before costs were kept: python -m gemrag.eval.publish --refresh-costs "
            "NAME for a run, benchmarks/paired_runs.py --published ... --write NAME for a pairing)"
        )
    value = getattr(costs, field)
    if value is None:
        raise KeyError(f"{owner}: no record gives {field!r}")
    return float(value), int(getattr(costs, COST_FORMATS[field][1]))
