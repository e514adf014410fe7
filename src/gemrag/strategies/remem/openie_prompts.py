"""Prompts and output schemas of REMem's ``openie`` extraction and its recognition-memory filter.

REMem (seed ``remem-retrieval-strategies.txt``, "Default Strategy (OpenIE)") forks HippoRAG 2 (Gutiérrez et al.
2025, "From RAG to Memory", section 3): each passage costs two LLM calls, named-entity recognition first, then
(subject, predicate, object) triples that each contain at least one of those entities, with pronouns resolved
to the names they stand for. At query time the recognition-memory filter (HippoRAG 2 section 3, "Recognition
Memory") shows the LLM the question and the top ``linking_top_k`` facts and keeps the relevant ones (up to all of
them, as HippoRAG 2's code keeps up to ``link_top_k`` = 5 of the filter's answer) or none.

The OpenIE prompts carry one worked example (a passage written for gemrag, not taken from the papers) as a
user turn answered by an assistant turn, and the passage comes last, so llama.cpp reuses the shared prefix from
its KV cache. Changing a text here changes
the LLM cache keys, and the artefact versions (:data:`NER_VERSION`, :data:`TRIPLES_VERSION`) must change with it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from gemrag.models.base import Message
from gemrag.prompting import one_shot

NER_VERSION = "ner-v2"
"""Artefact version of the named-entity pass (bump when its prompt or schema changes)."""
TRIPLES_VERSION = "triples-v2"
"""Artefact version of the triple pass (bump when its prompt or schema changes)."""

MAX_ENTITIES = 24
"""Most named entities accepted per passage (the grammar bounds the list, so a small model cannot run on)."""
MAX_TRIPLES = 24
"""Most triples accepted per passage."""
MAX_ITEM_CHARS = 120
"""Longest entity name or triple element (characters)."""


class NamedEntities(BaseModel):
    """Output of the named-entity pass: the passage's named entities, as written in it."""

    named_entities: list[str] = Field(default_factory=list)


class Triples(BaseModel):
    """Output of the triple pass: ``[subject, predicate, object]`` lists (validated to three strings each)."""

    triples: list[list[str]] = Field(default_factory=list)


class RecognizedFacts(BaseModel):
    """Output of the recognition filter: the kept facts as ``[subject, predicate, object]`` lists."""

    facts: list[list[str]] = Field(default_factory=list)


def _string(max_chars: int = MAX_ITEM_CHARS) -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "maxLength": max_chars}


def _triple_array(max_items: int) -> dict[str, Any]:
    return {
        "type": "array",
        "items": {"type": "array", "items": _string(), "minItems": 3, "maxItems": 3},
        "maxItems": max_items,
    }


def ner_schema() -> dict[str, Any]:
    """JSON schema of :class:`NamedEntities`: at most :data:`MAX_ENTITIES` names of 1 to :data:`MAX_ITEM_CHARS`
    characters."""
    return {
        "type": "object",
        "properties": {"named_entities": {"type": "array", "items": _string(), "maxItems": MAX_ENTITIES}},
        "required": ["named_entities"],
    }


def triples_schema() -> dict[str, Any]:
    """JSON schema of :class:`Triples`: at most :data:`MAX_TRIPLES` triples of three non-empty strings."""
    return {"type": "object", "properties": {"triples": _triple_array(MAX_TRIPLES)}, "required": ["triples"]}


def recognition_schema(max_facts: int) -> dict[str, Any]:
    """JSON schema of :class:`RecognizedFacts`: at most ``max_facts`` triples (the number of candidates shown).

    Raises:
        ValueError: ``max_facts < 1``.
    """
    if max_facts < 1:
        raise ValueError(f"max_facts must be >= 1, got {max_facts}")
    return {"type": "object", "properties": {"facts": _triple_array(max_facts)}, "required": ["facts"]}


_EXAMPLE_PASSAGE = (
    "Marta Kovac founded the Lindqvist Bakery in Tromsø in 1998. She later sold it to Nordic Foods, a company "
    "based in Oslo."
)
_EXAMPLE_ENTITIES = ["Marta Kovac", "Lindqvist Bakery", "Tromsø", "1998", "Nordic Foods", "Oslo"]
_EXAMPLE_TRIPLES = [
    ["Marta Kovac", "founded", "Lindqvist Bakery"],
    ["Lindqvist Bakery", "located in", "Tromsø"],
    ["Lindqvist Bakery", "founded in", "1998"],
    ["Marta Kovac", "sold Lindqvist Bakery to", "Nordic Foods"],
    ["Nordic Foods", "based in", "Oslo"],
]


def _passage(passage: str) -> str:
    return f'Passage:\n"""\n{passage}\n"""'


