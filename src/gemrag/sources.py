"""A memory's documents identified by their sources: adding, updating and syncing them.

Used by :class:`gemrag.memory.Memory` (``add``, ``put``, ``add_text``, ``add_document``). The rules:

* **Identity.** A file's identity is its resolved path, or an id the user gives (``gemrag index FILE --id
  notes``); a document of the HTTP server or the MCP ``remember`` tool is identified by its explicit id (or the
  server's explicit source). Documents without an identity (``Memory.add_text`` without ``id``, chat exchanges,
  evaluation corpora, standard input without ``--id``) are *anonymous* and deduplicated by their text, as before:
  they are never "updated" (a chat exchange keeps the turn and date it was said at).
* **Unchanged** (same identity, same sha256): nothing happens, no model call.
* **Updated** (same identity, new text): in ONE transaction (:func:`gemrag.lifecycle.remove_chunks`, the machinery
  of ``gemrag delete``) the previous version is recorded in the history (``document_versions``: source, sha256,
  when it was added and replaced; its text only with ``keep_versions``), and the document takes the new text under
  the same id. When the previous version was chunked, the new one is chunked at once with
  :func:`gemrag.ingest.rechunk_text`, which keeps the old chunk texts that still occur, so only the changed stretch
  gets new chunk texts; old chunks whose text is still there (in the same order) stay the same nodes, with their
  questions, artefacts and derived nodes; the others are deleted with everything derived from them alone, and
  every built strategy gets a pruned generation, as a delete would. The next ``index`` spends LLM calls only on the
  new chunks (GEM also re-summarizes the eigenthemes whose members changed; RAPTOR the clusters that changed).
* **Sync**: with ``sync`` directories, documents whose identity is a path below one of them and whose file is not
  among the sources any more are **removed** in the same transaction (reason ``removed`` in the history).
* **Memories from before identities** (schema < 4): a file whose resolved path equals an anonymous document's
  source resolved the same way, or whose text and file name equal one's, *adopts* that document (it gets the
  identity; "unchanged", or "updated" when the text differs).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from gemrag.documents import chunk_new_version
from gemrag.errors import InputError
from gemrag.ingest import Document, expand_paths, read_document, read_stdin
from gemrag.lifecycle import MemoryHandle, remove_chunks
from gemrag.store.sqlite import sha256_text

Status = Literal["added", "updated", "unchanged", "removed"]
STATUSES: tuple[Status, ...] = ("added", "updated", "unchanged", "removed")


@dataclass(frozen=True)
class Source:
    """A document to put in a memory, and its identity (``key``; None: anonymous, deduplicated by text)."""

    document: Document
    key: str | None = None


@dataclass(frozen=True)
class SourceChange:
    """What happened to one source.

    Attributes:
        status: ``added``, ``updated`` (its text changed: the previous version was replaced), ``unchanged`` (the
            same text is stored) or ``removed`` (its file is gone, ``sync``).
        doc_id: the document's id (a new version keeps its document's id; for ``removed``: the id it had).
        source, title, key: the document's. version: 1, 2, ... the number of this version of the source.
    """

    status: Status
    doc_id: int
    source: str
    title: str
    key: str | None
    version: int = 1


@dataclass
class SourceReport:
    """What :meth:`gemrag.memory.Memory.put` (or ``add``) did, in input order (removals last).

    Attributes:
        changes: one :class:`SourceChange` per distinct source, then one per removed document.
        chunks_deleted: chunks of replaced versions whose text is gone, and of removed documents, deleted.
            chunks_kept: chunks of updated documents kept as they were (same node, text, questions, artefacts).
            chunks_new: chunks of updated documents inserted (the changed stretch; new ones of unchanged text are
            answered by the LLM cache). derived_nodes: strategies' nodes deleted with the deleted chunks.
            pruned / withdrawn: strategies republished without them / dropped (must be rebuilt).
        seconds: wall time.
    """

    changes: list[SourceChange] = field(default_factory=list)
    chunks_deleted: int = 0
    chunks_kept: int = 0
    chunks_new: int = 0
    derived_nodes: int = 0
    pruned: list[str] = field(default_factory=list)
    withdrawn: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def count(self, status: Status) -> int:
        """How many sources had ``status``."""
        return sum(1 for c in self.changes if c.status == status)

    def describe(self, *, removed: bool = False) -> str:
        """``"1 added, 1 updated, 3 unchanged"`` (and ``", 0 removed"`` when ``removed`` or some were)."""
        shown = [s for s in STATUSES if s != "removed" or removed or self.count("removed")]
        return ", ".join(f"{self.count(s)} {s}" for s in shown)

    @property
    def results(self) -> list[tuple[int, bool]]:
        """``(doc_id, created)`` per source (not removals): created is False for an unchanged source."""
        return [(c.doc_id, c.status != "unchanged") for c in self.changes if c.status != "removed"]


class Memory(MemoryHandle, Protocol):
    """What this module needs of a memory (:class:`gemrag.memory.Memory` is one): a lifecycle memory with its
    configuration (the chunk size)."""

    config: Any


def file_key(path: str | Path) -> str:
    """A file's identity: its resolved absolute path."""
    return str(Path(path).resolve())


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


def _adoptable(anonymous: list[dict[str, Any]], key: str, digest: str) -> dict[str, Any] | None:
    """The anonymous document a file with identity ``key`` and text ``digest`` adopts (see the module docstring)."""
    name = Path(key).name
    for doc in anonymous:
        source = str(doc["source"])
        if source.startswith("<"):
            continue
        if file_key(source) == key or (doc["sha256"] == digest and Path(source).name == name):
            return doc
    return None


