"""SQLite store of one memory directory.

Tables (see :mod:`gemrag.store.schema`): ``meta`` (models, parameters, schema version), ``documents``,
``nodes`` (chunks, and nodes a strategy derived in one build generation), ``questions`` (utility questions),
``embeddings`` (float32 vectors, by text hash), ``edges`` (per strategy), ``llm_cache``, ``usage``,
``failures`` and ``builds`` (each strategy's published manifest). A strategy's dense arrays live beside the
database as generation-named ``.npy`` files, published atomically (:mod:`gemrag.store.publish`); the model
caches are in :mod:`gemrag.store.caches`, the rows every store shares in :mod:`gemrag.store.rows`.

Every write runs inside a transaction (``with store.transaction():``), so an interrupted build leaves the
store as it was after the last completed step; nothing is half-written. Reads that must agree with each other
run inside :meth:`SqliteDatabase.snapshot` (one read transaction: a concurrent publish is either fully visible or not).

A store opened with ``readonly=True`` writes nothing: structural writes raise
:class:`~gemrag.errors.ReadOnlyMemoryError`, while cache and log writes (LLM answers, embeddings, usage rows,
failures) are skipped, so retrieval works on a memory in a read-only directory.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, Literal

from gemrag.errors import GemragError, ReadOnlyMemoryError
from gemrag.store.artifacts import ArtifactRows
from gemrag.store.base import MemoryStore
from gemrag.store.caches import CacheRows
from gemrag.store.documents import DocumentRows
from gemrag.store.files import FileArrays
from gemrag.store.hnsw import HnswSearch
from gemrag.store.lock import BuildLock
from gemrag.store.parts import StoreParts
from gemrag.store.records import NodeRecord
from gemrag.store.rows import SqlRows, sha256_text
from gemrag.store.schema import DEFAULT_BUSY_TIMEOUT, SCHEMA_VERSION
from gemrag.store.sqlite.connection import open_connection, translate
from gemrag.store.sqlite.erase import SqliteEraseMixin
from gemrag.store.sqlite.migrations import ensure_schema, schema_version

__all__ = ["NodeRecord", "SqliteDatabase", "Store", "sha256_text", "sqlite_parts"]


class SqliteDatabase(SqliteEraseMixin):
    """The database part of a SQLite memory (:class:`gemrag.store.parts.Database`): ``memory.sqlite`` in a memory
    directory, its transactions, snapshots and physical erase; also its build-lock part (``<directory>/build.lock``).

    Args:
        directory: the memory directory; created when missing (unless ``readonly``).
        readonly: open without writing anything (see the module docstring).
        busy_timeout: seconds to wait for another connection's write lock before
            :class:`~gemrag.errors.DatabaseLockedError`.

    Raises:
        GemragError: the directory is not a gemrag memory (a file, not a database, a newer schema; read-only:
            missing, or an older schema that must be upgraded by a writable open first).
    """

    def __init__(
        self, directory: str | Path, *, readonly: bool = False, busy_timeout: float = DEFAULT_BUSY_TIMEOUT
    ) -> None:
        self.directory = Path(directory)
        self.readonly = readonly
        self.busy_timeout = busy_timeout
        if self.directory.exists() and not self.directory.is_dir():
            raise GemragError(f"{self.directory} exists and is not a directory")
        if not readonly:
            self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / "memory.sqlite"
        self._lock = threading.RLock()
        self._depth = 0
        self._snapshot = False
        self._deferred: list[Callable[[], None]] = []
        self.conn = open_connection(self.path, readonly=readonly, busy_timeout=busy_timeout)
        try:
            if readonly:
                found = schema_version(self.conn)
                if found != SCHEMA_VERSION:
                    raise GemragError(
                        f"{self.directory} uses schema {found} of an older gemrag; open it once with write access "
                        "(e.g. `gemrag info`) to upgrade it"
                        if found is not None and found < SCHEMA_VERSION
                        else f"{self.directory} is not a gemrag memory this version can read (schema {found})"
                    )
            else:
                ensure_schema(self.conn, self.directory)
        except BaseException as exc:
            self.conn.close()
            if isinstance(exc, sqlite3.Error):
                raise translate(exc, self.path, busy_timeout) from exc
            raise

    def close(self) -> None:
        """Run deferred cache writes and close the database connection."""
        self._flush_deferred()
        self.conn.close()

    @property
    def dialect(self) -> Literal["sqlite"]:
        """``"sqlite"``: this database runs SQLite's SQL (:attr:`gemrag.store.parts.Database.dialect`)."""
        return "sqlite"

    @property
    def location(self) -> str:
        """The memory directory, for messages."""
        return str(self.directory)

    def retrieval(self, embeddings: tuple[str, Sequence[str]] | None = None) -> AbstractContextManager[None]:
        """The scope of one retrieval's reads (:meth:`gemrag.memory.Memory.retrieve`): nothing here, where a read
        costs no round trip (PostgreSQL makes it a snapshot that batches them; ``embeddings`` is ignored)."""
        return contextlib.nullcontext()

    def build_lock(self) -> BuildLock:
        """A new (not yet acquired) build lock of this memory: ``<directory>/build.lock``."""
        return BuildLock(self.directory)

    @contextmanager
    def durable(self) -> Iterator[None]:
        """``synchronous=FULL`` for the block: a publishing transaction's commit is on disk before older arrays are
        removed (``NORMAL`` again afterwards)."""
        with self._lock:
            self.conn.execute("PRAGMA synchronous=FULL")
            try:
                yield
            finally:
                self.conn.execute("PRAGMA synchronous=NORMAL")

    # -- transactions -------------------------------------------------------------------------------
    @property
    def in_snapshot(self) -> bool:
        """True inside :meth:`snapshot` (in the thread that holds it)."""
        return self._snapshot

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """A (nestable) write transaction: all or nothing, committed on exit, rolled back on error.

        Raises:
            ReadOnlyMemoryError: the store is read-only.
            DatabaseLockedError: another connection kept the write lock longer than the busy timeout.
            RuntimeError: called inside :meth:`snapshot` (reads there must not write).
        """
        if self.readonly:
            raise ReadOnlyMemoryError(
                f"the memory {self.directory} is open read-only; adding documents and indexing need write access"
            )
        with self._lock:
            if self._snapshot:
                raise RuntimeError("a write inside a read snapshot")
            outer = self._depth == 0
            if outer:
                try:
                    self.conn.execute("BEGIN IMMEDIATE")
                except sqlite3.Error as exc:
                    raise translate(exc, self.path, self.busy_timeout) from exc
            self._depth += 1
            try:
                yield self.conn
            except BaseException as exc:
                self._depth -= 1
                if outer:
                    self._rollback()
                    if isinstance(exc, sqlite3.Error):
                        raise translate(exc, self.path, self.busy_timeout) from exc
                raise
            self._depth -= 1
            if outer:
                try:
                    self.conn.execute("COMMIT")
                except sqlite3.Error as exc:
                    self._rollback()
                    raise translate(exc, self.path, self.busy_timeout) from exc

    def _rollback(self) -> None:
        with contextlib.suppress(sqlite3.Error):  # SQLite may have rolled back already (e.g. after SQLITE_FULL)
            self.conn.execute("ROLLBACK")

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """One read transaction: every read inside sees the same committed state (keep it short).

        Nested in a transaction or another snapshot, it adds nothing. Cache and log writes made inside are
        deferred to its end; structural writes raise RuntimeError.
        """
        with self._lock:
            if self._depth or self._snapshot:
                yield
                return
            try:
                self.conn.execute("BEGIN")
            except sqlite3.Error as exc:
                raise translate(exc, self.path, self.busy_timeout) from exc
            self._snapshot = True
            try:
                yield
            finally:
                self._snapshot = False
                try:
                    self.conn.execute("COMMIT")
                except sqlite3.Error:
                    self._rollback()
        self._flush_deferred()

    def _best_effort(self, write: Callable[[], None]) -> None:
        """A cache or log write: skipped when read-only, deferred inside a snapshot."""
        if self.readonly:
            return
        with self._lock:
            if self._snapshot:
                self._deferred.append(write)
                return
        write()

    def _flush_deferred(self) -> None:
        with self._lock:
            pending, self._deferred = self._deferred, []
        for write in pending:
            with contextlib.suppress(GemragError):  # a cache entry or log row, not worth failing a read for
                write()

    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            try:
                return self.conn.execute(sql, args).fetchall()
            except sqlite3.OperationalError as exc:
                raise translate(exc, self.path, self.busy_timeout) from exc


