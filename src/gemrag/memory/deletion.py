"""Deleting documents and chunks from the memory and from every built strategy, in one transaction.

Used by :class:`gemrag.memory.Memory` (``delete`` removes a document, :mod:`gemrag.memory.forgetting`) and by
:mod:`gemrag.memory.sources` (a replaced version's chunks). Deleting a document removes, in ONE transaction with a
pruned generation of every built strategy (:mod:`gemrag.strategies.platform.incremental`), the document, its chunks,
their artefacts and questions, every derived node with one of its chunks among its inputs (a summary, a gist, a
class; an entity or a triple that another chunk still states stays: :mod:`gemrag.strategies.platform.forgetting`),
every edge touching them, and every document resting on them (:func:`resting_on`: a chat exchange whose reply
recalled one of the chunks; its own chunks and derived nodes go too, recorded as ``withdrawn``). The marks of every
text that left are quarantined in the same transaction, so a later erase finds its copies
(:mod:`gemrag.memory.erasing`). No LLM call: what depended on the deleted chunks (GEM's eigenvectors and the summaries
whose members changed, RAPTOR's clusters) is recomputed by the next ``index``, which spends LLM calls only on what
changed (cached answers are reused). No retrieval returns a hit resting on removed text
(:func:`~gemrag.strategies.platform.forgetting.check_inputs` in
:func:`~gemrag.memory.retrieval.retrieve_published`). A document held by several sources (one document per content,
:mod:`gemrag.memory.source_plan`) loses only the source named: it stays while another source holds it, and goes with
its last source.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from gemrag.errors import GemragError
from gemrag.memory.handle import MemoryHandle
from gemrag.store.erase import PurgeReport, marks_of
from gemrag.store.parts import (
    BuildArrays,
    Caches,
    Connection,
    Database,
    DocumentChunks,
    Documents,
    NodeRows,
    RowDeletes,
)
from gemrag.store.publish import Publication
from gemrag.strategies.base import Strategy
from gemrag.strategies.platform.forgetting import forgotten_nodes
from gemrag.strategies.platform.incremental import prune_strategy


@dataclass
class DeleteReport:
    """What :meth:`gemrag.memory.Memory.delete` did.

    Attributes:
        document: the deleted document (id, source, title, n_chars, chunked); when only one of its sources was
            deleted, the document with that source's ``key``, ``source`` and ``title``.
        chunks: chunks deleted. derived_nodes: strategies' nodes deleted with them (every one made from them).
        pruned: strategies republished without the deleted nodes. withdrawn: strategies whose build had to be
            dropped (they must be rebuilt). llm_calls: LLM calls spent (0 without ``rebuild``: deleting needs no
            model).
        seconds: wall time.
        kept_by: the sources still holding the document (empty: the document was deleted).
        purge: with ``purge``, what the erase that followed erased (caches, kept versions, the files:
            :class:`~gemrag.store.erase.PurgeReport`); None without.
        rebuilt: with ``rebuild``, the LLM calls each rebuilt strategy spent (name -> calls; ``llm_calls`` is their
            sum); empty without.
        dependents: the documents withdrawn because they rested on a deleted chunk (a chat exchange whose reply
            recalled one: :func:`resting_on`); ``chunks`` and ``derived_nodes`` count theirs too.
    """

    document: dict[str, Any]
    chunks: int
    derived_nodes: int
    pruned: list[str]
    withdrawn: list[str]
    llm_calls: int
    seconds: float
    kept_by: list[str] = field(default_factory=list)
    purge: PurgeReport | None = None
    rebuilt: dict[str, int] = field(default_factory=dict)
    dependents: list[dict[str, Any]] = field(default_factory=list)


class DeletionStore(Database, DocumentChunks, NodeRows, RowDeletes, Documents, BuildArrays, Caches, Protocol):
    """What deleting documents uses of a store: documents and their sources, chunks and derived nodes, the deletes
    and the publication of the strategies' rebuilt generations, in the database's transactions, and the quarantine of
    the removed texts' marks (:meth:`~gemrag.store.parts.Caches.forget_marks`)."""


