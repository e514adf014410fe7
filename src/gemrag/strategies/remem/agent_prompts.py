"""Prompts and tool-call schemas of the REMem ``episodic_gist`` agent (seed ``remem-retrieval-strategies.txt``,
"Episodic Gist Strategy", "Agent Configuration").

Each step the model replies with one tool call as JSON, ``{"tool": <name>, "arguments": {...}}``: the call is
validated by a pydantic discriminated union on ``tool`` (:class:`AnyCall`; :class:`AnswerCall` when only
``output_answer`` is allowed) and constrained by a small JSON schema that lists only the allowed tools
(:func:`tool_call_schema`). The conversation is: a system message naming the tools of the mode, the question,
then per step the model's call (assistant turn) and the tool's result as text (user turn), so every step's prompt
extends the previous one (prefix reuse). Nothing the model writes is executed: a call only selects one of the
four fixed tools and its arguments.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, Field, RootModel

from gemrag.models.base import Message

SEMANTIC: Final = "semantic_retrieve"
LEXICAL: Final = "lexical_retrieve"
FACT: Final = "fact_retrieve"
ANSWER: Final = "output_answer"
TOOLS = (SEMANTIC, LEXICAL, FACT, ANSWER)
"""The agent's tools, in the order the system message lists them."""
RETRIEVAL_TOOLS = (SEMANTIC, LEXICAL, FACT)
MAX_K = 20
"""Most results one tool call may ask for."""
MAX_QUERY_CHARS = 300
MAX_ANSWER_CHARS = 400

_DESCRIPTIONS = {
    SEMANTIC: 'semantic_retrieve(query, target, k): search by meaning; target "gists" (dated summaries of the '
    'conversation) or "verbatim" (the original turns, with speaker and date).',
    LEXICAL: "lexical_retrieve(query, k): search the original turns for the query's words (names, rare words).",
    FACT: "fact_retrieve(query, start, end, k): search facts (subject, predicate, object, date); start and end "
    "(YYYY-MM-DD or null) keep only facts dated in that range.",
    ANSWER: "output_answer(answer): give the final answer, in a few words.",
}


class SemanticArgs(BaseModel):
    """Arguments of ``semantic_retrieve``: dense search over the gists or the verbatim turns."""

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    target: Literal["gists", "verbatim"] = "gists"
    k: int | None = Field(None, ge=1, le=MAX_K)


class LexicalArgs(BaseModel):
    """Arguments of ``lexical_retrieve``: BM25 over the verbatim turns."""

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    k: int | None = Field(None, ge=1, le=MAX_K)


class FactArgs(BaseModel):
    """Arguments of ``fact_retrieve``: dense search over the facts, optionally within dates ``[start, end]``."""

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    start: str | None = None
    end: str | None = None
    k: int | None = Field(None, ge=1, le=MAX_K)


class AnswerArgs(BaseModel):
    """Arguments of ``output_answer``."""

    answer: str = Field(min_length=1, max_length=MAX_ANSWER_CHARS)


class SemanticCall(BaseModel):
    """A ``semantic_retrieve`` call."""

    tool: Literal["semantic_retrieve"]
    arguments: SemanticArgs


class LexicalCall(BaseModel):
    """A ``lexical_retrieve`` call."""

    tool: Literal["lexical_retrieve"]
    arguments: LexicalArgs


class FactCall(BaseModel):
    """A ``fact_retrieve`` call."""

    tool: Literal["fact_retrieve"]
    arguments: FactArgs


class AnswerCall(BaseModel):
    """An ``output_answer`` call (the only call allowed at the last step)."""

    tool: Literal["output_answer"]
    arguments: AnswerArgs


Call = SemanticCall | LexicalCall | FactCall | AnswerCall


class AnyCall(RootModel[Annotated[Call, Field(discriminator="tool")]]):
    """Any tool call, told apart by ``tool``; ``.root`` is the call."""


_ARG_SCHEMAS: dict[str, dict[str, Any]] = {
    SEMANTIC: {
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS},
            "target": {"enum": ["gists", "verbatim"]},
            "k": {"type": "integer", "minimum": 1, "maximum": MAX_K},
        },
        "required": ["query", "target"],
    },
    LEXICAL: {
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS},
            "k": {"type": "integer", "minimum": 1, "maximum": MAX_K},
        },
        "required": ["query"],
    },
    FACT: {
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS},
            "start": {"anyOf": [{"type": "string", "maxLength": 10}, {"type": "null"}]},
            "end": {"anyOf": [{"type": "string", "maxLength": 10}, {"type": "null"}]},
            "k": {"type": "integer", "minimum": 1, "maximum": MAX_K},
        },
        "required": ["query"],
    },
    ANSWER: {
        "properties": {"answer": {"type": "string", "minLength": 1, "maxLength": MAX_ANSWER_CHARS}},
        "required": ["answer"],
    },
}


def tool_call_schema(tools: Sequence[str]) -> dict[str, Any]:
    """The JSON schema of one call to one of ``tools`` (names from :data:`TOOLS`): an object ``{"tool",
    "arguments"}`` per tool, joined by ``anyOf`` when there are several.

    Raises:
        KeyError: an unknown tool name.
    """
    options = [
        {
            "type": "object",
            "properties": {"tool": {"enum": [t]}, "arguments": {"type": "object", **_ARG_SCHEMAS[t]}},
            "required": ["tool", "arguments"],
        }
        for t in tools
    ]
    return options[0] if len(options) == 1 else {"anyOf": options}


def call_json(tool: str, arguments: dict[str, Any]) -> str:
    """A call as the JSON text of the model's turn."""
    return json.dumps({"tool": tool, "arguments": arguments}, ensure_ascii=False)


def agent_messages(question: str, tools: Sequence[str]) -> list[Message]:
    """The start of the agent's conversation: the system message listing ``tools`` and the question."""
    listed = "\n".join(f"- {_DESCRIPTIONS[t]}" for t in tools)
    system = (
        "You answer questions about a long conversation between people by calling tools that search the "
        f"memory of it. Tools:\n{listed}\n"
        "Call one tool per turn and read its result before the next call. Dates in the memory are absolute. "
        'Reply with JSON only: {"tool": "<tool name>", "arguments": {...}}'
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": f"Question: {question}"}]


def step_note(step: int, max_steps: int) -> str:
    """The line after a tool result: the next step's number, and at the last step that only ``output_answer``
    is allowed (``step`` is the 1-based number of the next step)."""
    if step >= max_steps:
        return f"Step {step} of {max_steps}, the last one: answer now with output_answer."
    return f"Step {step} of {max_steps}: call a tool, or output_answer when you can answer."


FALLBACK_NOTE = "Reply with the answer only, in a few words (not JSON)."
"""Appended to the last user turn when the final call stayed malformed: the free-text answer request."""
