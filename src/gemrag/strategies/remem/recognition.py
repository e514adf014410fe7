"""Recognition memory: the LLM keeps the relevant facts among the top candidates (HippoRAG 2, Gutiérrez et al.
2025, section 3, "Recognition Memory"; REMem seed, "Step 2: Fact Reranking").

The question and the candidate facts go to the LLM as structured output
(:class:`~gemrag.strategies.remem.openie_prompts.RecognizedFacts`, at most four facts). Each returned fact is matched
to a
candidate by its normalized elements (:func:`~gemrag.graph.names.normalize_entity` of subject, predicate and
object); a returned fact that matches no candidate is dropped, never snapped to the most similar one (HippoRAG 2's
code snaps with ``difflib``, which turns an invented fact into a real one). An answer that stays malformed after
the retries keeps no fact (the caller falls back to dense retrieval) and the error is reported, not raised.
"""

from __future__ import annotations

from collections.abc import Sequence

from gemrag.errors import GemragError, StructuredOutputError, is_fatal
from gemrag.graph.names import normalize_entity
from gemrag.models.structured import complete_structured
from gemrag.strategies.base import StrategyContext
from gemrag.strategies.remem.openie_prompts import (
    MAX_ITEM_CHARS,
    MAX_RECOGNIZED,
    RecognizedFacts,
    recognition_prompt,
    recognition_schema,
)

MAX_TOKENS = 16 + MAX_RECOGNIZED * (MAX_ITEM_CHARS + 12)
"""Completion limit of the filter (tokens): up to four triples of three elements of at most
:data:`~gemrag.strategies.remem.openie_prompts.MAX_ITEM_CHARS` characters (about a third as many tokens each)."""


def match_facts(returned: Sequence[Sequence[str]], candidates: Sequence[Sequence[str]]) -> list[int]:
    """Indices of the candidates the LLM returned, in the order returned, each once, at most
    :data:`~gemrag.strategies.remem.openie_prompts.MAX_RECOGNIZED`.

    Args:
        returned: the facts in the LLM's answer (``[s, p, o]`` lists; other lengths match nothing).
        candidates: the facts shown to it.

    Returns:
        Candidate indices; facts matching no candidate are dropped.
    """
    key = {tuple(normalize_entity(x) for x in c): i for i, c in reversed(list(enumerate(candidates)))}
    out: list[int] = []
    for fact in returned:
        if len(fact) != 3:
            continue
        i = key.get(tuple(normalize_entity(str(x)) for x in fact))
        if i is not None and i not in out:
            out.append(i)
    return out[:MAX_RECOGNIZED]


def recognize_facts(
    ctx: StrategyContext, question: str, candidates: Sequence[Sequence[str]]
) -> tuple[list[int], str | None]:
    """Ask the LLM which ``candidates`` help answer ``question``.

    Returns:
        ``(kept candidate indices, None)``, or ``([], error message)`` when the answer stayed malformed or the
        request failed without being fatal. No candidates: ``([], None)`` without a call.

    Raises:
        GemragError: a fatal one (:func:`gemrag.errors.is_fatal`), e.g. the model crashed.
    """
    if not candidates:
        return [], None
    try:
        answer = complete_structured(
            ctx.get_llm(),
            recognition_prompt(question, candidates),
            RecognizedFacts,
            schema=recognition_schema(),
            max_tokens=MAX_TOKENS,
        )
    except StructuredOutputError as exc:
        return [], str(exc)
    except GemragError as exc:
        if is_fatal(exc):
            raise
        return [], str(exc)
    return match_facts(answer.facts, candidates), None
