"""The one table list (``gemrag.store.schema.TABLES``) against both schemas (the parts of a store:
``test_store_parts.py``)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from gemrag.store import open_store
from gemrag.store.schema import TABLES
from gemrag.store.sqlite.schema import SCHEMA

PG_ONLY = {"build_arrays", "build_vectors"}
"""The PostgreSQL memory's own tables (a build's arrays and vector tables live beside the rows there)."""


def _sqlite_tables(path: Path) -> dict[str, tuple[list[str], list[str]]]:
    """``{table: (columns in order, primary key columns in key order)}`` of a SQLite database."""
    conn = sqlite3.connect(path)
    try:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        out = {}
        for name in names:
            if name.startswith("sqlite_"):
                continue
            info = conn.execute(f"PRAGMA table_info({name})").fetchall()  # cid, name, type, notnull, default, pk
            key = [r[1] for r in sorted((r for r in info if r[5]), key=lambda r: r[5])]
            out[name] = ([r[1] for r in info], key)
        return out
    finally:
        conn.close()


def _expected() -> dict[str, tuple[list[str], list[str]]]:
    return {t.name: (list(t.columns), list(t.key)) for t in TABLES}


def _same_columns(found: dict[str, tuple[list[str], list[str]]]) -> dict[str, tuple[list[str], list[str]]]:
    """The found tables with their columns in the table list's order (the DDL may order them otherwise), so that a
    missing or extra column still shows."""
    order = {t.name: {c: i for i, c in enumerate(t.columns)} for t in TABLES}
    return {
        name: (sorted(cols, key=lambda c: order.get(name, {}).get(c, len(cols))), key)
        for name, (cols, key) in found.items()
    }


def test_the_table_list_is_the_sqlite_schema(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "fresh.sqlite")
    conn.executescript(SCHEMA)
    conn.close()
    assert _same_columns(_sqlite_tables(tmp_path / "fresh.sqlite")) == _expected()


def test_the_table_list_is_a_new_sqlite_memory(tmp_path: Path) -> None:
    store = open_store(tmp_path / "m")  # the schema as created and upgraded by the store
    store.close()
    assert _same_columns(_sqlite_tables(tmp_path / "m" / "memory.sqlite")) == _expected()


def test_the_table_list_is_the_postgres_schema(postgres_url: str, tmp_path: Path) -> None:
    from backends import drop_schemas, new_schema, schema_url

    schema = new_schema("tables")
    store = open_store(schema_url(postgres_url, schema))
    try:
        rows = store.database._query(
            "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = ?"
            " ORDER BY table_name, ordinal_position",
            (schema,),
        )
        keys = store.database._query(
            "SELECT k.table_name, k.column_name FROM information_schema.table_constraints c"
            " JOIN information_schema.key_column_usage k ON k.constraint_name = c.constraint_name"
            " AND k.table_schema = c.table_schema WHERE c.constraint_type = 'PRIMARY KEY' AND c.table_schema = ?"
            " ORDER BY k.table_name, k.ordinal_position",
            (schema,),
        )
    finally:
        store.close()
        drop_schemas(postgres_url, [schema])
    found: dict[str, tuple[list[str], list[str]]] = {}
    for table, column in rows:
        if not str(table).startswith("vec:"):
            found.setdefault(str(table), ([], []))[0].append(str(column))
    for table, column in keys:
        if str(table) in found:
            found[str(table)][1].append(str(column))
    assert set(found) >= PG_ONLY
    assert _same_columns({t: v for t, v in found.items() if t not in PG_ONLY}) == _expected()


def test_a_table_missing_from_the_list_would_show(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "more.sqlite")
    conn.executescript(SCHEMA + "CREATE TABLE surprise (x INTEGER PRIMARY KEY);")
    conn.close()
    assert _same_columns(_sqlite_tables(tmp_path / "more.sqlite")) != _expected()
