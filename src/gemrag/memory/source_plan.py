"""One document per content: the document each source holds after a put (the plan :mod:`gemrag.memory.sources` writes).

A document is *held* by its sources (:mod:`gemrag.store.documents`: its primary source and further ones). Given
the identified sources of one put (their identity ``key`` and the sha256 of their text) and the sources gone from
the synced directories, :func:`plan_holders` decides, reading the store but writing nothing:

1. **Unchanged**: a source whose document holds its text stays where it is.
2. **Same content**: a source whose text (new, or changed) is byte-identical to a document's joins that document
   as another source: no new document, no chunk, no model call. A new source that joins a document one of whose
   sources is gone (``--sync``) is a **move**: the document keeps its id, chunks and artefacts; its source changes.
3. **New content**: sources with a text no document holds (grouped by text: two identical new files make one
   document). When one of them held a document that no source holds any more, that document takes the text as its
   new version in place (same id; only the changed chunks are new: :func:`gemrag.memory.sources.put_sources`); otherwise
   a new document is made (chunked along the chunks of the document its source held before, if any, so its unchanged
   stretches reuse the cached model answers).
4. **Gone**: a document no source holds any more is removed; a source that left a document that stays (its text
   changed, or its file is gone) is recorded in the history of that source.

Anonymous documents (no identity) hold themselves; an identified source *adopts* one when its resolved path equals
the anonymous document's source, or when it holds the same text (memories written before identities, schema < 4).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

Status = Literal["added", "updated", "unchanged", "same", "moved", "removed"]


class DocumentStore(Protocol):
    """What the plan reads of a store (:class:`gemrag.store.MemoryStore` is one)."""

    def document_by_key(self, key: str) -> dict[str, Any] | None: ...
    def documents_with_text(self, sha256: str) -> list[dict[str, Any]]: ...
    def holders(self, doc_id: int | None = None) -> list[dict[str, Any]]: ...
    def documents(self) -> list[dict[str, Any]]: ...


@dataclass
class Entry:
    """One identified source of a put.

    Attributes:
        key: its identity. digest: sha256 of its text. source, title: its path and title.
        doc: the document it holds now (None: a new key), adopt: ``doc`` is an anonymous document it adopts.
    """

    key: str
    digest: str
    source: str
    title: str
    doc: dict[str, Any] | None = None
    adopt: bool = False

    @property
    def moving(self) -> bool:
        """True when the source does not stay with the document it holds (a new key, or a changed text)."""
        return self.doc is None or self.doc["sha256"] != self.digest

    def holder(self, now: float) -> dict[str, Any]:
        """The source as a holder of a document (:data:`gemrag.store.documents.HOLDER_KEYS`)."""
        return {"key": self.key, "source": self.source, "title": self.title, "added_at": now, "primary": False}


@dataclass
class Outcome:
    """What happens to one entry: ``status``, the document it holds after (an id, or a negative placeholder for a
    new document of :attr:`HolderPlan.new_docs`), and for ``same`` / ``moved`` the source it shares content with /
    the gone source whose place it takes."""

    status: Status
    target: int
    same_as: str | None = None
    moved_from: str | None = None


@dataclass
class NewDocument:
    """A document the put creates: the entry whose text it holds, the document that entry held before (its chunks
    guide the new chunks; None: chunked by the next ``index``) and its version (the source's next version)."""

    entry: Entry
    hint: dict[str, Any] | None
    version: int


@dataclass
class HolderPlan:
    """The plan of one put (see the module docstring).

    Attributes:
        entries: the identified sources planned, in input order. outcomes: what happens to each (same order).
        updates: document id -> the entry whose new text it takes in place.
        new_docs: placeholder (negative) -> the document to create.
        removed: documents no source holds any more (dicts of ``Store.documents``).
        holders: document id or placeholder -> its holders after, primary first, for every document whose holders
            change (the others keep theirs).
        leaving: ``(document as it was, holder, reason)`` for every source leaving a document (the history rows).
        gone: ``(holder, document id)`` of the gone sources reported as ``removed`` (not taken over by a move).
        docs: the touched existing documents by id, as they were.
    """

    entries: list[Entry] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)
    updates: dict[int, Entry] = field(default_factory=dict)
    new_docs: dict[int, NewDocument] = field(default_factory=dict)
    removed: list[dict[str, Any]] = field(default_factory=list)
    holders: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    leaving: list[tuple[dict[str, Any], dict[str, Any] | None, str]] = field(default_factory=list)
    gone: list[tuple[dict[str, Any], int]] = field(default_factory=list)
    docs: dict[int, dict[str, Any]] = field(default_factory=dict)


