"""Utility questions, Q(CHUNK_i, m) (GEM-RAG section III.B.1, "Generating Utility Questions").

Each node's questions are generated as structured output, deduplicated, and committed in their own
transaction before the next node starts, so an interrupted run resumes at the first unfinished node. A
node whose output stays malformed after the retries keeps its place in the graph (it is then represented by
its own text embedding) and the failure is recorded for ``gemrag info`` — never silently dropped.

A failed node is retried by the next build (:func:`nodes_needing_questions`), at most
``QUESTION_RETRIES`` times: each build's try makes ``ATTEMPTS`` structured-output attempts with fresh
temperatures and seeds (so the cached failures are not replayed), and every failed try leaves one
``failures`` row (phase ``index/utility_questions``) for the node, which is what counts the tries. After
``1 + QUESTION_RETRIES`` failed builds the node stays failed (represented by its own text embedding), so a
chunk the model cannot handle costs at most 9 LLM calls in all. (Tries recorded before the questions were
reset for a new m count too.)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from gemrag.errors import StructuredOutputError
from gemrag.models.prompts import (
    MAX_QUESTION_CHARS,
    UtilityQuestions,
    utility_questions_prompt,
    utility_questions_schema,
)
from gemrag.models.structured import complete_structured
from gemrag.store import NodeRecord
from gemrag.strategies.base import StrategyContext

QUESTION_FAILED = -1
"""``questions_done`` of a node whose questions failed (set by ``Store.fail_questions``)."""

QUESTION_RETRIES = 2
"""Builds after the first that retry a node whose questions failed (bounded, so a chunk the model cannot handle
does not cost LLM calls forever)."""

ATTEMPTS = 3
"""Structured-output attempts per node per build (:func:`gemrag.models.structured.complete_structured`)."""

PHASE = "index/utility_questions"
"""The ``failures`` phase of a node whose questions failed."""


def failed_tries(ctx: StrategyContext) -> Counter[int]:
    """Failed question tries per node id, counted from the recorded failures (phase :data:`PHASE`)."""
    return Counter(int(f["node_id"]) for f in ctx.store.failures() if f["phase"] == PHASE and f["node_id"] is not None)


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
    """Strip, drop empty ones and case/whitespace-insensitive duplicates, keeping first occurrences."""
    seen: set[str] = set()
    out = []
    for q in questions:
        q = " ".join(q.split())
        key = q.lower().rstrip("?").strip()
        if key and key not in seen:
            seen.add(key)
            out.append(q)
    return out


def questions_for_text(ctx: StrategyContext, text: str, m: int, *, retry: int = 0) -> list[str]:
    """m utility questions for one text (deduplicated; may be fewer than m after deduplication).

    ``retry`` is the number of earlier failed tries for this text: its attempts continue the numbering
    (new temperatures and seeds, hence new cache keys).

    Raises:
        StructuredOutputError: the LLM's output stayed invalid after the retries.
    """
    if m == 0:
        return []
    result = complete_structured(
        ctx.get_llm(),
        utility_questions_prompt(text, m),
        UtilityQuestions,
        schema=utility_questions_schema(m),
        max_tokens=(MAX_QUESTION_CHARS // 3 + 8) * m + 16,
        attempts=ATTEMPTS,
        first_attempt=retry * ATTEMPTS,
    )
    return dedupe_questions(result.questions)[:m]


def generate_utility_questions(ctx: StrategyContext, nodes: Sequence[NodeRecord], m: int) -> None:
    """Generate and store m questions for each node, with a progress bar; failures are recorded.

    Args:
        ctx: the strategy context.
        nodes: nodes whose questions are not done yet (pending, or failed and retried: see
            :func:`nodes_needing_questions`).
        m: questions per node (0 marks the nodes done with no questions: the chunk-embedding ablation).
    """
    if not nodes:
        return
    tries = failed_tries(ctx) if any(n.questions_done == QUESTION_FAILED for n in nodes) else Counter()
    with ctx.progress("utility questions", len(nodes)) as advance:
        for node in nodes:
            retry = tries[node.id] if node.questions_done == QUESTION_FAILED else 0
            try:
                ctx.store.set_questions(node.id, questions_for_text(ctx, node.text, m, retry=retry))
            except StructuredOutputError as exc:  # the failure row and the node's status, in one transaction
                ctx.store.fail_questions(node.id, PHASE, str(exc))
            advance(1)
