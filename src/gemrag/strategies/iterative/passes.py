"""The ``iterative`` strategy's LLM passes: one structured call each, through the memory's cached, metered LLM
(:func:`gemrag.models.structured.complete_structured` with a pydantic schema, so llama.cpp decodes under a grammar and
the same prompt twice is one model call), and a malformed answer reported, not raised.

Each pass returns ``(value, None)`` or ``(None, error message)``; the caller records the failure in the retrieval's
trace and goes on with what it has (the base strategy's ranking at worst). Only a fatal error (the model process
crashed, :func:`gemrag.errors.is_fatal`) is raised.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from gemrag.errors import GemragError, StructuredOutputError, is_fatal
from gemrag.models.base import Message
from gemrag.models.structured import complete_structured
from gemrag.strategies.base import StrategyContext
from gemrag.strategies.iterative.prompts import (
    MAX_ANSWER_CHARS,
    MAX_QUERY_CHARS,
    MAX_THOUGHT_CHARS,
    Decomposition,
    NextQuery,
    Ranking,
    SubAnswer,
    decompose_prompt,
    decomposition_schema,
    next_query_prompt,
    next_query_schema,
    ranking_schema,
    rerank_prompt,
    sub_answer_prompt,
    sub_answer_schema,
)

T = TypeVar("T", bound=BaseModel)
CHARS_PER_TOKEN = 3
"""Characters per token assumed when a pass's completion limit is set from its schema's character bounds."""
PLACEHOLDER = re.compile(r"#(\d+)")
"""A reference to the answer of an earlier sub-question: ``#1``, ``#2``, ... (MuSiQue's and the prompt's form)."""


def _ask(
    ctx: StrategyContext,
    messages: list[Message],
    output_type: type[T],
    schema: dict[str, Any],
    max_tokens: int,
    attempts: int,
) -> tuple[T | None, str | None]:
    """One structured call; ``(answer, None)``, or ``(None, message)`` for an answer still malformed after
    ``attempts`` or a non-fatal backend error.

    Raises:
        GemragError: a fatal one.
    """
    try:
        answer = complete_structured(
            ctx.get_llm(), messages, output_type, schema=schema, max_tokens=max_tokens, attempts=attempts
        )
    except StructuredOutputError as exc:
        return None, str(exc)
    except GemragError as exc:
        if is_fatal(exc):
            raise
        return None, str(exc)
    return answer, None


def next_query(
    ctx: StrategyContext,
    question: str,
    passages: Sequence[str],
    queries: Sequence[str],
    attempts: int = 1,
    thoughts: Sequence[str] = (),
) -> tuple[NextQuery | None, str | None]:
    """IRCoT's reasoning step (Trivedi et al. 2023, section 3): from the passages read so far (and, given
    ``thoughts``, the chain of thought so far), the model says whether they are enough, else writes the next query
    (:func:`~.prompts.next_query_prompt`).

    Returns:
        ``(NextQuery, None)`` with ``query`` whitespace-normalized, or ``(None, error)``.
    """
    limit = 24 + (MAX_THOUGHT_CHARS + MAX_QUERY_CHARS) // CHARS_PER_TOKEN
    messages = next_query_prompt(question, passages, queries, thoughts)
    answer, error = _ask(ctx, messages, NextQuery, next_query_schema(), limit, attempts)
    if answer is not None:
        answer.query = " ".join(answer.query.split())
    return answer, error


def decompose(
    ctx: StrategyContext, question: str, max_subquestions: int, attempts: int = 1
) -> tuple[list[str] | None, str | None]:
    """Self-ask's follow-up questions (Press et al. 2023, section 3), written up front
    (:func:`~.prompts.decompose_prompt`).

    Returns:
        ``(sub-questions, None)``: 1 to ``max_subquestions`` non-empty, whitespace-normalized strings (extra ones
        cut), or ``(None, error)``.
    """
    limit = 16 + max_subquestions * (MAX_QUERY_CHARS // CHARS_PER_TOKEN + 4)
    answer, error = _ask(
        ctx,
        decompose_prompt(question, max_subquestions),
        Decomposition,
        decomposition_schema(max_subquestions),
        limit,
        attempts,
    )
    if answer is None:
        return None, error
    subs = [" ".join(s.split()) for s in answer.subquestions]
    subs = [s for s in subs if s][:max_subquestions]
    return (subs, None) if subs else (None, "the decomposition has no non-empty sub-question")


def sub_answer(
    ctx: StrategyContext, subquestion: str, passages: Sequence[str], attempts: int = 1
) -> tuple[str | None, str | None]:
    """The short answer of one sub-question from its passages (:func:`~.prompts.sub_answer_prompt`).

    Returns:
        ``(answer, None)`` (non-empty, whitespace-normalized), or ``(None, error)``; an empty answer ("the passages
        do not say") is an error too.
    """
    limit = 8 + MAX_ANSWER_CHARS // CHARS_PER_TOKEN
    answer, error = _ask(ctx, sub_answer_prompt(subquestion, passages), SubAnswer, sub_answer_schema(), limit, attempts)
    if answer is None:
        return None, error
    text = " ".join(answer.answer.split())
    return (text, None) if text else (None, f"no answer to {subquestion!r} in its passages")


def rerank(
    ctx: StrategyContext, question: str, passages: Sequence[str], attempts: int = 1
) -> tuple[list[int] | None, str | None]:
    """RankGPT's listwise reranking (Sun et al. 2023, section 3.2) of ``passages`` for ``question``: one window
    (:mod:`~gemrag.strategies.iterative.rerank` slides the windows and fits each to the context window).

    Returns:
        ``(order, None)``: a permutation of ``range(len(passages))`` (0-based) — the numbers the model wrote, in
        its order, each once, out-of-range ones ignored, then the passages it left out in their given order — or
        ``(None, error)`` when the answer was malformed or named no valid passage.
    """
    n = len(passages)
    answer, error = _ask(ctx, rerank_prompt(question, passages), Ranking, ranking_schema(n), rerank_limit(n), attempts)
    if answer is None:
        return None, error
    return rerank_order(answer.ranking, n)


def rerank_limit(n: int) -> int:
    """The completion limit (tokens) of a rerank pass over ``n`` passages: up to ``n`` numbers of one or two digits,
    each with its separator, and the JSON around them."""
    return 8 + 3 * n


def rerank_order(ranking: Sequence[int], n: int) -> tuple[list[int] | None, str | None]:
    """The permutation of ``range(n)`` a model's 1-based ``ranking`` gives (see :func:`rerank`).

    Returns:
        ``(order, None)``, or ``(None, error)`` when no number is in ``[1, n]``.
    """
    chosen = list(dict.fromkeys(i - 1 for i in ranking if 1 <= i <= n))
    if not chosen:
        return None, f"the ranking {list(ranking)[:20]} names none of the {n} passages"
    return chosen + [i for i in range(n) if i not in chosen], None


def references(subquestion: str) -> list[int]:
    """The sub-question numbers (1-based) ``subquestion`` refers to with ``#k``, each once, in order."""
    return list(dict.fromkeys(int(m) for m in PLACEHOLDER.findall(subquestion)))


def fill(subquestion: str, values: dict[int, str]) -> str:
    """``subquestion`` with each ``#k`` replaced by ``values[k]`` (references without a value are left as they are),
    whitespace-normalized."""
    filled = PLACEHOLDER.sub(lambda m: values.get(int(m.group(1)), m.group(0)), subquestion)
    return " ".join(filled.split())
