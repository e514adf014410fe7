"""Schema 4 -> 5: one document per content (``document_sources``, the further sources of a document).

Runs inside the caller's transaction. Only adds: the table ``document_sources`` (empty: a memory written before
schema 5 holds every source as the ``source_key`` of its own document, which stays valid; documents that already
hold the same text under two sources stay two documents until one of the sources changes) and its index on
``doc_id``. No row changes, no rebuild, no model call.

In PostgreSQL terms the same change is :data:`gemrag.store.postgres.schema.PG_UPGRADES` ``[5]``.
"""

from __future__ import annotations

import sqlite3

from gemrag.store.sqlite.schema import SCHEMA


def upgrade_4_to_5(conn: sqlite3.Connection) -> None:
    """Schema 4 -> 5 inside the caller's transaction (see the module docstring)."""
    for statement in SCHEMA.split(";"):  # the new table and index (CREATE ... IF NOT EXISTS)
        if statement.strip():
            conn.execute(statement)
