"""The store interface: what the rest of gemrag calls on a memory, whatever database holds it.

:class:`MemoryStore` is the composition of the parts of :mod:`gemrag.store.parts` (database, rows, build arrays,
vector search, caches, build lock), and the base of both backends:

* :class:`gemrag.store.sqlite.store.Store`: one memory = one directory (``memory.sqlite`` + generation-named array
  files), the embedded default: the SQLite database part (:class:`~gemrag.store.sqlite.store.SqliteRows`) with the
  arrays on the file system (:class:`~gemrag.store.files.FileArraysMixin`);
* :class:`gemrag.store.postgres.store.PostgresStore`: one memory = one PostgreSQL schema (every row and every array
  of a build in the database, vector search in pgvector, the build lock a PostgreSQL advisory lock).

The shared behaviour is written once in the mixins (:mod:`~gemrag.store.rows`, :mod:`~gemrag.store.caches`,
:mod:`~gemrag.store.erase`, :mod:`~gemrag.store.derived`, :mod:`~gemrag.store.documents`,
:mod:`~gemrag.store.artifacts`, :mod:`~gemrag.store.publish`), whose SQL is SQLite's dialect, run as it is on SQLite
and translated by :mod:`gemrag.store.postgres.dialect` on PostgreSQL. A backend supplies the database part:
:meth:`transaction`, :meth:`snapshot`, ``_query``, ``_best_effort``, :meth:`close`, :attr:`location`,
:meth:`build_lock`, and an arrays storage part (files, or database rows); its physical erase, if it has one
(:mod:`gemrag.store.erase`). ``examples/custom_store.py`` assembles a store from other parts."""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from gemrag.store.artifacts import ArtifactsMixin
from gemrag.store.caches import CachesMixin
from gemrag.store.derived import GraphRowsMixin
from gemrag.store.documents import DocumentRowsMixin
from gemrag.store.erase import EraseMixin
from gemrag.store.parts import BuildLockLike, Connection
from gemrag.store.publish import GenerationsMixin
from gemrag.store.publish_types import Published
from gemrag.store.rows import RowsMixin
from gemrag.store.vectors import exact_nearest

__all__ = ["BuildLockLike", "MemoryStore"]


class MemoryStore(
    CachesMixin, EraseMixin, GenerationsMixin, GraphRowsMixin, ArtifactsMixin, DocumentRowsMixin, RowsMixin, ABC
):
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

    @property
    @abstractmethod
    def in_snapshot(self) -> bool:
        """True inside :meth:`snapshot` (in the thread that holds it)."""

    @abstractmethod
    def transaction(self) -> AbstractContextManager[Connection]:
        """A nestable write transaction (all or nothing); yields a connection with ``execute``/``executemany``."""

    @abstractmethod
    def snapshot(self) -> AbstractContextManager[None]:
        """One read transaction: every read inside sees the same committed state."""

    def retrieval(self, embeddings: tuple[str, Sequence[str]] | None = None) -> AbstractContextManager[None]:
        """The scope of one retrieval's reads (:meth:`gemrag.memory.Memory.retrieve`): nothing here, where a read
        costs no round trip (SQLite); PostgreSQL makes it a :meth:`snapshot` that batches them, ``embeddings``
        (``(model id, cache keys)`` the retrieval will look up) with the first."""
        return contextlib.nullcontext()

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

    # -- the arrays storage part (files: gemrag.store.files; database rows: gemrag.store.postgres.generations) ----
    @abstractmethod
    def load_published(self, strategy: str, *, mmap: bool = True) -> Published | None:
        """The strategy's published build, checked against its manifest; None when it was never built."""

    @abstractmethod
    def write_array(
        self, strategy: str, generation: int, name: str, array: Any, axes: Sequence[str] | None = None
    ) -> Any:
        """Store one array of an unpublished build; returns its manifest entry (:class:`~gemrag.store.ArrayEntry`)."""

    @abstractmethod
    def artifact_path(self, strategy: str, generation: int, name: str) -> Path:
        """Where a build creates an artefact that is not an array (publish it after :meth:`sync_path`)."""

    @abstractmethod
    def sync_path(self, path: Path) -> None:
        """Make an artefact made under :meth:`artifact_path` durable (fsync, or stored in the database)."""

    @abstractmethod
    def withdraw(self, strategy: str) -> None:
        """Remove a strategy's published build (manifest, nodes, edges, chunk list, arrays)."""

    @abstractmethod
    def stale_files(self, strategy: str | None = None) -> Iterator[Path]:
        """Files no published build names (none for a store keeping its arrays in the database)."""
