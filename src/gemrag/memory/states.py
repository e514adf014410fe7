"""Keeping strategies in step with the memory's documents: build states and stale warnings.

Used by :class:`gemrag.memory.Memory` (``retrieve`` checks the strategy's state once per change). Every strategy's
build records the chunks it covers (:mod:`gemrag.store.graph_rows`), so a strategy is *never built*, *built* (over
exactly the memory's chunks) or *stale* (N new chunks, N deleted); retrieving from a stale strategy warns once
(:class:`StaleStrategyWarning`, on stderr), from an unbuilt one raises :class:`~gemrag.errors.MemoryNotIndexedError`
naming ``gemrag index --strategy X`` (or builds it).
"""

from __future__ import annotations

import warnings
from typing import Any, Protocol

from gemrag.errors import GemragError
from gemrag.memory.handle import MemoryHandle
from gemrag.store.parts import BuildArrays, BuildStates, Database, DocumentChunks
from gemrag.store.records import BuildState
from gemrag.strategies import available
from gemrag.strategies.base import Strategy
from gemrag.strategies.platform.common import build_models, not_indexed
from gemrag.strategies.platform.composite import BUILT_PARTS


class StaleStrategyWarning(UserWarning):
    """Retrieval from a strategy whose build predates added or deleted documents (run ``gemrag index``)."""


class StateStore(Database, DocumentChunks, BuildStates, BuildArrays, Protocol):
    """What the build states use of a store: the chunks' signature, each strategy's build state and published
    generation."""


def needs_build(strategy: Strategy) -> bool:
    """False for strategies with nothing to build (``needs_build = False``, e.g. ``full``)."""
    return bool(getattr(strategy, "needs_build", True))


def strategy_states(memory: MemoryHandle[StateStore]) -> dict[str, BuildState]:
    """The state of every registered strategy and of every strategy built in the memory, by name."""
    names = sorted(set(available()) | set(memory.store.published_generations()))
    states = {}
    for name in names:
        try:
            if not needs_build(memory.get_strategy(name)):
                continue
        except (KeyError, GemragError):  # built by a strategy this process does not know (or cannot create)
            pass
        states[name] = memory.store.build_state(name)
    return states


def record_build(memory: MemoryHandle[StateStore], strategy: Strategy, before: int | None) -> None:
    """After a successful build: a strategy that published nothing (it keeps no arrays, e.g. one that reads the
    chunks directly) gets an empty generation recording the chunks it covers, so its state can be tracked like
    any other's. Strategies with nothing to build, or that published, are left alone."""
    name = strategy.name
    if not needs_build(strategy) or memory.store.published_generation(name) != before:
        return
    manifest = memory.store.manifest(name)
    if manifest is not None and (manifest.arrays or manifest.paths):
        return  # it keeps its previous generation (nothing changed for it)
    generation = memory.store.begin_build(name)
    memory.store.publish(name, generation, [], carry=True, models=build_models(memory.ctx))


def record_parts(memory: MemoryHandle[StateStore], before: dict[str, int]) -> None:
    """After a successful build: record every strategy built as a part of it (:data:`BUILT_PARTS`, e.g. ``fused``
    under ``iterative``) as :func:`record_build` records the strategy asked for, ``before`` being every strategy's
    published generation before the build (``store.published_generations()``). Clears the list."""
    for part in memory.ctx.state.pop(BUILT_PARTS, []):
        record_build(memory, part, before.get(part.name))


def check_ready(memory: MemoryHandle[StateStore], strategy: Strategy, *, build: bool) -> None:
    """Before retrieving from ``strategy``: build it when unbuilt and ``build``, raise when unbuilt, warn once
    (stderr) when stale. Cached per (published generation, chunk set), so a retrieval costs one small query.

    Raises:
        MemoryNotIndexedError: the strategy was never built and ``build`` is False (the message names the strategies
            that are built, e.g. a memory built under an earlier default).
    """
    if not needs_build(strategy):
        return
    name = strategy.name
    key = (name, memory.store.published_generation(name), memory.store.chunk_signature())
    seen: set[tuple[Any, ...]] = memory.ctx.state.setdefault("lifecycle:checked", set())
    if key in seen:
        return
    state = memory.store.build_state(name)
    if state.state == "never built":
        if not build:
            others = sorted(set(memory.store.published_generations()) - {name})
            built = f"; built here: {', '.join(others)} (ask one with `--strategy NAME`)" if others else ""
            raise not_indexed(
                memory.ctx,
                name,
                f"the strategy {name!r} has not been built in this memory: run `gemrag index --strategy {name} "
                f"--memory {memory.store.location}` (or retrieve with build=True / `gemrag ask --build-missing`)"
                f"{built}",
            )
        memory.index(name)
        return check_ready(memory, strategy, build=False)
    if state.state == "stale":
        warned: set[tuple[Any, ...]] = memory.ctx.state.setdefault("lifecycle:warned", set())
        if key not in warned:
            warned.add(key)
            message = (
                f"strategy {name!r} is {state.describe()}: its results ignore the change until "
                f"`gemrag index --strategy {name}` rebuilds it"
            )
            warnings.warn(StaleStrategyWarning(message), stacklevel=3)
    seen.add(key)
