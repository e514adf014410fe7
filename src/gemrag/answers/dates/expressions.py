"""Relative time expressions resolved to absolute dates by rules: "last Sunday", "two weeks ago", "yesterday",
"next month", "last year" said on a known day become the day, week, weekend, month or year they name.

The rules are the first half of time-aware reading's index-time step (REMem seed ``remem-retrieval-strategies.txt``,
"Temporal Strategy": facts with time qualifiers; LongMemEval, Wu et al. 2024, section 5, time-aware query expansion:
the timestamps of the events a memory states are associated with it at index time): a conversation turn dated 10 May
2023 that says "I adopted her last Sunday" is read with "last Sunday (= 7 May 2023)". An expression whose meaning
depends on more than the anchor day ("next Friday": this week's or next week's?; "a few days ago"; a bare weekday,
whose direction is the verb's tense) is left unresolved by the rules and reported by :func:`vague_expressions`, for
the optional LLM step (:mod:`gemrag.answers.dates.llm`).

Pure functions, no store and no model: :func:`resolve_expressions` (text + anchor date -> :class:`TimeNote`),
:func:`vague_expressions`, :func:`format_period` (how a resolved period is written in a context). Calendar arithmetic
is python-dateutil's ``relativedelta`` (month ends clamped: one month before 31 March is 28 or 29 February).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from datetime import date, timedelta
from typing import Literal

from dateutil.relativedelta import FR, MO, SA, SU, TH, TU, WE, relativedelta
from pydantic import BaseModel

from gemrag.answers.words import WEEKDAY_ABBREVIATIONS

Unit = Literal["day", "week", "weekend", "month", "year"]
"""How wide a resolved period is: a day, a Monday-to-Sunday week (given by its Monday), a weekend (its Saturday), a
calendar month (its first day) or a calendar year (1 January)."""

_WEEKDAYS = [d.lower() for d in calendar.day_name]  # monday .. sunday (date.weekday() order)
_RELATIVE_WEEKDAYS = (MO, TU, WE, TH, FR, SA, SU)
_MONTHS = [m for m in calendar.month_name if m]  # January .. December
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
}  # fmt: skip
_NUM = r"(?P<n>\d{1,3}|" + "|".join(sorted(_NUMBERS, key=len, reverse=True)) + r")"
_UNIT = r"(?P<unit>day|week|month|year)s?"
_WEEKDAY_ABBREVIATIONS = {a: _WEEKDAYS.index(day) for a, day in WEEKDAY_ABBREVIATIONS.items()}
"""Weekday abbreviations ("last Tues", "last Fri") and their weekday, capitalized only: "last sat" or "this sun" are
not weekdays."""
_WEEKDAY = (
    r"(?P<wd>" + "|".join(_WEEKDAYS)
    + r"|(?-i:" + "|".join(sorted(_WEEKDAY_ABBREVIATIONS, key=len, reverse=True)) + r"))"
)  # fmt: skip
_MONTH = r"(?-i:(?P<month>" + "|".join(_MONTHS) + r"))"  # capitalized only: "last may" is not a month


class TimeNote(BaseModel):
    """One resolved time expression of a text.

    Attributes:
        start, end: the expression's character span ``[start, end)`` in the text it was found in (offsets in Python
            characters).
        text: the expression as written (``"last Sunday"``).
        value: the start of the period it names, ISO ``YYYY-MM-DD`` (a week: its Monday; a weekend: its Saturday; a
            month: its first day; a year: 1 January).
        unit: the period's width (:data:`Unit`).
        anchor: the ISO date it was resolved against (the turn's or document's date).
        by: ``"rule"`` (this module) or ``"llm"`` (:mod:`gemrag.answers.dates.llm`).
    """

    start: int
    end: int
    text: str
    value: str
    unit: Unit
    anchor: str
    by: Literal["rule", "llm"] = "rule"

    @property
    def shown(self) -> str:
        """The period as a context shows it (:func:`format_period`)."""
        return format_period(date.fromisoformat(self.value), self.unit)


def format_day(day: date) -> str:
    """``"7 May 2023"``: day, English month name, year (the form LoCoMo's session stamps and gold answers use;
    independent of the locale)."""
    return f"{day.day} {_MONTHS[day.month - 1]} {day.year}"


def format_period(start: date, unit: Unit) -> str:
    """A resolved period as text: ``"7 May 2023"`` (day), ``"the week of 1 May 2023"`` (week, by its Monday),
    ``"the weekend of 6 May 2023"`` (by its Saturday), ``"May 2023"`` (month), ``"2023"`` (year)."""
    if unit == "day":
        return format_day(start)
    if unit == "week":
        return f"the week of {format_day(start)}"
    if unit == "weekend":
        return f"the weekend of {format_day(start)}"
    if unit == "month":
        return f"{_MONTHS[start.month - 1]} {start.year}"
    return str(start.year)


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBERS[word.lower()]


def _monday(day: date) -> date:
    monday: date = day + relativedelta(weekday=MO(-1))
    return monday


def _period(day: date, unit: str) -> tuple[date, Unit]:
    """The period of width ``unit`` (day, week, month, year) that contains ``day``."""
    if unit == "week":
        return _monday(day), "week"
    if unit == "month":
        return day.replace(day=1), "month"
    if unit == "year":
        return date(day.year, 1, 1), "year"
    return day, "day"


def _shift(anchor: date, unit: str, n: int) -> date:
    """``anchor`` moved by ``n`` units (negative: back)."""
    moved: date = anchor + relativedelta(**{f"{unit}s": n})
    return moved


Resolver = Callable[[re.Match[str], date], tuple[date, Unit]]
"""A rule's resolution: the regex match and the anchor day -> the period's start and width."""


def _ago(m: re.Match[str], anchor: date) -> tuple[date, Unit]:
    unit = m.group("unit").lower()
    return _period(_shift(anchor, unit, -_count(m.group("n"))), unit)


def _from_now(m: re.Match[str], anchor: date) -> tuple[date, Unit]:
    unit = m.group("unit").lower()
    return _period(_shift(anchor, unit, _count(m.group("n"))), unit)


_STEP = {"last": -1, "previous": -1, "this": 0, "next": 1, "earlier this": 0, "later this": 0}


_RELATIVE = r"last|previous|this|next|earlier\s+this|later\s+this"


def _relative_unit(m: re.Match[str], anchor: date) -> tuple[date, Unit]:
    unit = m.group("unit").lower()
    return _period(_shift(anchor, unit, _STEP[" ".join(m.group("rel").lower().split())]), unit)


def _weekend(m: re.Match[str], anchor: date) -> tuple[date, Unit]:
    """ "last weekend" / "this past weekend": the previous week's (said on a Saturday or Sunday too); "this
    weekend": the anchor's own week's. A weekend is given by its Saturday."""
    monday = _monday(anchor)
    rel = " ".join(m.group("rel").lower().split())
    return (monday + timedelta(days=5) if rel == "this" else monday - timedelta(days=2)), "weekend"


