"""The caches role of a store (re-exported by :mod:`gemrag.store.parts`): the LLM and embedding caches, the usage log,
recorded failures, and purging removed text from them (:class:`Caches`; implemented once,
:class:`gemrag.store.caches.CacheRows`)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from gemrag.store.db_roles import Connection

if TYPE_CHECKING:
    from gemrag.store.erase import Purged

UsageRow = tuple[str, str, str, int, int, int, float, int]
"""One usage row: ``(phase, kind, model, prompt tokens, completion tokens, embedding tokens, seconds, cached)``."""


@runtime_checkable
class Caches(Protocol):
    """The model caches (keyed by a hash of model, input and parameters), usage, failures, and purging removed text
    from them (see :mod:`gemrag.store.caches`). Cache and log writes never fail their caller: they are skipped on a
    read-only store and deferred inside a snapshot."""

    def get_embeddings(self, model: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """Cached ``(d,)`` float32 vectors of ``model`` for the given text-hash keys (missing keys are absent)."""
        ...

    def put_embeddings(self, model: str, items: Iterable[tuple[str, np.ndarray]]) -> None:
        """Cache ``(key, (d,) float32 vector)`` items of ``model`` (skipped when read-only, dropped if the database
        stays locked: a cache miss only costs an embedding later)."""
        ...

    def get_llm(self, key: str) -> dict[str, Any] | None:
        """A cached LLM response (JSON dict) by key, or None."""
        ...

    def put_llm(self, key: str, model: str, response: dict[str, Any]) -> None:
        """Cache an LLM response (skipped when read-only); the entry counts the backend calls that stored the key.

        Raises:
            DatabaseLockedError: the database stayed locked (the answer must be cached before it is used).
        """
        ...

    def cached_llm(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The cached LLM responses of those of ``keys`` the cache holds (key -> response), 500 keys a query."""
        ...

    def recent_llm_responses(self, model: str, limit: int = 5000) -> list[dict[str, Any]]:
        """The last ``limit`` responses the cache stored for ``model`` (newest first): each with its ``text``,
        ``prompt_tokens``, ``completion_tokens``, ``seconds`` (of the backend call) and, when recorded, the request's
        messages (:data:`gemrag.models.cache.INPUT_KEY`). Cost plans read a model's recorded rates from them."""
        ...

    def llm_cache_counts(self) -> tuple[int, int]:
        """``(keys, backend calls)`` of the LLM cache: calls > keys means some LLM call was repeated."""
        ...

    def log_usage(self, rows: Sequence[UsageRow]) -> None:
        """Append usage rows (:data:`UsageRow`; skipped when read-only).

        Raises:
            DatabaseLockedError: the database stayed locked (the meter keeps the rows and retries).
        """
        ...

    def usage_by_phase(self) -> dict[str, dict[str, float]]:
        """Totals per phase (``"index"``, ``"query"``, ...) of what was actually spent: prompt, completion and
        embedding tokens and seconds of backend calls (cache hits excluded), the number of backend calls, and the
        number of cache hits."""
        ...

    def usage_mark(self) -> int:
        """The id of the last usage row (0 for none): rows logged later have larger ids (see :meth:`usage_after`)."""
        ...

    def usage_after(self, mark: int, upto: int | None = None, phase: str = "index") -> dict[str, float]:
        """Costs of the ``phase`` rows with ``mark < id <= upto`` (no upper bound when ``upto`` is None), cache hits
        counted with their original tokens: ``prompt_tokens`` and ``completion_tokens`` of LLM rows,
        ``embedding_tokens`` of embedding rows, ``llm_calls``, ``llm_cached`` (LLM cache hits), and ``first_at`` /
        ``last_at`` (UNIX seconds of the first and last row; 0.0 when there is none)."""
        ...

    def record_failure(self, phase: str, node_id: int | None, message: str) -> None:
        """Record a failure (e.g. malformed model output after all retries) for ``gemrag info`` (skipped when
        read-only)."""
        ...

    def failures(self) -> list[dict[str, Any]]:
        """Recorded failures, oldest first: dicts with ``at`` (UNIX seconds), ``phase``, ``node_id`` and ``message``."""
        ...

    def forget_marks(self, c: Connection, marks: Iterable[int]) -> None:
        """Quarantine ``marks`` (signed 64-bit hashes of texts a removal took out,
        :func:`gemrag.store.erase.marks_of`) inside the removal's transaction ``c``, for the next erase to find what
        held them (hashes only, never text)."""
        ...

    def forgotten_marks(self) -> set[int]:
        """The quarantined marks (:meth:`forget_marks`) no erase has handled yet."""
        ...

    def purge_caches(
        self,
        removed: Collection[int],
        *,
        handled: Collection[int],
        input_key: str,
        keep_embeddings: Collection[str] | None,
    ) -> Purged:
        """Erase the cached, kept and logged copies of removed text (:mod:`gemrag.store.erase`): cache entries not yet
        marked are marked first; then, in one transaction, the LLM entries holding a mark of ``removed``, every
        embedding not kept, every kept version text, the failures and ``meta`` entries holding a removed mark, and the
        quarantined marks ``handled`` are deleted.

        Args:
            removed: the marks of removed text the memory no longer states (signed 64-bit ints).
            handled: the quarantined marks this erase read (deleted from the quarantine).
            input_key: the key of a cached LLM response holding the request's messages
                (:data:`gemrag.models.cache.INPUT_KEY`); an entry without it is removed as unverifiable.
            keep_embeddings: the embedding-cache keys to keep (every other entry is removed); None: keep all.

        Returns:
            The counts (:class:`gemrag.store.erase.Purged`).

        Raises:
            ReadOnlyMemoryError: the store is read-only. DatabaseLockedError: the database stayed locked.
        """
        ...
