"""Keeping strategies in step with the memory's documents: build states, stale warnings, deleting a document.

Used by :class:`gemrag.memory.Memory` (``retrieve`` checks the strategy's state once per change; ``delete``
removes a document). Every strategy's build records the chunks it covers (:mod:`gemrag.store.derived`), so:

* a strategy is *never built*, *built* (over exactly the memory's chunks) or *stale* (N new chunks, N deleted);
  retrieving from a stale strategy warns once (:class:`StaleStrategyWarning`, on stderr), from an unbuilt one
  raises :class:`~gemrag.errors.MemoryNotIndexedError` naming ``gemrag index --strategy X`` (or builds it);
* deleting a document removes, in ONE transaction with a pruned generation of every built strategy
  (:mod:`gemrag.strategies.platform.incremental`), the document, its chunks, their artefacts and questions, the derived
  nodes made from its chunks only, and every edge touching them. No LLM call: what depended on the deleted
  chunks (GEM's eigenvectors and the summaries whose members changed, RAPTOR's clusters) is recomputed by the
  next ``index``, which spends LLM calls only on what changed (cached answers are reused).
"""

from __future__ import annotations

import sqlite3
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from gemrag.errors import DamagedMemoryError, GemragError, StaleGenerationError
from gemrag.store import MemoryStore
from gemrag.store.derived import BuildState
from gemrag.store.publish import Publication
from gemrag.strategies import available
from gemrag.strategies.base import Strategy, StrategyContext
from gemrag.strategies.platform.common import build_models, not_indexed
from gemrag.strategies.platform.incremental import prune_strategy
from gemrag.types import Hit


class MemoryHandle(Protocol):
    """What this module needs of a memory (:class:`gemrag.memory.Memory` is one): its store, its strategy context,
    its strategies by name and a build. A protocol, so that lifecycle does not import the memory that uses it."""

    store: MemoryStore
    ctx: StrategyContext

    def get_strategy(self, name: str | None = None) -> Strategy: ...

    def index(self, strategy: str | None = None, *, wait: float | None = None) -> Any: ...


class StaleStrategyWarning(UserWarning):
    """Retrieval from a strategy whose build predates added or deleted documents (run ``gemrag index``)."""


@dataclass
class DeleteReport:
    """What :meth:`gemrag.memory.Memory.delete` did.

    Attributes:
        document: the deleted document (id, source, title, n_chars, chunked).
        chunks: chunks deleted. derived_nodes: strategies' nodes deleted with them (made from them only).
        pruned: strategies republished without the deleted nodes. withdrawn: strategies whose build had to be
            dropped (they must be rebuilt). llm_calls: LLM calls spent (always 0: deleting needs no model).
        seconds: wall time.
    """

    document: dict[str, Any]
    chunks: int
    derived_nodes: int
    pruned: list[str]
    withdrawn: list[str]
    llm_calls: int
    seconds: float


def needs_build(strategy: Strategy) -> bool:
    """False for strategies with nothing to build (``needs_build = False``, e.g. ``full``)."""
    return bool(getattr(strategy, "needs_build", True))


def strategy_states(memory: MemoryHandle) -> dict[str, BuildState]:
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


def record_build(memory: MemoryHandle, strategy: Strategy, before: int | None) -> None:
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


