"""Prompts and output schemas of GEM-RAG's LLM passes (utility questions and eigentheme summaries).

* utility questions — GEM-RAG section III.B.1, "Generating Utility Questions": Q(CHUNK_i, m) gives m
  questions that the chunk can answer;
* eigentheme summaries — section III.B.1, "Building the Summary Nodes": the LLM summarizes the texts of an
  eigenvector's top e components;
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from gemrag.models.base import Message


class UtilityQuestions(BaseModel):
    """Structured output of the utility-question prompt."""

    questions: list[str] = Field(default_factory=list)


#: Longest utility question accepted (characters). Enforced by the grammar, so a small model cannot run on
#: (copying the passage into one "question") until max_tokens truncates the JSON.
MAX_QUESTION_CHARS = 160


def utility_questions_schema(m: int) -> dict[str, Any]:
    """JSON schema for exactly ``m`` question strings of 8 to :data:`MAX_QUESTION_CHARS` characters."""
    return {
        "type": "object",
        "properties": {
            "questions": {
                "type": "array",
                "items": {"type": "string", "minLength": 8, "maxLength": MAX_QUESTION_CHARS},
                "minItems": m,
                "maxItems": m,
            }
        },
        "required": ["questions"],
    }


def utility_questions_prompt(chunk: str, m: int) -> list[Message]:
    """Messages asking for ``m`` utility questions answerable from ``chunk`` (GEM-RAG III.B.1: "a utility
    question asks something that could be answered given the text chunk as context").

    The chunk comes last: everything before it (system message, instructions, JSON hint) is the same for every
    chunk of a build, so llama.cpp keeps it in its KV cache and each call pays only for its chunk's tokens
    (:mod:`gemrag.models.llama.batch`). Changing this text (or its order) changes the LLM cache keys.
    """
    return [
        {
            "role": "system",
            "content": "You write reading-comprehension questions about a passage from a story or document.",
        },
        {
            "role": "user",
            "content": (
                f"Write {m} different questions that this passage answers (the passage is below). Ask about "
                "specific facts in it: what happens, who does what, why, how, when, and descriptions. Use the "
                "names and details from the passage so each question makes sense on its own. Do not ask about "
                "the author, the narrator or the passage itself.\n"
                'Reply with JSON: {"questions": ["...", ...]}\n\n'
                f'Passage:\n"""\n{chunk}\n"""'
            ),
        },
    ]


def summary_prompt(passages: Sequence[str], max_words: int) -> list[Message]:
    """Messages asking for one summary of an eigentheme's member passages (at most ``max_words`` words)."""
    body = "\n\n".join(f"[{i + 1}] {p}" for i, p in enumerate(passages))
    return [
        {"role": "system", "content": "You summarize passages from a document accurately and concisely."},
        {
            "role": "user",
            "content": (
                f"{body}\n\nThese passages share a theme. Write one paragraph of at most {max_words} words "
                "that summarizes what they say: the shared theme, the people and events involved, and the "
                "key facts. Use only information from the passages."
            ),
        },
    ]
