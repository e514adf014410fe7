"""The store interface: what the rest of gemrag calls on a memory, whatever database holds it.

:class:`MemoryStore` is the base of both backends:

* :class:`gemrag.store.sqlite.store.Store`: one memory = one directory (``memory.sqlite`` + generation-named array
  files), the embedded default;
* :class:`gemrag.store.postgres.store.PostgresStore`: one memory = one PostgreSQL schema (every row and every array of
  a build in the database, the build lock a PostgreSQL advisory lock).

The shared behaviour is written once in the mixins (:mod:`~gemrag.store.rows`, :mod:`~gemrag.store.caches`,
:mod:`~gemrag.store.derived`, :mod:`~gemrag.store.documents`, :mod:`~gemrag.store.artifacts`,
:mod:`~gemrag.store.publish`), whose SQL is SQLite's dialect, run as it is on SQLite and translated by
:mod:`gemrag.store.postgres.dialect` on PostgreSQL. A backend supplies the connection side: :meth:`transaction`,
:meth:`snapshot`, ``_query``, ``_best_effort``, :meth:`close`, :attr:`location`, :meth:`build_lock`, and where its
arrays live (files, or database rows)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from gemrag.store.artifacts import ArtifactsMixin
from gemrag.store.caches import CachesMixin
from gemrag.store.derived import GraphRowsMixin
from gemrag.store.documents import DocumentRowsMixin
from gemrag.store.publish import GenerationsMixin
from gemrag.store.rows import RowsMixin
from gemrag.store.vectors import exact_nearest


class BuildLockLike(Protocol):
    """A memory's exclusive build lock (:class:`gemrag.store.lock.BuildLock`, or the PostgreSQL advisory lock of
    :mod:`gemrag.store.postgres.lock`)."""

    @property
    def held(self) -> bool:
        """True while this object holds the lock."""
        ...

    def acquire(self, wait: float = 0.0) -> None:
        """Take the lock, waiting up to ``wait`` seconds. Raises MemoryBusyError when another holder keeps it."""
        ...

    def release(self) -> None:
        """Release the lock (no-op when not held)."""
        ...


class MemoryStore(CachesMixin, GenerationsMixin, GraphRowsMixin, ArtifactsMixin, DocumentRowsMixin, RowsMixin, ABC):
    """A memory's database: documents, chunks and derived nodes, utility questions, edges, artefacts, the model
    caches, usage, failures and the published builds (see the module docstring for the two backends).

    Attributes:
        readonly: True when the store writes nothing (structural writes raise ReadOnlyMemoryError; cache and log
            writes are skipped).
    """

    readonly: bool

    @property
    @abstractmethod
    def location(self) -> str:
        """Where the memory lives, for messages: a directory, or a PostgreSQL URL without its password."""

    @abstractmethod
    def build_lock(self) -> BuildLockLike:
        """A new, not yet acquired, build lock of this memory."""

    @abstractmethod
    def close(self) -> None:
        """Run deferred cache writes and close the connection(s)."""

    @abstractmethod
    def transaction(self) -> AbstractContextManager[Any]:
        """A nestable write transaction (all or nothing); yields a connection with ``execute``/``executemany``."""

    @abstractmethod
    def snapshot(self) -> AbstractContextManager[None]:
        """One read transaction: every read inside sees the same committed state."""

    #: True when :meth:`nearest` answers from the database's own vector index where the build was indexed
    #: (PostgreSQL); False on SQLite, where the platform keeps an HNSW index of large search arrays as a build
    #: artefact (:mod:`gemrag.strategies.platform.vector_index`).
    searches_in_database: bool = False

    def index_vectors(self, strategy: str, generation: int, name: str, vectors: NDArray[np.floating]) -> None:
        """Make the array ``name`` of an unpublished build searchable by :meth:`nearest` in the database, when the
        backend has a vector index (PostgreSQL + pgvector: a ``vector(d)`` table, with an HNSW index above a size
        threshold). A no-op here and on SQLite, whose :meth:`nearest` searches the loaded array in numpy.

        Args:
            strategy, generation: the build (from ``begin_build``), name: the array's name.
            vectors: ``(n, d)`` float rows (the array written with ``write_array``).
        """

    def nearest(
        self,
        strategy: str,
        generation: int,
        name: str,
        vectors: NDArray[np.floating],
        query: NDArray[np.floating],
        k: int,
        *,
        rows: NDArray[np.int64] | None = None,
        unit: NDArray[np.floating] | None = None,
    ) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """The ``k`` rows of a published build's array ``name`` most cosine-similar to ``query``.

        Every strategy's nearest-neighbour step goes through this method, whatever the backend: exact numpy search
        over ``vectors`` here (SQLite); on PostgreSQL the database's vector index answers when the build was
        indexed with :meth:`index_vectors` (exact below a size threshold, HNSW above), and the candidates are
        rescored here so both backends give the same scores.

        Args:
            strategy, generation, name: the published array (its generation as loaded by the caller).
            vectors: ``(n, d)`` float, that array as loaded (the exact search and the rescoring use it).
            query: ``(d,)`` float, not all zero.
            k: how many rows (``k > n`` returns all).
            rows: optional ``(m,)`` int rows to search among (a filtered search; always exact).
            unit: optional ``(n, d)`` unit rows (float32 or float64) of ``vectors`` made once per loaded build
                (:func:`gemrag.graph.ann.unit_rows32`): scores are then float32 products, on both backends.

        Returns:
            ``(row indices (min(k, m),) int64 into vectors, best first, ties to the lower row; cosines float64)``.

        Raises:
            ValueError: a zero or mis-sized query.
        """
        return exact_nearest(vectors, query, k, rows, unit)

    @abstractmethod
    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        """The rows of one read statement (``?`` placeholders)."""

    @abstractmethod
    def _best_effort(self, write: Callable[[], None]) -> None:
        """Run a cache or log write that must never fail the caller (skipped on a read-only store)."""
