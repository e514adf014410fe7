"""Nearest-neighbour search through the store (``MemoryStore.nearest``): numpy on SQLite, pgvector on PostgreSQL
(exact below ``hnsw_above`` rows, HNSW above), the same rows and scores as the strategies' cosine ranking."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from backends import MemoryAt, new_schema, schema_url
from gemrag.store import open_store
from gemrag.store.postgres.extension import PgvectorMissingWarning
from gemrag.store.vectors import exact_nearest
from gemrag.strategies.platform.common import cosine_ranking

N, D, K = 3000, 64, 10


def _data(seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """Clustered unit vectors (like text embeddings: topics) and queries near them."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((40, D))
    vectors = centres[rng.integers(0, 40, N)] + 0.6 * rng.standard_normal((N, D))
    queries = centres[rng.integers(0, 40, 25)] + 0.6 * rng.standard_normal((25, D))
    return vectors.astype(np.float32), queries


def _publish(location: str | Path, vectors: np.ndarray, *, index: bool = True) -> tuple[object, int]:
    store = open_store(location)
    generation = store.begin_build("dense")
    entry = store.write_array("dense", generation, "vectors", vectors, ("n", "d"))
    if index:
        store.index_vectors("dense", generation, "vectors", vectors)
    store.publish("dense", generation, [entry])
    return store, generation


def _url(location: str | Path, **params: int) -> str | Path:
    if isinstance(location, Path):
        return location
    return str(location) + "".join(f"&{k}={v}" for k, v in params.items())


def test_exact_search_gives_the_rows_and_scores_of_the_cosine_ranking(memory_at: MemoryAt) -> None:
    vectors, queries = _data()
    store, g = _publish(memory_at(), vectors)  # 3000 rows < the default hnsw_above: exact, in numpy
    try:
        for q in queries:
            rows, scores = store.nearest("dense", g, "vectors", vectors, q, K)  # type: ignore[attr-defined]
            want_rows, want_scores = cosine_ranking(q, vectors, K)
            assert rows.tolist() == want_rows.tolist()
            np.testing.assert_allclose(scores, want_scores, rtol=1e-12)  # rescored in numpy from the loaded array
        subset = np.arange(0, N, 3)
        rows, _ = store.nearest("dense", g, "vectors", vectors, queries[0], K, rows=subset)  # type: ignore[attr-defined]
        order, _ = cosine_ranking(queries[0], vectors[subset], K)
        assert rows.tolist() == subset[order].tolist()
    finally:
        store.close()  # type: ignore[attr-defined]


def test_hnsw_recall_at_10_against_exact_search(memory_at: MemoryAt, backend: str) -> None:
    vectors, queries = _data(11)
    store, g = _publish(_url(memory_at(), hnsw_above=1000, ef_search=64), vectors)
    try:
        if backend == "postgres":
            (hnsw,) = store.database._query("SELECT hnsw FROM build_vectors WHERE strategy = 'dense'")[0]  # type: ignore[attr-defined]
            assert hnsw == 1
        hits = 0
        for q in queries:
            approx, _ = store.nearest("dense", g, "vectors", vectors, q, K)  # type: ignore[attr-defined]
            exact, _ = cosine_ranking(q, vectors, K)
            if backend == "postgres":
                found = store.parts.vectors.database_rows(("dense", g, "vectors"), vectors, q, K, exact=True)  # type: ignore[attr-defined]
                in_db, _ = exact_nearest(vectors, q, K, rows=found)  # rescored as nearest() does
                assert in_db.tolist() == exact.tolist()  # exact search in the database despite the index
            hits += len(set(approx.tolist()) & set(exact.tolist()))
        recall = hits / (K * len(queries))
        print(f"{backend}: recall@10 = {recall:.3f} ({N} rows, d = {D}, ef_search 64)")
        assert recall >= (1.0 if backend == "sqlite" else 0.9)
    finally:
        store.close()  # type: ignore[attr-defined]


def test_a_build_published_without_a_vector_index_is_searched_in_numpy(memory_at: MemoryAt) -> None:
    vectors, queries = _data(3)
    store, g = _publish(memory_at(), vectors, index=False)
    try:
        rows, scores = store.nearest("dense", g, "vectors", vectors, queries[1], K)  # type: ignore[attr-defined]
        want_rows, want_scores = cosine_ranking(queries[1], vectors, K)
        assert rows.tolist() == want_rows.tolist()
        np.testing.assert_allclose(scores, want_scores, rtol=1e-12)
    finally:
        store.close()  # type: ignore[attr-defined]


@pytest.mark.parametrize("backend", ["postgres"])  # vector tables exist on PostgreSQL only
def test_vector_tables_follow_their_build(memory_at: MemoryAt) -> None:
    vectors, _ = _data(5)
    location = _url(memory_at(), hnsw_above=10)  # only an array of hnsw_above rows or more gets a table
    store, g = _publish(location, vectors)
    try:
        g2 = store.begin_build("dense")  # type: ignore[attr-defined]
        store.index_vectors("dense", g2, "vectors", vectors[:10])  # type: ignore[attr-defined]
        # a build that never publishes (killed): the next builder drops its table
        store.begin_build("dense")  # type: ignore[attr-defined]
        tables = store.database._query("SELECT generation FROM build_vectors")  # type: ignore[attr-defined]
        assert [int(r[0]) for r in tables] == [g]
        store.withdraw("dense")  # type: ignore[attr-defined]
        left = store.database._query(  # type: ignore[attr-defined]
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename LIKE 'vec:%'"
        )
        assert left == [] and store.database._query("SELECT * FROM build_vectors") == []  # type: ignore[attr-defined]
    finally:
        store.close()  # type: ignore[attr-defined]


def test_without_the_extension_privilege_a_memory_works_with_numpy_search(postgres_url: str) -> None:
    """A user who may not CREATE EXTENSION (pgvector is not a trusted extension) in a database without it gets a
    working memory, one warning, and numpy search."""
    import psycopg

    from gemrag.store.postgres.connect import PgLocation

    admin = PgLocation.parse(postgres_url).conninfo
    database, role = f"nopgv{os.getpid()}", f"plain{os.getpid()}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {database}")
        conn.execute(f"CREATE DATABASE {database}")
        conn.execute(f"DROP ROLE IF EXISTS {role}")
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"GRANT CREATE ON DATABASE {database} TO {role}")
    try:
        base = PgLocation.parse(postgres_url).conninfo
        parts = base.split("@", 1)
        user_url = f"postgresql://{role}@{parts[1]}".replace("/postgres?", f"/{database}?", 1)
        vectors, queries = _data(9)
        with pytest.warns(PgvectorMissingWarning, match="nearest-neighbour search runs in numpy"):
            store, g = _publish(schema_url(user_url, new_schema("nopgv")), vectors)
        try:
            assert store.database.pgvector is False  # type: ignore[attr-defined]
            rows, _ = store.nearest("dense", g, "vectors", vectors, queries[0], K)  # type: ignore[attr-defined]
            assert rows.tolist() == cosine_ranking(queries[0], vectors, K)[0].tolist()
        finally:
            store.close()  # type: ignore[attr-defined]
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
            conn.execute(f"DROP ROLE IF EXISTS {role}")
