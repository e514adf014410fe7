"""Opening a memory's SQLite database (read-write or read-only) and turning SQLite's errors into gemrag's.

Read-write connections use WAL (readers never block the writer nor the writer the readers), ``synchronous
= NORMAL`` and a busy timeout (default 5 s): a connection waits that long for another's write lock and then
fails with :class:`~gemrag.errors.DatabaseLockedError` instead of ``sqlite3.OperationalError: database is
locked``. A write to a database that cannot be written becomes :class:`~gemrag.errors.ReadOnlyMemoryError`.

Read-only connections open the file with the URI ``mode=ro`` (they write nothing, not even the ``-wal`` and
``-shm`` files when those exist). When the directory cannot be written and those files are absent (a memory
closed cleanly and then made read-only), SQLite cannot create its shared-memory index; the database is then
opened with ``immutable=1`` — correct because nobody can change a file in a read-only directory.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

from gemrag.errors import DatabaseLockedError, GemragError, ReadOnlyMemoryError
from gemrag.store.schema import DEFAULT_BUSY_TIMEOUT

WAL_RETRY_SECONDS = 0.02
"""Pause between attempts to switch a database into WAL mode while another connection holds it."""


def open_connection(path: Path, *, readonly: bool, busy_timeout: float = DEFAULT_BUSY_TIMEOUT) -> sqlite3.Connection:
    """A connection to ``path`` in autocommit mode (transactions are explicit), usable from any thread.

    Args:
        path: the ``memory.sqlite`` file (created when missing, unless ``readonly``).
        readonly: open with ``mode=ro`` (falling back to ``immutable=1``, see the module docstring).
        busy_timeout: seconds to wait for a lock (``PRAGMA busy_timeout``).

    Raises:
        GemragError: the file is not an SQLite database (or, read-only, does not exist).
        DatabaseLockedError: setting up WAL mode stayed locked.
        ReadOnlyMemoryError: a read-write open of a database that cannot be written needed to write.
    """
    if readonly:
        if not path.is_file():
            raise GemragError(f"{path.parent} is not a gemrag memory (no memory.sqlite)")
        uri = path.resolve().as_uri() + "?mode=ro"
        try:
            return _probe(_connect(uri, busy_timeout))
        except sqlite3.OperationalError:
            pass  # no -shm/-wal and a read-only directory: the file cannot change, read it as immutable
        except sqlite3.DatabaseError as exc:  # not a database at all
            raise GemragError(f"cannot read {path}: {exc}") from exc
        try:
            return _probe(_connect(uri + "&immutable=1", busy_timeout))
        except sqlite3.DatabaseError as exc:
            raise GemragError(f"cannot read {path}: {exc}") from exc
    conn = _connect(str(path), busy_timeout)
    try:
        _enter_wal(conn, busy_timeout)
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA synchronous=NORMAL")
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise translate(exc, path, busy_timeout) from exc
    return conn


def _enter_wal(conn: sqlite3.Connection, busy_timeout: float) -> None:
    """Switch the database into WAL mode, retrying for up to ``busy_timeout`` seconds.

    Switching a new database (rollback journal) into WAL needs an exclusive lock, and SQLite answers
    ``database is locked`` at once, without calling the busy handler, while another connection holds a lock on
    it: two processes creating the same memory at the same moment met that in about a quarter of tries. Once
    the database is in WAL mode the pragma is a no-op. (A file system without WAL support keeps the old mode,
    as SQLite decides; that is not retried.)

    Raises:
        sqlite3.OperationalError: still locked after ``busy_timeout`` seconds.
    """
    deadline = time.monotonic() + busy_timeout
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            locked = "locked" in str(exc).lower() or "busy" in str(exc).lower()
            if not locked or time.monotonic() >= deadline:
                raise
        time.sleep(WAL_RETRY_SECONDS)


def _connect(target: str, busy_timeout: float) -> sqlite3.Connection:
    uri = target.startswith("file:")
    conn = sqlite3.connect(target, uri=uri, check_same_thread=False, isolation_level=None, timeout=busy_timeout)
    conn.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
    return conn


def _probe(conn: sqlite3.Connection) -> sqlite3.Connection:
    try:
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError:
        conn.close()
        raise
    return conn


def translate(exc: sqlite3.Error, path: Path, busy_timeout: float = DEFAULT_BUSY_TIMEOUT) -> Exception:
    """gemrag's error for an SQLite error, or ``exc`` itself when it has no better name.

    Returns:
        :class:`DatabaseLockedError` for ``database is locked`` / ``busy``, :class:`ReadOnlyMemoryError` for
        ``attempt to write a readonly database``, a :class:`GemragError` for ``file is not a database``.
    """
    message = str(exc).lower()
    if "locked" in message or "busy" in message:
        return DatabaseLockedError(
            f"the memory database {path} stayed locked by another process for more than {busy_timeout:g} s "
            f"({exc}); retry when it has finished"
        )
    if "readonly" in message or "read-only" in message:
        return ReadOnlyMemoryError(
            f"the memory {path.parent} is read-only ({exc}); it can answer questions, but adding documents and "
            "indexing need a writable copy"
        )
    if "not a database" in message or "malformed" in message:
        return GemragError(f"{path} is not a usable gemrag memory ({exc})")
    return exc


def memory_writable(directory: str | Path) -> bool:
    """False when ``directory`` holds a memory that cannot be written (the directory, its database, or an
    existing ``-wal`` / ``-shm`` file); True for a new or writable memory. :meth:`gemrag.memory.Memory.open` opens
    a memory read-only when this is False."""
    directory = Path(directory)
    db = directory / "memory.sqlite"
    if not db.exists():
        return True
    parts = [directory, db] + [
        p for p in (directory / "memory.sqlite-wal", directory / "memory.sqlite-shm") if p.exists()
    ]
    return all(os.access(p, os.W_OK) for p in parts)
