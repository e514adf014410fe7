"""Erasing removed text from what a memory keeps besides its documents: the store's part of ``gemrag erase`` (the
caches part and the database part of a store; :mod:`gemrag.memory.erasing` decides what the memory still states and
calls them).

A removal (a delete, an edit, ``--sync``) takes a document's or a chunk's rows out of the memory at once; copies of
its text stay elsewhere until an erase: in the LLM cache (prompts that quoted it, answers that repeated it), in the
embedding cache (vectors keyed by a hash of the text), in the kept versions of ``document_versions``, in failure
messages, and physically in the database's free pages, its write-ahead log or dead row versions.

**Marks.** What an erase must find is decided by *marks*: 64-bit hashes of a text's pieces (:func:`marks_of`),
compared instead of the texts themselves, so that finding what held removed text costs a lookup per mark, not a scan
of every cache entry (Schleimer, Wilkerson and Aiken, "Winnowing: Local Algorithms for Document Fingerprinting",
SIGMOD 2003, section 3, for the fingerprints of long texts; here one side of every comparison keeps every shingle,
the other its fingerprints):

* every sentence, line or labelled part (a text is cut after ``. ! ? ; : ) ]`` and at line breaks, so that
  ``[1] `` or ``Passage: `` before a sentence does not hide it) of at least :data:`FRAGMENT_CHARS` characters, and
  every whole short name-like string of at least :data:`NAME_CHARS` (an entity's name), compared as its words
  (casefolded, punctuation and spacing dropped), so that a sentence quoted whole anywhere gives the same mark;
* the word :data:`SHINGLE_WORDS`-grams: for a cache entry (the large side) their winnowed fingerprints (the smallest
  hash of every window of :data:`WINDOW` consecutive ones), for a removed or a current text (the small side) every
  one, so that an entry sharing a run of at least ``SHINGLE_WORDS + WINDOW - 1`` = 16 words with a removed text
  shares a mark with it wherever the run sits (a chunk inside a prompt, after a numbering or a label).

Every LLM cache entry's marks (of its recorded input and of its output) are written with it: the entry gets a number
(``llm_entries``: its id and key, one row an entry; the row says the entry is marked) and each distinct mark a row
``(mark, number)`` of ``llm_marks`` (about 20 bytes a mark on SQLite, where repeating the 64-character key made it
about 150); the
marks of every removed text are written in the removal's transaction (``forgotten``, the quarantine: hashes, never
text). An erase (:meth:`gemrag.store.caches.CacheRows.purge_caches`) takes the quarantined marks the memory no longer
states, deletes the cache entries holding one (looked up by mark), and deletes the quarantine itself:

* LLM cache entries holding a removed mark, and those with no recorded input (cached by an older gemrag: they cannot
  be checked); entries not yet marked (an older memory, imported caches) are marked first, once;
* every embedding-cache entry but those the caller keeps (the keys of texts still in the memory);
* the kept text of every version that left the memory (``document_versions.text``: no current document states it);
* the failures and ``meta`` entries holding a removed mark.

:meth:`gemrag.store.parts.Database.secure_deletes` makes the deletes overwrite what they free (SQLite's
``secure_delete``); :meth:`gemrag.store.parts.Database.erase_physically` then rewrites the database without free
pages or dead rows (SQLite: ``VACUUM`` and the write-ahead log checkpointed and truncated,
:mod:`gemrag.store.sqlite.erase`; PostgreSQL: ``VACUUM (FULL)``, :mod:`gemrag.store.postgres.erase`).

Over-erasing a cache entry only costs a recomputation; a mark a current text still states is never erased (it would
take every entry built from that text with it).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

BATCH = 500
"""Rows a purge reads or deletes per statement."""

FRAGMENT_CHARS = 12
"""Shortest sentence or line of a text that gets its own mark (characters of its words joined by spaces): shorter
ones ("Yes.", "Chapter 2") would match unrelated entries."""
NAME_CHARS = 4
"""Shortest whole short string that gets its own mark (an entity's name such as "Ilse Varga"), when it looks like a
name (holds a capital letter or a digit)."""
SHINGLE_WORDS = 5
"""Words of one shingle (a word n-gram) whose hash may become a fingerprint mark."""
WINDOW = 12
"""Consecutive shingles of which the smallest hash is a fingerprint (winnowing's window ``w``)."""

_WORD = re.compile(r"\w+")
_PIECE = re.compile(r"(?<=[.!?;:)\]])\s+|\n+")


@dataclass
class Purged:
    """What :meth:`gemrag.store.caches.CacheRows.purge_caches` removed (counts of rows).

    Attributes:
        llm_entries: LLM cache entries whose recorded input or whose output held removed text.
        llm_unverifiable: LLM cache entries with no recorded input (cached by an older gemrag), removed unchecked.
        llm_kept: LLM cache entries left. embeddings: embedding-cache entries removed. embeddings_kept: left.
        versions: kept version texts cleared (``document_versions.text`` set to NULL).
        failures: failure rows deleted. meta: ``meta`` entries deleted.
    """

    llm_entries: int = 0
    llm_unverifiable: int = 0
    llm_kept: int = 0
    embeddings: int = 0
    embeddings_kept: int = 0
    versions: int = 0
    failures: int = 0
    meta: int = 0


@dataclass
class Erasure:
    """What :meth:`gemrag.store.parts.Database.erase_physically` did.

    Attributes:
        complete: True when every step ran (False: e.g. another process kept reading, so SQLite's write-ahead log
            could not be truncated or a PostgreSQL table stayed locked; ``detail`` says which; run the purge again).
        bytes_before, bytes_after: the database's size before and after (SQLite: ``memory.sqlite`` with its
            ``-wal`` file; PostgreSQL: the memory's tables with their indexes and TOAST), in bytes.
        files_removed: array files, artefacts and scratch copies no published build names, removed.
        detail: what ran, for people (e.g. ``VACUUM; WAL checkpointed and truncated``).
    """

    complete: bool = True
    bytes_before: int = 0
    bytes_after: int = 0
    files_removed: int = 0
    detail: str = ""


@dataclass
class PurgeReport:
    """What an erase erased (:func:`gemrag.memory.erasing.erase`: ``gemrag erase``, and the erase that ends
    ``delete --purge`` and ``index --purge``).

    Attributes:
        fragments: distinct marks of removed text erased (hashes of its sentences and word runs, :func:`marks_of`;
            those a current text still states left out).
        exchanges: the chat exchanges withdrawn by the removal the erase followed (documents resting on a removed
            chunk, document dicts as ``Store.documents`` gives them); empty for a bare erase.
        purged: the cache, history and log rows removed (:class:`Purged`).
        erasure: the physical erase (:class:`Erasure`).
        quarantined: the marks the removals since the last erase had left for it (``fragments`` and those still
            stated).
        seconds: wall time of the erase.
    """

    fragments: int = 0
    exchanges: list[dict[str, Any]] = field(default_factory=list)
    purged: Purged = field(default_factory=Purged)
    erasure: Erasure = field(default_factory=Erasure)
    quarantined: int = 0
    seconds: float = 0.0


def strings_of(value: Any) -> Iterator[str]:
    """Every string inside a JSON-decoded value (dict values, list items, the value itself), depth first."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings_of(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings_of(v)


def json_text(raw: str) -> str:
    """The strings a stored JSON text holds, one per line (so an escaped non-ASCII or quoted text reads as written);
    ``raw`` itself when it is not JSON."""
    try:
        return "\n".join(strings_of(json.loads(raw)))
    except ValueError:
        return raw


def _hash(text: str) -> int:
    """A signed 64-bit hash of ``text`` (blake2b), never 0."""
    value = int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "big", signed=True)
    return value or 1


def _winnow(words: list[str]) -> set[int]:
    """The winnowing fingerprints of ``words`` (module docstring): of every :data:`WINDOW` consecutive
    :data:`SHINGLE_WORDS`-gram hashes, the smallest (the rightmost of equal ones); the smallest of all when there are
    fewer; none for fewer than :data:`SHINGLE_WORDS` words."""
    hashes = [_hash("w " + " ".join(words[i : i + SHINGLE_WORDS])) for i in range(len(words) - SHINGLE_WORDS + 1)]
    if not hashes:
        return set()
    if len(hashes) <= WINDOW:
        return {min(hashes)}
    out: set[int] = set()
    for start in range(len(hashes) - WINDOW + 1):
        window = hashes[start : start + WINDOW]
        out.add(min(window))
    return out


def string_marks(text: str, *, every: bool = False) -> set[int]:
    """The marks of one string (module docstring): its sentences and lines, itself when short and name-like, and the
    winnowed fingerprints of its words (``every``: the hashes of all its word :data:`SHINGLE_WORDS`-grams, a
    superset, for the side of a comparison that must see every run: removed and current texts)."""
    out = set()
    for piece in _PIECE.split(text):
        joined = " ".join(_WORD.findall(piece.casefold()))
        if len(joined) >= FRAGMENT_CHARS:
            out.add(_hash("p " + joined))
    words = _WORD.findall(text.casefold())
    whole = " ".join(words)
    if NAME_CHARS <= len(whole) < FRAGMENT_CHARS and any(ch.isupper() or ch.isdigit() for ch in text):
        out.add(_hash("p " + whole))
    if every:
        out.update(_hash("w " + " ".join(words[i : i + SHINGLE_WORDS])) for i in range(len(words) - SHINGLE_WORDS + 1))
    else:
        out.update(_winnow(words))
    return out


def marks_of(texts: str | Iterable[str], *, every: bool = False) -> set[int]:
    """The marks of a text or of several (module docstring); a text holding a JSON object or list is read as the
    strings it holds (a derived node's meta, an artefact, a cached response), each marked on its own. ``every``:
    every shingle's hash instead of the winnowed ones (:func:`string_marks`): what a removal quarantines and what an
    erase compares with, so that a cache entry's winnowed marks meet them on any shared run of 16 words.

    Returns:
        Signed 64-bit ints (never 0).
    """
    out: set[int] = set()
    for text in [texts] if isinstance(texts, str) else texts:
        try:
            value = json.loads(text) if text[:1] in "{[" else None
        except ValueError:
            value = None
        for s in strings_of(value) if isinstance(value, (dict, list)) else [text]:
            out.update(string_marks(s, every=every))
    return out


def response_marks(response: dict[str, Any]) -> set[int]:
    """The marks of a cached LLM response: of every string it holds (the recorded input's messages, the output text
    and its parsed value)."""
    return marks_of(strings_of(response))
