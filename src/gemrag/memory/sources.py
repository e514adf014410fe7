"""A memory's documents identified by their sources: adding, updating and syncing them.

Used by :class:`gemrag.memory.Memory` (``add``, ``put``, ``add_text``, ``add_document``). The rules:

* **Identity.** A file's identity is its resolved path, or an id the user gives (``gemrag index FILE --id
  notes``); a document of the HTTP server or the MCP ``remember`` tool is identified by its explicit id (or the
  server's explicit source). Documents without an identity (``Memory.add_text`` without ``id``, chat exchanges,
  evaluation corpora, standard input without ``--id``) are *anonymous* and deduplicated by their text, as before:
  they are never "updated" (a chat exchange keeps the turn and date it was said at).
* **Unchanged** (same identity, same sha256): nothing happens, no model call.
* **Updated** (same identity, new text): in ONE transaction (:func:`gemrag.memory.deletion.remove_chunks`, the
  machinery of ``gemrag delete``) the previous version is recorded in the history (``document_versions``: source,
  sha256, when it was added and replaced; its text only with ``keep_versions``), and the document takes the new text
  under the same id. When the previous version was chunked, the new one is chunked at once with
  :func:`gemrag.ingest.rechunk_text`, which keeps the old chunk texts that still occur, so only the changed stretch
  gets new chunk texts; old chunks whose text is still there (in the same order) stay the same nodes, with their
  questions, artefacts and derived nodes; the others are deleted with everything derived from them (DESIGN.md,
  "Forgetting"), and every built strategy gets a pruned generation, as a delete would. The next ``index`` spends LLM
  calls only on the new chunks (GEM also re-summarizes the eigenthemes whose members changed; RAPTOR the clusters that
  changed).
* **One document per content** (:mod:`gemrag.memory.source_plan`): a source whose text is byte-identical to a live
  document's becomes another source of that document (``same``: no new document, no chunk, no model call); with
  ``sync``, a new file holding the text of a file gone from the directory is a **move** (``moved``: the document
  keeps its id, chunks and artefacts; its source changes). A source whose text changed while another source still
  holds the old text leaves that document for a new one (chunked along the old chunks, so only the changed
  stretch costs model calls); a document no source holds any more is removed.
* **Sync**: with ``sync`` directories, sources whose identity is a path below one of them and whose file is not
  among the sources any more are **removed** in the same transaction (reason ``removed`` in the history); their
  document goes with its last source.
* **Memories from before identities** (schema < 4): a file whose resolved path equals an anonymous document's
  source resolved the same way, or whose text equals one's, *adopts* that document (it gets the identity;
  "unchanged", or "updated" when the text differs).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from gemrag.errors import InputError
from gemrag.ingest import Document, expand_paths, read_document, read_stdin
from gemrag.memory.deletion import DeletionStore, remove_chunks
from gemrag.memory.documents import chunk_new_version
from gemrag.memory.handle import MemoryHandle
from gemrag.memory.source_plan import HolderPlan, Status, file_key, plan_holders, read_entries
from gemrag.store import sha256_text
from gemrag.store.parts import MetaRows

__all__ = [
    "STATUSES",
    "PreviewDocument",
    "PutPreview",
    "Source",
    "SourceChange",
    "SourceReport",
    "file_key",
    "preview_put",
    "put_sources",
    "read_sources",
]

STATUSES: tuple[Status, ...] = ("added", "updated", "unchanged", "same", "moved", "removed")
_LABELS = {"same": "same content"}
_ALWAYS_SHOWN = ("added", "updated", "unchanged")


@dataclass(frozen=True)
class Source:
    """A document to put in a memory, and its identity (``key``; None: anonymous, deduplicated by text); ``rests_on``:
    the chunk ids an anonymous document rests on (a chat exchange: the chunks its reply recalled), withdrawn with
    any of them (:func:`gemrag.memory.deletion.resting_on`)."""

    document: Document
    key: str | None = None
    rests_on: tuple[int, ...] = ()


@dataclass(frozen=True)
class SourceChange:
    """What happened to one source.

    Attributes:
        status: ``added``, ``updated`` (its text changed: the previous version was replaced), ``unchanged`` (the
            same text is stored), ``same`` (its text is byte-identical to a live document's: it became another
            source of that document), ``moved`` (it took the place of a source gone from a synced directory whose
            document holds the same text: the document's source changed) or ``removed`` (its file is gone,
            ``sync``; its document goes with its last source).
        doc_id: the document's id (a new version keeps its document's id, unless another source still holds the
            previous text; for ``removed``: the id it had).
        source, title, key: the source's. version: 1, 2, ... the number of the document's version it holds.
        same_as: for ``same``, the source of the document it joined. moved_from: for ``moved``, the gone source.
    """

    status: Status
    doc_id: int
    source: str
    title: str
    key: str | None
    version: int = 1
    same_as: str | None = None
    moved_from: str | None = None

    def note(self) -> str | None:
        """A line for ``same`` and ``moved`` (``"b.txt: same content as a.txt (document 1)"``), else None."""
        if self.status == "same":
            return f"{self.source}: same content as {self.same_as} (document {self.doc_id}): no new chunk"
        if self.status == "moved":
            return f"{self.source}: moved from {self.moved_from} (document {self.doc_id} kept)"
        return None


@dataclass
class SourceReport:
    """What :meth:`gemrag.memory.Memory.put` (or ``add``) did, in input order (removals last).

    Attributes:
        changes: one :class:`SourceChange` per distinct source, then one per removed source.
        chunks_deleted: chunks of replaced versions whose text is gone, and of removed documents, deleted.
            chunks_kept: chunks of updated documents kept as they were (same node, text, questions, artefacts).
            chunks_new: chunks of updated documents inserted (the changed stretch; new ones of unchanged text are
            answered by the LLM cache). derived_nodes: strategies' nodes deleted with the deleted chunks.
            pruned / withdrawn: strategies republished without them / dropped (must be rebuilt).
        documents_removed: documents that went with their last source.
        seconds: wall time.
    """

    changes: list[SourceChange] = field(default_factory=list)
    chunks_deleted: int = 0
    chunks_kept: int = 0
    chunks_new: int = 0
    derived_nodes: int = 0
    pruned: list[str] = field(default_factory=list)
    withdrawn: list[str] = field(default_factory=list)
    documents_removed: int = 0
    seconds: float = 0.0

    def count(self, status: Status) -> int:
        """How many sources had ``status``."""
        return sum(1 for c in self.changes if c.status == status)

    def describe(self, *, removed: bool = False) -> str:
        """``"1 added, 1 updated, 3 unchanged"``, then ``", 1 same content"`` and ``", 1 moved"`` when some were,
        and ``", 0 removed"`` when ``removed`` or some were."""
        shown = [s for s in STATUSES if s in _ALWAYS_SHOWN or self.count(s) or (s == "removed" and removed)]
        return ", ".join(f"{self.count(s)} {_LABELS.get(s, s)}" for s in shown)

    @property
    def results(self) -> list[tuple[int, bool]]:
        """``(doc_id, created)`` per source (not removals): created is True when the source's text made a new
        document or a new version (``added``, ``updated``)."""
        return [(c.doc_id, c.status in ("added", "updated")) for c in self.changes if c.status != "removed"]


class SourcesStore(DeletionStore, MetaRows, Protocol):
    """What adding, replacing and deleting documents by source uses of a store: deleting
    (:class:`~gemrag.memory.deletion.DeletionStore`) and the memory's recorded settings."""


