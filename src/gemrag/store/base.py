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
by :mod:`gemrag.store.postgres.dialect` on PostgreSQL.

The facade subclasses the protocol of every part (:class:`~gemrag.store.parts.MemoryParts`), so a type checker, the
API reference and :func:`help` read each member's signature and contract where it is declared, once; each member is
made here from its declaration (:func:`_forwarder`): a method (or a property) with the declared signature and
docstring that forwards the call to the part that has it, looked up at each call (a part swapped in
:attr:`MemoryStore.parts` is the one called). A caller types against the protocols of the roles it uses.
``examples/custom_store.py`` swaps parts."""

from __future__ import annotations

import functools
from typing import Any

from gemrag.store.parts import PART_ROLES, MemoryParts, StoreDatabase, StoreParts, role_members

__all__ = ["MemoryStore"]


class MemoryStore(MemoryParts):
    """A memory's store: documents, chunks and derived nodes, utility questions, edges, artefacts, the model caches,
    usage, failures and the published builds, each kept by one part (see the module docstring for the backends).

    Every member of the part protocols (:class:`gemrag.store.parts.MemoryParts`) is a member of the store, answered
    by its part (``store.nodes(...)`` is ``store.parts.rows.nodes(...)``), with the protocol's signature and docstring.

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


def _forwarder(field: str, name: str, declared: Any) -> object:
    """The facade's member ``name``, declared by the protocol of the part ``field`` as ``declared`` (a function, a
    property, or None for an attribute declared by annotation alone): a property reading the part's attribute, or a
    method calling the part's, with the declared docstring and signature (``__wrapped__``, as :func:`functools.wraps`
    gives)."""

    def part(store: MemoryStore) -> Any:
        return getattr(store.parts, field)

    if declared is None or isinstance(declared, property):
        return property(lambda store: getattr(part(store), name), doc=declared.__doc__ if declared else None)

    def member(store: MemoryStore, /, *args: Any, **kwargs: Any) -> Any:
        return getattr(part(store), name)(*args, **kwargs)

    functools.update_wrapper(member, declared)
    member.__module__, member.__qualname__ = __name__, f"{MemoryStore.__qualname__}.{name}"
    return member


for _field, _role in PART_ROLES.items():
    for _name in role_members(_role):
        _declared = next((vars(cls)[_name] for cls in _role.__mro__ if _name in vars(cls)), None)
        setattr(MemoryStore, _name, _forwarder(_field, _name, _declared))
