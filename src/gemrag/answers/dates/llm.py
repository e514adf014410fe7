"""The optional LLM step of time-aware reading's index time (``[answer] date_llm = true``): each dated time expression
the rules leave unresolved ("a few days ago", "next Friday", "on Saturday"; :func:`gemrag.answers.dates.expressions
.vague_expressions`) is put to the model once, with the sentence around it and the day it was said, and the period it
answers becomes a :class:`~gemrag.answers.dates.expressions.TimeNote` with ``by = "llm"`` (REMem seed
``remem-retrieval-strategies.txt``, "Temporal Strategy": time qualifiers resolved to dates; there by the extraction
LLM for every fact, here only where rules fail). Calls go through the memory's LLM, so they are cached and metered
like every other call (the index phase); an answer that is not a date ("unknown") leaves the expression unresolved.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date
from typing import Any

from pydantic import BaseModel

from gemrag.answers.dates.chunks import ChunkDates, Unresolved
from gemrag.answers.dates.expressions import TimeNote, Unit, format_day
from gemrag.errors import StructuredOutputError
from gemrag.models.base import LLM, Message
from gemrag.models.structured import complete_structured
from gemrag.store.parts import Caches

#: Characters of text shown on each side of the expression.
WINDOW = 240
#: Completion limit of one answer (tokens).
MAX_TOKENS = 24


class ResolvedTime(BaseModel):
    """The model's answer: ``date`` is ``YYYY-MM-DD``, ``YYYY-MM``, ``YYYY`` or ``unknown``."""

    date: str


SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"date": {"type": "string", "pattern": r"^(\d{4}(-\d{2}(-\d{2})?)?|unknown)$"}},
    "required": ["date"],
}


def resolve_prompt(text: str, expression: str, anchor: date) -> list[Message]:
    """The question for one expression: the text around it (``text``), the day it was said, and the answer's form."""
    system = "You resolve relative time expressions to calendar dates."
    user = (
        f'Written on {anchor.strftime("%A")}, {format_day(anchor)}:\n"""{text}"""\n\n'
        f'Which day, month or year does "{expression}" in this text refer to? Reply with JSON whose "date" is '
        '"YYYY-MM-DD" for a day, "YYYY-MM" for a month, "YYYY" for a year, or "unknown" if the text does not tell.'
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def parse_period(value: str) -> tuple[date, Unit] | None:
    """``"2023-05-06"`` -> (that day, ``"day"``), ``"2023-05"`` -> (1 May 2023, ``"month"``), ``"2023"`` -> (1
    January 2023, ``"year"``); None for anything else (``"unknown"``, an impossible date)."""
    m = re.fullmatch(r"\s*(\d{4})(?:-(\d{1,2})(?:-(\d{1,2}))?)?\s*", value)
    if not m:
        return None
    try:
        start = date(int(m.group(1)), int(m.group(2) or 1), int(m.group(3) or 1))
    except ValueError:
        return None
    return start, "day" if m.group(3) else "month" if m.group(2) else "year"


def llm_step(model: Callable[[], LLM], store: Caches) -> Callable[[str, ChunkDates, int], ChunkDates]:
    """The step :func:`~gemrag.answers.dates.chunks.annotate_dates` runs on each chunk: one
    LLM call per unresolved expression (:func:`resolve_prompt`, structured output :data:`SCHEMA`); a resolved one moves
    to the notes (``by = "llm"``), in text order. A malformed answer after the retries is recorded as an
    ``index/dates`` failure of the chunk (``gemrag info`` shows it) and the expression stays unresolved.

    Args:
        model: returns the memory's (cached, metered) LLM; called only when a chunk has an unresolved expression.
        store: where failures are recorded.
    """

    def step(text: str, dated: ChunkDates, chunk_id: int) -> ChunkDates:
        if not dated.unresolved:
            return dated
        notes, left = list(dated.notes), []
        for item in dated.unresolved:
            note = _ask(model(), store, text, item, chunk_id)
            if note is None:
                left.append(item)
            else:
                notes.append(note)
        return ChunkDates(dates=dated.dates, notes=sorted(notes, key=lambda n: n.start), unresolved=left)

    return step


def _ask(model: LLM, store: Caches, text: str, item: Unresolved, chunk_id: int) -> TimeNote | None:
    anchor = date.fromisoformat(item.anchor)
    around = text[max(0, item.start - WINDOW) : item.end + WINDOW]
    try:
        answer = complete_structured(
            model, resolve_prompt(around, item.text, anchor), ResolvedTime, schema=SCHEMA, max_tokens=MAX_TOKENS
        )
    except StructuredOutputError as exc:
        store.record_failure("index/dates", chunk_id, f"{item.text!r}: {exc}")
        return None
    period = parse_period(answer.date)
    if period is None:
        return None
    start, unit = period
    return TimeNote(
        start=item.start, end=item.end, text=item.text, value=start.isoformat(), unit=unit, anchor=item.anchor, by="llm"
    )