class Memory(MemoryHandle[SourcesStore], Protocol):
    """What this module needs of a memory (:class:`gemrag.memory.Memory` is one): a memory handle with its
    configuration (the chunk size)."""

    config: Any


def read_sources(paths: Sequence[str | Path], *, key: str | None = None, sync: bool = False) -> list[Source]:
    """Read files, directories (their .txt/.md files) and ``-`` (standard input) as sources, each checked before
    anything is stored. A file's identity is its resolved path (also its source); standard input is anonymous.

    Args:
        key: an identity the user gives the one document read (``--id``).
        sync: a directory may hold no file (its documents are gone).

    Raises:
        InputError: a file is missing, binary, not UTF-8, empty or of another type; a directory holds no file
            (unless ``sync``); ``key`` is given for more or fewer than one document, or is empty.
    """
    expanded = expand_paths([str(p) for p in paths], allow_empty=sync)
    if key is not None and (len(expanded) != 1 or not key.strip()):
        raise InputError(
            f"--id {key!r} names one document, but {len(expanded)} were given"
            if key.strip()
            else "--id must not be empty"
        )
    out = []
    for raw in expanded:
        if raw == "-":
            out.append(Source(read_stdin(title=key or "stdin"), key))
            continue
        doc = read_document(raw)
        resolved = file_key(raw)
        out.append(Source(Document(resolved, doc.title, doc.text), key or resolved))
    return out


