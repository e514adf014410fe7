"""Erasing every byte of text no current document states (``gemrag erase``, :meth:`gemrag.memory.Memory.erase`, the
server's ``POST .../erase``, the MCP tool ``erase``; DESIGN.md "Forgetting").

A removal (``gemrag delete``, an edited file re-indexed, ``index --sync``) takes the removed text out of retrieval at
once and quarantines its *marks* (hashes of its sentences and word runs, :mod:`gemrag.store.erase`) in the same
transaction; the copies of the text the memory keeps besides (LLM and embedding cache entries, kept versions, failure
messages, the database's free pages, write-ahead log and dead rows, unpublished array files) stay until an erase,
which can run at any time, as often as wanted:

1. the quarantined marks still stated by a current text (a document's title or text, a chunk, a derived node's text
   and meta, a utility question, an artefact) are left out: erasing them would take the caches of the texts that
   state them too;
2. the store deletes, in one transaction and with its secure deletes, the LLM cache entries holding a remaining mark
   (looked up by mark: the cost of the change, not of the cache), those with no recorded input, every embedding but
   those of current texts, every kept version text, the failures and ``meta`` entries holding a mark, and the
   quarantine itself (:meth:`~gemrag.store.parts.Caches.purge_caches`);
3. the array files and artefacts no published build names are removed, and the database is rewritten without free
   pages, dead rows or log frames (:meth:`~gemrag.store.parts.Database.erase_physically`).

Step 3 is incomplete while another process reads an old snapshot of a SQLite memory (its write-ahead log cannot be
truncated) or holds a PostgreSQL table: the report says which (``PurgeReport.erasure``), and running the erase again
once the reader is gone completes it (the quarantine is gone by then; the rewrite does not need it). An interrupted
erase (Ctrl-C, a kill) left either its transaction whole or nothing of it: the next erase does what is left.

Traced as one ``erase_memory`` span (``gen_ai.operation.name = "erase_memory"``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Protocol

from gemrag import tracing
from gemrag.memory.handle import MemoryHandle
from gemrag.models.cache import INPUT_KEY
from gemrag.store.erase import PurgeReport, marks_of, strings_of
from gemrag.store.parts import BuildArrays, Caches, Database, DocumentChunks, NodeRows, QuestionRows
from gemrag.strategies.base import WARM_UP
from gemrag.strategies.platform.titles import indexed_text_of

__all__ = ["ErasingStore", "erase", "stated_texts"]


class ErasingStore(Database, DocumentChunks, NodeRows, QuestionRows, BuildArrays, Caches, Protocol):
    """What erasing uses of a store: the quarantined marks and the caches purged of them, the texts the memory still
    states (documents, nodes, utility questions), the stale build files, and the database's physical erase."""


def erase(memory: MemoryHandle[ErasingStore]) -> PurgeReport:
    """Erase every copy of text the memory no longer states (module docstring); the caller holds the build lock.

    Returns:
        The :class:`~gemrag.store.erase.PurgeReport`: ``fragments`` the removed marks erased (of ``quarantined``),
        ``purged`` the rows deleted, ``erasure`` the physical rewrite (``complete`` False: a reader kept old bytes;
        its ``detail`` names the file or tables), ``seconds`` the wall time.

    Raises:
        ReadOnlyMemoryError: the memory is open read-only. DatabaseLockedError: the database stayed locked (nothing
            was erased; run it again).
    """
    start = time.perf_counter()
    store = memory.store
    attributes = {"gen_ai.operation.name": "erase_memory", "gen_ai.memory.id": store.location}
    with tracing.span("erase_memory", attributes) as span:
        quarantined = store.forgotten_marks()
        stated = marks_of(stated_texts(memory), every=True) & quarantined if quarantined else set()
        removed = quarantined - stated
        with store.secure_deletes():
            purged = store.purge_caches(
                removed, handled=quarantined, input_key=INPUT_KEY, keep_embeddings=_kept_embeddings(memory)
            )
        files = store.remove_stale_files()
        erasure = store.erase_physically()
        erasure = replace(erasure, files_removed=erasure.files_removed + files)
        span.set_attributes(
            {
                "gen_ai.memory.erase.marks": len(removed),
                "gen_ai.memory.erase.llm_entries": purged.llm_entries,
                "gen_ai.memory.erase.complete": erasure.complete,
            }
        )
    return PurgeReport(len(removed), [], purged, erasure, len(quarantined), time.perf_counter() - start)


def stated_texts(memory: MemoryHandle[ErasingStore]) -> Iterator[str]:
    """Every text the memory states now: its documents' titles and texts, and every node's text, meta, utility
    questions and artefacts (:meth:`~gemrag.store.parts.Rows.texts_of`)."""
    store = memory.store
    for d in store.documents():
        yield str(d["title"] or "")
        yield store.document_text(int(d["id"]))
    ids = [n.id for n in store.nodes()]
    for start in range(0, len(ids), 2000):
        yield from store.texts_of(ids[start : start + 2000])


def _kept_embeddings(memory: MemoryHandle[ErasingStore]) -> set[str]:
    """The embedding-cache keys of the texts the memory still holds (chunks in both title forms, derived nodes and
    their meta's strings, utility questions), for the current embedder: a kept key is recomputed from a kept text, so
    nothing removed can be kept."""
    store, embedder = memory.store, memory.embedder
    titled = indexed_text_of(memory.ctx, titles=True)
    texts = {WARM_UP}
    for n in store.nodes():
        texts.add(n.text)
        if n.kind == "chunk":
            texts.add(titled(n))
        else:
            texts.update(strings_of(n.meta))
    texts.update(q for _, _, q in store.questions())
    return {embedder.key(t) for t in texts}
