"""Prompt and output schema of REMem's ``episodic_gist`` extraction (seed ``remem-retrieval-strategies.txt``,
"Episodic Gist Strategy": gists are "compressed summaries" of the conversation, facts carry time qualifiers).

One call per session window (:class:`gemrag.strategies.platform.conversation.Window`): the model reads the window's
turns
and its session date, and writes a gist that starts with that date and states relative dates ("yesterday", "last
week") as absolute ones, plus the facts of the window as ``{subject, predicate, object, time}`` with ``time`` an
ISO date or null. The worked example (written for gemrag, not taken from LoCoMo or REMem) is a user turn answered
by an assistant turn (:func:`gemrag.prompting.one_shot`) and the window comes last, so llama.cpp reuses the
shared prefix. Changing a text here changes the LLM cache keys, and :data:`GIST_VERSION` must change with it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from gemrag.models.base import Message
from gemrag.prompting import one_shot

GIST_VERSION = "gist-v2"
"""Artefact version of the gist pass (bump when its prompt, its schema or the turns of a window change; v2: turns
read out of chunks stored on one line, so gists of the earlier merged windows are written again, not reused)."""
MAX_FACTS = 12
"""Most facts accepted per window (the grammar bounds the list)."""
MAX_GIST_CHARS = 800
"""Longest gist (characters)."""
MAX_ITEM_CHARS = 120
"""Longest subject, predicate or object (characters)."""


class TimedFact(BaseModel):
    """A fact with its time qualifier: ``time`` is when it happened (ISO ``YYYY-MM-DD`` as the model wrote it,
    checked by the strategy) or None when the window does not say."""

    subject: str = Field(min_length=1)
    predicate: str = Field(min_length=1)
    object: str = Field(min_length=1)
    time: str | None = None


class GistAnswer(BaseModel):
    """Output of the gist pass for one window: the gist text and the window's timed facts."""

    gist: str = Field(min_length=1)
    facts: list[TimedFact] = Field(default_factory=list)


def _string(max_chars: int = MAX_ITEM_CHARS) -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "maxLength": max_chars}


def gist_schema() -> dict[str, Any]:
    """JSON schema of :class:`GistAnswer`: a gist of at most :data:`MAX_GIST_CHARS` characters, at most
    :data:`MAX_FACTS` facts whose ``time`` is a string of at most 10 characters or null."""
    fact = {
        "type": "object",
        "properties": {
            "subject": _string(),
            "predicate": _string(),
            "object": _string(),
            "time": {"anyOf": [{"type": "string", "maxLength": 10}, {"type": "null"}]},
        },
        "required": ["subject", "predicate", "object", "time"],
    }
    return {
        "type": "object",
        "properties": {
            "gist": _string(MAX_GIST_CHARS),
            "facts": {"type": "array", "items": fact, "maxItems": MAX_FACTS},
        },
        "required": ["gist", "facts"],
    }


def _window(date: str | None, iso_date: str | None, text: str) -> str:
    when = f"{date} ({iso_date})" if date and iso_date else (date or iso_date or "unknown")
    return f'Session date: {when}\nConversation:\n"""\n{text}\n"""'


_EXAMPLE = _window(
    "10:15 am on 14 March, 2022",
    "2022-03-14",
    "[10:15 am on 14 March, 2022] Nadia: I finally ran my first half marathon yesterday!\n"
    "[10:15 am on 14 March, 2022] Tom: Congratulations! I start a pottery class next Monday.",
)
_EXAMPLE_ANSWER = {
    "gist": "On 14 March 2022, Nadia told Tom that she ran her first half marathon on 13 March 2022; Tom said he "
    "starts a pottery class on 21 March 2022.",
    "facts": [
        {"subject": "Nadia", "predicate": "ran", "object": "her first half marathon", "time": "2022-03-13"},
        {"subject": "Tom", "predicate": "starts", "object": "a pottery class", "time": "2022-03-21"},
    ],
}


def gist_prompt(date: str | None, iso_date: str | None, text: str) -> list[Message]:
    """Messages asking for the gist and timed facts of one window (REMem seed, "Episodic Gist Strategy").

    Args:
        date: the session's date stamp as written (None: unknown). iso_date: its ISO date (None: unknown).
        text: the window's turns, one line each (``"[<date>] <speaker>: <text>"``) or plain text.
    """
    return one_shot(
        "You write short episodic memory notes about conversations.",
        "Write the gist of the conversation: one to three sentences that begin with the session date, say who "
        "said or did what, and replace relative dates (yesterday, last week, next Monday) with the absolute "
        "dates they mean, computed from the session date. Then list the facts the conversation states as "
        "subject, predicate, object, with the date each one happened as YYYY-MM-DD, or null when it is not "
        "known. Use only what this conversation says. "
        'Reply with JSON: {"gist": "...", "facts": [{"subject": "...", "predicate": "...", "object": "...", '
        '"time": "YYYY-MM-DD" or null}, ...]}',
        _EXAMPLE,
        _EXAMPLE_ANSWER,
        _window(date, iso_date, text),
    )
