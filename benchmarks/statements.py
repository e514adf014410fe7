"""Counting the SQL statements and PostgreSQL round trips a block of gemrag code sends (for
``store_backends.py``'s "statements per retrieval").

PostgreSQL: every psycopg cursor execution is a statement (a multi-statement string counts once; an
``executemany`` one per row; a ``COPY`` one); a round trip is a statement sent outside a pipeline, or one pipeline
(psycopg's pipeline mode sends its statements together and waits once: a snapshot's ``BEGIN`` with its first read,
an ``executemany``). Transaction control that psycopg sends itself (``conn.transaction()``'s ``SAVEPOINT``) is not
seen; the store uses it only for an exact search of an HNSW-indexed table. SQLite: every statement sqlite3 runs
(its trace callback); SQLite has no round trips (the library reads the file in-process).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


class StatementCounter:
    """Counts, while installed (:meth:`installed`), the statements and round trips of every psycopg connection of
    the process and of the sqlite3 connections handed to :meth:`watch_sqlite`.

    Attributes:
        statements: statements sent so far.
        round_trips: PostgreSQL round trips so far (see the module docstring).
    """

    def __init__(self) -> None:
        self.statements = 0
        self.round_trips = 0
        self._pipelines = 0

    def watch_sqlite(self, conn: Any) -> None:
        """Count the statements of a ``sqlite3.Connection``."""
        conn.set_trace_callback(self._sqlite_statement)

    def _sqlite_statement(self, _sql: str) -> None:
        self.statements += 1

    def _sent(self, statements: int) -> None:
        self.statements += statements
        if not self._pipelines:
            self.round_trips += 1

    @contextmanager
    def installed(self) -> Iterator[StatementCounter]:
        """Patch psycopg's cursor and connection classes to count (restored on exit)."""
        import psycopg

        cursor, connection = psycopg.Cursor, psycopg.Connection
        saved: dict[tuple[type, str], Callable[..., Any]] = {
            (cursor, "execute"): cursor.execute,
            (cursor, "executemany"): cursor.executemany,
            (cursor, "copy"): cursor.copy,
            (connection, "pipeline"): connection.pipeline,
        }
        counter = self

        def execute(cur: Any, query: Any, params: Any = None, **kw: Any) -> Any:
            counter._sent(1)
            return saved[(cursor, "execute")](cur, query, params, **kw)

        def executemany(cur: Any, query: Any, params_seq: Any, **kw: Any) -> Any:
            rows = list(params_seq)
            counter.statements += len(rows)  # its round trip is the pipeline psycopg opens for it
            return saved[(cursor, "executemany")](cur, query, rows, **kw)

        def copy(cur: Any, statement: Any, params: Any = None, **kw: Any) -> Any:
            counter._sent(1)
            return saved[(cursor, "copy")](cur, statement, params, **kw)

        @contextmanager
        def pipeline(conn: Any) -> Iterator[Any]:
            counter._pipelines += 1
            try:
                with saved[(connection, "pipeline")](conn) as p:
                    yield p
            finally:
                counter._pipelines -= 1
                if not counter._pipelines:
                    counter.round_trips += 1

        patches = {"execute": execute, "executemany": executemany, "copy": copy}
        try:
            for name, fn in patches.items():
                setattr(cursor, name, fn)
            connection.pipeline = pipeline  # type: ignore[method-assign]
            yield self
        finally:
            for (cls, name), fn in saved.items():
                setattr(cls, name, fn)
