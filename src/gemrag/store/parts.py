"""The parts of a memory store, each a small protocol: what the rest of gemrag may call on one role of the store.

A store is assembled from parts (:class:`gemrag.store.base.MemoryStore` is their composition, :class:`MemoryParts`
the same as one protocol):

* :class:`Database`: where the rows live and how they are read and written: transactions that yield a
  :class:`Connection`, read snapshots, closing (SQLite: :class:`gemrag.store.sqlite.store.SqliteRows`; PostgreSQL:
  :class:`gemrag.store.postgres.store.PostgresStore`);
* :class:`Rows`: documents, chunks and derived nodes, utility questions, edges (:mod:`gemrag.store.rows`,
  :mod:`gemrag.store.documents`, :mod:`gemrag.store.derived`; SQL written once for both databases);
* :class:`BuildArrays`: build generations and their arrays (:mod:`gemrag.store.publish`; storage as files,
  :mod:`gemrag.store.files`, or as database rows, :mod:`gemrag.store.postgres.generations`);
* :class:`VectorSearch`: nearest-neighbour search over a build's arrays (numpy, or pgvector);
* :class:`Caches`: the LLM and embedding caches, usage and failures (:mod:`gemrag.store.caches`,
  :mod:`gemrag.store.rows`);
* :class:`BuildLocking`: the memory's exclusive build lock (:class:`BuildLockLike`: a file lock or an advisory lock).

The protocols are structural (:func:`typing.runtime_checkable`): ``isinstance(store, BuildArrays)`` checks that the
methods are there, and ``tests/store/test_store_parts.py`` checks both backends against every part. Only the public
methods are listed; the full signatures and docstrings are the implementations'.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from gemrag.store.arrays import ArrayEntry, Matrix
    from gemrag.store.publish_types import Edges, Manifest, Publication, Published
    from gemrag.types import Passage


class Cursor(Protocol):
    """What :meth:`Connection.execute` returns: the rows of a statement, how many it changed, the id it inserted."""

    @property
    def rowcount(self) -> int:
        """Rows the statement changed (-1 when unknown)."""
        ...

    @property
    def lastrowid(self) -> int | None:
        """The id the last ``INSERT`` into a table with a generated id gave."""
        ...

    def fetchone(self) -> Any:
        """The next row (a tuple), or None."""
        ...

    def fetchall(self) -> list[Any]:
        """The remaining rows (tuples)."""
        ...


class Connection(Protocol):
    """What ``with store.transaction() as c`` yields: statements in SQLite's dialect with ``?`` parameters
    (``sqlite3.Connection`` itself on SQLite; :class:`gemrag.store.postgres.store.PgConnection`, which translates
    them, on PostgreSQL)."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Cursor:
        """Run one statement."""
        ...

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Cursor:
        """Run one statement for every row of parameters."""
        ...


@runtime_checkable
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


@runtime_checkable
class Database(Protocol):
    """Where a memory's rows live: transactions, read snapshots, closing."""

    readonly: bool

    @property
    def location(self) -> str:
        """Where the memory lives, for messages (never a password)."""
        ...

    @property
    def in_snapshot(self) -> bool:
        """True inside :meth:`snapshot` (in the thread that holds it)."""
        ...

    def transaction(self) -> AbstractContextManager[Connection]:
        """A nestable write transaction (all or nothing). Raises ReadOnlyMemoryError on a read-only store."""
        ...

    def snapshot(self) -> AbstractContextManager[None]:
        """One read transaction: every read inside sees the same committed state."""
        ...

    def retrieval(self, embeddings: tuple[str, Sequence[str]] | None = None) -> AbstractContextManager[None]:
        """The scope of one retrieval's reads: nothing where a read costs no round trip (SQLite), one snapshot whose
        reads are batched on PostgreSQL (``embeddings``: ``(model id, cache keys)`` read with the first)."""
        ...

    def close(self) -> None:
        """Run deferred cache writes and close the connection(s)."""
        ...


