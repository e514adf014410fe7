"""Answers over a dated context give when a thing happened, not when it was said: an answer that names the date a
turn was said on, where that turn tells another time for what the question asks about, is given the time the turn
tells.

Time-aware reading resolves a turn's relative expressions at index time ("I ran the half marathon two weeks ago",
said on 20 May 2024, is read with "two weeks ago (= the week of 6 May 2024)"), yet a small reader often answers
with the turn's stamp: "When did Leo run the half marathon?" -> ``"20 May 2024"``; many of the 1.5B's wrong answers
to LoCoMo's temporal questions with the dated reading are a session's date. An event is dated by when it
happened, not when it was mentioned (Temporal Semantic Memory, 2026; LongMemEval, Wu et al., 2024, section 5: the
memories' timestamps and the times they state decide a temporal answer). The rule, no model call:

1. the answer writes exactly one full date (the forms of
   :func:`gemrag.strategies.platform.conversation.written_date_spans`), not already inside a period
   (``"the week of ..."``);
2. the context's turns stamped with that date (:func:`gemrag.strategies.platform.conversation.parse_turns` on each
   dated passage), each scored by the stems its words share with the question's content words
   (:func:`gemrag.answers.words.content_words`, :func:`gemrag.answers.words.stems`);
3. the best of them shares at least :data:`MIN_SHARED` stems with the question, is the only turn with that score, and
   tells exactly one resolved time (`` (= ...)``, written by :func:`gemrag.answers.dates.context.annotate`) other
   than its own day, in one of its sentences that share the most stems with the question (one turn may tell of
   several things: "I'm expanding my studio's social media presence ... I'm also hosting a dance competition next
   month (= May 2023)" tells May 2023 for the competition, not for the social media);
4. then the date in the answer becomes that time, written as the weeks rule writes a period
   (:func:`~gemrag.answers.dates.periods.put_time`: ``"on 20 May 2024"`` -> ``"in the week of 6 May 2024"``; a day
   or a weekend keeps ``"on"``).

An answer whose date is the day the turn tells about (``"today"``, or a turn with no relative expression), a context
whose turns tie, and an undated context (no hit with ``meta["date"]``) are never changed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date

from gemrag.answers.dates.expressions import format_day
from gemrag.answers.dates.periods import in_a_period, put_time
from gemrag.answers.words import content_words, stems
from gemrag.strategies.platform.conversation import parse_turns, split_inline_turns, written_date_spans
from gemrag.types import Hit

__all__ = ["MIN_SHARED", "said_to_happened"]

MIN_SHARED = 2
"""Stems a turn must share with the question (rule 3): one shared word (a name) is too weak a sign that the turn is
the one the question asks about."""

_TOLD = re.compile(r" \(= (?P<time>[^()]+)\)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'])")
_QUESTION_WORDS = frozenset({"when", "date", "day", "time", "happen", "happened"})


def _turns_said_on(day: date, hits: Sequence[Hit]) -> list[str]:
    """The texts of the context's turns stamped ``day``, with their resolved times."""
    dated = [h for h in hits if "date" in h.meta]
    return [t.text for h in dated for t in parse_turns(split_inline_turns(h.text)) if t.iso_date == day.isoformat()]


def _shared(asked: set[str], text: str) -> int:
    """How many of the question's stems ``asked`` the words of ``text`` (its resolved times left out) have."""
    return len(asked & stems(content_words(_TOLD.sub("", text))))


def _about_the_question(turn: str, asked: set[str]) -> list[str]:
    """The sentences of ``turn`` that share the most stems with the question (rule 3)."""
    sentences = [one for one in _SENTENCE_END.split(turn) if one.strip()]
    best = max(_shared(asked, one) for one in sentences)
    return [one for one in sentences if _shared(asked, one) == best]


def _told(text: str, day: date) -> list[str]:
    """The times ``text`` tells (its resolved expressions), those other than ``day`` itself."""
    return [m.group("time") for m in _TOLD.finditer(text) if m.group("time") != format_day(day)]


def said_to_happened(answer: str, question: str, hits: Sequence[Hit]) -> tuple[str, list[str]]:
    """``answer`` with the date a turn was said on replaced by the time that turn tells, by the module's rules.

    Args:
        answer: the model's answer (its years already completed). question: the question asked. hits: the context
            as read (a dated context: turns stamped ``[<time> on <day>] <speaker>:``, resolved expressions
            followed by `` (= <time>)``).

    Returns:
        The answer (unchanged unless every rule holds) and the time put in, as it now reads (``["the week of 6 May
        2024"]``), or ``[]``.
    """
    spans = written_date_spans(answer) if answer and any("date" in h.meta for h in hits) else []
    if len(spans) != 1:
        return answer, []
    start, end, day = spans[0]
    if in_a_period(answer, start):
        return answer, []
    asked = stems(w for w in content_words(question) if w not in _QUESTION_WORDS)
    scored = sorted(
        ((_shared(asked, turn), turn) for turn in _turns_said_on(day, hits)),
        key=lambda pair: -pair[0],
    )
    if not scored or scored[0][0] < MIN_SHARED or (len(scored) > 1 and scored[1][0] == scored[0][0]):
        return answer, []
    told = _told(scored[0][1], day)
    if len(set(told)) != 1 or not any(_told(one, day) for one in _about_the_question(scored[0][1], asked)):
        return answer, []
    return put_time(answer[:start], told[0], first=start == 0) + answer[end:], [told[0]]
