"""The physical erase of a PostgreSQL memory (the backend's part of :class:`gemrag.store.parts.Erasing`).

A deleted or updated row stays in its table's pages as a dead row version until a vacuum; a plain ``VACUUM`` only
marks the space reusable, so its bytes stay on disk. An erase runs ``VACUUM (FULL)`` on every table of the memory's
schema that can hold text (all but ``usage``): each is rewritten into new files holding the live rows alone, with
its indexes and TOAST table, and the old files are removed. ``VACUUM`` cannot run inside a transaction, so it runs
on one of the pool's autocommit connections; it takes an exclusive lock on each table in turn, waiting at most the
store's lock timeout for readers (a table still locked then is reported and left for the next erase). The
artefacts a build unpacked into this process's scratch directory (bm25s' index) are removed for every generation
no longer published. PostgreSQL's own write-ahead log and backups are the server's, outside a memory's reach.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, Protocol

from gemrag.store import publish
from gemrag.store.erase import Erasure
from gemrag.store.postgres.connect import require_psycopg

SKIPPED = frozenset({"usage"})
"""Tables an erase does not rewrite: they hold no text (token counts and times)."""


class PgEraseHost(Protocol):
    """What :class:`PgEraseMixin` reads of the class it is mixed into
    (:class:`gemrag.store.postgres.store.PgDatabase`): its schema, scratch directory, per-thread transaction state,
    pooled connections and queries."""

    schema: str
    _scratch: Path | None

    def _state(self) -> threading.local: ...

    def _connection(self) -> AbstractContextManager[Any]: ...

    def _query(self, sql: str, args: Any = ()) -> list[Any]: ...


class PgEraseMixin:
    """:meth:`secure_deletes` and :meth:`erase_physically` of the database part
    :class:`gemrag.store.postgres.store.PgDatabase` (whose members they use: :class:`PgEraseHost`)."""

    def secure_deletes(self) -> AbstractContextManager[None]:
        """A scope whose deletes overwrite what they free: nothing to do on PostgreSQL, whose dead rows
        :meth:`erase_physically` removes."""
        return nullcontext()

    def erase_physically(self: PgEraseHost) -> Erasure:
        """``VACUUM (FULL)`` of the memory's tables, then the scratch copies of unpublished generations removed
        (module docstring); the build lock must be held.

        Returns:
            The schema's size (tables, indexes, TOAST) before and after; ``complete`` False when a table stayed
            locked (``detail`` names them).

        Raises:
            RuntimeError: called inside a transaction or snapshot.
        """
        psycopg = require_psycopg()
        from psycopg import sql

        state = self._state()
        if state.depth or state.snapshot:
            raise RuntimeError("VACUUM cannot run inside a transaction")
        with self._connection() as conn:
            tables = [
                str(r[0])
                for r in conn.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname = %s ORDER BY tablename", (self.schema,)
                ).fetchall()
            ]
            before = _schema_bytes(conn, self.schema)
            locked = []
            for table in (t for t in tables if t not in SKIPPED):
                try:
                    conn.execute(sql.SQL("VACUUM (FULL) {}").format(sql.Identifier(self.schema, table)))
                except psycopg.Error:
                    locked.append(table)
            after = _schema_bytes(conn, self.schema)
        removed = sum(1 for _ in _remove_unpublished_copies(self))
        vacuumed = len([t for t in tables if t not in SKIPPED]) - len(locked)
        detail = f"VACUUM (FULL) of {vacuumed} tables"
        if locked:
            detail += (
                f"; {', '.join(locked)} of schema {self.schema} stayed locked by other sessions: run the erase again"
            )
        return Erasure(not locked, before, after, removed, detail)


def _schema_bytes(conn: Any, schema: str) -> int:
    """The size in bytes of ``schema``'s tables with their indexes and TOAST tables."""
    row = conn.execute(
        "SELECT COALESCE(SUM(pg_total_relation_size(format('%%I.%%I', schemaname, tablename))), 0)"
        " FROM pg_tables WHERE schemaname = %s",
        (schema,),
    ).fetchone()
    return int(row[0])


def _remove_unpublished_copies(db: PgEraseHost) -> Iterator[Path]:
    """Remove (and yield) the artefacts unpacked in the scratch directory for generations no longer published."""
    if db._scratch is None or not (db._scratch / "published").is_dir():
        return
    published = {f"{s}.g{g}." for s, g in db._query("SELECT strategy, generation FROM builds")}
    for entry in sorted((db._scratch / "published").iterdir()):
        if not any(entry.name.startswith(prefix) for prefix in published):
            publish.remove_path(entry)
            yield entry