def _weekday(name: str) -> int:
    """The weekday a name or capitalized abbreviation gives, 0 = Monday (``date.weekday()`` order)."""
    return _WEEKDAY_ABBREVIATIONS[name] if name in _WEEKDAY_ABBREVIATIONS else _WEEKDAYS.index(name.lower())


def _last_weekday(m: re.Match[str], anchor: date) -> tuple[date, Unit]:
    """The most recent such weekday strictly before the anchor ("last Sunday" said on a Sunday: a week before)."""
    wd = _RELATIVE_WEEKDAYS[_weekday(m.group("wd"))]
    return anchor + relativedelta(days=-1, weekday=wd(-1)), "day"


def _this_weekday(m: re.Match[str], anchor: date) -> tuple[date, Unit]:
    """That weekday of the anchor's own Monday-to-Sunday week."""
    return _monday(anchor) + timedelta(days=_weekday(m.group("wd"))), "day"


def _month_name(m: re.Match[str], anchor: date) -> tuple[date, Unit]:
    """ "last May": the most recent May before the anchor's month; "next May": the first after; "this May": the
    anchor's year's."""
    month = _MONTHS.index(m.group("month")) + 1
    rel = m.group("rel").lower()
    year = anchor.year
    if rel == "last" and month >= anchor.month:
        year -= 1
    elif rel == "next" and month <= anchor.month:
        year += 1
    return date(year, month, 1), "month"


def _days(n: int) -> Resolver:
    return lambda m, anchor: (anchor + timedelta(days=n), "day")


