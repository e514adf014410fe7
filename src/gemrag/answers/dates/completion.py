"""An answer over a dated context completed from it: its dates given their years
(:mod:`~gemrag.answers.dates.years`), a date a turn was said on given the time that turn tells
(:mod:`~gemrag.answers.dates.said`), then its days that the context gives only as a week or weekend put back as that
period (:mod:`~gemrag.answers.dates.periods`). No model call; used by :mod:`gemrag.answers.answering` and
:mod:`gemrag.answers.streaming` on the answer's final text.

Source: LongMemEval (Wu et al., 2024), section 5: the memories' timestamps decide a temporal question's answer."""

from __future__ import annotations

from collections.abc import Sequence

from gemrag.answers.dates.periods import restore_periods
from gemrag.answers.dates.said import said_to_happened
from gemrag.answers.dates.years import complete_years
from gemrag.types import Hit

__all__ = ["complete_dates"]


def complete_dates(answer: str, hits: Sequence[Hit], question: str = "") -> tuple[str, list[str]]:
    """``answer`` with its dates completed from the dated context ``hits``: years first
    (:func:`~gemrag.answers.dates.years.complete_years`), then, given the ``question``, a date a turn was said on
    replaced by the time it tells (:func:`~gemrag.answers.dates.said.said_to_happened`), then periods
    (:func:`~gemrag.answers.dates.periods.restore_periods`).

    Args:
        answer: the model's answer. hits: the context it read. question: the question asked (empty: no said-on
            date is replaced).

    Returns:
        The answer (unchanged for an undated context, or when nothing needs completing) and what was completed, as
        it now reads, in that order: ``["5 July 2023", "the week of 29 May 2023"]``.

    Raises:
        ValueError: a hit's ``meta["date"]`` is not an ISO date.
    """
    text, years = complete_years(answer, hits)
    text, told = said_to_happened(text, question, hits) if question else (text, [])
    text, periods = restore_periods(text, hits)
    return text, years + told + periods