def resolve_document(memory: MemoryHandle[DeletionStore], document: int | str) -> dict[str, Any]:
    """The one document ``document`` names: an id, or a source path / title as ``gemrag info`` lists them (of the
    document or of any of its further sources).

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


def resolve_source(
    memory: MemoryHandle[DeletionStore], document: int | str
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The document ``document`` names (:func:`resolve_document`) and, when it names one source of a document held
    by several (its identity, exact path or title, else the end of its path), that source (a holder dict of
    :meth:`gemrag.store.MemoryStore.holders`); None: the whole document (named by its id, or by all its sources).

    Raises:
        GemragError: no document or several documents match, or ``document`` names several but not all of the
            sources of one document.
    """
    doc = resolve_document(memory, document)
    held = memory.store.holders(int(doc["id"]))
    ref = str(document)
    if len(held) < 2 or ref.strip() == str(doc["id"]):
        return doc, None
    named: list[dict[str, Any]] = []
    for match in (
        lambda h: h["key"] == ref,
        lambda h: ref in (h["source"], h["title"]),
        lambda h: str(h["source"]).endswith(ref),
    ):
        named = named or [h for h in held if match(h)]
    if len(named) == 1:
        return doc, named[0]
    if len(named) == len(held):
        return doc, None
    listed = ", ".join(str(h["source"]) for h in named)
    raise GemragError(f"{ref!r} names {len(named)} sources of document {doc['id']}: {listed}; give its path")


def delete_document(
    memory: MemoryHandle[DeletionStore], document: int | str, *, keep_text: bool = False
) -> tuple[dict[str, Any], Removal, list[str]]:
    """Delete one document atomically (see the module docstring), recording it in the version history (reason
    ``deleted``; its text too when ``keep_text``); the caller holds the build lock. When ``document`` names one
    source of a document other sources hold too (:func:`resolve_source`), only that source goes (recorded in its
    history); the document, its chunks and every build stay.

    Returns:
        ``(document, what was removed, sources still holding the document)``.

    Raises:
        GemragError: no such document (or an ambiguous name).
    """
    doc, source = resolve_source(memory, document)
    if source is not None:
        store = memory.store
        others = [h for h in store.holders(int(doc["id"])) if h["key"] != source["key"]]
        named = {**doc, **{k: source[k] for k in ("key", "source", "title", "added_at")}}
        with store.transaction() as c:
            store.record_version(c, named, "deleted", keep_text=keep_text)
            store.release_holders(c, [int(doc["id"])])
            store.set_holders(c, int(doc["id"]), others)
        return named, Removal(0, 0, [], []), [str(h["source"]) for h in others]
    return doc, remove_documents(memory, [(doc, "deleted")], keep_text=keep_text), []


@dataclass
class Removal:
    """What :func:`remove_chunks` removed: chunks and derived nodes deleted, strategies pruned and withdrawn, the
    documents withdrawn because they rested on a removed chunk (``dependents``: a chat exchange whose reply recalled
    one; document dicts), and ``marks``, how many marks of the removed texts were quarantined for the next erase
    (:mod:`gemrag.store.erase`)."""

    chunks: int
    derived_nodes: int
    pruned: list[str]
    withdrawn: list[str]
    dependents: list[dict[str, Any]] = field(default_factory=list)
    marks: int = 0


def resting_on(
    memory: MemoryHandle[DeletionStore], chunk_ids: Sequence[int], leaving: Collection[int] = ()
) -> list[dict[str, Any]]:
    """The documents that rest on one of ``chunk_ids`` (recorded with :meth:`~gemrag.store.parts.Documents.
    set_inputs`: a chat exchange on the chunks its reply recalled), and those resting on their chunks in turn, but
    the documents ``leaving`` anyway; document dicts as ``Store.documents`` gives them, by id."""
    store = memory.store
    found: dict[int, dict[str, Any]] = {}
    frontier = list(chunk_ids)
    while frontier:
        new = [i for i in store.documents_resting_on(frontier) if i not in found and i not in leaving]
        if not new:
            break
        by_id = {int(d["id"]): d for d in store.documents()}
        new = [i for i in new if i in by_id]
        found.update((i, by_id[i]) for i in new)
        frontier = [c for doc_id in new for c in store.document_chunk_ids(doc_id)]
    return [found[i] for i in sorted(found)]


