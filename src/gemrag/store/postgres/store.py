"""PostgreSQL store: one memory = one schema of a PostgreSQL database (``postgresql://...?schema=NAME``).

Everything the SQLite memory keeps in its directory is a table here (:mod:`gemrag.store.postgres.schema`): documents,
chunks and derived nodes, questions, edges, artefacts, the LLM and embedding caches, usage, failures, the builds'
manifests and their arrays (:mod:`gemrag.store.postgres.generations`). The shared SQL runs through
:func:`gemrag.store.postgres.dialect.to_postgres`. The build lock is a PostgreSQL advisory lock
(:mod:`gemrag.store.postgres.lock`).

Connections come from a ``psycopg_pool.ConnectionPool`` (``pool_size`` connections; 1 for the command line, more
for ``gemrag serve``, whose request threads then read in parallel). A thread inside :meth:`transaction` or
:meth:`snapshot` keeps one connection until the outermost block ends; reads outside them borrow one per query.
Transactions: writes run in ``READ COMMITTED`` transactions (the build lock keeps builders apart; readers'
cache and usage writes are upserts and appends); :meth:`snapshot` is a ``REPEATABLE READ READ ONLY``
transaction, so a retrieval reads one published generation even while another machine publishes the next.

``readonly=True`` opens the memory with read-only transactions: structural writes raise
:class:`~gemrag.errors.ReadOnlyMemoryError`, cache and log writes are skipped.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from gemrag.errors import DatabaseLockedError, GemragError, ReadOnlyMemoryError
from gemrag.store.postgres.bulk import COPY_FROM, bulk_insert
from gemrag.store.postgres.connect import PgLocation, connect, options, require_psycopg
from gemrag.store.postgres.dialect import returns_id, to_postgres
from gemrag.store.postgres.erase import PgEraseMixin
from gemrag.store.postgres.extension import register_vector_types, setup_pgvector
from gemrag.store.postgres.lock import PgBuildLock
from gemrag.store.postgres.schema import ensure_schema, schema_version
from gemrag.store.postgres.snapshot import PgSnapshotReads
from gemrag.store.schema import DEFAULT_BUSY_TIMEOUT, SCHEMA_VERSION


class _Cursor:
    """A psycopg cursor with SQLite's ``lastrowid`` (the id a ``RETURNING id`` gave)."""

    def __init__(self, cursor: Any, lastrowid: int | None = None) -> None:
        self._cursor, self.lastrowid = cursor, lastrowid

    @property
    def rowcount(self) -> int:
        return int(self._cursor.rowcount)

    def fetchone(self) -> Any:
        return self._cursor.fetchone()

    def fetchall(self) -> list[Any]:
        return list(self._cursor.fetchall())


class _Count:
    """What a bulk ``executemany`` returns: the number of rows it changed."""

    lastrowid = None

    def __init__(self, rowcount: int) -> None:
        self.rowcount = rowcount

    def fetchone(self) -> Any:
        """None: a bulk statement returns no row."""
        return None

    def fetchall(self) -> list[Any]:
        """No rows: a bulk statement returns none."""
        return []