def synced_directories(paths: Sequence[str | Path]) -> list[str]:
    """The resolved directories among ``paths`` (what ``sync`` keeps in step)."""
    return [file_key(p) for p in paths if str(p) != "-" and Path(p).is_dir()]


def put_sources(
    memory: Memory, sources: Sequence[Source], *, sync: Sequence[str] = (), keep_versions: bool = False
) -> SourceReport:
    """Put ``sources`` in the memory by the rules of the module docstring, in one transaction; the caller holds the
    build lock.

    Args:
        sync: resolved directories whose sources not among ``sources`` are removed.
        keep_versions: keep the text of replaced and removed versions in the history.
    """
    start = time.perf_counter()
    store = memory.store
    keyed: list[Source] = []
    anonymous: list[Source] = []
    order: list[tuple[bool, int]] = []  # (identified, index), in input order
    for src in sources:
        if src.key is None:
            order.append((False, len(anonymous)))
            anonymous.append(src)
        elif src.key not in {k.key for k in keyed}:  # the same file named twice (a file and its directory): once
            order.append((True, len(keyed)))
            keyed.append(src)
    digests = [sha256_text(s.document.text) for s in keyed]
    entries = read_entries(
        store, [(str(s.key), d, s.document.source, s.document.title) for s, d in zip(keyed, digests, strict=True)]
    )
    prefixes = tuple(d.rstrip(os.sep) + os.sep for d in sync)
    seen = {s.key for s in keyed}
    gone = [h for h in store.holders() if str(h["key"]).startswith(prefixes) and h["key"] not in seen] if sync else []
    plan = plan_holders(store, entries, gone)
    text = {str(s.key): s.document.text for s in keyed}
    versions = {doc_id: _new_version(memory, plan.docs[doc_id], text[e.key]) for doc_id, e in plan.updates.items()}
    fresh = {t: _chunks_along(memory, nd.hint, text[nd.entry.key]) for t, nd in plan.new_docs.items()}
    gone_chunks = [i for v in versions.values() if v is not None for i in v.gone]
    gone_chunks += [i for old in plan.removed for i in store.document_chunk_ids(int(old["id"]))]
    report = SourceReport()
    made: dict[int, int] = {}  # placeholder -> the new document's id

    def insert(c: Any) -> None:
        for doc_id, e in plan.updates.items():
            version = int(plan.docs[doc_id]["version"]) + 1
            store.update_document(c, doc_id, e.source, e.title, text[e.key], e.digest, version=version)
            new_chunks = versions[doc_id]
            if new_chunks is not None:
                store.place_chunks(c, doc_id, new_chunks.keep, new_chunks.new)
        store.release_holders(c, [i for i in plan.holders if i > 0])
        for target, nd in plan.new_docs.items():
            e = nd.entry
            made[target] = store.insert_document(
                c, e.source, e.title, text[e.key], e.digest, version=nd.version, chunks=fresh[target]
            )
        for target, holders in plan.holders.items():
            store.set_holders(c, made.get(target, target), holders)
        added = [store.add_document(s.document.source, s.document.title, s.document.text) for s in anonymous]
        for (doc_id, _), s in zip(added, anonymous, strict=True):
            if s.rests_on:
                store.set_inputs(c, doc_id, s.rests_on)
        for identified, n in order:
            if identified:
                report.changes.append(_change(plan, n, made))
                continue
            (doc_id, created), doc = added[n], anonymous[n].document
            report.changes.append(
                SourceChange("added" if created else "unchanged", doc_id, doc.source, doc.title, None)
            )
        for h, doc_id in plan.gone:
            report.changes.append(
                SourceChange("removed", doc_id, h["source"], h["title"], h["key"], int(plan.docs[doc_id]["version"]))
            )

    def rows(c: Any, derived: list[int]) -> None:
        for doc, holder, reason in plan.leaving:
            row = doc if holder is None else {**doc, **{k: holder[k] for k in ("key", "source", "title", "added_at")}}
            store.record_version(c, row, reason, keep_text=keep_versions)
        store.delete_nodes(c, [*derived, *gone_chunks])
        for old in plan.removed:
            store.delete_rows(c, int(old["id"]), [])
        insert(c)

    if plan.leaving or plan.removed:
        replaced = [*plan.updates, *(int(old["id"]) for old in plan.removed)]
        left = [store.document_text(doc_id) for doc_id in replaced]  # what no erase may keep once no text states it
        left += [str(old["title"] or "") for old in plan.removed]
        removal = remove_chunks(memory, gone_chunks, rows, documents=set(replaced), left=left)
        report.chunks_deleted, report.derived_nodes = removal.chunks, removal.derived_nodes
        report.pruned, report.withdrawn = removal.pruned, removal.withdrawn
    else:
        with store.transaction() as c:
            insert(c)
    report.documents_removed = len(plan.removed)
    report.chunks_kept = sum(len(v.keep) for v in versions.values() if v is not None)
    report.chunks_new = sum(len(v.new) for v in versions.values() if v is not None)
    report.chunks_new += sum(len(chunks) for chunks in fresh.values() if chunks is not None)
    report.seconds = time.perf_counter() - start
    return report