def put_sources(
    memory: Memory, sources: Sequence[Source], *, sync: Sequence[str] = (), keep_versions: bool = False
) -> SourceReport:
    """Put ``sources`` in the memory by the rules of the module docstring, in one transaction; the caller holds the
    build lock.

    Args:
        sync: resolved directories whose documents without a source among ``sources`` are removed.
        keep_versions: keep the text of replaced and removed versions in the history.
    """
    start = time.perf_counter()
    store = memory.store
    anonymous: list[dict[str, Any]] | None = None  # read only when a new identity may adopt an old document
    plan: list[tuple[Source, str, dict[str, Any] | None, bool]] = []  # source, sha256, previous version, adopt
    seen: set[str] = set()
    for src in sources:
        digest = sha256_text(src.document.text)
        if src.key is None:
            plan.append((src, digest, None, False))
            continue
        if src.key in seen:  # the same file named twice (a file and its directory)
            continue
        seen.add(src.key)
        old = store.document_by_key(src.key)
        if old is None and anonymous is None:
            anonymous = [d for d in store.documents() if d["key"] is None]
        adopt = old is None and (old := _adoptable(anonymous or [], src.key, digest)) is not None
        if adopt and anonymous is not None:
            anonymous.remove(old)  # type: ignore[arg-type]
        plan.append((src, digest, old, adopt))
    prefixes = tuple(d.rstrip(os.sep) + os.sep for d in sync)
    keyed = store.keyed_documents() if prefixes else []
    gone = [d for d in keyed if d["key"] not in seen and d["key"].startswith(prefixes)]
    replaced = [old for _, digest, old, _ in plan if old is not None and old["sha256"] != digest]
    versions = {
        int(old["id"]): _new_version(memory, old, src.document.text) for src, _, old, _ in plan if old in replaced
    }
    report = SourceReport()

    def insert(c: Any) -> None:
        for src, digest, old, adopt in plan:
            doc, key = src.document, src.key
            if key is None:
                doc_id, created = store.add_document(doc.source, doc.title, doc.text)
                status: Status = "added" if created else "unchanged"
                report.changes.append(SourceChange(status, doc_id, doc.source, doc.title, None))
            elif old is None:
                doc_id = store.insert_document(c, doc.source, doc.title, doc.text, digest, key=key)
                report.changes.append(SourceChange("added", doc_id, doc.source, doc.title, key))
            elif old["sha256"] == digest:
                if adopt:
                    store.adopt_document(c, int(old["id"]), key, doc.source)
                version = int(old["version"])
                report.changes.append(SourceChange("unchanged", int(old["id"]), doc.source, doc.title, key, version))
            else:
                doc_id, version = int(old["id"]), int(old["version"]) + 1
                if adopt:
                    store.adopt_document(c, doc_id, key, doc.source)
                store.update_document(c, doc_id, doc.source, doc.title, doc.text, digest, version=version)
                plan_chunks = versions[doc_id]
                if plan_chunks is not None:
                    store.place_chunks(c, doc_id, plan_chunks.keep, plan_chunks.new)
                report.changes.append(SourceChange("updated", doc_id, doc.source, doc.title, key, version))
        for old in gone:
            report.changes.append(
                SourceChange("removed", int(old["id"]), old["source"], old["title"], old["key"], int(old["version"]))
            )

    gone_chunks = [i for v in versions.values() if v is not None for i in v.gone]
    gone_chunks += [i for old in gone for i in store.document_chunk_ids(int(old["id"]))]

    def rows(c: Any, derived: list[int]) -> None:
        for old in replaced:
            store.record_version(c, old, "replaced", keep_text=keep_versions)
        for old in gone:
            store.record_version(c, old, "removed", keep_text=keep_versions)
        store.delete_nodes(c, [*derived, *gone_chunks])
        for old in gone:
            store.delete_rows(c, int(old["id"]), [])
        insert(c)

    if replaced or gone:
        removal = remove_chunks(memory, gone_chunks, rows)
        report.chunks_deleted, report.derived_nodes = removal.chunks, removal.derived_nodes
        report.pruned, report.withdrawn = removal.pruned, removal.withdrawn
    else:
        with store.transaction() as c:
            insert(c)
    report.chunks_kept = sum(len(v.keep) for v in versions.values() if v is not None)
    report.chunks_new = sum(len(v.new) for v in versions.values() if v is not None)
    report.seconds = time.perf_counter() - start
    return report


@dataclass(frozen=True)
class NewChunks:
    """How a new version's chunks relate to the previous version's: ``keep`` (old chunk node id -> its position
    now), ``new`` (``(position, text, n_tokens)`` of chunks to insert) and ``gone`` (old chunk ids to delete)."""

    keep: dict[int, int]
    new: list[tuple[int, str, int]]
    gone: list[int]


def _new_version(memory: Memory, old: dict[str, Any], text: str) -> NewChunks | None:
    """The chunks of the new version ``text`` of the document ``old``, when ``old`` was chunked (else None: the new
    version is chunked by the next ``index``): chunked keeping the old chunks' texts
    (:func:`gemrag.documents.chunk_new_version`), then matched to the old chunk nodes in order — an old chunk is
    kept (same node: its questions, artefacts and derived nodes stay) when its text comes next in the new version
    after the chunks kept before it, so kept chunks never change their relative order."""
    if not old["chunked"]:
        return None
    store = memory.store
    old_chunks = [store.node(i) for i in store.document_chunk_ids(int(old["id"]))]  # in document order
    chunk_tokens = int(store.get_meta("chunk_tokens") or memory.config.gem.chunk_tokens)
    chunks = chunk_new_version(text, chunk_tokens, {n.text for n in old_chunks})
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
