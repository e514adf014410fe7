"""The base of the parts whose rows live in the store's database (rows, documents, artefacts, caches, build
generations): each reads and writes through the database part, and reaches the other parts through the store's
:class:`~gemrag.store.parts.StoreParts`, so a part swapped there is the one it calls."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from gemrag.store.parts import StoreDatabase, StoreParts


class SqlPart:
    """A part of a store whose rows are in the store's database (its SQL is SQLite's dialect, translated on
    PostgreSQL by the database part): it writes in the database part's transactions (``self._db.transaction()``) and
    reads with :meth:`_query`.

    Args:
        parts: the store's parts (the database part must be set; the others are looked up when called).
    """

    def __init__(self, parts: StoreParts) -> None:
        self._parts = parts

    @property
    def _db(self) -> StoreDatabase:
        """The store's database part."""
        return self._parts.database

    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        """The rows of one read statement, through the database part."""
        return self._db._query(sql, args)

    def _best_effort(self, write: Callable[[], None]) -> None:
        """A cache or log write through the database part (skipped when read-only, deferred inside a snapshot)."""
        self._db._best_effort(write)
