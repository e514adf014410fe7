"""The database roles of a store (re-exported by :mod:`gemrag.store.parts`): :class:`Database` (its SQL
:data:`Dialect`, transactions that yield a :class:`Connection`, read snapshots, the physical erase, closing), the
store-internal :class:`StoreDatabase`, and the build lock (:class:`BuildLocking`, :class:`BuildLockLike`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from gemrag.store.erase import Erasure


Dialect = Literal["sqlite", "postgres"]
"""The SQL a database part runs (:attr:`Database.dialect`): ``"sqlite"`` (SQLite 3) or ``"postgres"`` (PostgreSQL
16 with pgvector). The store's shared SQL is written once in SQLite's dialect and translated on PostgreSQL
(:mod:`gemrag.store.postgres.dialect`); code that writes a statement each database runs its own way, or runs a
step only one of them needs, chooses by this value."""


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
    """Where a memory's rows live: its SQL dialect, transactions, read snapshots, the physical erase, closing."""

    @property
    def dialect(self) -> Dialect:
        """The SQL this database runs (:data:`Dialect`: ``"sqlite"`` or ``"postgres"``), for the few statements
        written for one database (the unmarked cache keys of an erase, moving identity sequences after a copy)."""
        ...

    @property
    def readonly(self) -> bool:
        """True when the store writes nothing (structural writes raise ReadOnlyMemoryError; cache and log writes are
        skipped)."""
        ...

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
class BuildLocking(Protocol):
    """The memory's build lock."""

    def build_lock(self) -> BuildLockLike:
        """A new, not yet acquired, build lock of this memory."""
        ...
