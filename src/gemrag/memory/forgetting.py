"""Deleting a document; with ``purge`` erasing every copy of its text; with ``rebuild`` rebuilding at once.

:meth:`gemrag.memory.Memory.delete` (``gemrag delete``, the server's ``DELETE .../documents/{id}``, the MCP tool
``forget``) calls :func:`forget`, which holds no lock of its own (the memory's build lock is held by the caller):

1. **delete** (:func:`gemrag.memory.deletion.delete_document`): the document, its chunks, every derived node with one
   of them among its inputs, every document resting on them (a chat exchange whose reply recalled one of its chunks,
   :func:`gemrag.memory.deletion.resting_on`) and their edges leave in ONE transaction with a pruned generation of
   every built strategy, and the marks of every text that left are quarantined for an erase; no LLM call.
2. **rebuild** (``rebuild=True``): every strategy that was built (pruned or withdrawn by the delete) is indexed
   again at once, as the next ``gemrag index`` would (LLM calls for what changed only; ``DeleteReport.rebuilt``).
3. **erase** (``purge=True``, last, so the rebuild's replaced generations go too): :func:`gemrag.memory.erasing.erase`,
   exactly what a later ``gemrag erase`` would do. After it no file of a SQLite memory holds the removed text's
   bytes, and no row of a PostgreSQL memory's schema holds it (unless another text still states it).

Traced as one ``delete_memory`` span (``gen_ai.operation.name = "delete_memory"``, ``gen_ai.memory.*``
attributes: the memory, the document, purge and rebuild, the chunks and derived nodes deleted).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Protocol

from gemrag import tracing
from gemrag.errors import GemragError, MemoryNotIndexedError
from gemrag.memory.deletion import DeleteReport, DeletionStore, delete_document
from gemrag.memory.erasing import ErasingStore, erase
from gemrag.memory.handle import MemoryHandle

__all__ = ["ForgettingStore", "forget"]


class ForgettingStore(DeletionStore, ErasingStore, Protocol):
    """What forgetting uses of a store: deleting (:class:`~gemrag.memory.deletion.DeletionStore`) and erasing
    (:class:`~gemrag.memory.erasing.ErasingStore`)."""


def forget(
    memory: MemoryHandle[ForgettingStore], document: int | str, *, purge: bool = False, rebuild: bool = False
) -> DeleteReport:
    """Delete ``document`` (module docstring); with ``purge`` erase every copy of text the memory no longer states,
    with ``rebuild`` rebuild the strategies it changed at once. The caller holds the memory's build lock.

    Args:
        memory: the memory (:class:`gemrag.memory.Memory`).
        document: an id, source path or title (:func:`gemrag.memory.deletion.resolve_source`); naming one source of a
            document other sources hold deletes that source alone (its text stays: the document states it).
        purge: erase afterwards (:func:`gemrag.memory.erasing.erase`).
        rebuild: index every strategy the delete pruned or withdrew, at once.

    Returns:
        The :class:`~gemrag.memory.deletion.DeleteReport` (``purge`` and ``rebuilt`` filled when asked).

    Raises:
        GemragError: no such document, or a name matching several.
        ReadOnlyMemoryError: the memory is open read-only. DatabaseLockedError: the database stayed locked.
    """
    start = time.perf_counter()
    store = memory.store
    attributes = {
        "gen_ai.operation.name": "delete_memory",
        "gen_ai.memory.id": store.location,
        "gen_ai.memory.document.id": str(document),
        "gen_ai.memory.purge": purge,
        "gen_ai.memory.rebuild": rebuild,
    }
    with tracing.span("delete_memory", attributes) as span:
        doc, removal, kept_by = delete_document(memory, document)
        report = DeleteReport(
            doc, removal.chunks, removal.derived_nodes, removal.pruned, removal.withdrawn, 0, 0.0, kept_by
        )
        report.dependents = removal.dependents
        span.set_attributes(
            {
                "gen_ai.memory.document.id": str(report.document["id"]),
                "gen_ai.memory.deleted_chunks": report.chunks,
                "gen_ai.memory.deleted_nodes": report.derived_nodes,
            }
        )
        if rebuild:
            report.rebuilt = _rebuild(memory, [*report.pruned, *report.withdrawn])
            report.llm_calls = sum(report.rebuilt.values())
        if purge:
            report.purge = erase(memory)
            report.purge.exchanges = removal.dependents
            span.set_attribute("gen_ai.memory.purge.complete", report.purge.erasure.complete)
    report.seconds = time.perf_counter() - start
    return report


def _rebuild(memory: MemoryHandle[ForgettingStore], names: Iterable[str]) -> dict[str, int]:
    """Index each strategy of ``names`` this process knows (step 2 of the module docstring): name -> LLM calls.
    Nothing is rebuilt when no chunk is left."""
    spent: dict[str, int] = {}
    if not memory.store.nodes("chunk"):
        return spent
    for name in sorted(set(names)):
        try:
            memory.get_strategy(name)
        except (KeyError, GemragError):
            continue  # built by a strategy this process does not know: the next `gemrag index` with it rebuilds it
        try:
            spent[name] = memory.index(name).llm_calls
        except MemoryNotIndexedError:
            continue
    return spent
