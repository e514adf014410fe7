"""``full``: no retrieval — the whole document in the LLM's context (the long-context baseline).

The GEM-RAG paper (section IV.A, "Setting") contrasts retrieval of 400 tokens with models that
read thousands of tokens; this strategy is that reference point: the memory's chunks in store order (each
document in document order, documents in the order they were added) as long as they fit in the LLM's
context window minus a reserve for the instructions, question, options and answer.

A passage costs ``llm.count_tokens(f"[{i}] {text}\\n\\n")`` tokens (the numbered form
:func:`gemrag.prompting.format_context` gives the LLM); passages are added while the running total
stays <= ``llm.context_window - reserve``. The ``budget`` argument is ignored and every score is 0.

Retrieval loads the LLM (``ctx.get_llm()``) because the context window and tokenizer are the LLM's.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from gemrag.strategies.base import StrategyContext, register
from gemrag.strategies.platform.common import chunk_hits, chunk_nodes
from gemrag.strategies.platform.planning import PlanWork, StrategyPlan, no_llm_plan
from gemrag.types import Hit

RESERVE_TOKENS = 512
"""Context tokens kept free for the system prompt, question, options and the answer (answers are at most
256 tokens, see :meth:`gemrag.memory.Memory.answer`)."""


class FullConfig(BaseModel):
    """The ``[full]`` configuration section.

    Attributes:
        reserve_tokens: tokens of the LLM's context window left for everything but the passages (system
            prompt, question, options, answer). Default 512 (:data:`RESERVE_TOKENS`); not from a paper.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    reserve_tokens: int = Field(RESERVE_TOKENS, ge=0)


@register("full")
class FullStrategy:
    """Every chunk in document order, as many as fit in the LLM's context window.

    Args:
        config: the ``[full]`` section (default: a 512-token reserve).
    """

    name = "full"
    needs_build = False
    """Nothing to build (so never "stale" or "never built"; see :mod:`gemrag.memory.states`)."""
    config_model = FullConfig

    def __init__(self, config: FullConfig | None = None) -> None:
        self.config = config or FullConfig()
        self.reserve = self.config.reserve_tokens

    def plan(self, ctx: StrategyContext, work: PlanWork) -> StrategyPlan:
        """What building now would cost: no LLM call (:func:`~gemrag.strategies.platform.planning.no_llm_plan`)."""
        return no_llm_plan(ctx, work, self.name)

    def build(self, ctx: StrategyContext) -> None:
        """Nothing to build: check that the memory holds chunks.

        Raises:
            MemoryNotIndexedError: the memory holds no chunks.
        """
        chunk_nodes(ctx)

    def retrieve(self, ctx: StrategyContext, question: str, budget: int) -> list[Hit]:
        """The memory's chunks in reading order while they fit in ``context_window - reserve`` LLM tokens.

        Args:
            ctx: the strategy context.
            question: ignored (no retrieval).
            budget: ignored.

        Returns:
            Chunk hits in document order with ``score`` 0.0; empty when not even the first chunk fits.

        Raises:
            MemoryNotIndexedError: the memory holds no chunks.
        """
        llm = ctx.get_llm()
        limit = llm.context_window - self.reserve
        cost: dict[tuple[int, int], int] = ctx.state.setdefault(f"{self.name}_tokens", {})  # (id, position) -> tokens
        ids: list[int] = []
        total = 0
        for node in chunk_nodes(ctx):
            key = (node.id, len(ids))  # a delete or an update can move a chunk to another position
            if key not in cost:
                cost[key] = llm.count_tokens(f"[{len(ids) + 1}] {node.text}\n\n")
            if total + cost[key] > limit:
                break
            total += cost[key]
            ids.append(node.id)
        return chunk_hits(ctx, ids, [0.0] * len(ids), {"context_tokens": total})

    def report(self, ctx: StrategyContext) -> dict[str, Any]:
        """The reserve (tokens) and the number of chunks in the memory."""
        return {"reserve_tokens": self.reserve, "chunks": len(ctx.store.nodes("chunk"))}
