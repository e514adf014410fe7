"""Schema 3 -> 4: documents identified by their source, and the history of the versions that left the memory.

Runs inside the caller's transaction with foreign keys off (``documents`` is rebuilt, because SQLite cannot drop
the ``UNIQUE`` constraint of ``documents.sha256``; ``nodes.doc_id`` keeps referring to it by name):

* ``documents``: rebuilt with the same rows and ids, ``sha256`` no longer UNIQUE (an index instead), and two new
  columns: ``source_key`` (NULL for every existing document: a memory written before schema 4 has no identities;
  the first ``gemrag index`` of a file whose text or path matches such a document adopts it, see
  :mod:`gemrag.memory.sources`) and ``version`` (1);
* a new table ``document_versions`` (empty).

In PostgreSQL terms the same change is ``ALTER TABLE documents DROP CONSTRAINT <its sha256 unique constraint>,
ADD COLUMN source_key TEXT UNIQUE, ADD COLUMN version INTEGER NOT NULL DEFAULT 1`` plus the new index and table
of :data:`gemrag.store.schema.SCHEMA`.
"""

from __future__ import annotations

import sqlite3

from gemrag.store.sqlite.schema import SCHEMA

DOCUMENTS_V4 = """CREATE TABLE documents_v4 (
    id INTEGER PRIMARY KEY, source TEXT NOT NULL, sha256 TEXT NOT NULL, title TEXT NOT NULL,
    text TEXT NOT NULL, n_chars INTEGER NOT NULL, added_at REAL NOT NULL, chunked INTEGER NOT NULL DEFAULT 0,
    source_key TEXT UNIQUE, version INTEGER NOT NULL DEFAULT 1)"""

_COLUMNS = "id, source, sha256, title, text, n_chars, added_at, chunked"


def upgrade_3_to_4(conn: sqlite3.Connection) -> None:
    """Schema 3 -> 4 inside the caller's transaction (foreign keys must be off; see the module docstring)."""
    columns = {str(r[1]) for r in conn.execute("PRAGMA table_info(documents)")}
    if "source_key" not in columns:
        conn.execute("DROP TABLE IF EXISTS documents_v4")
        conn.execute(DOCUMENTS_V4)
        conn.execute(f"INSERT INTO documents_v4({_COLUMNS}) SELECT {_COLUMNS} FROM documents")
        conn.execute("DROP TABLE documents")
        conn.execute("ALTER TABLE documents_v4 RENAME TO documents")
    for statement in SCHEMA.split(";"):  # the new index and table (CREATE ... IF NOT EXISTS)
        if statement.strip():
            conn.execute(statement)