class PgConnection:
    """What ``with store.transaction() as c`` yields on PostgreSQL: ``execute`` / ``executemany`` of the store's
    SQLite-dialect SQL (translated by :func:`~gemrag.store.postgres.dialect.to_postgres`)."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def execute(self, sql: str, args: Sequence[Any] = ()) -> _Cursor:
        """Run one statement; an ``INSERT`` into a table with a generated id sets ``lastrowid``."""
        query = to_postgres(sql)
        if returns_id(sql):
            cur = self.raw.execute(query + " RETURNING id", tuple(args))
            return _Cursor(cur, int(cur.fetchone()[0]))
        return _Cursor(self.raw.execute(query, tuple(args)))

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> _Cursor | _Count:
        """Run one statement for every row (nothing for no rows); an ``INSERT`` of :data:`~gemrag.store.postgres.bulk.
        COPY_FROM` rows or more is sent as one ``COPY`` (:func:`gemrag.store.postgres.bulk.bulk_insert`)."""
        batch = [tuple(r) for r in rows]
        if len(batch) >= COPY_FROM:
            done = bulk_insert(self.raw, sql, batch)
            if done is not None:
                return _Count(done)
        cur = self.raw.cursor()
        if batch:
            cur.executemany(to_postgres(sql), batch)
        return _Cursor(cur)


SNAPSHOT_BEGIN = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
"""What starts a :meth:`PgDatabase.snapshot` (sent in one round trip with the snapshot's first statement)."""


class PgDatabase(PgSnapshotReads, PgEraseMixin):
    """The database part of a memory in a PostgreSQL schema (:class:`gemrag.store.parts.Database`): its connection
    pool, transactions, snapshots and physical erase; also its build-lock part (an advisory lock).

    Args:
        url: ``postgresql://user[:password]@host[:port]/database?schema=NAME`` (see
            :mod:`gemrag.store.postgres.connect`).
        readonly: open without writing anything (see the module docstring).
        busy_timeout: seconds a write waits for rows another transaction holds (``lock_timeout``) before
            :class:`~gemrag.errors.DatabaseLockedError`.
        pool_size: connections in the pool (>= 1).

    Raises:
        GemragError: psycopg is missing, the server cannot be reached, the URL is malformed, the schema holds a
            memory of a newer gemrag, or (read-only) it holds no memory or an older one to upgrade first.
    """

    def __init__(
        self, url: str, *, readonly: bool = False, busy_timeout: float = DEFAULT_BUSY_TIMEOUT, pool_size: int = 1
    ) -> None:
        psycopg = require_psycopg()
        loc = PgLocation.parse(url)
        self.url, self.conninfo, self.schema, self._display = url, loc.conninfo, loc.schema, loc.display
        self.readonly = readonly
        self.busy_timeout = busy_timeout
        self.hnsw_above, self.ef_search = loc.hnsw_above, loc.ef_search
        self._local = threading.local()
        self._deferred: list[Callable[[], None]] = []
        self._deferred_lock = threading.Lock()
        setup = connect(self.conninfo, self.schema, self._display, lock_timeout=max(busy_timeout, 30.0))
        try:
            if readonly:
                found = schema_version(setup, self.schema)
                if found != SCHEMA_VERSION:
                    raise GemragError(
                        f"{self._display} holds no gemrag memory (open it once with write access to create it)"
                        if found is None
                        else f"{self._display} uses schema {found}; open it once with write access to upgrade it"
                        if found < SCHEMA_VERSION
                        else f"{self._display} is not a gemrag memory this version can read (schema {found})"
                    )
            else:
                ensure_schema(setup, self.schema)
            self.pgvector = setup_pgvector(setup, self._display, create=not readonly)
        except psycopg.Error as exc:
            raise GemragError(f"cannot set up the PostgreSQL memory {self._display}: {exc}") from exc
        finally:
            setup.close()
        from psycopg_pool import ConnectionPool

        self._pool = ConnectionPool(
            self.conninfo,
            min_size=1,
            max_size=max(1, pool_size),
            kwargs={
                "autocommit": True,
                "options": options(self.schema, readonly=readonly, lock_timeout=busy_timeout, ef_search=self.ef_search),
                "application_name": "gemrag",
            },
            open=True,
            name=f"gemrag-{self.schema}",
            configure=lambda conn: register_vector_types(conn, self.pgvector),
        )
        self._scratch: Path | None = None

    def close(self) -> None:
        """Run deferred cache writes, close the pool and remove the scratch directory."""
        self._flush_deferred()
        self._pool.close()
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)

    @property
    def scratch(self) -> Path:
        """A local temporary directory for artefact directories (bm25s' index), made on first use, removed on
        close."""
        if self._scratch is None:
            self._scratch = Path(tempfile.mkdtemp(prefix=f"gemrag-pg-{self.schema}-"))
        return self._scratch

    @property
    def has_scratch(self) -> bool:
        """True when :attr:`scratch` was made (something may be left in it)."""
        return self._scratch is not None

    @property
    def dialect(self) -> Literal["postgres"]:
        """``"postgres"``: this database runs PostgreSQL's SQL (:attr:`gemrag.store.parts.Database.dialect`; the
        store's shared statements are translated by :func:`gemrag.store.postgres.dialect.to_postgres`)."""
        return "postgres"

    @property
    def location(self) -> str:
        """The memory's URL without its password."""
        return self._display

    def build_lock(self) -> PgBuildLock:
        """A new (not yet acquired) advisory build lock of this memory."""
        return PgBuildLock(self.conninfo, self.schema, self._display)

    # -- connections and transactions --------------------------------------------------------------
    def _state(self) -> threading.local:
        local = self._local
        if not hasattr(local, "depth"):
            local.depth, local.snapshot, local.conn, local.lease = 0, False, None, None
            local.begin, local.rows = False, None  # a snapshot's BEGIN not yet sent; what it read (PgSnapshotReads)
            local.retrieval = False  # inside retrieval(): the hits' rows read ends the snapshot's transaction
        return local

    @property
    def in_snapshot(self) -> bool:
        """True inside :meth:`snapshot` (in the thread that holds it)."""
        return bool(self._state().snapshot)

    def _lease(self) -> Any:
        state = self._state()
        lease = self._pool.connection(timeout=max(self.busy_timeout, 30.0))
        state.conn, state.lease = lease.__enter__(), lease
        return state.conn

    def _unlease(self, exc: BaseException | None = None) -> None:
        state = self._state()
        lease, state.conn, state.lease = state.lease, None, None
        if lease is not None:
            lease.__exit__(type(exc) if exc else None, exc, None)

    def _translate(self, exc: Exception) -> Exception:
        psycopg = require_psycopg()
        errors = psycopg.errors
        if isinstance(exc, (errors.LockNotAvailable, errors.QueryCanceled, errors.DeadlockDetected)):
            return DatabaseLockedError(
                f"the memory {self._display} stayed locked by another process for more than "
                f"{self.busy_timeout:g} s ({str(exc).strip()}); retry when it has finished"
            )
        if isinstance(exc, errors.ReadOnlySqlTransaction):
            return ReadOnlyMemoryError(f"the memory {self._display} is open read-only ({str(exc).strip()})")
        if isinstance(exc, psycopg.OperationalError):
            return GemragError(f"the PostgreSQL memory {self._display} failed: {str(exc).strip()}")
        return exc

    @contextmanager
    def transaction(self) -> Iterator[PgConnection]:
        """A (nestable) write transaction: all or nothing, committed on exit, rolled back on error.

        Raises:
            ReadOnlyMemoryError: the store is read-only.
            DatabaseLockedError: rows another transaction holds stayed locked longer than the busy timeout.
            RuntimeError: called inside :meth:`snapshot`.
        """
        if self.readonly:
            raise ReadOnlyMemoryError(
                f"the memory {self._display} is open read-only; adding documents and indexing need write access"
            )
        psycopg = require_psycopg()
        state = self._state()
        if state.snapshot:
            raise RuntimeError("a write inside a read snapshot")
        outer = state.depth == 0
        if outer:
            conn = self._lease()
            try:
                conn.execute("BEGIN")
            except psycopg.Error as exc:
                self._unlease(exc)
                raise self._translate(exc) from exc
        state.depth += 1
        try:
            yield PgConnection(state.conn)
        except BaseException as exc:
            state.depth -= 1
            if outer:
                with contextlib.suppress(psycopg.Error):
                    state.conn.execute("ROLLBACK")
                self._unlease()
                if isinstance(exc, psycopg.Error):
                    raise self._translate(exc) from exc
            raise
        state.depth -= 1
        if outer:
            try:
                state.conn.execute("COMMIT")
            except psycopg.Error as exc:
                with contextlib.suppress(psycopg.Error):
                    state.conn.execute("ROLLBACK")
                raise self._translate(exc) from exc
            finally:
                self._unlease()

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """One ``REPEATABLE READ`` read-only transaction: every read inside sees the same committed state.

        The transaction starts with the first statement inside, in the same round trip (a snapshot that reads
        nothing sends nothing), and what it read of the state and of the hits' rows is kept until it ends
        (:mod:`gemrag.store.postgres.reads`). Nested in a transaction or another snapshot, it adds nothing. Cache and
        log writes made inside are deferred to its end; structural writes raise RuntimeError.
        """
        psycopg = require_psycopg()
        state = self._state()
        if state.depth or state.snapshot:
            yield
            return
        conn = self._lease()
        state.snapshot, state.begin, state.rows = True, True, None
        try:
            yield
        finally:
            begun = not state.begin
            state.snapshot, state.begin, state.rows = False, False, None
            if begun:
                with contextlib.suppress(psycopg.Error):
                    conn.execute("COMMIT")
            self._unlease()
        self._flush_deferred()

    @contextmanager
    def retrieval(self, embeddings: tuple[str, Sequence[str]] | None = None) -> Iterator[None]:
        """One retrieval's reads: a :meth:`snapshot` whose state, hits' rows and provenance are read in a few
        batched statements (:mod:`gemrag.store.postgres.reads`); the read of the hits' rows, a retrieval's last, commits
        the transaction in its own round trip (a read after it starts a new one).

        Args:
            embeddings: ``(model id, cache keys)`` of the embeddings the retrieval will look up (the question's),
                read in the round trip of the state.
        """
        state = self._state()
        if state.depth or state.snapshot:
            yield
            return
        with self.snapshot():
            state.retrieval = True
            self._prefetch(embeddings)
            try:
                yield
            finally:
                state.retrieval = False

    def restart_snapshot(self) -> None:
        """End the current snapshot's transaction (rolled back: it wrote nothing) and start the next statement in
        a new one, with what it had read forgotten: after a statement failed inside it, or to see a newer state."""
        state = self._state()
        if not state.snapshot or state.begin:
            return
        with contextlib.suppress(require_psycopg().Error):
            state.conn.execute("ROLLBACK")
        state.begin, state.rows = True, None

    def _in_snapshot_transaction(self) -> bool:
        """True inside a snapshot whose transaction has begun (a failed statement has aborted it)."""
        state = self._state()
        return bool(state.snapshot) and not state.begin

    def _begin(self, conn: Any) -> bool:
        """True when ``conn`` is the thread's snapshot connection whose ``BEGIN`` is still to be sent (and marks it
        sent: the caller sends it with its statement)."""
        state = self._state()
        if state.begin and state.conn is conn:
            state.begin = False
            return True
        return False

    def _best_effort(self, write: Callable[[], None]) -> None:
        """A cache or log write: skipped when read-only, deferred inside a snapshot."""
        if self.readonly:
            return
        if self._state().snapshot:
            with self._deferred_lock:
                self._deferred.append(write)
            return
        write()

    def _flush_deferred(self) -> None:
        with self._deferred_lock:
            pending, self._deferred = self._deferred, []
        for write in pending:
            with contextlib.suppress(GemragError):  # a cache entry or log row, not worth failing a read for
                write()

    @contextmanager
    def _connection(self) -> Iterator[Any]:
        """The thread's connection (its snapshot's or transaction's, the ``BEGIN`` of a snapshot sent), or one
        borrowed from the pool for the block."""
        state = self._state()
        if state.conn is not None:
            if self._begin(state.conn):
                state.conn.execute(SNAPSHOT_BEGIN)
            yield state.conn
            return
        with self._pool.connection(timeout=max(self.busy_timeout, 30.0)) as conn:
            yield conn

    def _run(
        self, sql: str, args: Any, *, binary: bool = False, prepare: bool | None = None, last: bool = False
    ) -> list[Any]:
        """The rows of one PostgreSQL statement (``%s`` / ``%(name)s`` parameters), with a snapshot's pending
        ``BEGIN`` in the same round trip (psycopg's pipeline mode); ``last`` inside :meth:`retrieval`: the
        snapshot's ``COMMIT`` too (the next read begins a new transaction)."""
        psycopg = require_psycopg()
        state = self._state()
        commit = last and state.retrieval and state.snapshot
        try:
            begin = state.conn is not None and self._begin(state.conn)
            if begin or commit:
                conn = state.conn
                cur = conn.cursor(binary=binary)
                with conn.pipeline():
                    if begin:
                        conn.execute(SNAPSHOT_BEGIN)
                    cur.execute(sql, args, prepare=prepare)
                    if commit:
                        conn.execute("COMMIT")
                if commit:
                    state.begin = True
                    if state.rows is not None:
                        state.rows.committed = True
                return list(cur.fetchall())
            with self._connection() as conn:
                return list(conn.cursor(binary=binary).execute(sql, args, prepare=prepare).fetchall())
        except psycopg.Error as exc:
            raise self._translate(exc) from exc

    def _run_together(self, statements: Sequence[tuple[str, Any]]) -> list[list[Any]]:
        """The rows of several prepared PostgreSQL statements sent in one round trip (psycopg's pipeline mode) on
        the thread's snapshot connection, after its pending ``BEGIN``.

        Raises:
            RuntimeError: called outside a snapshot.
        """
        psycopg = require_psycopg()
        state = self._state()
        if not state.snapshot or state.conn is None:
            raise RuntimeError("statements sent together need a snapshot")
        conn = state.conn
        try:
            cursors = [conn.cursor() for _ in statements]
            with conn.pipeline():
                if self._begin(conn):
                    conn.execute(SNAPSHOT_BEGIN)
                for cur, (sql, args) in zip(cursors, statements, strict=True):
                    cur.execute(sql, args, prepare=True)
            return [list(cur.fetchall()) for cur in cursors]
        except psycopg.Error as exc:
            raise self._translate(exc) from exc

    def _query(self, sql: str, args: Any = (), *, raw: bool = False, last: bool = False) -> list[Any]:
        """Rows of a statement in the store's SQLite dialect (``raw``: already PostgreSQL's, prepared on the
        server: a statement of a retrieval's hot path; ``args`` may then be a mapping; ``last``: see :meth:`_run`)."""
        if raw:
            return self._run(sql, args, prepare=True, last=last)
        return self._run(to_postgres(sql), tuple(args))

    def _fetch_binary(self, sql: str, args: Sequence[Any]) -> list[Any]:
        """Rows of a query fetched in binary format (``bytea`` without hex decoding)."""
        return self._run(to_postgres(sql), tuple(args), binary=True)
