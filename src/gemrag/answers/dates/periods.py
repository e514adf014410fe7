"""Answers over a dated context keep the period the context gives: a day in the answer that the context writes only
as the first day of a week or weekend (``"29 May 2023"`` read from ``last week (= the week of 29 May 2023)``) is put
back as that period (``"the week of 29 May 2023"``).

Time-aware reading resolves a relative expression to the period it names (:func:`~gemrag.answers.dates.expressions.
format_period`: a week by its Monday, a weekend by its Saturday), but a small reader often copies the date alone and
so claims a day the memory does not know: "When did she give the speech?" -> ``"29 May 2023"``, when all the memory
says is that it was the week of 29 May 2023 ("last week", said on 9 June). The answer should be no more precise than
its evidence (LongMemEval, Wu et al., 2024, section 5: the memories' timestamps decide a temporal answer; LoCoMo's
gold answers keep the period: "The week before 9 June 2023"). The rule, no model call:

1. the context's periods: every date written right after ``the week of`` or ``the weekend of`` in the dated context
   (read by :func:`gemrag.strategies.platform.conversation.written_date_spans`, the platform's date forms);
2. a date is a period's only when the context never writes it otherwise: not as a passage's date, a turn's stamp, a
   day an expression resolved to, nor as the start of the other kind of period;
3. each full date in the answer that is such a period's first day, and is not already written as a period, becomes
   the period (``"on 29 May 2023"`` -> ``"in the week of 29 May 2023"``; a weekend keeps ``"on"``).

A date the context writes as a day, a date without a year (see :mod:`~gemrag.answers.dates.years`, which runs first)
and an undated context (no hit with ``meta["date"]``) are never changed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date
from typing import Literal

from gemrag.answers.dates.expressions import format_period
from gemrag.strategies.platform.conversation import written_date_spans
from gemrag.types import Hit

__all__ = ["context_periods", "in_a_period", "put_time", "restore_periods"]

_PERIOD_BEFORE = re.compile(r"\bthe\s+(?P<unit>week|weekend)\s+of\s+$", re.I)
_ANY_PERIOD_BEFORE = re.compile(r"\b(?:week|weekend)\s+of\s+$", re.I)  # the answer already names a period
_ON_BEFORE = re.compile(r"\bon\s+$", re.I)
_LOOKBACK = 24  # characters before a date searched for "the weekend of "


def context_periods(hits: Sequence[Hit]) -> dict[date, str]:
    """The periods a dated context writes, by their first day, for the days it writes only as a period's start
    (rules 1-2 of the module docstring).

    Args:
        hits: the context as read (a dated context: each hit's text starts with ``(date: ...)``).

    Returns:
        ``{first day: "the week of 29 May 2023"}`` (or ``"the weekend of ..."``); empty for an undated context.
    """
    if not any("date" in h.meta for h in hits):
        return {}
    units: dict[date, set[Literal["week", "weekend"]]] = {}
    days: set[date] = set()
    for hit in hits:
        for start, _, day in written_date_spans(hit.text):
            before = _PERIOD_BEFORE.search(hit.text[max(0, start - _LOOKBACK) : start])
            if before:
                units.setdefault(day, set()).add("weekend" if before.group("unit").lower() == "weekend" else "week")
            else:
                days.add(day)
    return {
        day: format_period(day, next(iter(kinds)))  # the form the context wrote it in
        for day, kinds in units.items()
        if len(kinds) == 1 and day not in days
    }


def in_a_period(answer: str, start: int) -> bool:
    """Whether the date at ``answer[start:]`` is already written as a period's first day (``"the week of "``,
    ``"weekend of "`` right before it)."""
    return bool(_ANY_PERIOD_BEFORE.search(answer[max(0, start - _LOOKBACK) : start]))


def put_time(head: str, time: str, *, first: bool) -> str:
    """``head`` (the answer up to a date) followed by ``time`` written in that date's place: an ``"on"`` ending
    ``head`` becomes ``"in"`` unless ``time`` is a day or a weekend (``"on 29 May 2023"`` -> ``"in the week of 29
    May 2023"``, ``"in 2022"``; ``"on the weekend of ..."`` and ``"on 13 March 2024"`` keep it), and ``time`` is
    capitalized when it starts the answer (``first``)."""
    on = _ON_BEFORE.search(head)
    day = time[:1].isdigit() and " " in time  # "13 March 2024", not "2022"
    if on and not day and not time.startswith("the weekend "):
        head = head[: on.start()] + ("In " if on.group(0)[0] == "O" else "in ")
    return head + (time[0].upper() + time[1:] if first else time)


def restore_periods(answer: str, hits: Sequence[Hit]) -> tuple[str, list[str]]:
    """``answer`` with each full date that the dated context gives only as a week's or weekend's first day written as
    that period (:func:`context_periods`; the module docstring has the rules).

    Args:
        answer: the model's answer (its years already completed). hits: the context it read.

    Returns:
        The answer (unchanged when no date is a period's, always so for an undated context) and the periods put
        back as they now read (``["the week of 29 May 2023"]``), in answer order.
    """
    periods = context_periods(hits)
    if not answer or not periods:
        return answer, []
    out, done, last = [], [], 0
    for start, end, day in written_date_spans(answer):
        period = periods.get(day)
        if period is None or in_a_period(answer, start):
            continue
        out.append(put_time(answer[last:start], period, first=start == 0))
        done.append(period)
        last = end
    return "".join(out) + answer[last:], done