def file_key(path: str | Path) -> str:
    """A file's identity: its resolved absolute path."""
    return str(Path(path).resolve())


def adoptable(anonymous: list[dict[str, Any]], key: str, digest: str) -> dict[str, Any] | None:
    """The anonymous document a source with identity ``key`` and text ``digest`` adopts: one whose source resolves
    to ``key`` (a memory from before identities), else one holding the same text and file name, else one holding
    the same text (see the module docstring)."""
    name = Path(key).name
    files = [d for d in anonymous if not str(d["source"]).startswith("<")]
    matchers: tuple[Callable[[dict[str, Any]], bool], ...] = (
        lambda d: d in files and file_key(d["source"]) == key,
        lambda d: d in files and d["sha256"] == digest and Path(d["source"]).name == name,
        lambda d: d["sha256"] == digest,
    )
    for match in matchers:
        found = next((d for d in anonymous if match(d)), None)
        if found is not None:
            return found
    return None


def read_entries(store: DocumentStore, keyed: list[tuple[str, str, str, str]]) -> list[Entry]:
    """The entries of the identified sources ``(key, digest, source, title)`` (each key once), with the document
    each holds now or adopts."""
    anonymous: list[dict[str, Any]] | None = None  # read only when a new identity may adopt an old document
    entries = []
    for key, digest, source, title in keyed:
        entry = Entry(key, digest, source, title, store.document_by_key(key))
        if entry.doc is None:
            if anonymous is None:
                anonymous = [d for d in store.documents() if d["key"] is None]
            entry.doc = adoptable(anonymous, key, digest)
            entry.adopt = entry.doc is not None
            if entry.doc is not None:
                anonymous.remove(entry.doc)
        entries.append(entry)
    return entries


def plan_holders(store: DocumentStore, entries: list[Entry], gone: list[dict[str, Any]]) -> HolderPlan:
    """The plan of a put of ``entries`` where the holders ``gone`` (their files are gone, ``--sync``) leave.

    Args:
        entries: from :func:`read_entries`, each key once, in input order.
        gone: holder dicts (:meth:`gemrag.store.MemoryStore.holders`) of keys not among ``entries``.
    """
    now = time.time()
    plan = HolderPlan(entries=list(entries))
    gone_keys = {str(h["key"]) for h in gone}
    leave = gone_keys | {e.key for e in entries if e.moving}
    before: dict[int, list[dict[str, Any]]] = {}  # touched document -> its holders now
    after: dict[int, list[dict[str, Any]]] = {}  # touched or new document -> its holders after the put

    def touch(doc: dict[str, Any]) -> int:
        doc_id = int(doc["id"])
        if doc_id not in plan.docs:
            plan.docs[doc_id] = doc
            before[doc_id] = store.holders(doc_id)
            after[doc_id] = [h for h in before[doc_id] if h["key"] not in leave]
        return doc_id

    for e in entries:
        if e.doc is not None:
            touch(e.doc)
    for h in gone:
        doc = store.document_by_key(str(h["key"]))
        if doc is not None:
            touch(doc)
    joined: dict[int, list[Entry]] = {}
    targets: dict[int, Outcome] = {}  # by entry index
    pending: dict[str, list[int]] = {}  # new content: digest -> entry indexes
    for n, e in enumerate(entries):
        if not e.moving:
            if e.adopt:
                after[int(e.doc["id"])].append(e.holder(now))  # type: ignore[index]
                joined.setdefault(int(e.doc["id"]), []).append(e)  # type: ignore[index]
            targets[n] = Outcome("unchanged", int(e.doc["id"]))  # type: ignore[index]
            continue
        same = store.documents_with_text(e.digest)
        if not same:
            pending.setdefault(e.digest, []).append(n)
            continue
        doc_id = touch(same[0])
        after[doc_id].append(e.holder(now))
        joined.setdefault(doc_id, []).append(e)
        targets[n] = Outcome("same", doc_id, same_as=str(same[0]["source"]))
    claimed: set[int] = set()
    for group in pending.values():
        first = entries[group[0]]
        claim = next(
            (
                int(entries[n].doc["id"])  # type: ignore[index]
                for n in group
                if entries[n].doc is not None
                and not after[int(entries[n].doc["id"])]  # type: ignore[index]
                and int(entries[n].doc["id"]) not in claimed  # type: ignore[index]
            ),
            None,
        )
        if claim is not None:
            claimed.add(claim)
            lead = next(n for n in group if entries[n].doc is not None and int(entries[n].doc["id"]) == claim)  # type: ignore[index]
            plan.updates[claim] = entries[lead]
            target, status_of_lead = claim, "updated"
        else:
            lead = group[0]
            hint = next((entries[n].doc for n in group if entries[n].doc is not None), None)
            target = -(len(plan.new_docs) + 1)
            version = int(first.doc["version"]) + 1 if first.doc is not None else 1
            plan.new_docs[target] = NewDocument(first, hint, version)
            status_of_lead = "updated" if first.doc is not None else "added"
            after[target] = []
        for n in [lead, *[m for m in group if m != lead]]:
            after[target].append(entries[n].holder(now))
            lead_source = entries[lead].source
            targets[n] = (
                Outcome(status_of_lead, target)  # type: ignore[arg-type]
                if n == lead
                else Outcome("same", target, same_as=lead_source)
            )
    plan.outcomes = [targets[n] for n in range(len(entries))]
    _settle(plan, entries, before, after, joined, gone_keys, claimed)
    return plan


