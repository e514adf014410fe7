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
"""Entities accepted per chunk at T = 100 tokens and the least any sized cap allows (:func:`entity_cap`)."""
TOKENS_PER_ENTITY = 8
"""Chunk tokens per accepted entity of the sized cap (:func:`entity_cap`): a chunk of T tokens may list T / 8."""
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


def entity_cap(max_entities: int | None, chunk_tokens: int) -> int:
    """The most entities one extraction may list (0: no cap).

    The paper sets no limit (section 2, "The lack of limits of the number of entities extracted per chunk"). A
    small model constrained by a JSON grammar with no bound may repeat entities until its completion limit, so the
    default (``max_entities = None``) sizes the cap by the chunk: ``max(MAX_ENTITIES, chunk_tokens //
    TOKENS_PER_ENTITY)`` (12 at T = 100, 32 at T = 256, 150 at T = 1,200), more than a chunk names in practice.
    ``0`` is the paper's letter (no cap; the completion limit still ends the list); ``n > 0`` caps at n.

    Raises:
        ValueError: a negative cap or chunk size.
    """
    if chunk_tokens < 1 or (max_entities is not None and max_entities < 0):
        raise ValueError(f"need chunk_tokens >= 1 and max_entities >= 0, got {chunk_tokens}, {max_entities}")
    if max_entities is not None:
        return max_entities
    return max(MAX_ENTITIES, chunk_tokens // TOKENS_PER_ENTITY)


def entities_version(cap: int) -> str:
    """The artefact version of an extraction with this cap (:func:`entity_cap`): :data:`ENTITIES_VERSION` for the
    original 12 (so artefacts made before the cap was an option stay valid), ``".../max<n>"`` or
    ``".../unbounded"`` otherwise (a different schema asks a different question, so new cache keys)."""
    if cap == MAX_ENTITIES:
        return ENTITIES_VERSION
    return f"{ENTITIES_VERSION}/{'unbounded' if cap == 0 else f'max{cap}'}"


def entities_schema(cap: int = MAX_ENTITIES) -> dict[str, Any]:
    """JSON schema of :class:`ChunkEntities`: at most ``cap`` objects (0: any number) with a non-empty ``name`` (at
    most :data:`MAX_NAME_CHARS` characters) and a ``description`` (at most :data:`MAX_DESCRIPTION_CHARS`)."""
    entity = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": MAX_NAME_CHARS},
            "description": {"type": "string", "maxLength": MAX_DESCRIPTION_CHARS},
        },
        "required": ["name", "description"],
    }
    array: dict[str, Any] = {"type": "array", "items": entity}
    if cap > 0:
        array["maxItems"] = cap
    return {"type": "object", "properties": {"entities": array}, "required": ["entities"]}


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
