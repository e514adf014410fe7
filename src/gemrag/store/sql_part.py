"""The base of the parts whose rows live in the store's database (rows, documents, artefacts, caches, build
generations): each reads and writes through the database part, and reaches the other parts through the store's
:class:`~gemrag.store.parts.StoreParts`, so a part swapped there is the one it calls."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from gemrag.store.parts import Connection, StoreDatabase, StoreParts


class SqlPart:
    """A part of a store whose rows are in the store's database (its SQL is SQLite's dialect, translated on
    PostgreSQL by the database part).

    Args:
        parts: the store's parts (the database part must be set; the others are looked up when called).
    """

    def __init__(self, parts: StoreParts) -> None:
        self._parts = parts

    @property
    def _db(self) -> StoreDatabase:
        """The store's database part."""
        return self._parts.database

    @property
    def readonly(self) -> bool:
        """True when the store writes nothing (the database part's flag)."""
        return self._db.readonly

    def transaction(self) -> AbstractContextManager[Connection]:
        """A nestable write transaction of the database part (see :meth:`gemrag.store.parts.Database.transaction`)."""
        return self._db.transaction()

    def snapshot(self) -> AbstractContextManager[None]:
        """One read transaction of the database part (see :meth:`gemrag.store.parts.Database.snapshot`)."""
        return self._db.snapshot()

    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        return self._db._query(sql, args)

    def _best_effort(self, write: Callable[[], None]) -> None:
        self._db._best_effort(write)
