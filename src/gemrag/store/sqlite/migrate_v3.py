"""Schema 2 -> 3: strategies' own node kinds, edge kinds, artefacts, sources and build coverage.

Runs inside the caller's transaction with foreign keys off (``nodes`` is rebuilt without its ``kind`` CHECK
and with ``AUTOINCREMENT`` ids; its dependants keep referring to it by name):

* ``nodes``: rebuilt (same rows, same ids); ``edges``: rebuilt with ``kind`` (GEM's: ``similarity``) and the
  publishing strategy's ``generation``; ``builds`` gain ``params`` / ``models``; new tables ``artifacts``,
  ``node_sources`` (GEM's summary nodes get their members as sources) and ``build_chunks`` (the chunks each
  build covers: the chunk ids in its ``node_ids`` array when it has one, else every chunk).
* RAPTOR's schema-2 build (its tree as JSON in the manifest, summaries with negative virtual ids) is withdrawn:
  the strategy reports "not indexed" and names ``gemrag index`` (its summaries are in the LLM cache, so the
  rebuild costs no LLM call).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np

from gemrag.store.schema import REBUILD_META
from gemrag.store.sqlite.schema import SCHEMA

NODES_V3 = """CREATE TABLE nodes_v3 (
    id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL,
    doc_id INTEGER REFERENCES documents(id) ON DELETE CASCADE, ord INTEGER NOT NULL, text TEXT NOT NULL,
    n_tokens INTEGER NOT NULL, questions_done INTEGER NOT NULL DEFAULT 0, meta TEXT NOT NULL DEFAULT '{}',
    strategy TEXT, generation INTEGER)"""

_COLUMNS = "id, kind, doc_id, ord, text, n_tokens, questions_done, meta, strategy, generation"


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {str(r[1]) for r in conn.execute(f"PRAGMA table_info({table})")}


def upgrade_2_to_3(conn: sqlite3.Connection, directory: Path) -> None:
    """Schema 2 -> 3 inside the caller's transaction (foreign keys must be off; see the module docstring)."""
    nodes_sql = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'nodes'").fetchone()[0]
    if "CHECK" in nodes_sql or "AUTOINCREMENT" not in nodes_sql:
        conn.execute("DROP TABLE IF EXISTS nodes_v3")
        conn.execute(NODES_V3)
        conn.execute(f"INSERT INTO nodes_v3({_COLUMNS}) SELECT {_COLUMNS} FROM nodes")
        conn.execute("DROP TABLE nodes")
        conn.execute("ALTER TABLE nodes_v3 RENAME TO nodes")
    if "kind" not in _columns(conn, "edges"):
        conn.execute("ALTER TABLE edges RENAME TO edges_v2")
    builds = _columns(conn, "builds")
    for column in ("params", "models"):
        if column not in builds:
            conn.execute(f"ALTER TABLE builds ADD COLUMN {column} TEXT NOT NULL DEFAULT '{{}}'")
    for statement in SCHEMA.split(";"):  # new tables and indexes (CREATE ... IF NOT EXISTS)
        if statement.strip():
            conn.execute(statement)
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'edges_v2'").fetchone():
        conn.execute(
            "INSERT OR IGNORE INTO edges(strategy, kind, generation, src, dst, weight)"
            " SELECT e.strategy, CASE WHEN e.strategy = 'gem' THEN 'similarity' ELSE '' END,"
            " COALESCE((SELECT b.generation FROM builds b WHERE b.strategy = e.strategy), 0), e.src, e.dst, e.weight"
            " FROM edges_v2 e"
        )
        conn.execute("DROP TABLE edges_v2")
    conn.execute(  # edges a schema-1 upgrade just copied (no generation yet)
        "UPDATE OR IGNORE edges SET kind = CASE WHEN strategy = 'gem' AND kind = '' THEN 'similarity' ELSE kind END,"
        " generation = COALESCE((SELECT b.generation FROM builds b WHERE b.strategy = edges.strategy), 0)"
        " WHERE generation = 0"
    )
    conn.execute(
        "INSERT OR IGNORE INTO node_sources(node_id, chunk_id)"
        " SELECT n.id, j.value FROM nodes n, json_each(n.meta, '$.members') j"
        " WHERE n.strategy = 'gem' AND n.kind = 'summary' AND j.value IN (SELECT id FROM nodes WHERE kind = 'chunk')"
    )
    if conn.execute("SELECT 1 FROM builds WHERE strategy = 'raptor'").fetchone():
        conn.execute("DELETE FROM builds WHERE strategy = 'raptor'")
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (REBUILD_META,)).fetchone()
        refused = sorted(set(json.loads(row[0]) if row else []) | {"raptor"})
        conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (REBUILD_META, json.dumps(refused)))
    chunks = {int(r[0]) for r in conn.execute("SELECT id FROM nodes WHERE kind = 'chunk'")}
    for strategy, arrays_json in conn.execute("SELECT strategy, arrays FROM builds").fetchall():
        covered = chunks
        files = {d["name"]: d["file"] for d in json.loads(arrays_json)}
        if "node_ids" in files:
            try:
                ids = np.load(directory / files["node_ids"], mmap_mode="r", allow_pickle=False)
                covered = {int(i) for i in ids.tolist()} & chunks
            except (OSError, ValueError):
                covered = chunks
        conn.executemany(
            "INSERT OR IGNORE INTO build_chunks(strategy, chunk_id) VALUES (?, ?)",
            ((strategy, i) for i in sorted(covered)),
        )
