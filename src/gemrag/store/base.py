"""The store facade: what the rest of gemrag holds of a memory, whatever database holds it.

:class:`MemoryStore` is a facade over part objects (:mod:`gemrag.store.parts`: database, rows, documents, artefacts,
build arrays, vector search, caches, build lock), which a backend builds in one place and keeps in a
:class:`~gemrag.store.parts.StoreParts`:

* SQLite (:func:`gemrag.store.sqlite.store.sqlite_parts`): one memory = one directory (``memory.sqlite`` +
  generation-named array files): the SQLite database part, the arrays as files
  (:class:`~gemrag.store.files.FileArrays`), vector search in numpy with an HNSW artefact of large arrays
  (:class:`~gemrag.store.hnsw.HnswSearch`), a file build lock;
* PostgreSQL (:func:`gemrag.store.postgres.store.pg_parts`): one memory = one PostgreSQL schema (every row and every
  array of a build in the database, vector search in pgvector, the build lock a PostgreSQL advisory lock).

The rows, documents, artefacts, caches and build generations are written once (:mod:`~gemrag.store.rows`,
:mod:`~gemrag.store.graph_rows`, :mod:`~gemrag.store.documents`, :mod:`~gemrag.store.artifacts`,
:mod:`~gemrag.store.caches`, :mod:`~gemrag.store.publish`) in SQLite's dialect, run as it is on SQLite and translated
by :mod:`gemrag.store.postgres.dialect` on PostgreSQL. The facade offers every member of every part's protocol as a
real, typed method (:mod:`gemrag.store.facade_rows`, :mod:`gemrag.store.facade_builds`, the database's and the build
lock's here), forwarded to the part that has it (looked up at each call: a part swapped in :attr:`MemoryStore.parts`
is the one called); a caller types against the protocols of the roles it uses. ``examples/custom_store.py`` swaps
parts."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from gemrag.store.db_roles import BuildLockLike, Connection
from gemrag.store.facade_builds import BuildMembers
from gemrag.store.facade_rows import RowMembers
from gemrag.store.parts import StoreDatabase, StoreParts

if TYPE_CHECKING:
    from gemrag.store.erase import Erasure

__all__ = ["MemoryStore"]


class MemoryStore(RowMembers, BuildMembers):
    """A memory's store: documents, chunks and derived nodes, utility questions, edges, artefacts, the model caches,
    usage, failures and the published builds, each kept by one part (see the module docstring for the backends).

    Every member of the part protocols (:class:`gemrag.store.parts.MemoryParts`) is a method of the store, answered
    by its part (``store.nodes(...)`` is ``store.parts.rows.nodes(...)``).

    Args:
        parts: the part objects, every one set.

    Attributes:
        parts: the part objects.

    Raises:
        ValueError: a part is missing.
    """

    def __init__(self, parts: StoreParts) -> None:
        missing = parts.missing()
        if missing:
            raise ValueError(f"a store needs every part; missing: {', '.join(missing)}")
        self.parts = parts

    @property
    def database(self) -> StoreDatabase:
        """The database part (where the rows live; its backend's own attributes, e.g. a SQLite memory's
        ``directory``, are there)."""
        return self.parts.database

    @property
    def readonly(self) -> bool:
        """``parts.database``: :attr:`~gemrag.store.db_roles.Database.readonly`."""
        return self.parts.database.readonly

    @property
    def location(self) -> str:
        """``parts.database``: :attr:`~gemrag.store.db_roles.Database.location`."""
        return self.parts.database.location

    @property
    def in_snapshot(self) -> bool:
        """``parts.database``: :attr:`~gemrag.store.db_roles.Database.in_snapshot`."""
        return self.parts.database.in_snapshot

    def transaction(self) -> AbstractContextManager[Connection]:
        """``parts.database``: :meth:`~gemrag.store.db_roles.Database.transaction`."""
        return self.parts.database.transaction()

    def snapshot(self) -> AbstractContextManager[None]:
        """``parts.database``: :meth:`~gemrag.store.db_roles.Database.snapshot`."""
        return self.parts.database.snapshot()

    def retrieval(self, embeddings: tuple[str, Sequence[str]] | None = None) -> AbstractContextManager[None]:
        """``parts.database``: :meth:`~gemrag.store.db_roles.Database.retrieval`."""
        return self.parts.database.retrieval(embeddings)

    def secure_deletes(self) -> AbstractContextManager[None]:
        """``parts.database``: :meth:`~gemrag.store.db_roles.Database.secure_deletes`."""
        return self.parts.database.secure_deletes()

    def erase_physically(self) -> Erasure:
        """``parts.database``: :meth:`~gemrag.store.db_roles.Database.erase_physically`."""
        return self.parts.database.erase_physically()

    def close(self) -> None:
        """``parts.database``: :meth:`~gemrag.store.db_roles.Database.close`."""
        self.parts.database.close()

    def build_lock(self) -> BuildLockLike:
        """``parts.lock``: :meth:`~gemrag.store.db_roles.BuildLocking.build_lock`."""
        return self.parts.lock.build_lock()