@runtime_checkable
class Rows(Protocol):
    """Documents, chunks and derived nodes, utility questions and edges (see :mod:`gemrag.store.rows`). Nodes are
    :class:`gemrag.store.rows.NodeRecord` and a build's state :class:`gemrag.store.derived.BuildState` (typed
    ``Any`` here: those modules stand on this one)."""

    def get_meta(self, key: str, default: Any = None) -> Any: ...
    def set_meta(self, key: str, value: Any) -> None: ...
    def add_document(self, source: str, title: str, text: str) -> tuple[int, bool]: ...
    def documents(self) -> list[dict[str, Any]]: ...
    def document_text(self, doc_id: int) -> str: ...
    def unchunked_documents(self) -> list[tuple[int, str]]: ...
    def add_chunks(
        self, doc_id: int, chunks: Sequence[tuple[str, int]], spans: Sequence[tuple[int, int] | None] | None = None
    ) -> None: ...
    def nodes(
        self, kind: str | None = None, *, strategy: str | None = None, build: tuple[str, int] | None = None
    ) -> list[Any]: ...
    def node(self, node_id: int) -> Any: ...
    def nodes_by_id(self, node_ids: Sequence[int]) -> dict[int, Any]: ...
    def passages(self, chunk_ids: Sequence[int]) -> dict[int, Passage]: ...
    def add_node(
        self,
        strategy: str,
        generation: int,
        kind: str,
        text: str,
        *,
        n_tokens: int = 0,
        meta: dict[str, Any] | None = None,
        ord_: int = 0,
        sources: Iterable[int] = (),
    ) -> int: ...
    def set_questions(self, node_id: int, questions: Sequence[str]) -> None: ...
    def questions(self, *, build: tuple[str, int] | None = None) -> list[tuple[int, int, str]]: ...
    def add_edges(
        self, strategy: str, generation: int, kind: str, src: np.ndarray, dst: np.ndarray, weight: np.ndarray
    ) -> None: ...
    def edges(
        self, node_id: int, strategy: str = "gem", kind: str | None = None, *, build: tuple[str, int] | None = None
    ) -> list[tuple[int, float]]: ...
    def find_documents(self, ref: str) -> list[dict[str, Any]]: ...
    def build_state(self, strategy: str) -> Any: ...
    def covered_chunks(self, strategy: str) -> set[int] | None: ...
    def node_sources(self, node_ids: Sequence[int]) -> dict[int, list[int]]: ...
    def nodes_citing(self, node_ids: Sequence[int]) -> dict[int, tuple[str, str]]: ...
    def texts_of(self, node_ids: Sequence[int]) -> list[str]: ...


@runtime_checkable
class BuildArrays(Protocol):
    """Build generations and their arrays (see :mod:`gemrag.store.publish`)."""

    def published_generation(self, strategy: str) -> int | None: ...
    def published_generations(self) -> dict[str, int]: ...
    def manifest(self, strategy: str) -> Manifest | None: ...
    def load_published(self, strategy: str, *, mmap: bool = True) -> Published | None: ...
    def begin_build(self, strategy: str) -> int: ...
    def write_array(
        self, strategy: str, generation: int, name: str, array: Matrix, axes: Sequence[str] | None = None
    ) -> ArrayEntry: ...
    def artifact_path(self, strategy: str, generation: int, name: str) -> Path: ...
    def sync_path(self, path: Path) -> None: ...
    def publish(
        self,
        strategy: str,
        generation: int,
        arrays: Sequence[ArrayEntry],
        *,
        meta: dict[str, Any] | None = None,
        paths: Sequence[str] = (),
        edges: Edges | Mapping[str, Edges] | None = None,
        covers: Sequence[int] | Literal["keep"] | None = None,
        params: dict[str, Any] | None = None,
        models: dict[str, Any] | None = None,
        carry: bool = False,
        retire: Sequence[int] = (),
    ) -> None: ...
    def publish_many(
        self,
        publications: Sequence[Publication],
        *,
        before: Callable[[Connection], None] | None = None,
        withdraw: Sequence[str] = (),
    ) -> None: ...
    def withdraw(self, strategy: str) -> None: ...
    def stale_files(self, strategy: str | None = None) -> Iterator[Path]: ...
    def remove_stale_files(self, strategy: str | None = None) -> int: ...
    def remove_unpublished(self) -> int: ...


@runtime_checkable
class VectorSearch(Protocol):
    """Nearest-neighbour search over a build's arrays (see :meth:`gemrag.store.base.MemoryStore.nearest`)."""

    searches_in_database: bool

    def index_vectors(self, strategy: str, generation: int, name: str, vectors: NDArray[np.floating]) -> None: ...
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
    ) -> tuple[NDArray[np.int64], NDArray[np.float64]]: ...


@runtime_checkable
class Caches(Protocol):
    """The model caches, usage and failures (see :mod:`gemrag.store.caches`)."""

    def get_embeddings(self, model: str, keys: Sequence[str]) -> dict[str, np.ndarray]: ...
    def put_embeddings(self, model: str, items: Iterable[tuple[str, np.ndarray]]) -> None: ...
    def get_llm(self, key: str) -> dict[str, Any] | None: ...
    def put_llm(self, key: str, model: str, response: dict[str, Any]) -> None: ...
    def cached_llm(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]: ...
    def recent_llm_responses(self, model: str, limit: int = 5000) -> list[dict[str, Any]]: ...
    def llm_cache_counts(self) -> tuple[int, int]: ...
    def log_usage(self, rows: Sequence[tuple[str, str, str, int, int, int, float, int]]) -> None: ...
    def usage_by_phase(self) -> dict[str, dict[str, float]]: ...
    def record_failure(self, phase: str, node_id: int | None, message: str) -> None: ...
    def failures(self) -> list[dict[str, Any]]: ...


@runtime_checkable
class BuildLocking(Protocol):
    """The memory's build lock."""

    def build_lock(self) -> BuildLockLike:
        """A new, not yet acquired, build lock of this memory."""
        ...


@runtime_checkable
class MemoryParts(Database, Rows, BuildArrays, VectorSearch, Caches, BuildLocking, Protocol):
    """A whole store as one protocol: every part (what :class:`gemrag.store.base.MemoryStore` implements)."""
