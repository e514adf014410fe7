"""The SQLite half of ``benchmarks/erase_cost.py``: the bulk fill of a SQLite memory's LLM cache (:func:`fill_rows`)
and the storage of its marks (SQLite's ``dbstat``), against the same marks in schema 7's layout."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

BATCH = 5000
"""Cache entries written per ``executemany``."""

MARK_TABLES = ("llm_marks", "llm_marks_entry", "llm_entries", "sqlite_autoindex_llm_entries_1")
"""The marks' tables and indexes (schema 8)."""


def fill_rows(store: Any, n: int, model: str, texts: list[str], marks: list[list[int]]) -> None:
    """Write the entries of ``erase_cost.fill`` into a SQLite memory (its arguments: those of
    :func:`erase_cost_postgres.fill_rows`): the rows in one transaction, the marks as one
    ``INSERT ... SELECT`` sorted by mark with ``llm_marks``'s secondary index dropped and made again after (sorted
    inserts fill whole pages, as the ``VACUUM`` of every erase leaves them), the write-ahead log checkpointed.

    Raises:
        ValueError: the memory's LLM cache is not empty.
    """
    conn = store.database.conn
    cache_size = conn.execute("PRAGMA cache_size").fetchone()[0]
    conn.execute("PRAGMA cache_size = -262144")  # 256 MiB for the sorts; the connection's own setting again after
    try:
        with store.transaction() as c:
            if c.execute("SELECT EXISTS (SELECT 1 FROM llm_cache) OR EXISTS (SELECT 1 FROM llm_entries)").fetchone()[0]:
                raise ValueError("fill needs an empty LLM cache")
            for first in range(0, n, BATCH):
                now, ids = time.time(), range(first, min(n, first + BATCH))
                rows = [(f"{i:064x}", model, texts[i % len(texts)], now) for i in ids]
                c.executemany("INSERT INTO llm_cache(key, model, response, created) VALUES (?,?,?,?)", rows)
                c.executemany("INSERT INTO llm_entries(id, key) VALUES (?,?)", [(i + 1, f"{i:064x}") for i in ids])
            c.execute(
                "CREATE TEMP TABLE passage_marks (passage INTEGER NOT NULL, mark INTEGER NOT NULL,"
                " PRIMARY KEY (passage, mark)) WITHOUT ROWID"
            )
            c.executemany(
                "INSERT INTO temp.passage_marks VALUES (?,?)", ((j, m) for j, ms in enumerate(marks) for m in ms)
            )
            indexes = c.execute(
                "SELECT name, sql FROM sqlite_master"
                " WHERE type = 'index' AND tbl_name = 'llm_marks' AND sql IS NOT NULL"
            ).fetchall()
            for name, _ in indexes:
                c.execute(f"DROP INDEX {name}")
            c.execute(
                "INSERT INTO llm_marks(mark, entry) SELECT p.mark, e.id FROM llm_entries e"
                " JOIN temp.passage_marks p ON p.passage = (e.id - 1) % ? ORDER BY p.mark, e.id",
                (len(texts),),
            )
            for _, sql in indexes:
                c.execute(sql)
            c.execute("DROP TABLE temp.passage_marks")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.execute(f"PRAGMA cache_size = {int(cache_size)}")


def schema7_bytes(store: Any, scratch: Path) -> int:
    """Bytes the same marks take in schema 7's layout (module docstring), built in a scratch database ``scratch``
    attached beside the memory (the memory's file is left as it was), then deleted."""
    conn = store.database.conn
    conn.execute("ATTACH DATABASE ? AS scratch", (str(scratch),))
    try:
        conn.execute("BEGIN")
        conn.execute(
            "CREATE TABLE scratch.old_marks (mark INTEGER NOT NULL, key TEXT NOT NULL, PRIMARY KEY (mark, key))"
            " WITHOUT ROWID"
        )
        conn.execute("INSERT INTO scratch.old_marks SELECT m.mark, e.key FROM llm_marks m JOIN llm_entries e"
                     " ON e.id = m.entry ORDER BY m.mark, e.key")  # fmt: skip
        conn.execute("INSERT INTO scratch.old_marks SELECT 0, key FROM llm_entries ORDER BY key")
        conn.execute("CREATE INDEX scratch.old_marks_key ON old_marks(key)")
        conn.execute("COMMIT")
        return table_bytes(store, ("old_marks", "old_marks_key"), schema="scratch")
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        conn.execute("DETACH DATABASE scratch")
        scratch.unlink(missing_ok=True)


def table_bytes(store: Any, names: tuple[str, ...], schema: str = "main") -> int:
    """Bytes of the pages of these tables and indexes of the attached database ``schema`` (SQLite's ``dbstat``), 0
    where ``dbstat`` is missing."""
    try:
        rows = store.database._query(
            f"SELECT SUM(pgsize) FROM dbstat(?) WHERE name IN ({','.join('?' * len(names))})", (schema, *names)
        )
    except Exception:  # noqa: BLE001 - a SQLite built without dbstat
        return 0
    return int(rows[0][0] or 0)


def file_bytes(directory: Path) -> int:
    """Bytes of ``memory.sqlite`` with its write-ahead log."""
    return sum(p.stat().st_size for p in directory.iterdir() if p.name.startswith("memory.sqlite"))