def ner_prompt(passage: str) -> list[Message]:
    """Messages asking for the named entities of ``passage`` (HippoRAG 2 section 3, OpenIE step 1)."""
    return one_shot(
        "You extract named entities from passages for a knowledge graph.",
        "List the named entities of the passage: people, organizations, places, works, events, and dates or "
        "numbers that name something. Copy each name as written in the passage; list each once. "
        'Reply with JSON: {"named_entities": ["...", ...]}',
        _passage(_EXAMPLE_PASSAGE),
        {"named_entities": _EXAMPLE_ENTITIES},
        _passage(passage),
    )


def triples_prompt(passage: str, entities: Sequence[str]) -> list[Message]:
    """Messages asking for the (subject, predicate, object) triples of ``passage`` given its named entities
    (HippoRAG 2 section 3, OpenIE step 2): each triple should contain at least one of the entities, and pronouns
    are replaced by the names they refer to."""

    def request(text: str, names: Sequence[str]) -> str:
        return f"{_passage(text)}\nNamed entities: {json.dumps(list(names), ensure_ascii=False)}"

    return one_shot(
        "You extract facts from passages as triples for a knowledge graph.",
        "Write the facts that the passage states as [subject, predicate, object] triples, using only what this "
        "passage says. Each triple must contain at least one of the passage's named entities (listed after it), "
        "preferably two. Replace pronouns (he, she, it, they) with the names they refer to. Keep subjects, "
        'predicates and objects short. Reply with JSON: {"triples": [["subject", "predicate", "object"], ...]}',
        request(_EXAMPLE_PASSAGE, _EXAMPLE_ENTITIES),
        {"triples": _EXAMPLE_TRIPLES},
        request(passage, entities),
    )


def recognition_prompt(question: str, facts: Sequence[Sequence[str]]) -> list[Message]:
    """Messages asking which of ``facts`` (the top facts by embedding similarity) help answer ``question``
    (HippoRAG 2 section 3, "Recognition Memory": keep the relevant ones, possibly none).

    The prompt sets no number below the candidates shown: HippoRAG 2's instruction says "up to 4", but its code
    keeps up to ``link_top_k`` = 5 of the answer (``rerank_facts`` → ``DSPyFilter.rerank``) and one of its
    demonstrations keeps all five candidates; gemrag follows the code. Like HippoRAG 2's instruction, it allows an
    empty answer when nothing is relevant."""
    listed = "\n".join(json.dumps(list(f), ensure_ascii=False) for f in facts)
    return [
        {"role": "system", "content": "You select the facts that are relevant to a question."},
        {
            "role": "user",
            "content": (
                "Below are a question and candidate facts, one [subject, predicate, object] per line. Copy the "
                "facts that help answer the question, exactly as written; reply with an empty list if none is "
                "relevant.\n"
                'Reply with JSON: {"facts": [["subject", "predicate", "object"], ...]}\n\n'
                f"Candidate facts:\n{listed}\n\nQuestion: {question}"
            ),
        },
    ]


_FEW_SHOT = [
    (
        "Which river does the dam that supplies Pellin stand on?",
        [
            ["harlow dam", "supplies water to", "pellin"],
            ["pellin council", "voted in", "1990"],
            ["harlow dam", "was completed in", "1931"],
            ["harlow dam", "stands on", "vesna river"],
            ["vesna river", "flows through", "the northern valley"],
        ],
        [["harlow dam", "supplies water to", "pellin"], ["harlow dam", "stands on", "vesna river"]],
    ),
    (
        "Was the painter of The Grey Harbour born before Oskar Brandt?",
        [
            ["ida lorne", "was born in", "1882"],
            ["the grey harbour", "hangs in", "the city museum"],
            ["the grey harbour", "was painted by", "ida lorne"],
            ["oskar brandt", "was born in", "1879"],
            ["the city museum", "opened in", "1901"],
        ],
        [
            ["the grey harbour", "was painted by", "ida lorne"],
            ["ida lorne", "was born in", "1882"],
            ["oskar brandt", "was born in", "1879"],
        ],
    ),
]
"""Worked examples of the few-shot filter prompt, written for gemrag (not HippoRAG 2's demonstrations): a two-hop
question keeping the facts of both hops, and a comparison keeping three facts. Like HippoRAG 2's demonstrations,
none answers with an empty list (gemrag's earlier second example did: a question no candidate answers, kept
empty)."""


def recognition_prompt_few_shot(question: str, facts: Sequence[Sequence[str]]) -> list[Message]:
    """:func:`recognition_prompt` preceded by worked examples as user / assistant turns (HippoRAG 2's filter
    prompt is few-shot, its demonstrations chosen by DSPy; these are our own). The default of ``remem.filter_prompt``.
    """
    messages = recognition_prompt(question, facts)
    shots: list[Message] = []
    for q, candidates, kept in _FEW_SHOT:
        example = recognition_prompt(q, candidates)[1]
        shots += [example, {"role": "assistant", "content": json.dumps({"facts": kept})}]
    return [messages[0], *shots, messages[1]]
