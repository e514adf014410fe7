"""SQLite's SQL, as the shared store code writes it, in PostgreSQL's dialect.

The store's mixins write their SQL once, for SQLite. :func:`to_postgres` rewrites the few constructs PostgreSQL
spells differently; it knows the statements the store uses, not SQL in general (a test runs every statement of
the store on both backends):

* ``?`` parameters become ``%s`` (psycopg's placeholder; a literal ``%`` is doubled);
* ``INSERT OR REPLACE INTO t(cols)`` becomes ``INSERT INTO t(cols) ... ON CONFLICT (key of t) DO UPDATE SET`` every
  other column (:data:`PRIMARY_KEYS`; none of those tables is referenced by a foreign key, so SQLite's
  delete-and-insert and PostgreSQL's update leave the same rows);
* ``INSERT OR IGNORE INTO`` becomes ``INSERT INTO ... ON CONFLICT DO NOTHING``;
* ``IS NOT ?`` / ``IS NOT (subquery)`` (SQLite's null-safe inequality) becomes ``IS DISTINCT FROM``;
* an ``INSERT`` into a table with a generated id gets ``RETURNING id`` (SQLite's ``lastrowid``,
  :func:`returns_id`).
"""

from __future__ import annotations

import re
from functools import lru_cache

from gemrag.store.schema import TABLES

PRIMARY_KEYS: dict[str, tuple[str, ...]] = {t.name: t.key for t in TABLES}
"""The conflict target of each table an ``INSERT OR REPLACE`` writes (its primary key)."""

GENERATED_ID_TABLES = frozenset(t.name for t in TABLES if t.generated_id)
"""Tables whose ``id`` PostgreSQL generates (identity columns)."""

_REPLACE = re.compile(r"INSERT OR REPLACE INTO (\w+)\s*\(([^)]*)\)", re.IGNORECASE)
_IGNORE = re.compile(r"INSERT OR IGNORE INTO", re.IGNORECASE)
_IS_NOT = re.compile(r"\bIS NOT (?=\?|\()", re.IGNORECASE)
_INSERT = re.compile(r"^\s*INSERT INTO (\w+)", re.IGNORECASE)


@lru_cache(maxsize=1024)
def to_postgres(sql: str) -> str:
    """The PostgreSQL form of one of the store's SQLite statements (see the module docstring).

    Raises:
        ValueError: an ``INSERT OR REPLACE`` into a table without a known key.
    """
    out = sql.replace("%", "%%")
    conflict = ""
    m = _REPLACE.search(out)
    if m:
        table, cols = m.group(1), [c.strip() for c in m.group(2).split(",")]
        if table not in PRIMARY_KEYS:
            raise ValueError(f"INSERT OR REPLACE into {table!r}: no known primary key")
        key = PRIMARY_KEYS[table]
        updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in cols if c not in key)
        action = f"DO UPDATE SET {updates}" if updates else "DO NOTHING"
        conflict = f" ON CONFLICT ({', '.join(key)}) {action}"
        out = out[: m.start()] + f"INSERT INTO {table}({m.group(2)})" + out[m.end() :]
    elif _IGNORE.search(out):
        out = _IGNORE.sub("INSERT INTO", out)
        conflict = " ON CONFLICT DO NOTHING"
    out = _IS_NOT.sub("IS DISTINCT FROM ", out)
    out = out.replace("?", "%s")
    return out.rstrip().rstrip(";") + conflict


def returns_id(sql: str) -> bool:
    """True for a single-row ``INSERT INTO`` a table with a generated id and no ``RETURNING`` yet."""
    m = _INSERT.match(sql)
    return (
        m is not None
        and m.group(1) in GENERATED_ID_TABLES
        and "RETURNING" not in sql.upper()
        and "SELECT" not in sql.upper()
    )
