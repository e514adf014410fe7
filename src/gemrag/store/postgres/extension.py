"""The pgvector extension of a PostgreSQL memory, set up by its database part when it opens: the extension created
where this user may, the registry of vector tables, and ``vector`` values sent and received as numpy arrays
(:mod:`gemrag.store.postgres.vectors` searches them)."""

from __future__ import annotations

import warnings
from typing import Any

BUILD_VECTORS = """
CREATE TABLE IF NOT EXISTS build_vectors (
    strategy TEXT NOT NULL, generation INTEGER NOT NULL, name TEXT NOT NULL, tbl TEXT NOT NULL, dim INTEGER NOT NULL,
    n_rows INTEGER NOT NULL, hnsw INTEGER NOT NULL, PRIMARY KEY (strategy, generation, name))
"""
"""The registry of vector tables (created with the memory's tables; also on open, for memories made before it)."""


class PgvectorMissingWarning(UserWarning):
    """The database has no ``vector`` extension and this user may not create it: nearest-neighbour search runs in
    numpy over the loaded arrays (same results, no index)."""


def register_vector_types(conn: Any, pgvector: bool) -> None:
    """Make ``conn`` send and receive ``vector`` values as numpy arrays (the ``pgvector`` package's psycopg
    adapters; the connection pool calls it for every new connection; nothing unless the extension is there,
    ``pgvector``).

    Raises:
        GemragError: the ``pgvector`` package is not installed.
    """
    if not pgvector:
        return
    try:
        from pgvector.psycopg import register_vector
    except ImportError as exc:
        from gemrag.errors import GemragError

        raise GemragError("a PostgreSQL memory needs the pgvector package: pip install 'gemrag[postgres]'") from exc
    register_vector(conn)


def setup_pgvector(conn: Any, location: str, *, create: bool) -> bool:
    """Create the ``vector`` extension when allowed (``create``) and say whether it is there (True), warning once
    when it is not (``location``: the memory, for the warning)."""
    import psycopg

    if create:
        try:
            with conn.transaction():
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
        except psycopg.Error:
            pass  # no privilege, or the server lacks pgvector: numpy search below
        conn.execute(BUILD_VECTORS)
    pgvector = conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone() is not None
    if pgvector and not create:  # a memory made before the registry: nothing indexed to search
        pgvector = conn.execute("SELECT to_regclass('build_vectors')").fetchone()[0] is not None
    if not pgvector:
        warnings.warn(
            PgvectorMissingWarning(
                f"{location}: the database has no pgvector extension (CREATE EXTENSION vector needs a "
                "privileged user): nearest-neighbour search runs in numpy"
            ),
            stacklevel=4,
        )
    return pgvector
