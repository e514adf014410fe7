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
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any

import numpy as np

from gemrag.errors import DatabaseLockedError
from gemrag.store.parts import Connection


class CachesMixin:
    """LLM and embedding caches on :class:`gemrag.store.Store` (needs its connection and transactions)."""

    readonly: bool

    def transaction(self) -> AbstractContextManager[Connection]: ...  # provided by Store
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

    def cached_llm(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The cached LLM responses of those of ``keys`` the cache holds (key -> response), read 500 keys a query."""
        out: dict[str, dict[str, Any]] = {}
        for start in range(0, len(keys), 500):
            part = list(dict.fromkeys(keys[start : start + 500]))
            marks = ",".join("?" * len(part))
            for key, response in self._query(f"SELECT key, response FROM llm_cache WHERE key IN ({marks})", part):
                out[key] = json.loads(response)
        return out

    def recent_llm_responses(self, model: str, limit: int = 5000) -> list[dict[str, Any]]:
        """The last ``limit`` responses the cache stored for ``model`` (newest first): each with its ``text``,
        ``prompt_tokens``, ``completion_tokens``, ``seconds`` (of the backend call) and, when recorded, the request's
        messages (:data:`gemrag.models.cache.INPUT_KEY`). Cost plans read them for a model's recorded rates and
        each pass's mean completion (:mod:`gemrag.index_plan`)."""
        rows = self._query(
            "SELECT response FROM llm_cache WHERE model = ? ORDER BY created DESC LIMIT ?", (model, int(limit))
        )
        return [json.loads(r[0]) for r in rows]

    def llm_cache_counts(self) -> tuple[int, int]:
        """``(keys, backend calls)`` of the LLM cache: calls > keys means some LLM call was repeated."""
        keys, writes = self._query("SELECT COUNT(*), COALESCE(SUM(writes), 0) FROM llm_cache")[0]
        return int(keys), int(writes)
