"""The parts of a memory store, each a small protocol: what the rest of gemrag may call on one role of the store.

A store is a facade over part objects (:class:`gemrag.store.base.MemoryStore`), which a backend builds in one place
(:func:`gemrag.store.open.open_store`) and keeps in a :class:`StoreParts`:

* :class:`Database`: where the rows live and how they are read and written: its SQL :data:`Dialect`, transactions
  that yield a :class:`Connection`, read snapshots, the physical erase, closing (SQLite:
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

The protocols live in :mod:`gemrag.store.db_roles`, :mod:`gemrag.store.row_roles`, :mod:`gemrag.store.build_roles`
and :mod:`gemrag.store.cache_roles` and are re-exported here; :class:`Rows` is split by its callers' roles
(:class:`MetaRows`, :class:`DocumentChunks`, :class:`NodeRows`, :class:`QuestionRows`, :class:`EdgeRows`,
:class:`RowDeletes`, :class:`BuildStates`). They are structural (:func:`typing.runtime_checkable`):
``isinstance(part, BuildArrays)`` checks that the methods are there, ``tests/store/test_store_parts.py`` checks both
backends' part objects and the facade against every protocol's signatures, and the type checker checks every caller.
They list every method called from outside the store, each with its contract (shapes, units, errors). A caller types
against the roles it uses (the facade, :class:`gemrag.store.base.MemoryStore`, subclasses them all, each member made
from its declaration); swapping a part is passing an object (``parts=`` of :func:`gemrag.store.open.open_store`,
``examples/custom_store.py``), never subclassing.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from gemrag.store.build_roles import Artifacts, BuildArrays, VectorSearch
from gemrag.store.cache_roles import Caches, UsageRow
from gemrag.store.db_roles import BuildLocking, BuildLockLike, Connection, Cursor, Database, Dialect, StoreDatabase
from gemrag.store.row_roles import (
    Build,
    BuildStates,
    DocumentChunks,
    Documents,
    EdgeRows,
    MetaRows,
    NodeRows,
    QuestionRows,
    RowDeletes,
    Rows,
)

__all__ = [
    "PART_ROLES",
    "Artifacts",
    "Build",
    "BuildArrays",
    "BuildLockLike",
    "BuildLocking",
    "BuildReads",
    "BuildStates",
    "Caches",
    "Connection",
    "Cursor",
    "Database",
    "Dialect",
    "DocumentChunks",
    "Documents",
    "EdgeRows",
    "Erasing",
    "MemoryParts",
    "MetaRows",
    "NodeRows",
    "QuestionRows",
    "RowDeletes",
    "RowStore",
    "Rows",
    "SourceStore",
    "StoreDatabase",
    "StoreParts",
    "StrategyStore",
    "UsageRow",
    "VectorSearch",
    "role_members",
]


@runtime_checkable
class Erasing(Caches, Database, Protocol):
    """The store roles of an erase (:mod:`gemrag.store.erase`): the caches part's :meth:`purge_caches` and the
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
        database: the database part.
        lock: the build-lock part (None: the database part, which must then have ``build_lock()``).

    Raises:
        TypeError: no ``lock`` given and the database part has no ``build_lock()``.

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
        if lock is None:
            if not isinstance(database, BuildLocking):
                raise TypeError("the database part has no build_lock(): pass the build-lock part as lock=")
            lock = database
        self.lock = lock

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
    """The public names a role protocol declares (methods, properties and attributes), its own and those of the role
    protocols it is made of (:class:`Rows` of :class:`MetaRows`, ...), in declaration order."""
    names: list[str] = []
    for cls in reversed(role.__mro__):
        if not cls.__module__.startswith("gemrag."):
            continue
        own = [n for n, v in vars(cls).items() if callable(v) or isinstance(v, property)]
        own += list(vars(cls).get("__annotations__", {}))
        names += [n for n in own if not n.startswith("_") and n not in names]
    return names