def remove_chunks(
    memory: MemoryHandle[DeletionStore],
    chunk_ids: Sequence[int],
    rows: Callable[[Connection, list[int]], None],
    *,
    documents: Collection[int] = (),
    left: Sequence[str] = (),
) -> Removal:
    """Delete chunks in ONE transaction with a pruned generation of every built strategy (no LLM call; the caller
    holds the build lock): the documents resting on them leave with them (:func:`resting_on`: their version is
    recorded with reason ``withdrawn``), the derived nodes that leave with all these chunks are found
    (:func:`~gemrag.strategies.platform.forgetting.forgotten_nodes`: every node with one of them among its inputs,
    but the kinds a strategy keeps while another source states them), each built strategy's published generation is
    pruned of them, and ``rows(c, derived)`` makes the row changes inside the transaction (it must delete the chunks
    and ``derived``, e.g. with ``Store.delete_nodes``, and may change documents). The marks of every text that
    leaves (the chunks', the derived nodes' and the withdrawn documents', and ``left``) are quarantined in the same
    transaction for the next erase (:meth:`~gemrag.store.parts.Caches.forget_marks`).

    Args:
        documents: ids of the documents the caller removes or replaces (never "withdrawn" on top).
        left: further texts that leave (the removed or replaced documents' own texts, their titles).
    """
    store = memory.store
    dependents = resting_on(memory, chunk_ids, documents)
    dependent_chunks = [c for d in dependents for c in store.document_chunk_ids(int(d["id"]))]
    all_chunks = [*chunk_ids, *dependent_chunks]
    derived = forgotten_nodes(store, all_chunks)
    gone = set(all_chunks) | set(derived)
    texts = [*left, *store.texts_of(sorted(gone))] if gone else list(left)
    for d in dependents:
        texts += [str(d["title"] or ""), store.document_text(int(d["id"]))]
    marks = marks_of(texts, every=True)
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

    def before(c: Connection) -> None:
        for d in dependents:
            store.record_version(c, d, "withdrawn")
        store.delete_nodes(c, dependent_chunks)
        rows(c, derived)
        for d in dependents:
            store.delete_rows(c, int(d["id"]), [])
        store.forget_marks(c, marks)

    store.publish_many(publications, before=before, withdraw=withdrawn)
    return Removal(len(all_chunks), len(derived), [p.strategy for p in publications], withdrawn, dependents, len(marks))


def remove_documents(
    memory: MemoryHandle[DeletionStore],
    documents: Sequence[tuple[dict[str, Any], str]],
    *,
    keep_text: bool = False,
) -> Removal:
    """Remove whole documents in ONE transaction (:func:`remove_chunks`): each document's version is recorded in
    ``document_versions`` (with its reason, ``removed`` or ``deleted``; its text when ``keep_text``; one row per
    source when several sources hold it), then it, its chunks, the derived nodes that leave with its chunks and the
    documents resting on them go.

    Args:
        documents: ``(document dict as Store.documents gives it, reason)`` pairs.
        keep_text: keep each version's text in the history (until the next erase).
    """
    store = memory.store
    chunk_ids = [c for doc, _ in documents for c in store.document_chunk_ids(int(doc["id"]))]

    def rows(c: Connection, derived: list[int]) -> None:
        for doc, reason in documents:
            held = store.holders(int(doc["id"]))
            for row in [{**doc, **{k: h[k] for k in ("key", "source", "title", "added_at")}} for h in held] or [doc]:
                store.record_version(c, row, reason, keep_text=keep_text)
        store.delete_nodes(c, derived)
        for doc, _ in documents:
            store.delete_rows(c, int(doc["id"]), [])

    left = [t for doc, _ in documents for t in (str(doc["title"] or ""), store.document_text(int(doc["id"])))]
    return remove_chunks(memory, chunk_ids, rows, documents={int(doc["id"]) for doc, _ in documents}, left=left)