_RULES: list[tuple[re.Pattern[str], Resolver]] = [
    (re.compile(r"\bthe day before yesterday\b", re.I), _days(-2)),
    (re.compile(r"\bthe day after tomorrow\b", re.I), _days(2)),
    (re.compile(r"\b(?:yesterday|last night)\b", re.I), _days(-1)),
    (re.compile(r"\b(?:today|tonight|this (?:morning|afternoon|evening))\b", re.I), _days(0)),
    (re.compile(r"\btomorrow\b", re.I), _days(1)),
    (re.compile(rf"\b{_NUM} {_UNIT} ago\b", re.I), _ago),
    (re.compile(rf"\b{_NUM} {_UNIT} from (?:now|today)\b", re.I), _from_now),
    (re.compile(rf"\b(?P<rel>{_RELATIVE})\s+(?P<unit>week|month|year)\b", re.I), _relative_unit),
    (re.compile(r"\b(?P<rel>last|this past|this)\s+weekend\b", re.I), _weekend),
    (re.compile(rf"(?<!the )\b(?:last|this past)\s+{_WEEKDAY}\b", re.I), _last_weekday),  # not "the last Friday of"
    (re.compile(rf"\bthis\s+{_WEEKDAY}\b", re.I), _this_weekday),
    (re.compile(rf"\b(?P<rel>last|this|next)\s+{_MONTH}\b", re.I), _month_name),
]

_VAGUE = [
    re.compile(rf"\b(?:a few|a couple of|couple of|several|some|many) {_UNIT} ago\b", re.I),
    re.compile(r"\bthe other (?:day|week|night)\b", re.I),
    re.compile(rf"\bnext\s+(?:{_WEEKDAY}|weekend)\b", re.I),
    re.compile(r"\b(?:last|this past|this|next)\s+(?:spring|summer|fall|autumn|winter)\b", re.I),
    re.compile(rf"\b(?:on\s+)?(?-i:{'|'.join(d.capitalize() for d in _WEEKDAYS)})\b", re.I),
]
"""Expressions a date anchor alone does not resolve: vague amounts, "next Friday" (this week's or next week's),
seasons (the hemisphere), a bare weekday (before or after the anchor: the verb's tense tells)."""


def _matches(text: str) -> list[tuple[int, int, re.Match[str], Resolver | None]]:
    """Every rule's and vague pattern's matches, longest first where they overlap, in text order."""
    found: list[tuple[int, int, re.Match[str], Resolver | None]] = [
        (m.start(), m.end(), m, f) for p, f in _RULES for m in p.finditer(text)
    ]
    found += [(m.start(), m.end(), m, None) for p in _VAGUE for m in p.finditer(text)]
    found.sort(key=lambda x: (x[0], -(x[1] - x[0]), x[3] is None))
    kept: list[tuple[int, int, re.Match[str], Resolver | None]] = []
    for item in found:
        if kept and item[0] < kept[-1][1]:
            continue
        kept.append(item)
    return kept


def resolve_expressions(text: str, anchor: date, offset: int = 0) -> list[TimeNote]:
    """The relative time expressions of ``text`` that the rules resolve against ``anchor``, in text order.

    Rules (the anchor is the day the text was said or written): today / tonight / this morning = the anchor day;
    yesterday, last night, the day before yesterday, tomorrow, the day after tomorrow; ``N days|weeks|months|years
    ago`` and ``N ... from now`` (N a digit or one..twelve, "a", "an") = the day, Monday-to-Sunday week, month or
    year containing the anchor moved by N units; ``last|previous|this|next|earlier this|later this week|month|year``;
    ``last|this past weekend`` (the latest Saturday-Sunday before the anchor), ``this weekend`` (the coming one, or the
    current one when said on a weekend); ``last|this past <weekday>`` = the latest such day strictly before the
    anchor (not after "the": "the last Friday of the month" is not last Friday); ``this <weekday>`` = that day of
    the anchor's week (a weekday also written as its capitalized abbreviation: "last Tues", "last Fri");
    ``last|this|next <Month>`` (capitalized) = that month before, of, or after the anchor's year. Overlapping
    matches: the longest wins ("the day before yesterday" over "yesterday"); an expression
    :func:`vague_expressions` reports is never resolved here.

    Args:
        text: the text to read. anchor: the day it was said or written.
        offset: added to every span (the text's position in a larger text).

    Returns:
        One :class:`TimeNote` per resolved expression (``by = "rule"``).
    """
    notes: list[TimeNote] = []
    for start, end, m, resolver in _matches(text):
        if resolver is None:
            continue
        value, unit = resolver(m, anchor)
        notes.append(
            TimeNote(
                start=start + offset,
                end=end + offset,
                text=m.group(0),
                value=value.isoformat(),
                unit=unit,
                anchor=anchor.isoformat(),
            )
        )
    return notes


def vague_expressions(text: str) -> list[tuple[int, int]]:
    """Spans ``[start, end)`` of the time expressions in ``text`` the rules leave unresolved ("a few days ago", "the
    other day", "next Friday", "last summer", "on Saturday"), in text order; none overlaps one that
    :func:`resolve_expressions` resolves."""
    return [(start, end) for start, end, _, resolver in _matches(text) if resolver is None]
