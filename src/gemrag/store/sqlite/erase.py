"""The physical erase of a SQLite memory (the backend's part of :class:`gemrag.store.parts.Erasing`).

SQLite keeps deleted rows' bytes in three places until they are overwritten: the free space of the pages that held
them, the free pages of the file, and the write-ahead log (``memory.sqlite-wal``), whose frames hold earlier copies
of every page written since the last checkpoint (and, being reused rather than shrunk, older frames behind them).
An erase therefore deletes with ``PRAGMA secure_delete = ON`` (freed cells and pages are overwritten with zeros),
then runs ``VACUUM`` (the database is rebuilt into fresh pages and shrunk) and ``PRAGMA wal_checkpoint(TRUNCATE)``
(every page copied into the database, the log cut to zero bytes). The checkpoint waits (up to the busy timeout) for
other connections reading an older snapshot; if they keep reading, the log keeps its frames (and the database file
the old pages they read) and the erase reports itself incomplete, naming the file; run again, it completes. The
``-shm`` file holds only the log's index (page numbers), never row data.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gemrag.store.erase import Erasure
from gemrag.store.sqlite.connection import translate

DATABASE_FILES = ("memory.sqlite", "memory.sqlite-wal")
"""The files of a memory's database whose size a purge reports (the ``-shm`` index holds no row data)."""


class SqliteEraseMixin:
    """:meth:`secure_deletes` and :meth:`erase_physically` of the database part
    :class:`gemrag.store.sqlite.store.SqliteDatabase`."""

    conn: sqlite3.Connection
    directory: Path
    path: Path
    busy_timeout: float
    _lock: threading.RLock
    _depth: int

    @contextmanager
    def secure_deletes(self) -> Iterator[None]:
        """``PRAGMA secure_delete = ON`` for the block: what its deletes free is overwritten with zeros (the
        previous setting is restored after)."""
        with self._lock:
            previous = self.conn.execute("PRAGMA secure_delete").fetchone()[0]
            self.conn.execute("PRAGMA secure_delete = ON")
        try:
            yield
        finally:
            with self._lock:
                self.conn.execute(f"PRAGMA secure_delete = {int(previous)}")

    def erase_physically(self) -> Erasure:
        """``VACUUM``, then ``PRAGMA wal_checkpoint(TRUNCATE)`` (module docstring); the build lock must be held.

        Returns:
            The sizes of ``memory.sqlite`` with its ``-wal`` before and after; ``complete`` False when another
            connection kept the log from being truncated.

        Raises:
            RuntimeError: called inside a transaction. DatabaseLockedError: the database stayed locked.
        """
        before = self._database_bytes()
        with self._lock:
            if self._depth:
                raise RuntimeError("VACUUM cannot run inside a transaction")
            try:
                self.conn.execute("VACUUM")
                busy, _, _ = self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            except sqlite3.Error as exc:
                raise translate(exc, self.path, self.busy_timeout) from exc
        detail = "VACUUM; write-ahead log checkpointed and truncated"
        if busy:
            detail = (
                f"VACUUM; another process is reading {self.path}: the old pages in it and in its write-ahead log "
                f"{self.path}-wal keep removed text until an erase runs while no one reads the memory (run it again)"
            )
        return Erasure(not busy, before, self._database_bytes(), 0, detail)

    def _database_bytes(self) -> int:
        return sum(_size(self.directory / name) for name in DATABASE_FILES)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0
