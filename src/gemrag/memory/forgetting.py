"""Deleting a document, and with ``purge`` erasing every copy of its text; with ``rebuild`` rebuilding at once.

:meth:`gemrag.memory.Memory.delete` (``gemrag delete``, the server's ``DELETE .../documents/{id}``, the MCP tool
``forget``) calls :func:`forget`, which holds no lock of its own (the memory's build lock is held by the caller):

1. **delete** (:func:`gemrag.memory.deletion.delete_document` / :func:`~gemrag.memory.deletion.remove_documents`): the
   document, its chunks, every derived node with one of them among its inputs and their edges leave in ONE transaction
   with a pruned generation of every built strategy; no LLM call.
2. **purge** (``purge=True``, DESIGN.md "Forgetting"): the texts that left (the document's, its chunks', the derived
   nodes' texts and meta, utility questions, artefacts: ``Removal.texts``) become :class:`Fragments`: their sentences
   and lines of at least :data:`FRAGMENT_CHARS` characters and their whole short name-like texts (an entity's
   name) of at least :data:`NAME_CHARS`, whitespace-normalised and case-folded, minus those the remaining memory
   still states (a fragment another document holds cannot be erased, and searching for it would purge everything
   built from that document too). Then, in the same delete, every chat exchange (a document ``chat:<persona>#<N>``,
   :mod:`gemrag.chat`) whose text holds a fragment goes with the document; the store removes the LLM cache entries
   whose recorded input or output holds one (and those cached by an older gemrag, whose input was not recorded and
   cannot be checked), every embedding-cache entry but those of texts the memory still holds (chunks in both title
   forms, derived nodes and their meta's strings, utility questions: a kept key is recomputed from a kept text, so
   nothing removed can be kept), the kept text of every version of the document's sources and of any version
   holding a fragment, and the failures and ``meta`` entries holding one (:meth:`~gemrag.store.parts.Erasing.
   purge_caches`). The deletes run with the store's :meth:`~gemrag.store.parts.Erasing.secure_deletes`.
3. **rebuild** (``rebuild=True``): every strategy that was built (pruned or withdrawn by the delete) is indexed
   again at once, as the next ``gemrag index`` would (LLM calls for what changed only; ``DeleteReport.rebuilt``).
4. **erase** (``purge=True``, last, so the rebuild's replaced generations go too): the array files and artefacts no
   published build names are removed and the database is rewritten without free pages, dead rows or write-ahead
   log frames (:meth:`~gemrag.store.parts.Erasing.erase_physically`: SQLite ``VACUUM`` + WAL truncation, PostgreSQL
   ``VACUUM (FULL)``). After it no file of a SQLite memory holds a fragment's bytes, and no row of a PostgreSQL
   memory's schema holds one.

Traced as one ``delete_memory`` span (``gen_ai.operation.name = "delete_memory"``, ``gen_ai.memory.*``
attributes: the memory, the document, purge and rebuild, the chunks and derived nodes deleted).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable, Iterator
from contextlib import nullcontext
from dataclasses import replace
from typing import Any, Protocol

from gemrag import tracing
from gemrag.errors import GemragError, MemoryNotIndexedError
from gemrag.memory.deletion import DeleteReport, DeletionStore, delete_document, remove_documents, resolve_source
from gemrag.memory.handle import MemoryHandle
from gemrag.models.cache import INPUT_KEY
from gemrag.store.erase import PurgeReport, strings_of
from gemrag.store.parts import Caches, QuestionRows
from gemrag.strategies.base import WARM_UP
from gemrag.strategies.platform.forgetting import forgotten_nodes
from gemrag.strategies.platform.titles import indexed_text_of

__all__ = ["FRAGMENT_CHARS", "NAME_CHARS", "Fragments", "fragments_of", "forget", "normalise"]

FRAGMENT_CHARS = 12
"""Shortest sentence or line of a removed text searched for (characters, after normalising): shorter ones ("Yes.",
"Chapter 2") would match unrelated entries."""
NAME_CHARS = 4
"""Shortest whole short text searched for (an entity's name such as "Ilse Varga"), when it looks like a name (holds
a capital letter or a digit)."""
CHAT_SOURCE = re.compile(r"^chat:.*#\d+$")
"""The source of a chat exchange (:func:`gemrag.chat.exchange_source`)."""

_WORD = re.compile(r"\w+")
_PIECE = re.compile(r"(?<=[.!?;])\s+|\n+")


class ForgettingStore(DeletionStore, QuestionRows, Caches, Protocol):
    """What forgetting uses of a store: deleting (:class:`~gemrag.memory.deletion.DeletionStore`), the utility
    questions and caches it erases from, and the database's physical erase."""


