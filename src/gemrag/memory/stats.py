"""What a memory reports about itself: :func:`memory_stats`, the body of :meth:`gemrag.memory.Memory.stats` (and of
``gemrag info``)."""

from __future__ import annotations

from typing import Any, Protocol

from gemrag.memory.handle import MemoryHandle
from gemrag.memory.states import StateStore, strategy_states
from gemrag.store.parts import Caches, Documents, MetaRows, NodeRows
from gemrag.strategies.base import Strategy
from gemrag.strategies.platform.titles import build_titles


class StatsStore(StateStore, MetaRows, NodeRows, Documents, Caches, Protocol):
    """What the statistics read of a store: documents, their sources and nodes, meta, build states, usage and
    failures."""


def memory_stats(memory: MemoryHandle[StatsStore], strategy: Strategy) -> dict[str, Any]:
    """What :meth:`gemrag.memory.Memory.stats` reports: the memory's documents, the sources holding each (``sources``:
    document id -> source paths, primary first, for the documents several sources hold), chunk and summary counts,
    models, parameters, index seconds, tokens per phase, failures, ``strategy``'s own report (GEM: the spectrum report
    with Remarks 2 and 3), every strategy's build state (:func:`strategy_states`) and ``titles``: whether each built
    strategy that reads chunk text read the chunks' titles (name -> bool,
    :func:`gemrag.strategies.platform.titles.build_titles`)."""
    store = memory.store
    sources: dict[int, list[str]] = {}
    for h in store.holders():
        sources.setdefault(int(h["doc_id"]), []).append(str(h["source"]))
    return {
        "directory": store.location,
        "strategy": strategy.name,
        "documents": store.documents(),
        "sources": {i: s for i, s in sources.items() if len(s) > 1},
        "chunks": len(store.nodes("chunk")),
        "summary_nodes": len(store.nodes("summary")),
        "models": store.get_meta("models", {}),
        "params": store.get_meta("params", {}),
        "chunk_tokens": store.get_meta("chunk_tokens"),
        "index_seconds": store.get_meta("index_seconds", 0.0),
        "usage_by_phase": store.usage_by_phase(),
        "failures": store.failures(),
        "strategy_report": strategy.report(memory.ctx),
        "strategies": {name: state.describe() for name, state in strategy_states(memory).items()},
        "titles": build_titles(store, sorted(store.published_generations())),
    }
