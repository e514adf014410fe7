"""Erasing removed text from what a memory keeps besides its documents: the store's part of ``gemrag delete --purge``
(the caches part and the database part of a store; :mod:`gemrag.memory.forgetting` decides what left and calls them).

A delete removes a document's rows; copies of its text stay elsewhere: in the LLM cache (prompts that quoted it,
answers that repeated it), in the embedding cache (vectors keyed by a hash of the text), in the kept versions of
``document_versions``, in failure messages, and physically in the database's free pages, its write-ahead log or
dead row versions. The store's :class:`~gemrag.store.parts.Erasing` roles (caches and database) remove them:

* :meth:`gemrag.store.caches.CacheRows.purge_caches`: deletes the LLM cache entries whose input (the request's
  messages, recorded under ``input_key`` by :class:`gemrag.models.cache.CachedLLM`) or output holds removed text,
  and those with no recorded input (cached by an older gemrag: they cannot be checked); deletes every embedding-cache
  entry but those the caller keeps (the keys of texts still in the memory); clears the kept text of the purged
  documents' versions and of any version holding removed text; deletes the failures and ``meta`` entries holding
  it. One transaction.
* :meth:`gemrag.store.parts.Database.secure_deletes`: a scope whose deletes overwrite the freed bytes (SQLite's
  ``secure_delete``; nothing to do on PostgreSQL, whose dead rows :meth:`erase_physically` removes).
* :meth:`gemrag.store.parts.Database.erase_physically`: rewrites the database without free pages or dead rows
  (SQLite: ``VACUUM``, then the write-ahead log checkpointed and truncated, :mod:`gemrag.store.sqlite.erase`;
  PostgreSQL: ``VACUUM (FULL)`` of the memory's tables, :mod:`gemrag.store.postgres.erase`) and removes the array
  files and artefacts no published build names.

What holds removed text is decided by the caller's ``tainted(text) -> bool`` (a test of normalised fragments of the
removed texts, :class:`gemrag.memory.forgetting.Fragments`); over-purging a cache only costs a recomputation.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

BATCH = 500
"""Rows a purge reads or deletes per statement."""


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
    """What ``gemrag delete --purge`` erased beyond the delete itself (:func:`gemrag.memory.forgetting.forget`).

    Attributes:
        fragments: distinct normalised pieces of removed text searched for (sentences and lines of at least 12
            characters, whole short derived texts such as names; those still stated by the memory left out).
        exchanges: the chat exchanges (documents ``chat:<persona>#<N>``, :mod:`gemrag.chat`) that quoted the removed
            text, deleted with it (document dicts as ``Store.documents`` gives them).
        purged: the cache, history and log rows removed (:class:`Purged`).
        erasure: the physical erase (:class:`Erasure`).
    """

    fragments: int = 0
    exchanges: list[dict[str, Any]] = field(default_factory=list)
    purged: Purged = field(default_factory=Purged)
    erasure: Erasure = field(default_factory=Erasure)


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
