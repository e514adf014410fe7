"""The parts of a memory store, each a small protocol: what the rest of gemrag may call on one role of the store.

A store is a facade over part objects (:class:`gemrag.store.base.MemoryStore`), which a backend builds in one place
(:func:`gemrag.store.open.open_store`) and keeps in a :class:`StoreParts`:

* :class:`Database`: where the rows live and how they are read and written: transactions that yield a
  :class:`Connection`, read snapshots, the physical erase, closing (SQLite:
  :class:`gemrag.store.sqlite.store.SqliteDatabase`; PostgreSQL: :class:`gemrag.store.postgres.store.PgDatabase`);
* :class:`Rows`: meta, documents and their chunks, derived nodes, utility questions, edges and build states
  (:mod:`gemrag.store.rows`, :mod:`gemrag.store.graph_rows`; SQL written once for both databases);
* :class:`Documents`: documents by source, their holders and version history (:mod:`gemrag.store.documents`);
* :class:`Artifacts`: per-node LLM artefacts of a strategy (:mod:`gemrag.store.artifacts`);
* :class:`BuildArrays`: build generations and their arrays (:mod:`gemrag.store.publish`; storage as files,
  :mod:`gemrag.store.files`, or as database rows, :mod:`gemrag.store.postgres.generations`);
* :class:`VectorSearch`: nearest-neighbour search over a build's arrays (:mod:`gemrag.store.vectors`: exact numpy;
  :mod:`gemrag.store.hnsw`: SQLite's, with a file-backed HNSW index of large arrays; pgvector on PostgreSQL);
* :class:`Caches`: the LLM and embedding caches, usage, failures and purging removed text from them
  (:mod:`gemrag.store.caches`);
* :class:`BuildLocking`: the memory's exclusive build lock (:class:`BuildLockLike`: a file lock or an advisory lock).

The protocols are structural (:func:`typing.runtime_checkable`): ``isinstance(part, BuildArrays)`` checks that the
methods are there, and ``tests/store/test_store_parts.py`` checks both backends' part objects against every
protocol's signatures. They list every method called from outside the store; the docstrings are the
implementations'. A caller types against the parts it uses (the facade has them all); swapping a part is passing
an object (``parts=`` of :func:`gemrag.store.open.open_store`, ``examples/custom_store.py``), never subclassing.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, runtime_checkable

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from pydantic import BaseModel

    from gemrag.store.arrays import ArrayEntry, Matrix
    from gemrag.store.erase import Erasure, Purged
    from gemrag.store.publish_types import Edges, Manifest, Publication, Published
    from gemrag.types import Passage

M = TypeVar("M", bound="BaseModel")


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
    """Where a memory's rows live: transactions, read snapshots, the physical erase, closing."""

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

    def secure_deletes(self) -> AbstractContextManager[None]:
        """A scope whose deletes overwrite what they free (SQLite's ``secure_delete``; nothing on PostgreSQL)."""
        ...

    def erase_physically(self) -> Erasure:
        """Rewrite the database without the bytes deleted rows left (see :mod:`gemrag.store.erase`)."""
        ...

    def close(self) -> None:
        """Run deferred cache writes and close the connection(s)."""
        ...


@runtime_checkable
class StoreDatabase(Database, Protocol):
    """The database as the other parts see it (internal to the store): :class:`Database` plus one read statement and
    the best-effort writes of caches and logs."""

    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        """The rows of one read statement (SQLite's dialect, ``?`` placeholders)."""
        ...

    def _best_effort(self, write: Callable[[], None]) -> None:
        """Run a cache or log write that must never fail the caller (skipped on a read-only store, deferred inside a
        snapshot)."""
        ...


