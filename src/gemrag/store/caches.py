"""The memory's persistent model caches: LLM answers and embeddings (a mixin of :class:`gemrag.store.Store`).

Both are best-effort writes: skipped on a read-only store and deferred inside a read snapshot; an embedding
that cannot be stored because the database stays locked is dropped (it only costs an embedding later), while
an LLM answer must be stored before it is used (an interrupted build repeats no LLM call), so that error is
raised. ``llm_cache.writes`` counts the backend calls that stored each key: more than one means an LLM call
was repeated (``benchmarks/kill9_index.py`` checks it stays one).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import numpy as np

from gemrag.errors import DatabaseLockedError, GemragError, ReadOnlyMemoryError


class CachesMixin:
    """LLM and embedding caches on :class:`gemrag.store.Store` (needs its connection and transactions)."""

    directory: Path
    path: Path
    readonly: bool
    conn: sqlite3.Connection
    _lock: threading.RLock

    def transaction(self) -> AbstractContextManager[sqlite3.Connection]: ...  # provided by Store
    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[Any]: ...  # provided by Store
    def _best_effort(self, write: Callable[[], None]) -> None: ...  # provided by Store

    # -- embeddings -------------------------------------------------------------------------------
    def get_embeddings(self, model: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """Cached vectors for the given text-hash keys (missing keys are absent from the result)."""
        out: dict[str, np.ndarray] = {}
        for start in range(0, len(keys), 500):
            part = list(keys[start : start + 500])
            marks = ",".join("?" * len(part))
            rows = self._query(
                f"SELECT key, dim, vector FROM embeddings WHERE model = ? AND key IN ({marks})",
                [model, *part],
            )
            for key, dim, blob in rows:
                out[key] = np.frombuffer(blob, dtype=np.float32, count=dim).copy()
        return out

    def put_embeddings(self, model: str, items: Iterable[tuple[str, np.ndarray]]) -> None:
        """Cache float32 vectors under text-hash keys (skipped when read-only, dropped if the database stays
        locked: a cache miss only costs an embedding later)."""
        rows = [(k, model, int(v.shape[0]), np.asarray(v, dtype=np.float32).tobytes()) for k, v in items]

        def write() -> None:
            with contextlib.suppress(DatabaseLockedError), self.transaction() as c:
                c.executemany("INSERT OR REPLACE INTO embeddings(key, model, dim, vector) VALUES (?,?,?,?)", rows)

        self._best_effort(write)

    # -- llm cache --------------------------------------------------------------------------------
    def get_llm(self, key: str) -> dict[str, Any] | None:
        """A cached LLM response by key, or None."""
        rows = self._query("SELECT response FROM llm_cache WHERE key = ?", (key,))
        return json.loads(rows[0][0]) if rows else None

    def put_llm(self, key: str, model: str, response: dict[str, Any]) -> None:
        """Cache an LLM response (skipped when read-only). ``writes`` counts the backend calls that stored the key.

        Raises:
            DatabaseLockedError: the database stayed locked (the answer must be cached before it is used).
        """

        def write() -> None:
            with self.transaction() as c:
                c.execute(
                    "INSERT INTO llm_cache(key, model, response, created) VALUES (?,?,?,?) ON CONFLICT(key) DO UPDATE"
                    " SET model = excluded.model, response = excluded.response, created = excluded.created,"
                    " writes = llm_cache.writes + 1",
                    (key, model, json.dumps(response), time.time()),
                )

        self._best_effort(write)

    def llm_cache_counts(self) -> tuple[int, int]:
        """``(keys, backend calls)`` of the LLM cache: calls > keys means some LLM call was repeated."""
        keys, writes = self._query("SELECT COUNT(*), COALESCE(SUM(writes), 0) FROM llm_cache")[0]
        return int(keys), int(writes)

    def import_caches(self, other: str | Path) -> tuple[int, int]:
        """Copy another memory's LLM responses and embeddings into this memory's caches.

        Entries already here are kept. Used by ``gemrag eval`` so that a gem ablation memory (same documents,
        another parameter) answers the model calls it shares with its base memory from the cache.

        Args:
            other: another memory directory (or its ``memory.sqlite``), of any schema version.

        Returns:
            ``(llm_rows, embedding_rows)`` inserted (ints).

        Raises:
            GemragError: ``other`` is not a gemrag memory.
            ReadOnlyMemoryError: this store is read-only.
        """
        path = Path(other)
        path = path / "memory.sqlite" if path.is_dir() else path
        if not path.is_file() or path.resolve() == self.path.resolve():
            raise GemragError(f"{other} is not another gemrag memory")
        if self.readonly:
            raise ReadOnlyMemoryError(f"the memory {self.directory} is open read-only")
        with self._lock:
            try:
                self.conn.execute("ATTACH DATABASE ? AS other", (str(path),))
            except sqlite3.DatabaseError as exc:
                raise GemragError(f"cannot read the caches of {other}: {exc}") from exc
            try:
                with self.transaction() as c:
                    llm = c.execute(
                        "INSERT OR IGNORE INTO main.llm_cache(key, model, response, created)"
                        " SELECT key, model, response, created FROM other.llm_cache"
                    ).rowcount
                    emb = c.execute(
                        "INSERT OR IGNORE INTO main.embeddings(key, model, dim, vector)"
                        " SELECT key, model, dim, vector FROM other.embeddings"
                    ).rowcount
            except sqlite3.DatabaseError as exc:
                raise GemragError(f"cannot read the caches of {other}: {exc}") from exc
            finally:
                self.conn.execute("DETACH DATABASE other")
        return int(llm), int(emb)
