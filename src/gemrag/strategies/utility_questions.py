"""Utility questions, Q(CHUNK_i, m) (GEM-RAG section III.B.1, "Generating Utility Questions").

Each node's questions are generated as structured output, deduplicated, and committed in their own
transaction before the next node starts, so an interrupted run resumes at the first unfinished node. A
node whose output stays malformed after the retries keeps its place in the graph (it is then represented by
its own text embedding) and the failure is recorded for ``gemrag info`` — never silently dropped.
"""

from __future__ import annotations

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


def questions_for_text(ctx: StrategyContext, text: str, m: int) -> list[str]:
    """m utility questions for one text (deduplicated; may be fewer than m after deduplication).

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
    )
    return dedupe_questions(result.questions)[:m]


def generate_utility_questions(ctx: StrategyContext, nodes: Sequence[NodeRecord], m: int) -> None:
    """Generate and store m questions for each node, with a progress bar; failures are recorded.

    Args:
        ctx: the strategy context.
        nodes: nodes whose questions are not done yet.
        m: questions per node (0 marks the nodes done with no questions: the chunk-embedding ablation).
    """
    if not nodes:
        return
    with ctx.progress("utility questions", len(nodes)) as advance:
        for node in nodes:
            try:
                ctx.store.set_questions(node.id, questions_for_text(ctx, node.text, m))
            except StructuredOutputError as exc:  # the failure row and the node's status, in one transaction
                ctx.store.fail_questions(node.id, "index/utility_questions", str(exc))
            advance(1)