def _change(plan: HolderPlan, n: int, made: dict[int, int]) -> SourceChange:
    """The report line of the ``n``-th identified source of ``plan``."""
    outcome, entry = plan.outcomes[n], plan.entries[n]
    target = outcome.target
    if target in plan.new_docs:
        version = plan.new_docs[target].version
    elif target in plan.updates:
        version = int(plan.docs[target]["version"]) + 1
    else:
        version = int(plan.docs[target]["version"])
    return SourceChange(
        outcome.status,
        made.get(target, target),
        entry.source,
        entry.title,
        entry.key,
        version,
        outcome.same_as,
        outcome.moved_from,
    )


@dataclass(frozen=True)
class NewChunks:
    """How a new version's chunks relate to the previous version's: ``keep`` (old chunk node id -> its position
    now), ``new`` (``(position, text, n_tokens)`` of chunks to insert) and ``gone`` (old chunk ids to delete)."""

    keep: dict[int, int]
    new: list[tuple[int, str, int]]
    gone: list[int]


def _old_chunks(memory: Memory, old: dict[str, Any], text: str) -> tuple[list[Any], list[tuple[str, int]]] | None:
    """The chunk nodes of the chunked document ``old`` (in document order) and the chunks ``(text, n_tokens)`` of
    ``text`` cut keeping their texts (:func:`gemrag.memory.documents.chunk_new_version`); None when ``old`` is None or
    was not chunked."""
    if old is None or not old["chunked"]:
        return None
    store = memory.store
    old_chunks = [store.node(i) for i in store.document_chunk_ids(int(old["id"]))]  # in document order
    chunk_tokens = int(store.get_meta("chunk_tokens") or memory.config.memory.chunk_tokens)
    return old_chunks, chunk_new_version(text, chunk_tokens, {n.text for n in old_chunks})


def _chunks_along(memory: Memory, hint: dict[str, Any] | None, text: str) -> list[tuple[str, int]] | None:
    """The chunks of a new document holding ``text`` cut along the chunks of the document ``hint`` its source held
    before (so its unchanged stretches are the same chunk texts, whose model answers are cached), or None (no
    chunked hint: the next ``index`` chunks it)."""
    found = _old_chunks(memory, hint, text)  # type: ignore[arg-type]
    return None if found is None else found[1]


def _new_version(memory: Memory, old: dict[str, Any], text: str) -> NewChunks | None:
    """The chunks of the new version ``text`` of the document ``old``, when ``old`` was chunked (else None: the new
    version is chunked by the next ``index``): chunked keeping the old chunks' texts
    (:func:`gemrag.memory.documents.chunk_new_version`), then matched to the old chunk nodes in order — an old chunk is
    kept (same node: its questions, artefacts and derived nodes stay) when its text comes next in the new version
    after the chunks kept before it, so kept chunks never change their relative order."""
    found = _old_chunks(memory, old, text)
    if found is None:
        return None
    old_chunks, chunks = found
    keep: dict[int, int] = {}
    new: list[tuple[int, str, int]] = []
    at = 0  # the next old chunk that may be kept
    for position, (chunk, n_tokens) in enumerate(chunks):
        match = next((j for j in range(at, len(old_chunks)) if old_chunks[j].text == chunk), None)
        if match is None:
            new.append((position, chunk, n_tokens))
            continue
        keep[old_chunks[match].id] = position
        at = match + 1
    return NewChunks(keep, new, [n.id for n in old_chunks if n.id not in keep])