def normalise(text: str) -> str:
    """``text`` case-folded, every run of whitespace one space, stripped: the form fragments are compared in."""
    return " ".join(text.casefold().split())


def fragments_of(text: str) -> set[str]:
    """The normalised fragments of one removed text (module docstring): a JSON object or list is read as the strings
    it holds (a derived node's meta, an artefact); each string gives its sentences and lines of at least
    :data:`FRAGMENT_CHARS` characters, and itself whole when shorter but at least :data:`NAME_CHARS` long and
    name-like (a capital letter or a digit)."""
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    strings = list(strings_of(value)) if isinstance(value, (dict, list)) else [text]
    out: set[str] = set()
    for s in strings:
        out.update(p for p in (normalise(piece) for piece in _PIECE.split(s)) if len(p) >= FRAGMENT_CHARS)
        whole = normalise(s)
        if NAME_CHARS <= len(whole) < FRAGMENT_CHARS and any(ch.isupper() or ch.isdigit() for ch in s):
            out.add(whole)
    return out


class Fragments:
    """A set of normalised fragments and the test "does this text hold one?", in about linear time.

    A fragment of three or more words is indexed by its longest inner word (not its first or last, which an
    occurrence may extend): that word is then a whole word of any text holding the fragment, so only the fragments
    whose word the text has are searched for (``in``). Shorter fragments are searched for in every text.

    Args:
        fragments: normalised fragments (:func:`fragments_of`).
    """

    def __init__(self, fragments: Iterable[str]) -> None:
        self.all = sorted(set(fragments))
        self._by_word: dict[str, list[str]] = {}
        self._loose: list[str] = []
        for f in self.all:
            inner = _WORD.findall(f)[1:-1]
            if inner:
                self._by_word.setdefault(max(inner, key=len), []).append(f)
            else:
                self._loose.append(f)

    def __len__(self) -> int:
        return len(self.all)

    def found(self, text: str) -> Iterator[str]:
        """The fragments ``text`` holds (compared normalised)."""
        t = normalise(text)
        for word in self._by_word.keys() & set(_WORD.findall(t)):
            yield from (f for f in self._by_word[word] if f in t)
        yield from (f for f in self._loose if f in t)

    def holds(self, text: str) -> bool:
        """True when ``text`` holds one of the fragments."""
        return next(self.found(text), None) is not None

    def without(self, texts: Iterable[str]) -> Fragments:
        """These fragments but those some text of ``texts`` holds."""
        held: set[str] = set()
        for text in texts:
            held.update(self.found(text))
        return Fragments(f for f in self.all if f not in held)


