"""The PostgreSQL half of ``benchmarks/erase_cost.py``: the bulk fill of a PostgreSQL memory's LLM cache and the
sizes of its tables.

:func:`fill_rows` writes the rows ``put_llm`` writes (``llm_cache``, ``llm_entries`` numbered 1 to N in key order
with the identity's sequence moved past them, ``llm_marks``; ``tests/test_benchmark_erase_cost.py`` compares them
on a real server) with psycopg 3's ``COPY ... FROM STDIN`` in one transaction, the marks as one ``INSERT ... SELECT``
sorted by mark with ``llm_marks``'s secondary index dropped and made again after, then ``VACUUM (ANALYZE)`` of the
three tables: what autovacuum does to a table after a large load on a running server (the visibility map an
index-only scan needs, the planner's statistics), done here at once so that the erase timed after it does not race
it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

CACHE_TABLES = ("llm_cache", "llm_entries", "llm_marks")
"""The tables the fill writes."""


def is_postgres(store: Any) -> bool:
    """True for a store in a PostgreSQL schema (its database part names the schema)."""
    return hasattr(store.database, "schema")


def fill_rows(store: Any, n: int, model: str, texts: Sequence[str], marks: Sequence[Sequence[int]]) -> None:
    """Write ``n`` cache entries into the empty LLM cache of a PostgreSQL memory (module docstring): entry ``i`` has
    key ``i`` in 64 hex digits, number ``i + 1``, the response ``texts[i % len(texts)]`` (JSON text) and the marks
    ``marks[i % len(texts)]`` (64-bit ints).

    Raises:
        ValueError: the memory's LLM cache is not empty, or ``texts`` and ``marks`` differ in length.
    """
    from psycopg import sql

    if len(texts) != len(marks) or not texts:
        raise ValueError("fill_rows needs one list of marks per text, and a text")
    schema = store.database.schema
    with store.transaction() as c:
        raw = c.raw
        if raw.execute("SELECT EXISTS (SELECT 1 FROM llm_cache) OR EXISTS (SELECT 1 FROM llm_entries)").fetchone()[0]:
            raise ValueError("fill needs an empty LLM cache")
        raw.execute("SET LOCAL work_mem = '256MB'")  # the sort of the marks; the session's own setting after
        raw.execute("SET LOCAL maintenance_work_mem = '512MB'")  # the index made again
        now = time.time()
        with raw.cursor().copy("COPY llm_cache (key, model, response, created) FROM STDIN") as copy:
            for i in range(n):
                copy.write_row((f"{i:064x}", model, texts[i % len(texts)], now))
        with raw.cursor().copy("COPY llm_entries (id, key) FROM STDIN") as copy:
            for i in range(n):
                copy.write_row((i + 1, f"{i:064x}"))
        raw.execute("SELECT setval(pg_get_serial_sequence('llm_entries', 'id'), %s, true)", (n,))
        raw.execute("CREATE TEMP TABLE passage_marks (passage INTEGER NOT NULL, mark BIGINT NOT NULL) ON COMMIT DROP")
        with raw.cursor().copy("COPY passage_marks (passage, mark) FROM STDIN") as copy:
            for j, ms in enumerate(marks):
                for m in ms:
                    copy.write_row((j, int(m)))
        indexes = raw.execute(
            "SELECT i.relname, pg_get_indexdef(x.indexrelid) FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid"
            " WHERE x.indrelid = %s::regclass AND NOT x.indisprimary",
            (f'"{schema}".llm_marks',),
        ).fetchall()
        for name, _ in indexes:
            raw.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(schema, name)))
        raw.execute(
            "INSERT INTO llm_marks(mark, entry) SELECT p.mark, e.id FROM llm_entries e"
            " JOIN passage_marks p ON p.passage = (e.id - 1) %% %s ORDER BY p.mark, e.id",
            (len(texts),),
        )
        for _, ddl in indexes:
            raw.execute(ddl)
    with store.database._connection() as conn:  # VACUUM runs outside a transaction (an autocommit connection)
        for table in CACHE_TABLES:
            conn.execute(sql.SQL("VACUUM (ANALYZE) {}").format(sql.Identifier(schema, table)))


def table_bytes(store: Any, names: Sequence[str] | None = None) -> int:
    """Bytes of these tables of the memory's schema with their indexes and TOAST tables (None: every table)."""
    rows = store.database._query(
        "SELECT COALESCE(SUM(pg_total_relation_size(format('%I.%I', schemaname, tablename))), 0) FROM pg_tables"
        " WHERE schemaname = ?" + ("" if names is None else f" AND tablename IN ({','.join('?' * len(names))})"),
        (store.database.schema, *(names or ())),
    )
    return int(rows[0][0])


def drop_schema(url: str) -> None:
    """Drop the schema a memory URL names, with its tables and rows."""
    import psycopg
    from psycopg import sql

    from gemrag.store.postgres.connect import PgLocation

    location = PgLocation.parse(url)
    with psycopg.connect(location.conninfo, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(location.schema)))
