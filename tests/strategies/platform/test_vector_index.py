"""Query-time HNSW on SQLite (``store/hnsw.py``, SQLite's vector-search part): the exact search is the reference.

Above the threshold a published search array gets an HNSW artefact and ``nearest`` answers from it (recall@10
against the exact numpy search on a fixed clustered set, scores identical to the exact ones); below it, without
an artefact, and for a filtered search, the answers are the exact path's, bit for bit.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.config import Config
from gemrag.graph.ann import unit_rows32
from gemrag.store import hnsw as vector_index
from gemrag.store.vectors import exact_nearest
from gemrag.strategies.platform.common import nearest, publish_arrays
from test_memory import DOC_A, DOC_B

N, D, CLUSTERS, QUERIES, K = 3000, 48, 60, 40, 10


def _clustered(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(N, D) float32 rows around CLUSTERS unit centres (cosine ~0.7 to their centre), and QUERIES queries drawn
    the same way."""
    rng = np.random.default_rng(seed)
    centres = unit_rows32(rng.standard_normal((CLUSTERS, D)))
    rows = centres[rng.integers(0, CLUSTERS, N)] + 0.15 * rng.standard_normal((N, D))
    queries = centres[rng.integers(0, CLUSTERS, QUERIES)] + 0.15 * rng.standard_normal((QUERIES, D))
    return rows.astype(np.float32), queries.astype(np.float32)


def _publish(mem: Memory, vectors: np.ndarray) -> int:
    generation = mem.store.begin_build("probe")
    publish_arrays(mem.ctx, "probe", generation, {"vectors": vectors}, axes={"vectors": ("n", "d")}, search=["vectors"])
    return generation


def test_above_the_threshold_hnsw_agrees_with_exact(
    tmp_path: Path, config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_index, "ANN_ABOVE", 1000)
    vectors, queries = _clustered()
    unit = unit_rows32(vectors)
    with Memory.open(tmp_path / "m", config, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
        generation = _publish(mem, vectors)
        published = mem.store.load_published("probe")
        assert list(published.paths) == ["vectors-hnsw"] and published.paths["vectors-hnsw"].stat().st_size > 0
        recalls = []
        for q in queries:
            rows, scores = nearest(mem.ctx, ("probe", generation), "vectors", vectors, q, K, unit=unit)
            want, _ = exact_nearest(vectors, q, K, unit=unit)
            assert rows.shape == (K,) and np.all(np.diff(scores) <= 0)  # best first
            # the scores are the exact cosines of the rows found
            np.testing.assert_allclose(scores, (unit[rows] @ (q / np.linalg.norm(q))).astype(np.float64), atol=1e-6)
            recalls.append(len(set(rows.tolist()) & set(want.tolist())) / K)
        assert np.mean(recalls) >= 0.95, recalls
        assert min(recalls) >= 0.7, recalls
        # a filtered search stays exact
        subset = np.arange(0, N, 7, dtype=np.int64)
        got = nearest(mem.ctx, ("probe", generation), "vectors", vectors, queries[0], K, rows=subset, unit=unit)
        want = exact_nearest(vectors, queries[0], K, rows=subset, unit=unit)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
        # a new generation replaces the artefact: the old file goes with its generation
        old = published.paths["vectors-hnsw"]
        _publish(mem, vectors[: N - 1])
        assert not old.exists() and list(mem.store.load_published("probe").paths) == ["vectors-hnsw"]


def test_below_the_threshold_and_without_an_artefact_the_search_is_exact(
    tmp_path: Path, config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    vectors, queries = _clustered(1)
    unit = unit_rows32(vectors)
    with Memory.open(tmp_path / "m", config, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
        monkeypatch.setattr(vector_index, "ANN_ABOVE", N + 1)  # N rows: below
        generation = _publish(mem, vectors)
        assert mem.store.load_published("probe").paths == {}
        monkeypatch.setattr(vector_index, "ANN_ABOVE", 10)  # a build published without an artefact stays exact
        for q in queries:
            got = nearest(mem.ctx, ("probe", generation), "vectors", vectors, q, K, unit=unit)
            want = exact_nearest(vectors, q, K, unit=unit)
            assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


def test_dense_retrieval_through_the_artefact_and_after_a_deletion(
    tmp_path: Path, config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_index, "ANN_ABOVE", 2)
    questions = ["Who mended the shutters when storms battered the island?", "silver medal", "the lighthouse"]
    with Memory.open(tmp_path / "m", config, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
        doc_a, _ = mem.add_text(DOC_A, title="a")
        mem.add_text(DOC_B, title="b")
        mem.index(strategy="dense")
        published = mem.store.load_published("dense")
        assert "vectors-hnsw" in published.paths
        vectors = np.asarray(published.arrays["vectors"])
        ids = np.asarray(published.arrays["node_ids"])
        for question in questions:  # fewer chunks than candidates: HNSW returns them all, so the order is exact
            hits = mem.retrieve(question, 4, strategy="dense")
            want, scores = exact_nearest(vectors, mem.ctx.embedder.embed([question])[0], 4)
            assert [h.node_id for h in hits] == ids[want].tolist()
            np.testing.assert_allclose([h.score for h in hits], scores, atol=1e-6)
        # deleting a document prunes the build (the artefact is rebuilt for the pruned rows, not a reason to
        # give up pruning) and retrieval still answers from the remaining chunks
        mem.delete(doc_a)
        pruned = mem.store.load_published("dense")
        assert pruned.generation > published.generation and "vectors-hnsw" in pruned.paths
        left = set(np.asarray(pruned.arrays["node_ids"]).tolist())
        assert left and left < set(ids.tolist())
        assert {h.node_id for h in mem.retrieve(questions[0], 4, strategy="dense")} <= left
