"""Answers over a dated context get absolute dates: a date in the answer without its year ("5 July", "July 5th",
"in July") is given the year the dated context shows for it.

Time-aware reading promises absolute dates (LongMemEval, Wu et al., 2024, section 5: the timestamps of the memories
decide the answer to a temporal question; Temporal Semantic Memory, 2026: memories dated by when things happened), but
a small reader often copies the day and month and drops the year the passage's date carries ("When did she go?" ->
"5 July", read from ``(date: 5 July 2023)``). The year is put back by rules, no model call:

1. a full date with the same day and month (for a month alone, any day of that month) written in the dated context
   (a passage's ``(date: ...)``, a turn's stamp ``[... on 5 July, 2023]``, a resolved expression ``(= 5 July 2023)``;
   read by :func:`gemrag.strategies.platform.conversation.written_dates`, in the forms turn stamps are read in)
   gives its year, when every such date in the context agrees on one year;
2. else the dated passages' own dates (``meta["date"]`` .. ``meta["date_last"]``, set by
   :func:`gemrag.answers.dates.context.dated_context`) that fall in that month give the year, when they agree;
3. else, when every dated passage of the context is of one year, that year;
4. else the date is left as written (the context does not settle it).

Only dates with a named month are completed; a weekday, a number alone or a date that already has a year (``"5 July
2023"``, ``"July 5, 2023"``) is never touched, and an undated context (no hit with ``meta["date"]``) changes nothing.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Sequence
from datetime import date

from gemrag.strategies.platform.conversation import written_dates
from gemrag.types import Hit

__all__ = ["complete_years", "context_year"]

_MONTHS = [m for m in calendar.month_name if m]
_MONTH = r"(?P<month>" + "|".join(_MONTHS) + r")"  # capitalized only: "may" is a verb
_ORD = r"(?:st|nd|rd|th)?"
_YEAR_AFTER = r"(?!,?\s*(?:of\s+)?\d{4})(?![\w-])"  # not followed by a year (nor part of a longer word)
_DAY_MONTH = re.compile(rf"\b(?P<day>\d{{1,2}}){_ORD}\s+(?:of\s+)?{_MONTH}{_YEAR_AFTER}")
_MONTH_DAY = re.compile(rf"\b{_MONTH}\s+(?P<day>\d{{1,2}}){_ORD}\b{_YEAR_AFTER}")
_MONTH_ALONE = re.compile(rf"(?:(?<=\bin )|(?<=\bearly )|(?<=\blate )|(?<=\bmid-)){_MONTH}{_YEAR_AFTER}")
_MONTH_ALONE_ANSWER = re.compile(rf"^\s*(?:in\s+|early\s+|late\s+|mid-)?{_MONTH}\s*\.?\s*$")


def _dates_of(hit: Hit) -> tuple[date, date] | None:
    first = hit.meta.get("date")
    if not isinstance(first, str):
        return None
    last = hit.meta.get("date_last", first)
    return date.fromisoformat(first), date.fromisoformat(last if isinstance(last, str) else first)


def _one(years: set[int]) -> int | None:
    return next(iter(years)) if len(years) == 1 else None


def context_year(month: int, day: int | None, hits: Sequence[Hit]) -> int | None:
    """The year a dated context shows for ``day`` ``month`` (``day`` None: the month alone), by the module's rules 1-3;
    None when the context has no dated hit or does not settle one year.

    Args:
        month: 1-12. day: 1-31, or None.
        hits: the context as read (a dated context's hits carry ``meta["date"]``, ISO ``YYYY-MM-DD``).

    Raises:
        ValueError: a hit's ``meta["date"]`` is not an ISO date.
    """
    spans = [s for s in map(_dates_of, hits) if s is not None]
    if not spans:
        return None
    written = {d.year for h in hits for d in written_dates(h.text) if d.month == month and day in (None, d.day)}
    if written:
        return _one(written)
    in_month = {
        y
        for first, last in spans
        for y in range(first.year, last.year + 1)
        if date(y, month, 1) <= last and first < _month_end(y, month)
    }
    if in_month:
        return _one(in_month)
    return _one({y for first, last in spans for y in range(first.year, last.year + 1)})


def _month_end(year: int, month: int) -> date:
    return date(year + (month == 12), month % 12 + 1, 1)


def complete_years(answer: str, hits: Sequence[Hit]) -> tuple[str, list[str]]:
    """``answer`` with each date that names a month but no year given the year the dated context shows for it
    (:func:`context_year`; the module docstring has the rules).

    Args:
        answer: the model's answer. hits: the context it read.

    Returns:
        The answer (unchanged when nothing was completed, always so for an undated context) and the completed dates
        as they now read (``["5 July 2023"]``), in answer order.

    Raises:
        ValueError: a hit's ``meta["date"]`` is not an ISO date.
    """
    if not answer or not any("date" in h.meta for h in hits):
        return answer, []
    found: list[tuple[int, int, int, int | None]] = []  # start, end, month, day
    for pattern in (_DAY_MONTH, _MONTH_DAY):
        found += [
            (m.start(), m.end(), _MONTHS.index(m.group("month")) + 1, int(m.group("day")))
            for m in pattern.finditer(answer)
        ]
    alone = _MONTH_ALONE_ANSWER.match(answer)
    months = [alone] if alone else list(_MONTH_ALONE.finditer(answer))
    for m in months:
        start, end = m.span("month")
        if not any(s <= start < e for s, e, _, _ in found):
            found.append((start, end, _MONTHS.index(m.group("month")) + 1, None))
    out, done, last = [], [], 0
    for start, end, month, day in sorted(found):
        if start < last or (day is not None and not 1 <= day <= 31):
            continue
        year = context_year(month, day, hits)
        if year is None:
            continue
        written = answer[start:end]
        sep = "," if re.fullmatch(rf"{_MONTH}\s+\d{{1,2}}{_ORD}", written) else ""
        out.append(f"{answer[last:end]}{sep} {year}")
        done.append(f"{written}{sep} {year}")
        last = end
    return "".join(out) + answer[last:], done