def check_ready(memory: MemoryHandle, strategy: Strategy, *, build: bool) -> None:
    """Before retrieving from ``strategy``: build it when unbuilt and ``build``, raise when unbuilt, warn once
    (stderr) when stale. Cached per (published generation, chunk set), so a retrieval costs one small query.

    Raises:
        MemoryNotIndexedError: the strategy was never built and ``build`` is False.
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
            raise not_indexed(
                memory.ctx,
                name,
                f"the strategy {name!r} has not been built in this memory: run `gemrag index --strategy {name} "
                f"--memory {memory.store.location}` (or retrieve with build=True / `gemrag ask --build-missing`)",
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


def resolve_document(memory: MemoryHandle, document: int | str) -> dict[str, Any]:
    """The one document ``document`` names: an id, or a source path / title as ``gemrag info`` lists them.

    Raises:
        GemragError: no document or several documents match.
    """
    matches = memory.store.find_documents(str(document))
    if not matches:
        raise GemragError(f"no document {document!r} in {memory.store.location} (see `gemrag info` for the list)")
    if len(matches) > 1:
        listed = ", ".join(f"{d['id']} ({d['source']})" for d in matches[:5])
        raise GemragError(f"{document!r} names {len(matches)} documents: {listed}; give its id")
    return matches[0]


def delete_document(
    memory: MemoryHandle, document: int | str, *, keep_text: bool = False
) -> tuple[dict[str, Any], int, int, list[str], list[str]]:
    """Delete one document atomically (see the module docstring), recording it in the version history (reason
    ``deleted``; its text too when ``keep_text``); the caller holds the build lock.

    Returns:
        ``(document, chunks deleted, derived nodes deleted, pruned strategies, withdrawn strategies)``.

    Raises:
        GemragError: no such document (or an ambiguous name).
    """
    doc = resolve_document(memory, document)
    removal = remove_documents(memory, [(doc, "deleted")], keep_text=keep_text)
    return doc, removal.chunks, removal.derived_nodes, removal.pruned, removal.withdrawn


@dataclass
class Removal:
    """What :func:`remove_chunks` removed: chunks and derived nodes deleted, strategies pruned and withdrawn."""

    chunks: int
    derived_nodes: int
    pruned: list[str]
    withdrawn: list[str]


def remove_chunks(
    memory: MemoryHandle, chunk_ids: Sequence[int], rows: Callable[[sqlite3.Connection, list[int]], None]
) -> Removal:
    """Delete chunks in ONE transaction with a pruned generation of every built strategy (no LLM call; the caller
    holds the build lock): the derived nodes made from these chunks only are found, each built strategy's published
    generation is pruned of both, and ``rows(c, derived)`` makes the row changes inside the transaction (it must
    delete the chunks and ``derived``, e.g. with ``Store.delete_nodes``, and may change documents)."""
    store = memory.store
    derived = store.nodes_only_from(chunk_ids)
    gone = set(chunk_ids) | set(derived)
    publications: list[Publication] = []
    withdrawn: list[str] = []
    for name in sorted(store.published_generations()) if gone else []:  # nothing chunked yet: no build changes
        try:
            strategy: Strategy | None = memory.get_strategy(name)
        except (KeyError, GemragError):
            strategy = None  # built by a strategy this process does not know: pruned generically if possible
        generation = store.begin_build(name)
        publication = prune_strategy(memory.ctx, name, strategy, gone, generation)
        if publication is None:
            withdrawn.append(name)
        else:
            publications.append(publication)
    store.publish_many(publications, before=lambda c: rows(c, derived), withdraw=withdrawn)
    return Removal(len(chunk_ids), len(derived), [p.strategy for p in publications], withdrawn)


def remove_documents(
    memory: MemoryHandle, documents: Sequence[tuple[dict[str, Any], str]], *, keep_text: bool = False
) -> Removal:
    """Remove whole documents in ONE transaction (:func:`remove_chunks`): each document's version is recorded in
    ``document_versions`` (with its reason, ``removed`` or ``deleted``; its text when ``keep_text``), then it, its
    chunks and the derived nodes made from its chunks only go.

    Args:
        documents: ``(document dict as Store.documents gives it, reason)`` pairs.
    """
    store = memory.store
    chunk_ids = [c for doc, _ in documents for c in store.document_chunk_ids(int(doc["id"]))]

    def rows(c: sqlite3.Connection, derived: list[int]) -> None:
        for doc, reason in documents:
            store.record_version(c, doc, reason, keep_text=keep_text)
        store.delete_nodes(c, derived)
        for doc, _ in documents:
            store.delete_rows(c, int(doc["id"]), [])

    return remove_chunks(memory, chunk_ids, rows)


def retrieve_published(
    ctx: StrategyContext, strategy: Strategy, question: str, budget: int, attempts: int = 3
) -> list[Hit]:
    """``strategy.retrieve`` on its last published generation; when a newer generation is published while it is
    read (the old generation's files removed: :class:`~gemrag.errors.StaleGenerationError`), read the newer one,
    up to ``attempts`` times in all.

    Raises:
        DamagedMemoryError: the published generation's files are missing or mismatched and no newer one exists.
        StaleGenerationError: generations kept changing for all ``attempts``.
    """
    for attempt in range(attempts):
        try:
            return strategy.retrieve(ctx, question, budget)
        except StaleGenerationError as exc:  # a newer generation was published while reading: read it
            if ctx.store.published_generation(exc.strategy or strategy.name) == exc.generation:
                raise DamagedMemoryError(
                    f"the memory {ctx.store.location} is damaged: {exc}, yet no newer generation exists; "
                    "run `gemrag index` again to rebuild it"
                ) from exc
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")
