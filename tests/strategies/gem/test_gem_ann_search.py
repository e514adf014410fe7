"""GEM retrieval through an inverted-file partition of the utility questions (strategies/gem/ann_search.py) against
the exact PreparedGraph: the same walk, ranking and matched question on fixed queries; a memory built with
``gem.ann_above = 0`` publishes the partition, retrieves with it, and prunes it on a delete."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_gem_build import PROMPTS, build, with_gem
from test_knn_ann import clustered

from gemrag.config import Config
from gemrag.graph.ann import coarse_partition, list_count, unit_rows32
from gemrag.graph.laplacian import adjacency_matrix
from gemrag.graph.similarity import knn_similarity_matrix
from gemrag.strategies.gem.ann_search import AnnPreparedGraph
from gemrag.strategies.gem.search import PreparedGraph


@pytest.fixture(scope="module")
def prepared() -> tuple[PreparedGraph, AnnPreparedGraph, np.ndarray]:
    chunks, questions, owner = clustered(3000, 5, topics=4, spread=2.5)
    owner = owner.copy()
    bare = np.isin(owner, [5, 6])  # two nodes without questions: their own vector stands in
    questions, owner = questions[~bare], owner[~bare]
    W = adjacency_matrix(knn_similarity_matrix(chunks, questions, owner, 16), diagonal="zero")
    centroids, lists = coarse_partition(unit_rows32(questions), list_count(len(owner)))
    exact = PreparedGraph.prepare(questions, owner, chunks, W)
    approx = AnnPreparedGraph.prepare_ann(questions, owner, chunks, W, centroids, lists)
    rng = np.random.default_rng(11)
    queries = chunks[rng.choice(3000, 40, replace=False)] + 0.5 * rng.standard_normal((40, 64))
    return exact, approx, np.vstack([queries, chunks[[5, 6]]])


def test_walk_and_ranking_match_the_exact_search(prepared: tuple) -> None:
    exact, approx, queries = prepared
    for q in queries:
        for budget in (1, 4, 8):
            oe, pe, ve = exact.search_path(q, budget)
            oa, pa, va = approx.search_path(q, budget)
            assert oa.tolist() == oe.tolist() and va.tolist() == ve.tolist()
            np.testing.assert_allclose(pa, pe, atol=1e-5)
            re, sr = exact.rank(q, budget)
            ra, sa = approx.rank(q, budget)
            assert ra.tolist() == re.tolist()
            np.testing.assert_allclose(sa, sr, atol=1e-5)
        node = int(exact.search(q, 1)[0][0])
        assert approx.best_question(node, unit_rows32(q[None])[0]) == exact.best_question(node, q)


def test_relevance_of_some_nodes_equals_the_full_relevance(prepared: tuple) -> None:
    exact, approx, queries = prepared
    p = unit_rows32(queries[:1])[0]
    nodes = np.array([0, 5, 6, 2999, 17], dtype=np.int64)
    np.testing.assert_allclose(approx.relevance_of(nodes, p), exact.relevance(queries[0])[nodes], atol=1e-5)


def test_a_single_list_and_errors(prepared: tuple) -> None:
    exact, _, queries = prepared
    questions, owner, nodes = exact.unit_questions, exact.owner, exact.unit_nodes
    one = AnnPreparedGraph.prepare_ann(
        questions, owner, nodes, exact.weights, questions[:1], np.zeros(len(owner), dtype=np.int32)
    )
    assert one.search(queries[0], 6)[0].tolist() == exact.search(queries[0], 6)[0].tolist()
    with pytest.raises(ValueError, match="assignment"):
        AnnPreparedGraph.prepare_ann(questions, owner, nodes, exact.weights, questions[:1], np.ones(len(owner)))
    with pytest.raises(ValueError, match="budget"):
        one.search(queries[0], -1)
    with pytest.raises(ValueError, match="zero"):
        one.rank(np.zeros(64), 3)


def test_memory_with_the_partition_retrieves_as_without_it(tmp_path: Path, config: Config) -> None:
    sparse = with_gem(config, graph="sparse", knn=4)
    with (
        build(tmp_path / "exact", with_gem(sparse, ann_above=10**6)) as exact,
        build(tmp_path / "ann", with_gem(sparse, ann_above=0)) as ann,
    ):
        arrays = ann.store.load_published("gem").arrays
        assert "question_list" in arrays and "list_centroids" in arrays
        assert "question_list" not in exact.store.load_published("gem").arrays
        for search in ("best_first", "rank"):
            exact.get_strategy("gem").config.search = ann.get_strategy("gem").config.search = search  # type: ignore[attr-defined]
            for prompt in PROMPTS:
                he, ha = exact.retrieve(prompt, budget=4), ann.retrieve(prompt, budget=4)
                assert [h.text for h in ha] == [h.text for h in he]
                assert [h.meta.get("matched_question") for h in ha] == [h.meta.get("matched_question") for h in he]
        doc = ann.store.documents()[0]
        ann.delete(doc["id"])  # the pruned generation keeps a consistent partition (axis m)
        arrays = ann.store.load_published("gem").arrays
        assert arrays["question_list"].shape == arrays["question_owner"].shape
        assert ann.retrieve(PROMPTS[1], budget=3)


def test_float16_questions_and_unnormalized_rows_prepare_the_same_search() -> None:
    """The partition reads raw (not unit) rows without a copy and assigns each as its unit row would be; float16
    question vectors are gathered into the prepared float32 arrays one block at a time, equal to their float32
    cast."""
    import gemrag.strategies.gem.ann_search as ann_search

    chunks, questions, owner = clustered(500, 3, topics=4, spread=2.5, seed=2)
    W = adjacency_matrix(knn_similarity_matrix(chunks, questions, owner, 8), diagonal="zero")
    c_unit, l_unit = coarse_partition(unit_rows32(questions), list_count(len(owner)))
    c_raw, l_raw = coarse_partition(questions * 3.0, list_count(len(owner)))
    np.testing.assert_allclose(c_raw, c_unit, atol=1e-5)
    assert np.array_equal(l_raw, l_unit)
    q16 = questions.astype(np.float16)
    old = ann_search._GATHER_ROWS
    ann_search._GATHER_ROWS = 97  # several blocks
    try:
        half = AnnPreparedGraph.prepare_ann(q16, owner, chunks, W, c_unit, l_unit)
    finally:
        ann_search._GATHER_ROWS = old
    cast = AnnPreparedGraph.prepare_ann(q16.astype(np.float32), owner, chunks, W, c_unit, l_unit)
    assert half.unit_questions.dtype == np.float32
    assert np.array_equal(half.unit_questions, cast.unit_questions)
    assert np.array_equal(half.given_row, cast.given_row)
    for q in chunks[:10]:
        assert half.search(q, 4)[0].tolist() == cast.search(q, 4)[0].tolist()


def test_a_given_start_node_starts_both_walks_alike(prepared: tuple) -> None:
    exact, approx, queries = prepared
    for q, start in zip(queries[:6], (0, 5, 6, 1234, 2999, 17), strict=True):
        oe, pe, ve = exact.search_path(q, 6, start)
        oa, pa, va = approx.search_path(q, 6, start)
        assert oe[0] == start and oa.tolist() == oe.tolist() and va.tolist() == ve.tolist()
        np.testing.assert_allclose(pa, pe, atol=1e-5)
    with pytest.raises(ValueError, match="start node"):
        approx.search_path(queries[0], 4, 3000)
