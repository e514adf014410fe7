"""Utility questions, Q(CHUNK_i, m) (GEM-RAG section III.B.1, "Generating Utility Questions").

Each node's questions are generated as structured output through the extraction pipeline
(:mod:`gemrag.strategies.platform.extraction`: batches of nodes in flight, every answer cached before use),
kept as written (a repeated question counts twice, as in the paper's sum over m; ``gem.dedupe_questions`` drops
repeats) and committed in their own transaction as they arrive, so an interrupted run resumes with the unfinished
nodes and repeats no LLM call. A node whose output stays malformed after the retries (or whose request fails) keeps
its place in the graph (it is then represented by its own text embedding) and the failure is recorded for
``gemrag info`` — never silently dropped.

A failed node is retried by the next build (:func:`nodes_needing_questions`), at most
``QUESTION_RETRIES`` times: each build's try makes ``ATTEMPTS`` structured-output attempts with fresh
temperatures and seeds (so the cached failures are not replayed), and every failed try leaves one
``failures`` row (phase ``index/utility_questions``) for the node, which is what counts the tries. After
``1 + QUESTION_RETRIES`` failed builds the node stays failed (represented by its own text embedding), so a
chunk the model cannot handle costs at most 9 LLM calls in all. (Tries recorded before the questions were
reset for a new m count too.)
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence

from gemrag.errors import GemragError
from gemrag.store import NodeRecord
from gemrag.strategies.base import StrategyContext
from gemrag.strategies.gem.prompts import (
    MAX_QUESTION_CHARS,
    UtilityQuestions,
    utility_questions_prompt,
    utility_questions_schema,
)
from gemrag.strategies.platform import extraction
from gemrag.strategies.platform.extraction import Extraction, run_extraction
from gemrag.strategies.platform.titles import indexed_text_of

QUESTION_FAILED = -1
"""``questions_done`` of a node whose questions failed (set by ``Store.fail_questions``)."""

QUESTION_RETRIES = 2
"""Builds after the first that retry a node whose questions failed (bounded, so a chunk the model cannot handle
does not cost LLM calls forever)."""

ATTEMPTS = 3
"""Structured-output attempts per node per build (:func:`gemrag.models.structured.complete_structured_iter`)."""

PHASE = "index/utility_questions"
"""The ``failures`` phase of a node whose questions failed."""


def failed_tries(ctx: StrategyContext) -> Counter[int]:
    """Failed question tries per node id, counted from the recorded failures (phase :data:`PHASE`)."""
    return extraction.failed_tries(ctx, PHASE)


def nodes_needing_questions(ctx: StrategyContext, nodes: Sequence[NodeRecord]) -> list[NodeRecord]:
    """The nodes a build generates questions for: pending ones (``questions_done == 0``) and failed ones
    (``-1``) with fewer than ``1 + QUESTION_RETRIES`` recorded failed tries."""
    tries = failed_tries(ctx) if any(n.questions_done == QUESTION_FAILED for n in nodes) else Counter()
    return [
        n
        for n in nodes
        if n.questions_done == 0 or (n.questions_done == QUESTION_FAILED and tries[n.id] <= QUESTION_RETRIES)
    ]


def dedupe_questions(questions: Sequence[str]) -> list[str]:
    """Strip, drop empty ones and case/whitespace-insensitive duplicates, keeping first occurrences (the
    ``gem.dedupe_questions = true`` option of :func:`kept_questions`)."""
    seen: set[str] = set()
    out = []
    for q in questions:
        q = " ".join(q.split())
        key = q.lower().rstrip("?").strip()
        if key and key not in seen:
            seen.add(key)
            out.append(q)
    return out


def kept_questions(questions: Sequence[str], m: int, *, dedupe: bool = False) -> list[str]:
    """The questions a node keeps of the LLM's ``Q(CHUNK_i, m)``: at most ``m``, whitespace-normalized, empty ones
    dropped.

    By default (``dedupe=False``) a question the model wrote twice is kept twice: the paper sums the similarity
    over the m questions (GEM-RAG III.B.1, "Building the Weighted Complete Graph": ``s_tv = sum_{i=1..m}
    SIM(v_ti, v_v)``), so a node whose questions repeat keeps m terms and the weight of its edges. With
    ``dedupe=True`` (gemrag's earlier rule) case/whitespace-insensitive duplicates are dropped
    (:func:`dedupe_questions`), so such a node keeps fewer than m questions and lighter edges.
    """
    if dedupe:
        return dedupe_questions(questions)[:m]
    return [q for q in (" ".join(q.split()) for q in questions) if q][:m]


def questions_extraction(m: int) -> Extraction[str]:
    """The LLM pass Q(text, m) over texts (GEM-RAG section III.B.1): the utility-question prompt,
    :class:`UtilityQuestions` constrained to exactly m questions of 8 to :data:`MAX_QUESTION_CHARS` characters,
    :data:`ATTEMPTS` attempts per build, first attempt 0 (callers retrying a text replace ``first_attempt``).

    Args:
        m: questions per text (>= 1).
    """
    return Extraction(
        "utility questions",
        lambda text: utility_questions_prompt(text, m),
        UtilityQuestions,
        schema=utility_questions_schema(m),
        max_tokens=(MAX_QUESTION_CHARS // 3 + 8) * m + 16,
        attempts=ATTEMPTS,
    )


def questions_for_text(ctx: StrategyContext, text: str, m: int, *, retry: int = 0, dedupe: bool = False) -> list[str]:
    """m utility questions for one text (:func:`kept_questions`: fewer than m only with ``dedupe``).

    ``retry`` is the number of earlier failed tries for this text: its attempts continue the numbering
    (new temperatures and seeds, hence new cache keys).

    Raises:
        StructuredOutputError: the LLM's output stayed invalid after the retries.
        GemragError: the backend failed.
    """
    if m == 0:
        return []
    spec = dataclasses.replace(questions_extraction(m), first_attempt=lambda _: retry * ATTEMPTS)
    (_, result), *_ = list(spec.results(ctx.get_llm(), [text]))
    if isinstance(result, GemragError):
        raise result
    return kept_questions(result.questions, m, dedupe=dedupe)


def generate_utility_questions(
    ctx: StrategyContext, nodes: Sequence[NodeRecord], m: int, *, titles: bool, dedupe: bool = False
) -> None:
    """Generate and store m questions for each node (GEM-RAG section III.B.1) through the extraction pipeline
    (:func:`gemrag.strategies.platform.extraction.run_extraction`: batched, cached, committed per node, with a progress
    bar showing chunks/s and tokens/s); failures are recorded.

    Each node's questions are committed with ``Store.set_questions`` as they arrive; a node whose output stays
    invalid, or whose request fails, gets ``Store.fail_questions`` (the failure row and status -1 in one
    transaction). A node failed in earlier builds continues its attempt numbering (module docstring).

    Args:
        ctx: the strategy context.
        nodes: nodes whose questions are not done yet (pending, or failed and retried: see
            :func:`nodes_needing_questions`).
        m: questions per node (0 marks the nodes done with no questions: the chunk-embedding ablation; no LLM).
        titles: the prompt shows a chunk as its document's title and its text (``gem.read_titles``; default false:
            the paper's Q(CHUNK_i, m) reads the chunk alone).
        dedupe: drop repeated questions (``gem.dedupe_questions``; :func:`kept_questions`).

    Raises:
        GemragError: a fatal one (e.g. the model crashed): the nodes done before it stay done.
    """
    if not nodes:
        return
    if m == 0:
        for node in nodes:
            ctx.store.set_questions(node.id, [])
        return
    tries = failed_tries(ctx) if any(n.questions_done == QUESTION_FAILED for n in nodes) else Counter()
    retry = {n.id: tries[n.id] if n.questions_done == QUESTION_FAILED else 0 for n in nodes}
    spec = questions_extraction(m)
    text_of = indexed_text_of(ctx, titles=titles)
    run_extraction(
        ctx,
        nodes,
        spec.over(text_of, first_attempt=lambda node: retry[node.id] * ATTEMPTS),
        save=lambda node, result: ctx.store.set_questions(node.id, kept_questions(result.questions, m, dedupe=dedupe)),
        fail=lambda node, exc: ctx.store.fail_questions(node.id, PHASE, str(exc)),
    )
