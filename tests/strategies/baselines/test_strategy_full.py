"""``full``: every chunk in document order until the LLM's context window (minus a reserve) is full."""

from __future__ import annotations

import pytest

from backends import MemoryAt
from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.config import Config
from gemrag.errors import MemoryNotIndexedError
from gemrag.strategies.baselines.full import RESERVE_TOKENS
from test_memory import DOC_A, DOC_B


def cost(i: int, text: str) -> int:
    """What the fake LLM counts for the i-th passage (1-based): its words plus the "[i]" marker."""
    return len(f"[{i}] {text}".split())


def test_all_chunks_in_document_order_ignoring_the_budget(memory_at: MemoryAt, config: Config) -> None:
    with Memory.open(memory_at("m"), config, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
        mem.add_text(DOC_A)
        mem.add_text(DOC_B)
        mem.index(strategy="full")
        chunks = mem.store.nodes("chunk")
        hits = mem.retrieve("Who grew tomatoes?", 1, strategy="full")
        assert [h.node_id for h in hits] == [c.id for c in chunks]  # document A, then B, each in order
        assert [(c.doc_id, c.ord) for c in chunks] == sorted((c.doc_id, c.ord) for c in chunks)
        assert {h.score for h in hits} == {0.0} and {h.kind for h in hits} == {"chunk"}
        assert [h.text for h in hits] == [c.text for c in chunks]


def test_stops_at_the_context_window(memory_at: MemoryAt, config: Config) -> None:
    with Memory.open(memory_at("m"), config, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
        mem.add_text(DOC_A)
        mem.index(strategy="full")
        chunks = mem.store.nodes("chunk")
        costs = [cost(i + 1, c.text) for i, c in enumerate(chunks)]
        llm = mem.llm()  # the cached, metered LLM the strategy sees
        llm.context_window = RESERVE_TOKENS + sum(costs[:3]) + costs[3] - 1  # room for 3 chunks, not 4
        hits = mem.get_strategy("full").retrieve(mem.ctx, "anything", 4)
        assert [h.node_id for h in hits] == [c.id for c in chunks[:3]]
        assert hits[0].meta["context_tokens"] == sum(costs[:3]) <= llm.context_window - RESERVE_TOKENS
        llm.context_window = RESERVE_TOKENS + costs[0] - 1  # not even the first chunk
        assert mem.get_strategy("full").retrieve(mem.ctx, "anything", 4) == []


def test_full_needs_chunks(memory_at: MemoryAt, config: Config) -> None:
    with Memory.open(memory_at("m"), config, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
        with pytest.raises(MemoryNotIndexedError):
            mem.retrieve("anything", strategy="full")
        assert mem.get_strategy("full").report(mem.ctx) == {"reserve_tokens": RESERVE_TOKENS, "chunks": 0}
