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
by :mod:`gemrag.store.postgres.dialect` on PostgreSQL. The facade offers every member of every part's protocol,
forwarded to the part that has it (looked up at each call: a part swapped in :attr:`MemoryStore.parts` is the one
called); a caller types against the protocols of the parts it uses. ``examples/custom_store.py`` swaps parts."""

from __future__ import annotations

from typing import Any

from gemrag.store.parts import PART_ROLES, StoreDatabase, StoreParts, role_members

__all__ = ["MemoryStore"]


class MemoryStore:
    """A memory's store: documents, chunks and derived nodes, utility questions, edges, artefacts, the model caches,
    usage, failures and the published builds, each kept by one part (see the module docstring for the backends).

    Every member of the part protocols is an attribute of the store, answered by its part (``store.nodes(...)`` is
    ``store.parts.rows.nodes(...)``).

    Args:
        parts: the part objects, every one set.

    Attributes:
        parts: the part objects.
        readonly: True when the store writes nothing (structural writes raise ReadOnlyMemoryError; cache and log
            writes are skipped).

    Raises:
        ValueError: a part is missing.
    """

    readonly: bool

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


class _Forward:
    """A facade attribute answered by ``getattr(store.parts.<part>, name)`` at each access. A non-data descriptor:
    setting the attribute on one store (a test's monkeypatch) shadows it for that store."""

    def __init__(self, part: str, name: str) -> None:
        self.part, self.name = part, name
        self.__doc__ = f"``parts.{part}.{name}`` (see :class:`gemrag.store.parts.{PART_ROLES[part].__name__}`)."

    def __get__(self, store: MemoryStore | None, owner: type | None = None) -> Any:
        if store is None:
            return self
        return getattr(getattr(store.parts, self.part), self.name)


for _part, _role in PART_ROLES.items():
    for _name in role_members(_role):
        setattr(MemoryStore, _name, _Forward(_part, _name))
