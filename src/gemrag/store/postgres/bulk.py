"""Many-row ``INSERT`` statements of the shared store code as PostgreSQL ``COPY`` (what
:meth:`gemrag.store.postgres.PgConnection.executemany` runs for :data:`COPY_FROM` rows or more).

The shared code writes rows with ``executemany`` of one ``INSERT`` in SQLite's dialect (chunks, questions, edges, the
embedding cache, build coverage). On PostgreSQL that is one executed statement per row; ``COPY ... FROM STDIN``
streams them all in one. :func:`bulk_insert` keeps each statement's meaning:

* ``INSERT INTO t(cols) VALUES (...)``: ``COPY t(cols)``;
* ``INSERT OR IGNORE`` / ``INSERT OR REPLACE``: ``COPY`` into a temporary staging table (dropped at commit), then
  one ``INSERT ... SELECT ... ON CONFLICT`` (:func:`gemrag.store.postgres.dialect.to_postgres`'s conflict clause) in row
  order; for ``OR REPLACE`` only the last row of each key is kept, as SQLite's row-by-row replacement leaves it.

A statement this module does not recognise (other values than ``?`` and quoted literals, a ``SELECT``, a
``RETURNING``) returns False and runs row by row as before.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import Any

from gemrag.store.postgres.dialect import PRIMARY_KEYS, to_postgres

COPY_FROM = 50
"""Rows from which an ``executemany`` of an ``INSERT`` is sent as ``COPY``."""

_STATEMENT = re.compile(
    r"^\s*INSERT\s+(?:OR\s+(?P<mode>REPLACE|IGNORE)\s+)?INTO\s+(?P<table>\w+)\s*\((?P<cols>[^)]*)\)"
    r"\s*VALUES\s*\((?P<values>[^)]*)\)\s*;?\s*$",
    re.IGNORECASE,
)
_LITERAL = re.compile(r"^'((?:[^']|'')*)'$")
_stage = itertools.count(1)


def _parse(sql: str) -> tuple[str | None, str, list[str], list[tuple[bool, Any]]] | None:
    """``(mode, table, columns, values)`` of a one-row ``INSERT``; each value ``(True, None)`` for ``?`` or
    ``(False, literal)``; None for another statement."""
    m = _STATEMENT.match(sql)
    if m is None:
        return None
    cols = [c.strip() for c in m["cols"].split(",")]
    values: list[tuple[bool, Any]] = []
    for v in (v.strip() for v in m["values"].split(",")):
        lit = _LITERAL.match(v)
        if v == "?":
            values.append((True, None))
        elif lit:
            values.append((False, lit.group(1).replace("''", "'")))
        elif v.upper() == "NULL":
            values.append((False, None))
        else:
            return None
    if len(values) != len(cols) or not all(re.fullmatch(r"\w+", c) for c in cols):
        return None
    mode = m["mode"].upper() if m["mode"] else None
    if mode == "REPLACE" and m["table"] not in PRIMARY_KEYS:
        return None
    return mode, m["table"], cols, values


def bulk_insert(raw: Any, sql: str, rows: Sequence[Sequence[Any]]) -> int | None:
    """Run the ``INSERT`` ``sql`` (SQLite's dialect) for every row with ``COPY`` on the psycopg connection
    ``raw`` (inside the caller's transaction).

    Returns:
        The number of rows inserted, or None when ``sql`` is not an ``INSERT`` this module rewrites (nothing was
        run).
    """
    parsed = _parse(sql)
    if parsed is None:
        return None
    mode, table, cols, values = parsed

    def full(row: Sequence[Any]) -> tuple[Any, ...]:
        given = iter(row)
        return tuple(next(given) if param else literal for param, literal in values)

    col_list = ", ".join(cols)
    if mode is None:
        with raw.cursor() as cur, cur.copy(f"COPY {table} ({col_list}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(full(row))
        return len(rows)
    stage = f"gemrag_stage_{next(_stage)}"
    raw.execute(
        f"CREATE TEMP TABLE {stage} ON COMMIT DROP AS SELECT {col_list}, 0::bigint AS gemrag_seq FROM {table}"
        " WITH NO DATA"
    )
    with raw.cursor() as cur, cur.copy(f"COPY {stage} ({col_list}, gemrag_seq) FROM STDIN") as copy:
        for seq, row in enumerate(rows):
            copy.write_row((*full(row), seq))
    conflict = to_postgres(sql)[to_postgres(sql).rindex(" ON CONFLICT") :]
    if mode == "REPLACE":  # the last row of each key, as SQLite's replacements leave it
        key = ", ".join(PRIMARY_KEYS[table])
        source = f"SELECT DISTINCT ON ({key}) {col_list} FROM {stage} ORDER BY {key}, gemrag_seq DESC"
    else:  # OR IGNORE: the first row of each key wins, as in SQLite
        source = f"SELECT {col_list} FROM {stage} ORDER BY gemrag_seq"
    done = raw.execute(f"INSERT INTO {table} ({col_list}) {source}{conflict}").rowcount
    raw.execute(f"DROP TABLE {stage}")
    return int(done)