def _settle(
    plan: HolderPlan,
    entries: list[Entry],
    before: dict[int, list[dict[str, Any]]],
    after: dict[int, list[dict[str, Any]]],
    joined: dict[int, list[Entry]],
    gone_keys: set[str],
    claimed: set[int],
) -> None:
    """Moves, removals, history rows and the final order of each document's holders (primary first)."""
    outcome = {e.key: plan.outcomes[n] for n, e in enumerate(entries)}
    for doc_id, doc in plan.docs.items():
        old = before[doc_id]
        kept = {h["key"] for h in after[doc_id]}
        leaving = old if doc_id in claimed else [h for h in old if h["key"] not in kept]  # claimed: a new version
        stays = bool(after[doc_id]) and doc_id not in claimed
        moves: list[dict[str, Any]] = []
        if stays:  # a new source joining a document whose source is gone took its place
            newcomers = [e for e in joined.get(doc_id, []) if e.doc is None]
            for h, e in zip([h for h in leaving if h["key"] in gone_keys], newcomers, strict=False):
                outcome[e.key].status, outcome[e.key].moved_from, outcome[e.key].same_as = "moved", h["source"], None
                moves.append(h)
        for h in leaving:
            reason = "moved" if h in moves else "removed" if h["key"] in gone_keys else "replaced"
            plan.leaving.append((doc, h, reason))
            if h["key"] in gone_keys and h not in moves:
                plan.gone.append((h, doc_id))
        if not old and (doc_id in claimed or not after[doc_id]):  # an adopted anonymous document's old version
            plan.leaving.append((doc, None, "replaced"))
        if not after[doc_id] and doc_id not in claimed:
            plan.removed.append(doc)
            continue
        if doc_id in claimed or [h["key"] for h in old] != [h["key"] for h in after[doc_id]]:
            plan.holders[doc_id] = _ordered(old, after[doc_id], {e.key for e in joined.get(doc_id, [])}, moves)
    for target in plan.new_docs:
        plan.holders[target] = after[target]


def _ordered(
    old: list[dict[str, Any]], new: list[dict[str, Any]], joiners: set[str], moves: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """A document's holders after, primary first: its primary source if it stays, else the source a move brought
    (the document's source changes to the moved file), else the sources in the order they held it."""
    primary = old[0]["key"] if old and old[0]["primary"] else None
    if primary is not None and primary in {h["key"] for h in new}:
        return sorted(new, key=lambda h: h["key"] != primary)
    if moves:
        return sorted(new, key=lambda h: h["key"] not in joiners)
    return new
