"""Which questions have a time anchor: those time-aware reading answers from the dated, chronological context.

LongMemEval (Wu et al., 2024, section 5, "time-aware query expansion") narrows what is read for a question that
carries a time reference to the memories of that time; REMem's temporal strategy (seed
``remem-retrieval-strategies.txt``, "Temporal Strategy") orders its results by time for temporal questions. Here the
rule decides how a question is *read*: a question asking when something happened, about the order of events, or about
a period is answered from passages prefixed with their dates, oldest first (:mod:`gemrag.answers.dates.context`).
Rules only, no model.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from typing import Literal

AnchorKind = Literal["when", "order", "period"]
"""``when``: the question asks for a time (when, what date, which year, how long ago); ``order``: for the order of
events (before, after, the first time, most recently); ``period``: it names a time (in March, in 2022, last week)."""

_MONTH_NAMES = "|".join(m for m in calendar.month_name if m)
_RULES: list[tuple[AnchorKind, re.Pattern[str]]] = [
    (
        "when",
        re.compile(
            r"\b(?:when|what (?:date|day|year|month|time of year|week)|which (?:date|day|year|month|week)|"
            r"how long (?:ago|has|have|had|did|was|were|before|after|since)|how many (?:days|weeks|months|years)|"
            r"since when|until when|at what age)\b",
            re.I,
        ),
    ),
    (
        "order",
        re.compile(
            r"\b(?:before|after|prior to|since|until|the first time|for the first time|the last time|first|"
            r"most recent(?:ly)?|earliest|latest|earlier|later|previous(?:ly)?|in what order|which came first)\b"
            r"(?!\s*\?)",
            re.I,
        ),
    ),
    (
        "period",
        re.compile(
            rf"\b(?:(?:in|during|of|since|until|before|after|by|early|late|mid-?|last|next|this)\s+(?-i:{_MONTH_NAMES})"
            rf"|(?-i:{_MONTH_NAMES})\s+\d{{1,2}}(?:st|nd|rd|th)?|\d{{1,2}}(?:st|nd|rd|th)?\s+(?-i:{_MONTH_NAMES})"
            r"|(?:19|20)\d\d|yesterday|today|tonight|tomorrow|ago|recently|last (?:week|weekend|month|year|night)"
            r"|(?:this|next) (?:week|weekend|month|year)|(?:on|last|this|next) (?:monday|tuesday|wednesday|thursday|"
            r"friday|saturday|sunday))\b",
            re.I,
        ),
    ),
]


@dataclass(frozen=True)
class TimeAnchor:
    """A question's time anchor.

    Attributes:
        kind: what it asks (:data:`AnchorKind`; the first rule that matches, in the order when, order, period).
        cue: the words that matched, as written (``"When"``, ``"before"``, ``"in March"``).
    """

    kind: AnchorKind
    cue: str


def time_anchor(question: str) -> TimeAnchor | None:
    """The question's time anchor, or None when it has none.

    ``when``: when, what date/day/year/month, which year, how long ago / has / did ..., how many days/weeks/months/
    years, since when, at what age. ``order``: before, after, prior to, since, until, (the) first, the last time,
    most recent(ly), earliest, latest, earlier, later, previously, in what order — not a question's last word ("What
    did she name it after?"). ``period``: a month named with a preposition or a day ("in March", "May 7"), a year
    (1900-2099), yesterday, today, ago, recently, last/this/next week/month/year/weekend, on/last/this/next <weekday>.
    Month names count only capitalized ("may" is a verb).
    """
    for kind, pattern in _RULES:
        m = pattern.search(question)
        if m:
            return TimeAnchor(kind, m.group(0))
    return None
