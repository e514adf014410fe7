"""A memory's documents identified by their sources: adding, updating and syncing them.

Used by :class:`gemrag.memory.Memory` (``add``, ``put``, ``add_text``, ``add_document``). The rules:

* **Identity.** A file's identity is its resolved path, or an id the user gives (``gemrag index FILE --id
  notes``); a document of the HTTP server or the MCP ``remember`` tool is identified by its explicit id (or the
  server's explicit source). Documents without an identity (``Memory.add_text`` without ``id``, chat exchanges,
  evaluation corpora, standard input without ``--id``) are *anonymous* and deduplicated by their text, as before:
  they are never "updated" (a chat exchange keeps the turn and date it was said at).
* **Unchanged** (same identity, same sha256): nothing happens, no model call.
* **Updated** (same identity, new text): in ONE transaction (:func:`gemrag.lifecycle.remove_documents`) the
  previous version is recorded in the history (``document_versions``: source, sha256, when it was added and
  replaced; its text only with ``keep_versions``), its chunks and everything derived from them alone are deleted,
  every built strategy gets a pruned generation, and the new version comes in. When the previous version was
  chunked, the new one is chunked at once with :func:`gemrag.ingest.rechunk_text`: its chunks whose text still
  occurs are kept, so only the changed stretch gets new chunks, and the next ``index`` spends LLM calls only on
  those (cached answers cover the rest; GEM also re-summarizes the eigenthemes whose members changed).
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
from gemrag.lifecycle import Memory as LifecycleMemory
from gemrag.lifecycle import remove_documents
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
        doc_id: the document's id now (for ``removed``: the id it had). source, title, key: the document's.
        previous: the id of the version it replaced (``updated``), else None.
        version: 1, 2, ... the number of this version of the source.
    """

    status: Status
    doc_id: int
    source: str
    title: str
    key: str | None
    previous: int | None = None
    version: int = 1


@dataclass
class SourceReport:
    """What :meth:`gemrag.memory.Memory.put` (or ``add``) did, in input order (removals last).

    Attributes:
        changes: one :class:`SourceChange` per distinct source, then one per removed document.
        chunks_deleted: chunks of replaced and removed versions deleted. chunks_kept: chunks of the new versions
            whose text the previous version had (their LLM answers are cached). derived_nodes: strategies' nodes
            deleted with the old chunks. pruned / withdrawn: strategies republished without them / dropped.
        seconds: wall time.
    """

    changes: list[SourceChange] = field(default_factory=list)
    chunks_deleted: int = 0
    chunks_kept: int = 0
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


class Memory(LifecycleMemory, Protocol):
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
    anonymous = [d for d in store.documents() if d["key"] is None]
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
        adopt = old is None and (old := _adoptable(anonymous, src.key, digest)) is not None
        if adopt:
            anonymous.remove(old)  # type: ignore[arg-type]
        plan.append((src, digest, old, adopt))
    prefixes = tuple(d.rstrip(os.sep) + os.sep for d in sync)
    gone = [d for d in store.keyed_documents() if d["key"] not in seen and prefixes and d["key"].startswith(prefixes)]
    replaced = {int(old["id"]): old for _, digest, old, _ in plan if old is not None and old["sha256"] != digest}
    new_chunks = _new_versions(memory, plan, replaced)
    report = SourceReport()

    def insert(c: Any) -> None:
        for i, (src, digest, old, adopt) in enumerate(plan):
            doc, key = src.document, src.key
            if key is None:
                doc_id, created = store.add_document(doc.source, doc.title, doc.text)
                report.changes.append(
                    SourceChange("added" if created else "unchanged", doc_id, doc.source, doc.title, None)
                )
            elif old is None:
                doc_id = store.insert_document(c, doc.source, doc.title, doc.text, digest, key=key)
                report.changes.append(SourceChange("added", doc_id, doc.source, doc.title, key))
            elif old["sha256"] == digest:
                if adopt:
                    store.adopt_document(c, int(old["id"]), key, doc.source)
                change = SourceChange(
                    "unchanged", int(old["id"]), doc.source, doc.title, key, None, int(old["version"])
                )
                report.changes.append(change)
            else:
                chunks, kept = new_chunks.get(i, (None, 0))
                report.chunks_kept += kept
                version = int(old["version"]) + 1
                doc_id = store.insert_document(
                    c, doc.source, doc.title, doc.text, digest, key=key, version=version, chunks=chunks
                )
                report.changes.append(
                    SourceChange("updated", doc_id, doc.source, doc.title, key, int(old["id"]), version)
                )
        for old in gone:
            change = SourceChange(
                "removed", int(old["id"]), old["source"], old["title"], old["key"], None, old["version"]
            )
            report.changes.append(change)

    removals = [(old, "replaced") for old in replaced.values()] + [(old, "removed") for old in gone]
    if removals:
        removal = remove_documents(memory, removals, keep_text=keep_versions, then=insert)
        report.chunks_deleted, report.derived_nodes = removal.chunks, removal.derived_nodes
        report.pruned, report.withdrawn = removal.pruned, removal.withdrawn
    else:
        with store.transaction() as c:
            insert(c)
    report.seconds = time.perf_counter() - start
    return report


def _new_versions(
    memory: Memory, plan: Sequence[tuple[Source, str, dict[str, Any] | None, bool]], replaced: dict[int, Any]
) -> dict[int, tuple[list[tuple[str, int]], int]]:
    """The chunks of each new version whose previous version was chunked (by position in ``plan``), keeping the
    previous chunks' texts (:func:`gemrag.documents.chunk_new_version`), and how many of them were kept."""
    chunked = {doc_id for doc_id, old in replaced.items() if old["chunked"]}
    if not chunked:
        return {}
    store = memory.store
    old_chunks: dict[int, set[str]] = {}
    for node in store.nodes("chunk"):
        if node.doc_id in chunked:
            old_chunks.setdefault(int(node.doc_id), set()).add(node.text)
    chunk_tokens = int(store.get_meta("chunk_tokens") or memory.config.gem.chunk_tokens)
    out = {}
    for i, (src, _, old, _) in enumerate(plan):
        if old is not None and int(old["id"]) in chunked:
            keep = old_chunks.get(int(old["id"]), set())
            chunks = chunk_new_version(src.document.text, chunk_tokens, keep)
            out[i] = (chunks, sum(1 for text, _ in chunks if text in keep))
    return out