@dataclass(frozen=True)
class PreviewDocument:
    """A document as a put would leave it, for a cost plan (:func:`preview_put`).

    Attributes:
        doc_id: the stored document it updates, or None for a new document.
        title: its title. text: its (new) text.
        chunks: its chunks after the put, in order, each ``(kept chunk id or None for a new chunk, text,
            n_tokens)``; None when the put leaves it unchunked (the next ``index`` chunks ``text``).
    """

    doc_id: int | None
    title: str
    text: str
    chunks: list[tuple[int | None, str, int]] | None


@dataclass
class PutPreview:
    """What :meth:`gemrag.memory.Memory.put` of some sources would change, computed without writing anything.

    Attributes:
        documents: the new documents and new versions (unchanged, same-content and moved sources change no chunk).
        gone: stored chunk ids the put would delete (of replaced versions and removed documents).
        removed: ids of the stored documents the put would remove (no source holds them any more).
        statuses: the sources' outcomes, e.g. ``{"added": 2, "unchanged": 1}``.
    """

    documents: list[PreviewDocument] = field(default_factory=list)
    gone: set[int] = field(default_factory=set)
    removed: set[int] = field(default_factory=set)
    statuses: dict[str, int] = field(default_factory=dict)


def preview_put(memory: Memory, sources: Sequence[Source], *, sync: Sequence[str] = ()) -> PutPreview:
    """What putting ``sources`` (as :func:`put_sources` with ``sync``) would change: the same plan
    (:func:`gemrag.memory.source_plan.plan_holders`) and the same chunking of new versions along their old chunks, read
    from the store with nothing written, so a cost plan (:mod:`gemrag.memory.index_plan`) can price an ``index`` of
    files before they are put."""
    store = memory.store
    keyed: dict[str, Source] = {}
    anonymous: list[Source] = []
    for src in sources:
        if src.key is None:
            anonymous.append(src)
        else:
            keyed.setdefault(src.key, src)
    entries = read_entries(
        store, [(k, sha256_text(s.document.text), s.document.source, s.document.title) for k, s in keyed.items()]
    )
    prefixes = tuple(d.rstrip(os.sep) + os.sep for d in sync)
    gone = [h for h in store.holders() if str(h["key"]).startswith(prefixes) and h["key"] not in keyed] if sync else []
    plan = plan_holders(store, entries, gone)
    preview = PutPreview()
    for outcome in plan.outcomes:
        preview.statuses[outcome.status] = preview.statuses.get(outcome.status, 0) + 1
    if plan.gone:
        preview.statuses["removed"] = len(plan.gone)
    for doc_id, e in plan.updates.items():
        text = keyed[e.key].document.text
        version = _new_version(memory, plan.docs[doc_id], text)
        chunks: list[tuple[int | None, str, int]] | None = None
        if version is not None:
            placed: dict[int, tuple[int | None, str, int]] = {pos: (None, t, n) for pos, t, n in version.new}
            kept = store.nodes_by_id(list(version.keep))
            placed |= {pos: (i, kept[i].text, kept[i].n_tokens) for i, pos in version.keep.items()}
            chunks = [placed[p] for p in sorted(placed)]
            preview.gone.update(version.gone)
        preview.documents.append(PreviewDocument(doc_id, e.title, text, chunks))
    for nd in plan.new_docs.values():
        text = keyed[nd.entry.key].document.text
        fresh = _chunks_along(memory, nd.hint, text)
        cut: list[tuple[int | None, str, int]] | None = None if fresh is None else [(None, t, n) for t, n in fresh]
        preview.documents.append(PreviewDocument(None, nd.entry.title, text, cut))
    for old in plan.removed:
        preview.removed.add(int(old["id"]))
        preview.gone.update(store.document_chunk_ids(int(old["id"])))
    seen: set[str] = set()
    for src in anonymous:
        digest = sha256_text(src.document.text)
        new = digest not in seen and not store.documents_with_text(digest)
        seen.add(digest)
        preview.statuses["added" if new else "unchanged"] = preview.statuses.get("added" if new else "unchanged", 0) + 1
        if new:
            preview.documents.append(PreviewDocument(None, src.document.title, src.document.text, None))
    return preview
