"""Prompts and output schemas of UnWeaver's two LLM passes (UnWeaver paper, section 2 and Appendix A).

* Entity extraction, one call per chunk: the chunk's entities as ``(name, description)`` pairs, each description
  written from that chunk only (Appendix A: "Each entity description is based on the i-th chunk content only"; the
  authors' released prompt asks for up to three sentences each, on the entity's characteristics, function and
  relations). Structured output: :class:`ChunkEntities`, bounded by :func:`entities_schema`.
* Description shortening, one call per equivalence class whose concatenated descriptions exceed the configured
  length (footnote 4: "The descriptions might be shortened by an LLM if they surpass some length threshold"):
  free text.

The extraction prompt carries one worked example written for gemrag (not from the paper or its code), as a user
turn answered by an assistant turn, with the passage last (llama.cpp reuses the shared prefix). Changing a text
here changes the LLM cache keys; bump :data:`ENTITIES_VERSION` when the extraction prompt or schema changes.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from gemrag.models.base import Message
from gemrag.prompting import one_shot

ENTITIES_VERSION = "unweaver-entities-v1"
"""Artefact version of the extraction pass."""
MAX_ENTITIES = 12
"""Most entities accepted per chunk (the grammar bounds the list, so a small model cannot run on)."""
MAX_NAME_CHARS = 120
"""Longest entity name (characters)."""
MAX_DESCRIPTION_CHARS = 300
"""Longest description of one entity in one chunk (characters; about three sentences)."""


class Entity(BaseModel):
    """One extracted entity: its name as written in the chunk and what the chunk says about it."""

    name: str
    description: str = ""


class ChunkEntities(BaseModel):
    """Output of the extraction pass for one chunk."""

    entities: list[Entity] = Field(default_factory=list)


def entities_schema() -> dict[str, Any]:
    """JSON schema of :class:`ChunkEntities`: at most :data:`MAX_ENTITIES` objects with a non-empty ``name`` (at
    most :data:`MAX_NAME_CHARS` characters) and a ``description`` (at most :data:`MAX_DESCRIPTION_CHARS`)."""
    entity = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": MAX_NAME_CHARS},
            "description": {"type": "string", "maxLength": MAX_DESCRIPTION_CHARS},
        },
        "required": ["name", "description"],
    }
    return {
        "type": "object",
        "properties": {"entities": {"type": "array", "items": entity, "maxItems": MAX_ENTITIES}},
        "required": ["entities"],
    }


_EXAMPLE_PASSAGE = (
    "The Harlow Dam was completed in 1931 on the Vesna River. It supplies water to the town of Pellin, whose "
    "council voted in 1990 to add a hydroelectric plant to the dam."
)
_EXAMPLE_ENTITIES = [
    {
        "name": "Harlow Dam",
        "description": "A dam on the Vesna River completed in 1931. It supplies water to Pellin and received a "
        "hydroelectric plant after a 1990 vote.",
    },
    {"name": "Vesna River", "description": "The river on which the Harlow Dam was built."},
    {
        "name": "Pellin",
        "description": "A town supplied with water by the Harlow Dam. Its council voted in 1990 to add a "
        "hydroelectric plant to the dam.",
    },
]


def _passage(passage: str) -> str:
    return f'Passage:\n"""\n{passage}\n"""'


def entities_prompt(passage: str) -> list[Message]:
    """Messages asking for the key entities of ``passage`` with a description of each from this passage only
    (UnWeaver section 2; Appendix A)."""
    return one_shot(
        "You extract the key entities of a passage, each with a short description, for a retrieval index.",
        "List the key entities of the passage: people, organizations, places, objects, concepts, events. For each, "
        "give its name as written in the passage and a description of up to three sentences saying what the "
        "passage tells about it: its characteristics, its role, and its relations to the other entities. Use only "
        'this passage. Reply with JSON: {"entities": [{"name": "...", "description": "..."}, ...]}',
        _passage(_EXAMPLE_PASSAGE),
        {"entities": _EXAMPLE_ENTITIES},
        _passage(passage),
    )


def shorten_prompt(name: str, descriptions: str, max_chars: int) -> list[Message]:
    """Messages asking to merge an entity's concatenated descriptions into one shorter description of at most
    ``max_chars`` characters (UnWeaver footnote 4)."""
    return [
        {"role": "system", "content": "You merge several descriptions of one entity into a single short one."},
        {
            "role": "user",
            "content": (
                f"Below are descriptions of the entity {name!r}, gathered from different passages. Write one "
                f"coherent description of it, at most {max_chars} characters, keeping the facts that matter. "
                f"Reply with the description only.\n\nDescriptions:\n{descriptions}"
            ),
        },
    ]
