"""Prompts and output schemas for the LLM calls GEM-RAG makes.

* utility questions — GEM-RAG section III.B.1, "Generating Utility Questions": Q(CHUNK_i, m) gives m
  questions that the chunk can answer;
* eigentheme summaries — section III.B.1, "Building the Summary Nodes": the LLM summarizes the texts of an
  eigenvector's top e components;
* answers — section III.B.2: "The LLM is then given this context, followed by the question";
* RAPTOR cluster summaries — the baseline's own prompt (Sarthi et al. 2024; ``raptor/SummarizationModels.py``
  of the authors' code).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from gemrag.models.base import Message

LETTERS = "ABCDEFGHIJ"


class UtilityQuestions(BaseModel):
    """Structured output of the utility-question prompt."""

    questions: list[str] = Field(default_factory=list)


class ChoiceAnswer(BaseModel):
    """Structured output of the multiple-choice answer prompt: one option letter."""

    answer: str


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
    (:mod:`gemrag.models.llama_batch`). Changing this text (or its order) changes the LLM cache keys.
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


def raptor_summary_prompt(passages: Sequence[str]) -> list[Message]:
    """Messages asking for RAPTOR's summary of one cluster of nodes (Sarthi et al. 2024).

    As in the authors' code, the node texts are flattened to one line each and separated by blank lines;
    the length limit is the completion's ``max_tokens`` (RAPTOR: 100), not the prompt.
    """
    context = "".join(" ".join(p.splitlines()) + "\n\n" for p in passages)
    return [
        {"role": "system", "content": "You are a helpful assistant."},
        {
            "role": "user",
            "content": f"Write a summary of the following, including as many key details as possible: {context}:",
        },
    ]


def format_context(texts: Sequence[str]) -> str:
    """Number the context passages ``[1] ...`` in retrieval order."""
    return "\n\n".join(f"[{i + 1}] {t}" for i, t in enumerate(texts))


#: Last instruction of a free-form answer prompt; with ``abstain=True`` the model may decline instead of guessing.
GUESS = "If the context does not contain the answer, give your best guess."
ABSTAIN = "If the context does not contain the answer, say that it is not mentioned."


def answer_prompt(
    question: str, context: Sequence[str], choices: Sequence[str] | None = None, *, abstain: bool = False
) -> list[Message]:
    """Messages with the retrieved context followed by the question (and lettered options, if any).

    ``abstain`` (free-form only): tell the model to say the answer is not mentioned when the context lacks it,
    instead of guessing — for datasets with unanswerable questions (LoCoMo category 5, Maharana et al. 2024).
    The default prompt is unchanged, so the LLM cache keys of other evaluations stay the same.
    """
    system = "Answer questions about a document using the context passages retrieved from it."
    user = f"Context:\n{format_context(context)}\n\nQuestion: {question}\n"
    if choices:
        options = "\n".join(f"{LETTERS[i]}. {c}" for i, c in enumerate(choices))
        letters = ", ".join(LETTERS[: len(choices)])
        user += (
            f"Options:\n{options}\n\nWhich option is correct according to the context? Think about each "
            f'option, then reply with JSON whose "answer" is one letter from {letters}.'
        )
    else:
        user += f"\nAnswer briefly. {ABSTAIN if abstain else GUESS}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def choice_schema(n_choices: int) -> dict[str, Any]:
    """JSON schema restricting the answer to one of the first ``n_choices`` letters."""
    return {
        "type": "object",
        "properties": {"answer": {"type": "string", "enum": list(LETTERS[:n_choices])}},
        "required": ["answer"],
    }


def one_shot(system: str, instruction: str, example: str, reply: object, real: str) -> list[Message]:
    """A system message, then the worked example as a user turn and its answer as the assistant's turn, then the
    real request (HippoRAG 2's one-shot form, shared by the REMem prompts: small models copy an example written
    into the instructions)."""
    return [
        {"role": "system", "content": f"{system}\n{instruction}"},
        {"role": "user", "content": example},
        {"role": "assistant", "content": json.dumps(reply, ensure_ascii=False)},
        {"role": "user", "content": real},
    ]
