"""Schema 5 -> 6: every chunk records its character span in its document's text (``nodes.span_start``,
``nodes.span_end``; NULL for derived nodes), the span a hit's provenance gives (:class:`gemrag.types.Passage`).

The spans of a memory's existing chunks are found again from the stored texts (:func:`relocate_chunk_spans`, no
model call): each document's chunks, in order, are searched in its text with whitespace runs collapsed
(:func:`gemrag.ingest.spans.locate_chunks`); a chunk not found (made by another chunker from another text) keeps
NULL. The same function places the spans of a document's chunks after its text was replaced
(:meth:`gemrag.store.documents.DocumentRows.place_chunks`: kept chunks move, new ones are inserted).

Both backends run it: SQLite inside :func:`gemrag.store.sqlite.migrations.ensure_schema`'s transaction,
PostgreSQL as a step of :data:`gemrag.store.postgres.schema.PG_UPGRADES` ``[6]`` (``ALTER TABLE nodes ADD COLUMN
...`` then the same filling, with psycopg's ``%s`` placeholders).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from gemrag.ingest.spans import locate_chunks

SPAN_COLUMNS = ("span_start", "span_end")
"""The two columns schema 6 adds to ``nodes`` (``INTEGER``, NULL unless the node is a located chunk)."""


def _executemany(conn: Any) -> Any:
    """``executemany`` of a connection: its own (sqlite3, the store's PostgreSQL wrapper) or a cursor's (psycopg)."""
    return conn.executemany if hasattr(conn, "executemany") else conn.cursor().executemany


def relocate_chunk_spans(conn: Any, doc_ids: Sequence[int] | None = None, *, mark: str = "?") -> int:
    """Set ``span_start``/``span_end`` of the chunks of ``doc_ids`` (None: every document) from their documents'
    current texts, inside the caller's transaction.

    Args:
        conn: a connection whose ``execute(sql, args)`` returns a cursor (sqlite3, psycopg, or the store's
            transaction connection).
        doc_ids: the documents whose chunks are placed (None: all).
        mark: the connection's parameter placeholder (``?``; ``%s`` for a raw psycopg connection).

    Returns:
        How many chunks were located (the others got NULL).
    """
    if doc_ids is None:
        doc_ids = [int(r[0]) for r in conn.execute("SELECT id FROM documents ORDER BY id").fetchall()]
    located = 0
    update = f"UPDATE nodes SET span_start = {mark}, span_end = {mark} WHERE id = {mark}"
    for doc_id in doc_ids:
        row = conn.execute(f"SELECT text FROM documents WHERE id = {mark}", (doc_id,)).fetchone()
        if row is None:
            continue
        chunks = conn.execute(
            f"SELECT id, text FROM nodes WHERE doc_id = {mark} AND kind = 'chunk' ORDER BY ord, id", (doc_id,)
        ).fetchall()
        spans = locate_chunks(str(row[0]), [str(c[1]) for c in chunks])
        rows = [(s[0] if s else None, s[1] if s else None, int(c[0])) for c, s in zip(chunks, spans, strict=True)]
        located += sum(1 for s in spans if s is not None)
        if rows:
            _executemany(conn)(update, rows)
    return located


def upgrade_5_to_6(conn: sqlite3.Connection) -> None:
    """Schema 5 -> 6 inside the caller's transaction (SQLite): the span columns, then every chunk's span."""
    columns = {str(r[1]) for r in conn.execute("PRAGMA table_info(nodes)")}
    for column in SPAN_COLUMNS:
        if column not in columns:
            conn.execute(f"ALTER TABLE nodes ADD COLUMN {column} INTEGER")
    relocate_chunk_spans(conn)


def pg_upgrade_5_to_6(conn: Any) -> None:
    """Schema 5 -> 6 on a raw psycopg connection inside the caller's transaction (PostgreSQL)."""
    for column in SPAN_COLUMNS:
        conn.execute(f"ALTER TABLE nodes ADD COLUMN IF NOT EXISTS {column} INTEGER")
    relocate_chunk_spans(conn, mark="%s")
