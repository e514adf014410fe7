"""Prompts and output schemas of the ``hlgraph`` strategy (Zeng, "HLGraphRAG", section 3 "Design").

* **Encoding** (section 3, "Encoding", "Subject-Relation Query (SRQ) and Context Routing (CR)", Figure 2.2): per
  chunk the model lists the subjects, the relationships between them as (meaning, object 1, object 2) (SRQ) and
  the events as (event, object 1, object 2, why) with a general time frame (CR). The paper asks Gemini Pro 1.5
  zero-shot with reasoning steps and does not print its prompt (Figure 2.2 is an image): gemrag asks for all three
  lists in ONE structured answer per chunk, subjects first so the relations are written after them, with one
  worked example (written for gemrag) because a 0.5B-1.5B local model copies an example far better than it
  follows a zero-shot instruction. For directional weights (DW, section 3) each relation and event also carries
  its passive voice ("pushes" -> "was pushed by"), written by the model; when the model leaves it out the
  strategy derives one by rule (:func:`gemrag.strategies.hlgraph.facts.passive_voice`).
* **Main ideas** (section 3, "Main Idea Breakdown", Figure 2.3): the question is split into up to
  :data:`MAX_IDEAS` short search queries.

Changing a text here changes the LLM cache keys; :data:`EXTRACTION_VERSION` must change with the extraction prompt.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from gemrag.models.base import Message
from gemrag.prompting import one_shot

EXTRACTION_VERSION = "hlgraph-v1"
"""Artefact version of the extraction (bump when its prompt or schema changes)."""

MAX_SUBJECTS = 16
MAX_RELATIONS = 12
MAX_EVENTS = 8
MAX_IDEAS = 5
"""Most items the grammar accepts per list (so a small model cannot run on)."""
MAX_ITEM_CHARS = 100
"""Longest subject, label, reason or time frame (characters)."""


class Relation(BaseModel):
    """An SRQ relationship: ``object1 meaning object2`` ("John" "pushes" "Selena"), and its passive voice read from
    object 2 ("Selena" "was pushed by" "John"; may be empty: the rule fallback then applies)."""

    object1: str
    meaning: str
    object2: str
    passive: str = ""


class Event(BaseModel):
    """A CR event: ``object1 event object2`` with why it happened and a general time frame (both may be empty),
    plus the event's passive voice as for :class:`Relation`. ``object2`` may be empty (an event with one
    participant)."""

    object1: str
    event: str
    object2: str = ""
    passive: str = ""
    why: str = ""
    time: str = ""


class ChunkMemory(BaseModel):
    """The extraction's answer for one chunk (the artefact stored per chunk)."""

    subjects: list[str] = Field(default_factory=list)
    relations: list[Relation] = Field(default_factory=list)
    events: list[Event] = Field(default_factory=list)


class MainIdeas(BaseModel):
    """The question split into main ideas (search queries)."""

    ideas: list[str] = Field(default_factory=list)


def _string(min_length: int = 1) -> dict[str, Any]:
    return {"type": "string", "minLength": min_length, "maxLength": MAX_ITEM_CHARS}


def _object(required: dict[str, dict[str, Any]], optional: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {"type": "object", "properties": {**required, **optional}, "required": [*required, *optional]}


def extraction_schema() -> dict[str, Any]:
    """JSON schema of :class:`ChunkMemory`: at most :data:`MAX_SUBJECTS` subjects, :data:`MAX_RELATIONS` relations
    and :data:`MAX_EVENTS` events, every string at most :data:`MAX_ITEM_CHARS` characters (the optional fields are
    required keys that may be empty strings, so the grammar fixes the key order)."""
    relation = _object({"object1": _string(), "meaning": _string(), "object2": _string()}, {"passive": _string(0)})
    event = _object(
        {"object1": _string(), "event": _string()},
        {"object2": _string(0), "passive": _string(0), "why": _string(0), "time": _string(0)},
    )
    return {
        "type": "object",
        "properties": {
            "subjects": {"type": "array", "items": _string(), "maxItems": MAX_SUBJECTS},
            "relations": {"type": "array", "items": relation, "maxItems": MAX_RELATIONS},
            "events": {"type": "array", "items": event, "maxItems": MAX_EVENTS},
        },
        "required": ["subjects", "relations", "events"],
    }


def ideas_schema(max_ideas: int = MAX_IDEAS) -> dict[str, Any]:
    """JSON schema of :class:`MainIdeas`: 1 to ``max_ideas`` strings."""
    return {
        "type": "object",
        "properties": {"ideas": {"type": "array", "items": _string(), "minItems": 1, "maxItems": max_ideas}},
        "required": ["ideas"],
    }


_EXAMPLE_PASSAGE = "In 1998 Marta pushed her brother Ivo into the harbour because he had sold her boat."
_EXAMPLE_ANSWER = {
    "subjects": ["Marta", "Ivo", "boat"],
    "relations": [{"object1": "Marta", "meaning": "is the sister of", "object2": "Ivo", "passive": "has the sister"}],
    "events": [
        {
            "object1": "Marta",
            "event": "pushed into the harbour",
            "object2": "Ivo",
            "passive": "was pushed into the harbour by",
            "why": "Ivo had sold her boat",
            "time": "1998",
        }
    ],
}
"""The worked example, short on purpose: a small model copies the length of the example's answer too."""


def _passage(passage: str) -> str:
    return f'Passage:\n"""\n{passage}\n"""'


def extraction_prompt(passage: str) -> list[Message]:
    """Messages asking for the subjects, SRQ relations and CR events of ``passage`` (HLGraphRAG section 3,
    "Encoding" and "SRQ and CR"; one worked example; the passage last, so a backend reuses the shared prefix)."""
    return one_shot(
        "You build a memory of who did what to whom, why and when, from passages.",
        "First list the subjects of the passage (people, groups, places, things). Then list the relationships "
        "between subjects as object1, meaning, object2 (object1 meaning object2 reads as a sentence), with "
        "passive: the same relation read from object2 to object1 (pushes -> was pushed by). Then list the events: "
        "object1, event, object2, passive, why it happened and when (a general time frame; empty if unknown). "
        "Use names, not pronouns, and only what the passage says. "
        'Reply with JSON: {"subjects": [...], "relations": [...], "events": [...]}',
        _passage(_EXAMPLE_PASSAGE),
        _EXAMPLE_ANSWER,
        _passage(passage),
    )


def ideas_prompt(question: str, max_ideas: int = MAX_IDEAS) -> list[Message]:
    """Messages asking for the main ideas of ``question`` as at most ``max_ideas`` short search queries
    (HLGraphRAG section 3, "Main Idea Breakdown")."""
    return [
        {"role": "system", "content": "You turn a message into short search queries for a memory."},
        {
            "role": "user",
            "content": (
                f"Break the message below into its main ideas: at most {max_ideas} short search queries, each about "
                "one person, thing or event it asks or talks about. "
                'Reply with JSON: {"ideas": ["...", ...]}\n\n'
                f"Message: {question}"
            ),
        },
    ]
