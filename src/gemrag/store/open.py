"""Opening a memory by its location: a directory (SQLite, the default) or a PostgreSQL URL.

``Memory.open``, the command line's ``--memory`` (and ``GEMRAG_MEMORY``, ``memory`` in ``gemrag.toml``), ``gemrag
copy`` and the server call :func:`open_store`; nothing else needs to know which backend holds a memory.
"""

from __future__ import annotations

from pathlib import Path

from gemrag.store.base import MemoryStore
from gemrag.store.postgres.connect import is_postgres_url
from gemrag.store.schema import DEFAULT_BUSY_TIMEOUT
from gemrag.store.sqlite.connection import memory_writable

Location = str | Path
"""A memory directory, or ``postgresql://user@host:port/db?schema=NAME``."""


def open_store(
    location: Location, *, readonly: bool | None = None, busy_timeout: float = DEFAULT_BUSY_TIMEOUT, pool_size: int = 1
) -> MemoryStore:
    """Open (or create) the memory at ``location``.

    Args:
        location: a memory directory (SQLite) or a PostgreSQL URL (one schema per memory).
        readonly: open without writing; None: read-only exactly when a directory memory cannot be written
            (a PostgreSQL memory opens read-write unless asked).
        busy_timeout: seconds to wait for another connection's locks.
        pool_size: PostgreSQL connections in the pool (ignored for SQLite).

    Raises:
        GemragError: the location holds no usable memory, or the server cannot be reached.
    """
    if is_postgres_url(str(location)) and not isinstance(location, Path):
        from gemrag.store.postgres.store import PostgresStore

        return PostgresStore(str(location), readonly=bool(readonly), busy_timeout=busy_timeout, pool_size=pool_size)
    from gemrag.store.sqlite.store import Store

    if readonly is None:
        readonly = not memory_writable(Path(location))
    return Store(location, readonly=readonly, busy_timeout=busy_timeout)


def location_exists(location: Location) -> bool:
    """True when ``location`` may hold a memory: a directory with ``memory.sqlite``, or any PostgreSQL URL (the
    server is asked when the memory is opened)."""
    if is_postgres_url(str(location)) and not isinstance(location, Path):
        return True
    return (Path(location) / "memory.sqlite").exists()


def memory_exists(location: Location) -> bool:
    """True when ``location`` holds a memory: a directory with ``memory.sqlite``, or a PostgreSQL schema with
    gemrag's tables (the server is asked; nothing is created).

    Raises:
        GemragError: the PostgreSQL server cannot be reached, or psycopg is missing.
    """
    if is_postgres_url(str(location)) and not isinstance(location, Path):
        from gemrag.store.postgres.connect import PgLocation, connect
        from gemrag.store.postgres.schema import schema_version

        loc = PgLocation.parse(str(location))
        conn = connect(loc.conninfo, loc.schema, loc.display, readonly=True)
        try:
            return schema_version(conn, loc.schema) is not None
        finally:
            conn.close()
    return (Path(location) / "memory.sqlite").exists()
