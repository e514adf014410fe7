"""Erasing removed text from what a memory keeps besides its documents: the store's part of ``gemrag delete --purge``
(a mixin of :class:`gemrag.store.base.MemoryStore`; :mod:`gemrag.forgetting` decides what left and calls it).

A delete removes a document's rows; copies of its text stay elsewhere: in the LLM cache (prompts that quoted it,
answers that repeated it), in the embedding cache (vectors keyed by a hash of the text), in the kept versions of
``document_versions``, in failure messages, and physically in the database's free pages, its write-ahead log or
dead row versions. The :class:`Erasing` role removes them:

* :meth:`EraseMixin.purge_caches`: deletes the LLM cache entries whose input (the request's messages, recorded
  under ``input_key`` by :class:`gemrag.models.cache.CachedLLM`) or output holds removed text, and those with no
  recorded input (cached by an older gemrag: they cannot be checked); deletes every embedding-cache entry but those
  the caller keeps (the keys of texts still in the memory); clears the kept text of the purged documents' versions
  and of any version holding removed text; deletes the failures and ``meta`` entries holding it. One transaction.
* :meth:`EraseMixin.secure_deletes`: a scope whose deletes overwrite the freed bytes (SQLite's ``secure_delete``;
  nothing to do on PostgreSQL, whose dead rows :meth:`erase_physically` removes).
* :meth:`EraseMixin.erase_physically`: rewrites the database without free pages or dead rows (SQLite: ``VACUUM``,
  then the write-ahead log checkpointed and truncated, :mod:`gemrag.store.sqlite.erase`; PostgreSQL:
  ``VACUUM (FULL)`` of the memory's tables, :mod:`gemrag.store.postgres.erase`) and removes the array files and
  artefacts no published build names.

What holds removed text is decided by the caller's ``tainted(text) -> bool`` (a test of normalised fragments of the
removed texts, :class:`gemrag.forgetting.Fragments`); over-purging a cache only costs a recomputation.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from gemrag.store.parts import Connection

_BATCH = 500


@dataclass
class Purged:
    """What :meth:`EraseMixin.purge_caches` removed (counts of rows).

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
    """What :meth:`EraseMixin.erase_physically` did.

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
    """What ``gemrag delete --purge`` erased beyond the delete itself (:func:`gemrag.forgetting.forget`).

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


@runtime_checkable
class Erasing(Protocol):
    """The store role of a purge (see the module docstring); both backends have it."""

    def purge_caches(
        self,
        tainted: Callable[[str], bool] | None,
        *,
        input_key: str,
        keep_embeddings: Collection[str] | None,
        documents: Sequence[int] = (),
        sources: Sequence[str] = (),
    ) -> Purged: ...
    def secure_deletes(self) -> AbstractContextManager[None]: ...
    def erase_physically(self) -> Erasure: ...


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


class EraseMixin:
    """:class:`Erasing` on :class:`gemrag.store.Store` (the shared SQL; the physical erase is each backend's)."""

    def transaction(self) -> AbstractContextManager[Connection]: ...  # provided by Store
    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[Any]: ...  # provided by Store

    def purge_caches(
        self,
        tainted: Callable[[str], bool] | None,
        *,
        input_key: str,
        keep_embeddings: Collection[str] | None,
        documents: Sequence[int] = (),
        sources: Sequence[str] = (),
    ) -> Purged:
        """Remove the cached, kept and logged copies of removed text, in one transaction (module docstring).

        Args:
            tainted: ``text -> True`` when it holds removed text; None: nothing was removed from the memory (only
                the versions of ``documents`` / ``sources`` are cleared; the caches and logs are left alone).
            input_key: the key of a cached LLM response holding the request's messages
                (:data:`gemrag.models.cache.INPUT_KEY`); an entry without it is removed as unverifiable.
            keep_embeddings: the embedding-cache keys to keep (every other entry is removed); None: keep all.
            documents: document ids whose every kept version text is cleared.
            sources: source identities (``source_key``) whose every kept version text is cleared.

        Returns:
            The counts (:class:`Purged`).

        Raises:
            ReadOnlyMemoryError: the store is read-only.
        """
        out = Purged()
        llm: list[str] = []
        if tainted is not None:
            for key, response in self._rows("llm_cache", "key", "response"):
                try:
                    data = json.loads(response)
                except ValueError:
                    data = None
                if not isinstance(data, dict) or input_key not in data:
                    out.llm_unverifiable += 1
                    llm.append(key)
                elif tainted("\n".join(strings_of(data))):
                    out.llm_entries += 1
                    llm.append(key)
                else:
                    out.llm_kept += 1
        embeddings: list[str] = []
        if keep_embeddings is not None:
            keys = [str(r[0]) for r in self._query("SELECT key FROM embeddings")]
            embeddings = [k for k in keys if k not in keep_embeddings]
            out.embeddings, out.embeddings_kept = len(embeddings), len(keys) - len(embeddings)
        named_docs, named_sources = {int(i) for i in documents}, set(sources)
        versions = [
            int(i)
            for i, doc_id, key, text in self._rows("document_versions", "id", "doc_id", "source_key", "text")
            if text is not None
            and (int(doc_id) in named_docs or key in named_sources or (tainted is not None and tainted(str(text))))
        ]
        failures = [] if tainted is None else [i for i, m in self._rows("failures", "id", "message") if tainted(m)]
        meta = [] if tainted is None else [k for k, v in self._query("SELECT key, value FROM meta") if tainted(v)]
        meta = [k for k in meta if k != "schema_version"]
        out.versions, out.failures, out.meta = len(versions), len(failures), len(meta)
        with self.transaction() as c:
            for table, column, ids in (
                ("llm_cache", "key", llm),
                ("embeddings", "key", embeddings),
                ("failures", "id", failures),
                ("meta", "key", meta),
            ):
                for start in range(0, len(ids), _BATCH):
                    part = ids[start : start + _BATCH]
                    c.execute(f"DELETE FROM {table} WHERE {column} IN ({','.join('?' * len(part))})", part)
            for start in range(0, len(versions), _BATCH):
                part = versions[start : start + _BATCH]
                c.execute(f"UPDATE document_versions SET text = NULL WHERE id IN ({','.join('?' * len(part))})", part)
        return out

    def _rows(self, table: str, key: str, *columns: str) -> Iterator[tuple[Any, ...]]:
        """Every row of ``table`` as ``(key, *columns)``, read in batches of :data:`_BATCH` in ``key`` order (a
        large cache is never held in memory at once)."""
        after: Any = None
        while True:
            where, args = ("", ()) if after is None else (f" WHERE {key} > ?", (after,))
            rows = self._query(
                f"SELECT {', '.join((key, *columns))} FROM {table}{where} ORDER BY {key} LIMIT {_BATCH}", args
            )
            yield from (tuple(r) for r in rows)
            if len(rows) < _BATCH:
                return
            after = rows[-1][0]

    def secure_deletes(self) -> AbstractContextManager[None]:
        """A scope whose deletes overwrite what they free (SQLite's ``secure_delete``); nothing here."""
        return nullcontext()

    def erase_physically(self) -> Erasure:
        """Rewrite the database without the bytes deleted rows left: each backend's (module docstring). Here, for a
        store assembled from other parts (``examples/custom_store.py``): nothing, reported as incomplete."""
        return Erasure(complete=False, detail=f"{type(self).__name__} has no physical erase: deleted rows may remain")
