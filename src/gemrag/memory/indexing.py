"""One ``index`` run of a memory: chunk the pending documents, build a strategy, record what it used
(:class:`IndexReport`, what :meth:`gemrag.memory.Memory.index` returns, re-exported by :mod:`gemrag`).

Used by :meth:`gemrag.memory.Memory.index` (which holds the build lock). GEM-RAG section III.B.1 is the build of
the default strategy; every strategy's ``build`` publishes its result as a new generation (:mod:`gemrag.store`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Protocol

from gemrag import tracing
from gemrag.answers.dates import annotate_dates
from gemrag.answers.dates.chunks import DatingStore
from gemrag.answers.dates.llm import llm_step
from gemrag.config import Config
from gemrag.memory.answer_lengths import RECORDED, model_cache_dir, record_lengths
from gemrag.memory.documents import ChunkStore, chunk_pending, chunk_titles
from gemrag.memory.handle import MemoryHandle
from gemrag.memory.states import StateStore, record_build, record_parts
from gemrag.models.base import Usage
from gemrag.models.meter import UsageMeter
from gemrag.store.parts import Caches
from gemrag.strategies import strategy_config
from gemrag.strategies.platform.composite import BUILT_PARTS
from gemrag.strategies.platform.titles import READ_TITLES


@dataclass
class IndexReport:
    """What one ``index()`` run did: ``new_chunks`` created, totals, seconds and spent usage (LLM and embedder
    calls together); ``llm_calls``: the LLM backend calls it made (cache misses)."""

    documents: int
    chunks: int
    new_chunks: int
    summary_nodes: int
    seconds: float
    usage: Usage
    failures: int
    llm_calls: int = 0


class IndexStore(StateStore, ChunkStore, Caches, DatingStore, Protocol):
    """What an index run uses of a store: chunking (:class:`~gemrag.memory.documents.ChunkStore`), the build states
    (:class:`~gemrag.memory.states.StateStore`), the LLM cache's counts and the recorded failures, and dating the
    chunks (:class:`~gemrag.answers.dates.chunks.DatingStore`)."""


class Memory(MemoryHandle[IndexStore], Protocol):
    """What an index run needs of a memory (:class:`gemrag.memory.Memory` is one)."""

    config: Config
    meter: UsageMeter
    _llm: Any


def run_index(memory: Memory, strategy: str | None) -> IndexReport:
    """Chunk the documents not chunked yet, build ``strategy`` (default: the configured one) and record the run's
    seconds, models and parameters (the memory's and the built strategy's own section, no other's) in the memory's meta;
    the caller holds the build lock.

    Traced (:mod:`gemrag.tracing`) as a ``gemrag.index`` span over the phases ``gemrag.index.chunk``,
    ``gemrag.build <strategy>`` (its LLM passes and model calls below it) and ``gemrag.index.publish``, with the
    report's counts as ``gemrag.*`` attributes.

    Returns:
        The report: ``new_chunks`` are the chunks the strategy's previous build did not cover (for a strategy never
        built: the chunks made by this run), ``llm_calls`` the LLM backend calls made (cache misses).
    """
    with tracing.span("gemrag.index", {"gemrag.memory": memory.store.location}) as span:
        report = _run_index(memory, strategy, span)
        span.set_attributes(
            {
                "gemrag.memory.documents": report.documents,
                "gemrag.chunks": report.chunks,
                "gemrag.chunks.new": report.new_chunks,
                "gemrag.summary_nodes": report.summary_nodes,
                "gemrag.llm_calls": report.llm_calls,
                "gemrag.failures": report.failures,
                "gen_ai.usage.input_tokens": report.usage.prompt_tokens,
                "gen_ai.usage.output_tokens": report.usage.completion_tokens,
                "gemrag.usage.embedding_tokens": report.usage.embedding_tokens,
            }
        )
        return report


def _record_lengths(memory: Memory) -> None:
    """Keep the model's answer lengths per pass for the cost plans of later memories
    (:mod:`gemrag.memory.answer_lengths`); nothing when the build made no LLM call."""
    if memory._llm is None:
        return
    model_id = memory._llm.model_id
    responses = memory.store.recent_llm_responses(model_id, RECORDED)
    record_lengths(model_cache_dir(memory.config), model_id, memory.store.location, responses)


def _annotate_dates(memory: Memory) -> None:
    """Time-aware reading's index step (``[answer] dates`` not ``"off"``): every chunk without its dates gets them
    (:func:`gemrag.answers.dates.annotate_dates`; with ``[answer] date_llm`` the LLM resolves what the rules leave),
    in a ``gemrag.index.dates`` span. Nothing with ``"off"``."""
    answer = memory.config.answer
    if answer.dates == "off":
        return
    with tracing.span("gemrag.index.dates") as phase:
        step = llm_step(memory.ctx.get_llm, memory.store) if answer.date_llm else None
        phase.set_attribute("gemrag.chunks.dated", annotate_dates(memory.store, step))


def _run_index(memory: Memory, strategy: str | None, span: tracing.Span) -> IndexReport:
    store = memory.store
    start = time.perf_counter()
    before = memory.meter.totals.get("index", Usage())
    llm_calls = store.llm_cache_counts()[1]
    store.remove_unpublished()  # rows and files of a build that was killed before publishing
    with memory.meter.phase("index"):
        with tracing.span("gemrag.index.chunk") as phase:
            chunked = chunk_pending(store, memory.config.memory.chunk_tokens)
            phase.set_attribute("gemrag.chunks.made", chunked)
        _annotate_dates(memory)
        chosen = memory.get_strategy(strategy)
        span.set_attribute("gemrag.strategy", chosen.name)
        generations = store.published_generations()  # every strategy's, before the build (the parts' too)
        memory.ctx.state.pop(BUILT_PARTS, None)  # parts noted by a build that failed before recording them
        state = store.build_state(chosen.name)
        new_chunks = chunked if state.state == "never built" else state.new_chunks
        with tracing.span(f"gemrag.build {chosen.name}", {"gemrag.strategy": chosen.name, "gemrag.state": state.state}):
            chosen.build(memory.ctx)
        with tracing.span("gemrag.index.publish", {"gemrag.strategy": chosen.name}):
            record_build(memory, chosen, generations.get(chosen.name))
            record_parts(memory, generations)
    _record_lengths(memory)
    seconds = time.perf_counter() - start
    store.set_meta("index_seconds", float(store.get_meta("index_seconds", 0.0)) + seconds)
    models = dict(store.get_meta("models", {}))
    models["embedder"] = memory.embedder.model_id
    if memory._llm is not None:
        models["llm"] = memory._llm.model_id
    store.set_meta("models", models)
    own = strategy_config(chosen.name, memory.config)  # the built strategy's own section, none of another's
    params = own.model_dump(exclude={READ_TITLES}) if own is not None else {}  # what it read: stats()["titles"]
    chunking = {"chunk_tokens": memory.config.memory.chunk_tokens, "budget": memory.config.memory.budget}
    store.set_meta("params", chunking | params | {"chunk_titles": chunk_titles(store)})  # the keys of before [memory]
    used = memory.meter.totals.get("index", Usage()) - before
    return IndexReport(
        len(store.documents()),
        len(store.nodes("chunk")),
        new_chunks,
        len(store.nodes("summary", strategy=chosen.name)),
        seconds,
        used,
        len(store.failures()),
        store.llm_cache_counts()[1] - llm_calls,
    )
