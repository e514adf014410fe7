"""Nearest-neighbour search in pgvector for a PostgreSQL memory.

A build's searchable arrays (chunk, node, utility-question and fact embeddings; the strategy names them, see
:meth:`gemrag.store.vectors.ExactSearch.index_vectors`) of at least ``hnsw_above`` rows (URL parameter, default
:data:`DEFAULT_HNSW_ABOVE`) are copied, besides their ``.npy`` bytes in ``build_arrays``, into a table of their
own, ``"vec:<strategy>:<generation>:<name>"`` (``row INTEGER PRIMARY KEY, embedding vector(d)``) with an HNSW
index (``vector_cosine_ops``, pgvector's defaults m = 16, ef_construction = 64; Malkov and Yashunin 2018),
registered in ``build_vectors``. A smaller array gets no table: its exact search runs in numpy over the array the
strategy has loaded anyway, as on SQLite (a sequential scan in the database returned the same rows, about ten times
slower at 10k rows, after a round trip, and its table cost a ``COPY`` at every build). The connections set
``hnsw.ef_search`` (URL parameter ``ef_search``, default :data:`DEFAULT_EF_SEARCH`), so a search is one
statement.

Vectors travel as numpy arrays through the ``pgvector`` package's psycopg 3 adapters (``register_vector`` on every
pooled connection): binary ``COPY`` rows into a table, a float32 query vector as the search's parameter.
:meth:`PgVectorSearch.database_rows` asks the table for the ``k`` nearest rows by cosine distance and rescores them in
numpy from the loaded array (:mod:`gemrag.store.vectors`), so a PostgreSQL memory returns the scores a SQLite one
does. It searches exactly in numpy over the loaded array when the table does not exist: the array is smaller than
``hnsw_above``, the ``vector`` extension is not installed and this user may not create it (one warning when the
memory is opened), the build was published before its arrays were indexed, the search is filtered to some rows, or
a newer publish dropped the table after the caller loaded the arrays (outside a snapshot; inside one,
:class:`~gemrag.errors.StaleGenerationError`, and the retrieval reads the newer build).

The tables follow their build: written before the publish (invisible: no manifest names their generation),
dropped in the transaction that publishes another generation or withdraws the strategy, and by the builder's
clean-up of unpublished generations.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from gemrag.store.vectors import Array, ExactSearch, Vectors

if TYPE_CHECKING:
    from gemrag.store.postgres.store import PgDatabase

DEFAULT_HNSW_ABOVE = 20_000
"""Rows from which a vector table gets an HNSW index (below: exact search, a sequential scan)."""

DEFAULT_EF_SEARCH = 100
"""``hnsw.ef_search`` of a query (pgvector's default is 40): the candidate list of the HNSW search."""


def table_name(strategy: str, generation: int, name: str) -> str:
    """The quoted identifier of a vector table (at most 63 characters; None-safe names are checked by callers).

    Raises:
        ValueError: the name would be longer than PostgreSQL's 63-character identifiers.
    """
    ident = f"vec:{strategy}:{generation}:{name}"
    if len(ident) > 63:
        raise ValueError(f"vector table name {ident!r} is longer than 63 characters")
    return f'"{ident}"'


class PgVectorSearch(ExactSearch):
    """The vector-search part of a PostgreSQL memory: vector tables and nearest-neighbour search in pgvector (module
    docstring), exact in numpy where there is no table.

    Args:
        db: the memory's database part (whether it has pgvector, its ``hnsw_above``, its connections).
    """

    def __init__(self, db: PgDatabase) -> None:
        self._db = db
        self._vector_tables: dict[tuple[str, int, str], tuple[str, int, bool] | None] = {}  # registry rows read

    # -- writing ----------------------------------------------------------------------------------
    def index_vectors(self, strategy: str, generation: int, name: str, vectors: NDArray[np.floating]) -> list[str]:
        """Copy a build's ``(n, d)`` vectors into their vector table with an HNSW index when ``n >= hnsw_above``
        (committed, invisible until the build is published). A no-op without pgvector, for an empty array and
        below ``hnsw_above`` (searched in numpy: see the module docstring).

        Returns:
            No artefact to publish (the table is the database's): an empty list.

        Raises:
            ValueError: ``vectors`` is not a 2-D array, or the table name would be too long.
            DatabaseLockedError: the registry stayed locked longer than the busy timeout.
        """
        mat = np.asarray(vectors)
        if mat.ndim != 2:
            raise ValueError(f"vectors {name!r} must be (n, d), got shape {mat.shape}")
        if not self._db.pgvector or mat.shape[0] < max(self._db.hnsw_above, 1) or mat.shape[1] == 0:
            return []
        table = table_name(strategy, generation, name)
        n, d = mat.shape
        hnsw = True
        with self._db.transaction() as c:
            self.drop_vectors(c, "strategy = ? AND generation = ? AND name = ?", (strategy, generation, name))
            raw = c.raw
            raw.execute(f"CREATE TABLE {table} (row INTEGER PRIMARY KEY, embedding vector({d}) NOT NULL)")
            rows = np.asarray(mat, dtype=np.float32)
            with raw.cursor() as cur, cur.copy(f"COPY {table} (row, embedding) FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(["int4", "vector"])  # pgvector's binary dumper of numpy arrays
                for i in range(n):
                    copy.write_row((i, rows[i]))
            if hnsw:
                raw.execute("SET LOCAL maintenance_work_mem = '512MB'")
                raw.execute(f"CREATE INDEX ON {table} USING hnsw (embedding vector_cosine_ops)")
            raw.execute(f"ANALYZE {table}")
            c.execute(
                "INSERT INTO build_vectors(strategy, generation, name, tbl, dim, n_rows, hnsw) VALUES (?,?,?,?,?,?,?)",
                (strategy, generation, name, table, d, n, int(hnsw)),
            )
        self._vector_tables.pop((strategy, generation, name), None)
        return []

    def drop_vectors(self, c: Any, where: str, args: Sequence[Any]) -> None:
        """Drop the vector tables whose ``build_vectors`` rows match ``where`` (inside transaction ``c``; the
        build-arrays part calls it when it publishes, withdraws or cleans up generations)."""
        if not self._db.pgvector:
            return
        for (table,) in c.execute(f"SELECT tbl FROM build_vectors WHERE {where}", args).fetchall():
            c.raw.execute(f"DROP TABLE IF EXISTS {table}")
        c.execute(f"DELETE FROM build_vectors WHERE {where}", args)

    # -- searching --------------------------------------------------------------------------------
    def _candidates(self, array: Array, vectors: Vectors, query: Vectors, k: int) -> NDArray[np.int64] | None:
        """The rows the database's vector table proposes (see :meth:`database_rows`), rescored exactly by
        :meth:`nearest`; None where there is no table."""
        return self.database_rows(array, vectors, query, k)

    def database_rows(
        self, array: Array, vectors: Vectors, query: Vectors, k: int, *, exact: bool = False
    ) -> NDArray[np.int64] | None:
        """The ``k`` rows of a published build's array ``name`` nearest to ``query`` by the database's vector table
        (cosine distance; the caller rescores them, as :meth:`nearest` does), or None when the search must run in
        numpy over ``vectors``: no pgvector, ``k <= 0``, no HNSW table for the array (see the module docstring), or the
        table dropped by a newer publish after the caller loaded the arrays, outside a snapshot.

        Args:
            array: ``(strategy, generation, name)`` of the published array.
            vectors, query, k: as for :meth:`nearest`.
            exact: True forces an exact search in the database even where an HNSW index exists (the index switched
                off); False uses the index.

        Raises:
            StaleGenerationError: inside a snapshot, a newer publish dropped the table (the snapshot restarts).
            GemragError: the server failed.
        """
        import psycopg

        strategy, generation, name = array
        mat = np.asarray(vectors)
        k = min(int(k), mat.shape[0])
        if not self._db.pgvector or k <= 0:
            return None
        found = self._vector_table(strategy, generation, name)
        if found is None or found[1] != mat.shape[1] or not found[2]:  # no HNSW table (an older memory's exact
            return None  # table included): exact, where the array is
        table, hnsw = found[0], not exact
        probe = np.asarray(query, dtype=np.float32).reshape(-1)  # sent by pgvector's dumper
        order = "embedding <=> %s" if hnsw else "embedding <=> %s, row"
        sql = f"SELECT row FROM {table} ORDER BY {order} LIMIT %s"
        try:
            if not hnsw:  # an exact search of an indexed table: the index is switched off
                with self._db._connection() as conn, conn.transaction():
                    conn.execute("SET LOCAL enable_indexscan = off")
                    rows_found = conn.execute(sql, (probe, k)).fetchall()
            else:  # one statement (hnsw.ef_search is a setting of the connection: postgres/connect.py, options)
                rows_found = self._db._query(sql, (probe, k), raw=True)
        except psycopg.errors.UndefinedTable as exc:  # a newer publish dropped it after the caller loaded the arrays
            if self._db._in_snapshot_transaction():  # the snapshot's transaction failed with it: read the newer build
                from gemrag.errors import StaleGenerationError

                self._db.restart_snapshot()
                raise StaleGenerationError(
                    f"{self._db.location}: {strategy} generation {generation} was replaced", strategy, generation
                ) from exc
            return None
        return np.array([r[0] for r in rows_found], dtype=np.int64)

    def _vector_table(self, strategy: str, generation: int, name: str) -> tuple[str, int, bool] | None:
        """``(quoted table, dimensions, has an HNSW index)`` of a build's vector table, or None when it has none.
        What the registry says of a generation never changes once it is searched (a build's table is written
        before its publish), so it is read once per process (:meth:`index_vectors` forgets what it rewrites)."""
        key = (strategy, generation, name)
        if key not in self._vector_tables:
            found = self._db._query(
                "SELECT tbl, dim, hnsw FROM build_vectors WHERE strategy = ? AND generation = ? AND name = ?", key
            )
            self._vector_tables[key] = (str(found[0][0]), int(found[0][1]), bool(found[0][2])) if found else None
        return self._vector_tables[key]
