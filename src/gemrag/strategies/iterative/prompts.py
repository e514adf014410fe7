"""Prompts and output schemas of the ``iterative`` strategy's four LLM passes.

* the next query (IRCoT, Trivedi et al. 2023, "Interleaving Retrieval with Chain-of-Thought Reasoning for
  Knowledge-Intensive Multi-Step Questions", ACL, section 3: the next chain-of-thought sentence from the passages so
  far and the chain before it, which drives the next retrieval): :func:`next_query_prompt`, :class:`NextQuery`;
* the decomposition (self-ask, Press et al. 2023, "Measuring and Narrowing the Compositionality Gap in Language
  Models", EMNLP Findings, section 3: follow-up questions, each answered before the next; written up front here, as
  MuSiQue's ``question_decomposition`` is, with ``#k`` standing for the answer of sub-question k):
  :func:`decompose_prompt`, :class:`Decomposition`;
* the answer of one sub-question, which fills ``#k`` in the later ones: :func:`sub_answer_prompt`,
  :class:`SubAnswer`;
* listwise reranking (RankGPT, Sun et al. 2023, "Is ChatGPT Good at Search? Investigating Large Language Models as
  Re-Ranking Agents", EMNLP, section 3.2: the passages numbered, the model writes the numbers in order of
  relevance; one prompt per sliding window): :func:`rerank_prompt`, :class:`Ranking`.

Every schema bounds its strings and lists, so a grammar-constrained small model cannot run on. The question (or
query) comes before the passages and the passages keep their numbers from one step to the next, so llama.cpp
reuses the prompt prefix of the previous step from its KV cache. The prompts are gemrag's own (the papers prompt
large models with few-shot chains of thought); changing a text changes the LLM cache keys, nothing else (no
artefact is stored).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from gemrag.models.base import Message
from gemrag.prompting import format_context, one_shot

MAX_QUERY_CHARS = 200
"""Longest query or sub-question the model may write (characters)."""
MAX_THOUGHT_CHARS = 300
"""Longest chain-of-thought sentence of the next-query pass (characters)."""
MAX_ANSWER_CHARS = 100
"""Longest sub-answer (characters): a name, a date, a place."""


class NextQuery(BaseModel):
    """Output of the next-query pass: what the passages say (``thought``), whether they are ``enough`` to answer
    the question, and the next search ``query`` (ignored when ``enough``)."""

    thought: str = ""
    enough: bool
    query: str = ""


class Decomposition(BaseModel):
    """Output of the decomposition pass: the sub-questions in the order they must be answered; ``#k`` in one
    stands for the answer of sub-question k (1-based)."""

    subquestions: list[str] = Field(min_length=1)


class SubAnswer(BaseModel):
    """Output of the sub-answer pass: a short answer found in the passages."""

    answer: str


class Ranking(BaseModel):
    """Output of the rerank pass: passage numbers (1-based), most relevant first."""

    ranking: list[int] = Field(default_factory=list)


def _string(max_chars: int, min_chars: int = 0) -> dict[str, Any]:
    return {"type": "string", "minLength": min_chars, "maxLength": max_chars}


def next_query_schema() -> dict[str, Any]:
    """JSON schema of :class:`NextQuery` (the thought first: the model reasons before it decides)."""
    return {
        "type": "object",
        "properties": {
            "thought": _string(MAX_THOUGHT_CHARS),
            "enough": {"type": "boolean"},
            "query": _string(MAX_QUERY_CHARS),
        },
        "required": ["thought", "enough", "query"],
    }


def decomposition_schema(max_subquestions: int) -> dict[str, Any]:
    """JSON schema of :class:`Decomposition`: 1 to ``max_subquestions`` non-empty sub-questions."""
    return {
        "type": "object",
        "properties": {
            "subquestions": {
                "type": "array",
                "items": _string(MAX_QUERY_CHARS, 1),
                "minItems": 1,
                "maxItems": max_subquestions,
            }
        },
        "required": ["subquestions"],
    }


def sub_answer_schema() -> dict[str, Any]:
    """JSON schema of :class:`SubAnswer`."""
    return {"type": "object", "properties": {"answer": _string(MAX_ANSWER_CHARS)}, "required": ["answer"]}


def ranking_schema(n: int) -> dict[str, Any]:
    """JSON schema of :class:`Ranking` over ``n`` passages: at most ``n`` numbers in ``[1, n]``."""
    return {
        "type": "object",
        "properties": {
            "ranking": {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": n}, "maxItems": n}
        },
        "required": ["ranking"],
    }


NEXT_QUERY_SYSTEM = (
    "You help answer a question that needs several facts, found one search at a time. Read the passages found so far. "
    "If they contain everything needed to answer the question, say it is enough. Otherwise write the next search "
    "query: one short question about the one missing fact, naming the entity the passages lead to (for example, when "
    "a passage says the film was directed by Jane Roe and the question asks where its director was born, the query "
    'is "Where was Jane Roe born?"). Reply with JSON only.'
)


def next_query_prompt(
    question: str, passages: Sequence[str], queries: Sequence[str], thoughts: Sequence[str] = ()
) -> list[Message]:
    """The next-query prompt (IRCoT's reasoning step, section 3): the question, the passages read so far (numbered
    in the order they were found), the searches already made and, when given, the chain of thought so far.

    IRCoT grows one chain: each reasoning step sees the sentences written before it and writes the next (HippoRAG's
    re-implementation, ``qa_utils.py:reason_step``, prompts ``Thought:`` followed by the earlier thoughts joined by
    spaces). With ``thoughts`` the prompt ends with them (``Reasoning so far:``) and asks for the chain's next
    sentence; without, it is the prompt of the earlier form (``[iterative] chain = "queries"``, and every first
    pass), word for word, so its LLM cache keys hold.

    Args:
        question: the user's question.
        passages: the texts read so far, earlier steps' first.
        queries: the searches made so far, the question first.
        thoughts: the earlier passes' thoughts, oldest first (blank ones are left out).
    """
    searches = "\n".join(f"{i}. {q}" for i, q in enumerate(queries, start=1))
    chain = " ".join(t.strip() for t in thoughts if t.strip())
    thought = "one sentence on what the passages say and what is still missing"
    user = f"Question: {question}\n\nPassages:\n{format_context(passages)}\n\nSearches made:\n{searches}\n\n"
    if chain:
        user += f"Reasoning so far: {chain}\n\n"
        thought = "the next sentence of the reasoning: what the passages add and what is still missing"
    user += (
        f'Reply with {{"thought": {thought}, '
        '"enough": true or false, "query": the next search query, or "" when enough}.'
    )
    return [{"role": "system", "content": NEXT_QUERY_SYSTEM}, {"role": "user", "content": user}]


DECOMPOSE_SYSTEM = "You split a question into the simple questions that answer it, one fact each."
DECOMPOSE_INSTRUCTION = (
    "Write the sub-questions in the order they must be answered. Write #1 for the answer of the first sub-question, "
    "#2 for the second's, and use them in the later sub-questions. A question that asks for one fact is its own "
    "single sub-question. Reply with JSON only."
)
DECOMPOSE_EXAMPLE = "Question: In which country was the director of the film Jaws born?"
DECOMPOSE_REPLY = {"subquestions": ["Who directed the film Jaws?", "In which country was #1 born?"]}


def decompose_prompt(question: str, max_subquestions: int) -> list[Message]:
    """The decomposition prompt (self-ask's follow-up questions, written up front), one worked example
    (gemrag's own, :func:`gemrag.prompting.one_shot`).

    Args:
        question: the user's question.
        max_subquestions: the most sub-questions allowed (also the schema's bound).
    """
    instruction = f"{DECOMPOSE_INSTRUCTION} At most {max_subquestions} sub-questions."
    return one_shot(DECOMPOSE_SYSTEM, instruction, DECOMPOSE_EXAMPLE, DECOMPOSE_REPLY, f"Question: {question}")


SUB_ANSWER_SYSTEM = (
    "You answer a question from passages with the shortest phrase that answers it. Reply with JSON only."
)


def sub_answer_prompt(subquestion: str, passages: Sequence[str]) -> list[Message]:
    """The sub-answer prompt: the sub-question and the passages its retrieval found.

    Args:
        subquestion: the sub-question, its placeholders already filled.
        passages: the texts its retrieval found, best first.
    """
    user = (
        f"Question: {subquestion}\n\nPassages:\n{format_context(passages)}\n\n"
        'Reply with {"answer": a name, place, date or number from the passages, or "" if they do not say}.'
    )
    return [{"role": "system", "content": SUB_ANSWER_SYSTEM}, {"role": "user", "content": user}]


RERANK_SYSTEM = "You rank passages by how useful each is for answering a question."


def rerank_prompt(question: str, passages: Sequence[str]) -> list[Message]:
    """The listwise rerank prompt (RankGPT, section 3.2: the query, the numbered passages, the query again, then the
    order asked for as passage numbers).

    Args:
        question: the search query.
        passages: the candidate texts, in the base strategy's order.
    """
    user = (
        f"Question: {question}\n\nHere are {len(passages)} passages:\n{format_context(passages)}\n\n"
        f"Question: {question}\nRank the passages by how useful they are for answering the question. "
        'Reply with {"ranking": the passage numbers, most useful first}.'
    )
    return [{"role": "system", "content": RERANK_SYSTEM}, {"role": "user", "content": user}]