@runtime_checkable
class Rows(Protocol):
    """Meta, documents and chunks, derived nodes, utility questions, edges and build states (see
    :mod:`gemrag.store.rows` and :mod:`gemrag.store.graph_rows`). Nodes are :class:`gemrag.store.rows.NodeRecord`
    and a build's state :class:`gemrag.store.graph_rows.BuildState` (typed ``Any`` here: those modules stand on this
    one)."""

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
    def add_summary_node(
        self,
        ord_: int,
        text: str,
        n_tokens: int,
        meta: dict[str, Any],
        *,
        strategy: str,
        generation: int,
        sources: Sequence[int] = (),
    ) -> int: ...
    def set_questions(self, node_id: int, questions: Sequence[str]) -> None: ...
    def fail_questions(self, node_id: int, phase: str, message: str) -> None: ...
    def reset_questions(self) -> None: ...
    def questions(self, *, build: tuple[str, int] | None = None) -> list[tuple[int, int, str]]: ...
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
    def node_sources(self, node_ids: Sequence[int]) -> dict[int, list[int]]: ...
    def nodes_only_from(self, chunk_ids: Sequence[int]) -> list[int]: ...
    def nodes_citing(self, node_ids: Sequence[int]) -> dict[int, tuple[str, str]]: ...
    def texts_of(self, node_ids: Sequence[int]) -> list[str]: ...
    def add_edges(
        self, strategy: str, generation: int, kind: str, src: np.ndarray, dst: np.ndarray, weight: np.ndarray
    ) -> None: ...
    def edges(
        self, node_id: int, strategy: str, kind: str | None = None, *, build: tuple[str, int] | None = None
    ) -> list[tuple[int, float]]: ...
    def edge_list(
        self, strategy: str, kind: str | None = None, *, build: tuple[str, int] | None = None
    ) -> list[tuple[str, int, int, float]]: ...
    def find_documents(self, ref: str) -> list[dict[str, Any]]: ...
    def document_chunk_ids(self, doc_id: int) -> list[int]: ...
    def delete_rows(self, c: Connection, doc_id: int, nodes: Sequence[int]) -> None: ...
    def delete_nodes(self, c: Connection, nodes: Sequence[int]) -> None: ...
    def build_state(self, strategy: str) -> Any: ...
    def covered_chunks(self, strategy: str) -> set[int] | None: ...
    def chunk_signature(self) -> tuple[int, int, int, int]: ...


@runtime_checkable
class Documents(Protocol):
    """Documents by source: their identity, holders, the rows of a replacement written inside the caller's
    transaction, and their version history (see :mod:`gemrag.store.documents`)."""

    def document_by_key(self, key: str) -> dict[str, Any] | None: ...
    def documents_with_text(self, sha256: str) -> list[dict[str, Any]]: ...
    def holders(self, doc_id: int | None = None) -> list[dict[str, Any]]: ...
    def release_holders(self, c: Connection, doc_ids: Sequence[int]) -> None: ...
    def set_holders(self, c: Connection, doc_id: int, holders: Sequence[dict[str, Any]]) -> None: ...
    def insert_document(
        self,
        c: Connection,
        source: str,
        title: str,
        text: str,
        sha256: str,
        *,
        key: str | None = None,
        version: int = 1,
        chunks: Sequence[tuple[str, int]] | None = None,
    ) -> int: ...
    def update_document(
        self, c: Connection, doc_id: int, source: str, title: str, text: str, sha256: str, *, version: int
    ) -> None: ...
    def place_chunks(
        self, c: Connection, doc_id: int, keep: dict[int, int], new: Sequence[tuple[int, str, int]]
    ) -> None: ...
    def record_version(self, c: Connection, doc: dict[str, Any], reason: str, *, keep_text: bool = False) -> None: ...
    def document_history(self, ref: str) -> list[dict[str, Any]]: ...


@runtime_checkable
class Artifacts(Protocol):
    """Per-node LLM artefacts of a strategy, typed JSON rows (see :mod:`gemrag.store.artifacts`)."""

    def put_artifact(self, strategy: str, kind: str, node_id: int, value: BaseModel, version: str) -> None: ...
    def put_artifacts(
        self, strategy: str, kind: str, values: Iterable[tuple[int, BaseModel]], version: str
    ) -> None: ...
    def get_artifact(self, strategy: str, kind: str, node_id: int, model: type[M], version: str) -> M | None: ...
    def artifacts(
        self, strategy: str, kind: str, model: type[M], version: str, node_ids: Sequence[int] | None = None
    ) -> dict[int, M]: ...
    def missing_artifacts(self, strategy: str, kind: str, version: str, node_ids: Sequence[int]) -> list[int]: ...
    def artifact_counts(self, strategy: str | None = None) -> dict[tuple[str, str, str], int]: ...
    def delete_artifacts(self, strategy: str, kind: str | None = None, *, stale_for: str | None = None) -> int: ...


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
    """Nearest-neighbour search over a build's arrays: every strategy's nearest-neighbour step goes through it (see
    :class:`gemrag.store.vectors.ExactSearch`)."""

    def index_vectors(self, strategy: str, generation: int, name: str, vectors: NDArray[np.floating]) -> list[str]: ...
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
    """The model caches, usage, failures, and purging removed text from them (see :mod:`gemrag.store.caches`)."""

    def get_embeddings(self, model: str, keys: Sequence[str]) -> dict[str, np.ndarray]: ...
    def put_embeddings(self, model: str, items: Iterable[tuple[str, np.ndarray]]) -> None: ...
    def get_llm(self, key: str) -> dict[str, Any] | None: ...
    def put_llm(self, key: str, model: str, response: dict[str, Any]) -> None: ...
    def cached_llm(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]: ...
    def recent_llm_responses(self, model: str, limit: int = 5000) -> list[dict[str, Any]]: ...
    def llm_cache_counts(self) -> tuple[int, int]: ...
    def log_usage(self, rows: Sequence[tuple[str, str, str, int, int, int, float, int]]) -> None: ...
    def usage_by_phase(self) -> dict[str, dict[str, float]]: ...
    def usage_mark(self) -> int: ...
    def usage_after(self, mark: int, upto: int | None = None, phase: str = "index") -> dict[str, float]: ...
    def record_failure(self, phase: str, node_id: int | None, message: str) -> None: ...
    def failures(self) -> list[dict[str, Any]]: ...
    def purge_caches(
        self,
        tainted: Callable[[str], bool] | None,
        *,
        input_key: str,
        keep_embeddings: Collection[str] | None,
        documents: Sequence[int] = (),
        sources: Sequence[str] = (),
    ) -> Purged: ...


