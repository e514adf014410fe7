"""Issue 40: a PostgreSQL memory at the cost of its round trips, on both backends.

* A retrieval on PostgreSQL reads the state and the question's cached vector with the snapshot's ``BEGIN`` and the
  hits' rows with their provenance in one statement that carries the ``COMMIT`` (``store/postgres/reads.py``): a
  counted number of statements in two round trips, the same hits and provenance as on SQLite.
* Many-row ``INSERT`` statements run as ``COPY`` (``store/postgres/bulk.py``) and keep SQLite's meaning of
  ``OR REPLACE`` (last row of a key wins) and ``OR IGNORE`` (first row, and an existing one, win).
* GEM publishes its question vectors in half precision, and ranks as with float32 ones.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from backends import MemoryAt
from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.answers.provenance import with_provenance
from gemrag.config import Config
from gemrag.store import open_store
from gemrag.store.postgres.bulk import COPY_FROM
from gemrag.strategies.gem.search import PreparedGraph


class Counted:
    """Statements sent (psycopg cursor executions) and round trips (executions outside a pipeline, plus one per
    pipeline) while :func:`counting` is active."""

    statements = 0
    round_trips = 0


@contextmanager
def counting(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counted]:
    """Count the statements and round trips of every psycopg connection of the test."""
    import psycopg

    counted, depth = Counted(), [0]
    execute, pipeline = psycopg.Cursor.execute, psycopg.Connection.pipeline

    def counting_execute(cur: Any, query: Any, params: Any = None, **kw: Any) -> Any:
        counted.statements += 1
        counted.round_trips += 0 if depth[0] else 1
        return execute(cur, query, params, **kw)

    @contextmanager
    def counting_pipeline(conn: Any) -> Iterator[Any]:
        depth[0] += 1
        try:
            with pipeline(conn) as p:
                yield p
        finally:
            depth[0] -= 1
            counted.round_trips += 0 if depth[0] else 1

    with monkeypatch.context() as m:
        m.setattr(psycopg.Cursor, "execute", counting_execute)
        m.setattr(psycopg.Connection, "pipeline", counting_pipeline)
        yield counted


@pytest.fixture
def built(config: Config, story_text: str, tmp_path: Path) -> Config:
    """The story as a document file and the test configuration."""
    (tmp_path / "story.txt").write_text(story_text, encoding="utf-8")
    return config


QUESTION = "Who found the lighthouse keeper's letters?"


@pytest.mark.parametrize("backend", ["postgres"])
@pytest.mark.parametrize(("strategy", "statements", "round_trips"), [("dense", 5, 2), ("bm25", 5, 2), ("gem", 5, 2)])
def test_a_retrieval_on_postgresql_is_a_few_batched_statements(
    memory_at: MemoryAt, built: Config, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, strategy: str,
    statements: int, round_trips: int,
) -> None:  # fmt: skip
    """Two round trips: BEGIN with the state row and the question's cached embedding, then the hits' rows with
    their provenance and the COMMIT (no table below hnsw_above: the search runs on the loaded array); no statement
    per hit, per source or per check; the hits' provenance is the one read outside the retrieval."""
    with Memory.open(memory_at(), built, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
        mem.add([tmp_path / "story.txt"])
        mem.index(strategy)
        first = mem.retrieve(QUESTION, 4, strategy=strategy)  # loads the build, caches the question's vector
        with counting(monkeypatch) as counted:
            hits = mem.retrieve(QUESTION, 4, strategy=strategy)
        assert (counted.statements, counted.round_trips) == (statements, round_trips)
        assert [h.node_id for h in hits] == [h.node_id for h in first] and len(hits) == 4
        again = with_provenance(mem.store, [replace(h, provenance=None) for h in hits])
        assert [h.provenance for h in again] == [h.provenance for h in hits]
        assert all(h.provenance.passages for h in hits)


@pytest.mark.parametrize("backend", ["postgres"])
def test_hits_and_provenance_are_those_of_sqlite(built: Config, tmp_path: Path, memory_at: MemoryAt) -> None:
    """The same memory on each backend gives the same hits with the same provenance, GEM's summaries included."""
    with Memory.open(memory_at(), built, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
        mem.add([tmp_path / "story.txt"])
        mem.index("gem")
        hits = mem.retrieve(QUESTION, 6, strategy="gem")
        got = [(h.kind, h.text, [(p.document.title, p.ordinal, p.start, p.end) for p in h.provenance.passages])
               for h in hits]  # fmt: skip
    reference = tmp_path / "reference"
    with Memory.open(reference, built, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
        mem.add([tmp_path / "story.txt"])
        mem.index("gem")
        want = [(h.kind, h.text, [(p.document.title, p.ordinal, p.start, p.end) for p in h.provenance.passages])
                for h in mem.retrieve(QUESTION, 6, strategy="gem")]  # fmt: skip
    assert got == want


def test_bulk_inserts_keep_sqlites_meaning(memory_at: MemoryAt) -> None:
    """An executemany of COPY_FROM rows or more: OR REPLACE keeps the last row of a key, OR IGNORE the first and
    any existing row, a plain INSERT every row (a quoted literal column included)."""
    n = COPY_FROM + 10
    store = open_store(memory_at())
    try:
        with store.transaction() as c:
            c.execute("INSERT INTO meta(key, value) VALUES ('k0', '\"old\"')")
            c.executemany(
                "INSERT OR IGNORE INTO meta(key, value) VALUES (?, ?)",
                [(f"k{i % 20}", f'"first {i}"') for i in range(n)],
            )
            c.executemany(
                "INSERT OR REPLACE INTO llm_cache(key, model, response, created) VALUES (?, ?, ?, ?)",
                [(f"r{i % 7}", "m", f"response {i}", float(i)) for i in range(n)],
            )
            c.executemany(
                "INSERT INTO usage(at, phase, kind, model, prompt_tokens, completion_tokens, embedding_tokens,"
                " seconds, cached) VALUES (?, 'bulk', ?, ?, ?, ?, ?, ?, ?)",
                [(float(i), "llm", "m", i, 1, 0, 0.5, 0) for i in range(n)],
            )
        meta = dict(store.database._query("SELECT key, value FROM meta WHERE key LIKE 'k%'"))
        assert meta["k0"] == '"old"' and meta["k1"] == '"first 1"' and len(meta) == 20
        cache = dict(store.database._query("SELECT key, response FROM llm_cache"))
        assert cache == {f"r{j}": f"response {max(i for i in range(n) if i % 7 == j)}" for j in range(7)}
        usage = store.database._query("SELECT phase, SUM(prompt_tokens), COUNT(*) FROM usage GROUP BY phase")
        assert [tuple(r) for r in usage] == [("bulk", sum(range(n)), n)]
    finally:
        store.close()


@pytest.mark.parametrize("backend", ["postgres"])
def test_an_array_below_hnsw_above_gets_no_vector_table(memory_at: MemoryAt) -> None:
    """Below hnsw_above the exact search runs in numpy over the loaded array: no table to write at a build."""
    store = open_store(memory_at())
    try:
        g = store.begin_build("dense")
        store.index_vectors("dense", g, "vectors", np.eye(5, 8, dtype=np.float32))
        assert store.database._query("SELECT COUNT(*) FROM build_vectors")[0][0] == 0
    finally:
        store.close()


def test_gem_publishes_half_precision_question_vectors_that_rank_as_float32(
    memory_at: MemoryAt, built: Config, tmp_path: Path
) -> None:
    """The published question vectors are float16; on a fixture of 200 nodes x 5 questions, the top 20 of the
    relevance ranking and of Algorithm 1 with float16 questions are those with float32 ones."""
    with Memory.open(memory_at(), built, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
        mem.add([tmp_path / "story.txt"])
        mem.index("gem")
        published = mem.store.load_published("gem")
        assert published is not None and published.arrays["question_vectors"].dtype == np.float16
    rng = np.random.default_rng(40)
    nodes = rng.standard_normal((200, 64)).astype(np.float32)
    owner = np.repeat(np.arange(200), 5)
    questions = ((nodes[owner] + 0.5 * rng.standard_normal((1000, 64))) / 2).astype(np.float32)
    full = PreparedGraph.prepare(questions, owner, nodes)
    half = PreparedGraph.prepare(questions.astype(np.float16), owner, nodes)
    for prompt in rng.standard_normal((10, 64)):
        assert half.rank(prompt, 20)[0].tolist() == full.rank(prompt, 20)[0].tolist()
        np.testing.assert_allclose(half.relevance(prompt), full.relevance(prompt), atol=2e-3)