def forget(
    memory: MemoryHandle[ForgettingStore], document: int | str, *, purge: bool = False, rebuild: bool = False
) -> DeleteReport:
    """Delete ``document`` (module docstring); with ``purge`` erase every copy of its text, with ``rebuild`` rebuild
    the strategies it changed at once. The caller holds the memory's build lock.

    Args:
        memory: the memory (:class:`gemrag.memory.Memory`).
        document: an id, source path or title (:func:`gemrag.memory.deletion.resolve_source`); naming one source of a
            document other sources hold deletes that source alone (a purge then clears its kept versions only).
        purge: erase the removed text from caches, kept versions, chat exchanges and the files (module docstring).
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
        doc, source = resolve_source(memory, document)
        if source is not None or not purge:
            with store.secure_deletes() if purge else nullcontext():
                doc, chunks, derived, pruned, withdrawn, kept_by = delete_document(memory, document)
                report = DeleteReport(doc, chunks, derived, pruned, withdrawn, 0, 0.0, kept_by)
                if purge:  # one source of a document others hold: its text stays, its kept versions go
                    purged = store.purge_caches(None, input_key=INPUT_KEY, keep_embeddings=None, sources=[doc["key"]])
                    report.purge = PurgeReport(purged=purged)
        else:
            report = _delete_and_purge(memory, doc)
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
        if report.purge is not None:
            files = store.remove_stale_files()
            erasure = store.erase_physically()
            report.purge.erasure = replace(erasure, files_removed=erasure.files_removed + files)
            span.set_attribute("gen_ai.memory.purge.complete", erasure.complete)
    report.seconds = time.perf_counter() - start
    return report


def _delete_and_purge(memory: MemoryHandle[ForgettingStore], doc: dict[str, Any]) -> DeleteReport:
    """Steps 1 and 2 of the module docstring for a whole document: the chat exchanges quoting it found, all deleted
    in one transaction, then the caches, versions and logs purged."""
    store = memory.store
    doc_id = int(doc["id"])
    chunk_ids = store.document_chunk_ids(doc_id)
    texts = [store.document_text(doc_id), *store.texts_of(chunk_ids + forgotten_nodes(store, chunk_ids))]
    others = [d for d in store.documents() if int(d["id"]) != doc_id]
    chats = [d for d in others if CHAT_SOURCE.match(str(d["source"]))]
    unquoted = [d for d in others if not CHAT_SOURCE.match(str(d["source"]))]
    first = Fragments(f for t in texts for f in fragments_of(t)).without(_document_texts(memory, unquoted))
    exchanges = [d for d in chats if first.holds(store.document_text(int(d["id"])))] if len(first) else []
    gone = [doc, *exchanges]
    keys = [str(h["key"]) for d in gone for h in store.holders(int(d["id"]))]
    with store.secure_deletes():
        removal = remove_documents(memory, [(d, "deleted") for d in gone], collect_texts=True)
        fragments = Fragments(f for t in removal.texts for f in fragments_of(t)).without(_remaining_texts(memory))
        purged = store.purge_caches(
            fragments.holds if len(fragments) else None,
            input_key=INPUT_KEY,
            keep_embeddings=_kept_embeddings(memory),
            documents=[int(d["id"]) for d in gone],
            sources=keys,
        )
    purge = PurgeReport(len(fragments), exchanges, purged)
    return DeleteReport(
        doc, removal.chunks, removal.derived_nodes, removal.pruned, removal.withdrawn, 0, 0.0, [], purge
    )


def _document_texts(memory: MemoryHandle[ForgettingStore], documents: Iterable[dict[str, Any]]) -> Iterator[str]:
    """The titles and texts of ``documents``."""
    for d in documents:
        yield str(d["title"] or "")
        yield memory.store.document_text(int(d["id"]))


def _remaining_texts(memory: MemoryHandle[ForgettingStore]) -> Iterator[str]:
    """What the memory still states after the delete: its documents' titles and texts, its derived nodes' texts."""
    yield from _document_texts(memory, memory.store.documents())
    yield from (n.text for n in memory.store.nodes() if n.kind != "chunk")


def _kept_embeddings(memory: MemoryHandle[ForgettingStore]) -> set[str]:
    """The embedding-cache keys of the texts the memory still holds (module docstring), for the current embedder."""
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


def _rebuild(memory: MemoryHandle[ForgettingStore], names: Iterable[str]) -> dict[str, int]:
    """Index each strategy of ``names`` this process knows (step 3 of the module docstring): name -> LLM calls.
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