@runtime_checkable
class BuildLocking(Protocol):
    """The memory's build lock."""

    def build_lock(self) -> BuildLockLike:
        """A new, not yet acquired, build lock of this memory."""
        ...


@runtime_checkable
class Erasing(Caches, Database, Protocol):
    """The store roles of a purge (:mod:`gemrag.store.erase`): the caches part's :meth:`purge_caches` and the
    database part's :meth:`secure_deletes` and :meth:`erase_physically`; both backends have them."""


@runtime_checkable
class MemoryParts(Database, Rows, Documents, Artifacts, BuildArrays, VectorSearch, Caches, BuildLocking, Protocol):
    """A whole store as one protocol: every part (what the facade :class:`gemrag.store.base.MemoryStore` offers)."""


@runtime_checkable
class StrategyStore(Database, Rows, Artifacts, BuildArrays, VectorSearch, Caches, Protocol):
    """What a strategy uses of a store: its rows, artefacts, build arrays, vector search and caches, in the database's
    transactions and snapshots (:attr:`gemrag.strategies.base.StrategyContext.store`)."""


@runtime_checkable
class RowStore(Database, Rows, Protocol):
    """The rows in the database's transactions (chunking documents, the memory's recorded settings:
    :mod:`gemrag.memory.documents`)."""


@runtime_checkable
class BuildReads(Rows, BuildArrays, Protocol):
    """What reads a memory's rows and its published builds (the titles a build read, the viewer's data)."""


@runtime_checkable
class SourceStore(Database, Rows, Documents, Protocol):
    """What the code that adds, replaces and deletes documents by source uses: rows and documents, in the database's
    transactions."""


class StoreParts:
    """The part objects of one store, built by a backend in one place (:func:`gemrag.store.open.open_store`); every
    part reaches the others through this object, so a part swapped here is the one they all call.

    Args:
        database: the database part (it is also the build-lock part until :attr:`lock` is set otherwise).

    Attributes:
        database, rows, documents, artifacts, arrays, vectors, caches, lock: the parts (see the module docstring).
    """

    database: StoreDatabase
    rows: Rows
    documents: Documents
    artifacts: Artifacts
    arrays: BuildArrays
    vectors: VectorSearch
    caches: Caches
    lock: BuildLocking

    def __init__(self, database: StoreDatabase, lock: BuildLocking | None = None) -> None:
        self.database = database
        self.lock = lock if lock is not None else database  # type: ignore[assignment]

    def missing(self) -> list[str]:
        """The names of the parts not set yet (the backend sets them all before the store is used)."""
        return [name for name in PART_ROLES if not hasattr(self, name)]


PART_ROLES: dict[str, type] = {
    "database": Database,
    "rows": Rows,
    "documents": Documents,
    "artifacts": Artifacts,
    "arrays": BuildArrays,
    "vectors": VectorSearch,
    "caches": Caches,
    "lock": BuildLocking,
}
"""Each field of :class:`StoreParts` and the protocol its part implements (the facade offers every member)."""


def role_members(role: type) -> list[str]:
    """The names a role protocol declares itself (methods, properties and attributes; not those of its bases)."""
    names = [n for n, v in vars(role).items() if not n.startswith("_") and (callable(v) or isinstance(v, property))]
    return names + [n for n in vars(role).get("__annotations__", {}) if not n.startswith("_")]