def sqlite_parts(
    directory: str | Path,
    *,
    readonly: bool = False,
    busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
    arrays_directory: str | Path | None = None,
) -> StoreParts:
    """The parts of a SQLite memory: its database (:class:`SqliteDatabase`, also the build lock), the rows,
    documents, artefacts and caches in it, the build arrays as files (in the memory directory, or in
    ``arrays_directory``) and the vector search with HNSW artefacts (:class:`~gemrag.store.hnsw.HnswSearch`).

    Raises:
        GemragError: as :class:`SqliteDatabase`.
    """
    parts = StoreParts(SqliteDatabase(directory, readonly=readonly, busy_timeout=busy_timeout))
    parts.rows, parts.documents = SqlRows(parts), DocumentRows(parts)
    parts.artifacts, parts.caches = ArtifactRows(parts), CacheRows(parts)
    parts.arrays = FileArrays(parts, arrays_directory if arrays_directory is not None else directory)
    parts.vectors = HnswSearch(parts)
    return parts


class Store(MemoryStore):
    """A memory directory: its SQLite database plus its published arrays, as files in the same directory (the parts
    of :func:`sqlite_parts`; arguments and errors: those of :class:`SqliteDatabase`)."""

    def __init__(
        self, directory: str | Path, *, readonly: bool = False, busy_timeout: float = DEFAULT_BUSY_TIMEOUT
    ) -> None:
        super().__init__(sqlite_parts(directory, readonly=readonly, busy_timeout=busy_timeout))
