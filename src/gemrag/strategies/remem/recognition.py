"""Recognition memory: the LLM keeps the relevant facts among the top candidates (HippoRAG 2, Gutiérrez et al.
2025, section 3, "Recognition Memory"; REMem seed, "Step 2: Fact Reranking").

The question and the candidate facts (the top ``linking_top_k``, 5 by default) go to the LLM as structured output
(:class:`~gemrag.strategies.remem.openie_prompts.RecognizedFacts`, at most as many facts as candidates: HippoRAG 2's
code keeps up to ``link_top_k`` of the filter's answer, ``rerank_facts`` → ``DSPyFilter.rerank``; gemrag kept at most
four in earlier releases). Each returned fact is matched to a candidate (``filter_match``): by default as HippoRAG 2's
code does (``"snap"``), each returned fact becomes the candidate whose text is closest to it
(``difflib.get_close_matches`` with no cutoff), so a paraphrased or shortened copy still selects its fact — and an
invented fact selects the nearest real one; ``"exact"`` (gemrag's earlier rule, a variant) keeps only facts equal to
a candidate in their normalized elements
(:func:`~gemrag.graph.names.normalize_entity` of subject, predicate and object). An answer that stays malformed after
the retries keeps no fact (the caller falls back to dense retrieval) and the error is reported, not raised.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from gemrag.errors import GemragError, StructuredOutputError, is_fatal
from gemrag.graph.names import normalize_entity
from gemrag.models.structured import complete_structured
from gemrag.strategies.base import StrategyContext
from gemrag.strategies.remem.openie_prompts import (
    MAX_ITEM_CHARS,
    RecognizedFacts,
    recognition_prompt,
    recognition_prompt_few_shot,
    recognition_schema,
)


def max_tokens(n_facts: int) -> int:
    """Completion limit of the filter (tokens) for an answer of up to ``n_facts`` triples of three elements of at
    most :data:`~gemrag.strategies.remem.openie_prompts.MAX_ITEM_CHARS` characters (about a third as many tokens
    each): ``16 + n_facts * (MAX_ITEM_CHARS + 12)``, 676 for five facts."""
    return 16 + n_facts * (MAX_ITEM_CHARS + 12)


def match_facts(
    returned: Sequence[Sequence[str]], candidates: Sequence[Sequence[str]], match: str = "snap"
) -> list[int]:
    """Indices of the candidates the LLM returned, in the order returned, each once (so at most
    ``len(candidates)``, HippoRAG 2's ``link_top_k``).

    Args:
        returned: the facts in the LLM's answer (``[s, p, o]`` lists; with ``"exact"`` other lengths match
            nothing; an empty list matches nothing).
        candidates: the facts shown to it.
        match: ``"snap"`` (default, HippoRAG 2's rule: an exact normalized match, else the candidate whose
            ``" | "``-joined normalized text is closest by ``difflib``) or ``"exact"``.

    Returns:
        Candidate indices; with ``"exact"``, facts matching no candidate are dropped.

    Raises:
        ValueError: unknown ``match``.
    """
    if match not in ("snap", "exact"):
        raise ValueError(f"filter_match must be 'snap' or 'exact', got {match!r}")
    keys = [tuple(normalize_entity(str(x)) for x in c) for c in candidates]
    key = {k: i for i, k in reversed(list(enumerate(keys)))}
    texts = [" | ".join(k) for k in keys]
    out: list[int] = []
    for fact in returned:
        norm = tuple(normalize_entity(str(x)) for x in fact)
        i = key.get(norm) if len(fact) == 3 else None
        if i is None and match == "snap" and any(norm) and texts:
            close = difflib.get_close_matches(" | ".join(norm), texts, n=1, cutoff=0.0)
            i = texts.index(close[0]) if close else None
        if i is not None and i not in out:
            out.append(i)
    return out


def recognize_facts(
    ctx: StrategyContext,
    question: str,
    candidates: Sequence[Sequence[str]],
    match: str = "snap",
    few_shot: bool = True,
) -> tuple[list[int], str | None]:
    """Ask the LLM which ``candidates`` help answer ``question`` (returned facts matched by ``match``,
    :func:`match_facts`; the prompt with worked examples unless ``few_shot`` is False).

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
            (recognition_prompt_few_shot if few_shot else recognition_prompt)(question, candidates),
            RecognizedFacts,
            schema=recognition_schema(len(candidates)),
            max_tokens=max_tokens(len(candidates)),
        )
    except StructuredOutputError as exc:
        return [], str(exc)
    except GemragError as exc:
        if is_fatal(exc):
            raise
        return [], str(exc)
    return match_facts(answer.facts, candidates, match), None
