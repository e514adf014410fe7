"""Tests of gemrag.strategies.gem.search: Algorithm 1, best-first search, fused ranking, top-k edges."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from gemrag.graph import adjacency_matrix, similarity_matrix, symmetrize, top_k_edges
from gemrag.strategies.gem.search import best_first_search, fused_ranking, gem_search, node_relevance, rank_algorithm1


def _at_cos(c: float, scale: float = 1.0) -> list[float]:
    """A 2-D vector whose cosine with (1, 0) is c, of length `scale`."""
    return [scale * c, scale * float(np.sqrt(1 - c * c))]


PROMPT = np.array([1.0, 0.0])

# ---------------------------------------------------------------- node_relevance / Algorithm 1

# node 0: questions with cos 0.5 and 0.2 -> rel 0.5
# node 1: one question with cos 1.0   -> rel 1.0
# node 2: no questions, node vector with cos 0.6 -> rel 0.6
# node 3: questions with cos 0.0 and -1.0 -> rel 0.0
NODES = np.array([_at_cos(0.1), _at_cos(0.3), [3.0, 4.0], _at_cos(0.9)])
QUESTIONS = np.array([_at_cos(0.5, 2.0), _at_cos(0.2, 7.0), [4.0, 0.0], [0.0, 0.5], [-3.0, 0.0]])
OWNER = np.array([0, 0, 1, 3, 3])


def test_node_relevance_hand_computed() -> None:
    rel = node_relevance(PROMPT * 5, QUESTIONS, OWNER, NODES)  # prompt need not be unit norm
    np.testing.assert_allclose(rel, [0.5, 1.0, 0.6, 0.0], atol=1e-12)
    # no questions at all: every node uses its own vector
    rel0 = node_relevance(PROMPT, np.zeros((0, 2)), np.zeros(0, dtype=np.int64), NODES)
    np.testing.assert_allclose(rel0, [0.1, 0.3, 0.6, 0.9], atol=1e-12)
    with pytest.raises(ValueError, match="zero"):
        node_relevance(np.zeros(2), QUESTIONS, OWNER, NODES)
    with pytest.raises(ValueError):
        node_relevance(np.ones(3), QUESTIONS, OWNER, NODES)


def test_rank_algorithm1_hand_computed() -> None:
    ids, scores = rank_algorithm1(PROMPT, QUESTIONS, OWNER, NODES, 3)
    np.testing.assert_array_equal(ids, [1, 2, 0])
    np.testing.assert_allclose(scores, [1.0, 0.6, 0.5], atol=1e-12)
    assert ids.dtype == np.int64
    ids_all, _ = rank_algorithm1(PROMPT, QUESTIONS, OWNER, NODES, 99)
    np.testing.assert_array_equal(ids_all, [1, 2, 0, 3])
    assert rank_algorithm1(PROMPT, QUESTIONS, OWNER, NODES, 0)[0].shape == (0,)
    with pytest.raises(ValueError):
        rank_algorithm1(PROMPT, QUESTIONS, OWNER, NODES, -1)


def test_rank_algorithm1_ties_lower_index() -> None:
    nodes = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    ids, _ = rank_algorithm1(PROMPT, np.zeros((0, 2)), np.zeros(0, dtype=np.int64), nodes, 3)
    np.testing.assert_array_equal(ids, [0, 2, 1])


# ---------------------------------------------------------------- best-first search

# 5 nodes, edges (before scaling by 1/max = 1/2):
#   0-3: 2.0   3-4: 1.6   0-1: 0.4   1-2: 1.0   2-4: 0.2     -> W_hat = half of these
REL5 = np.array([0.9, 0.8, 0.7, 0.6, 0.5])
W5 = np.zeros((5, 5))
for a, b, w in [(0, 3, 2.0), (3, 4, 1.6), (0, 1, 0.4), (1, 2, 1.0), (2, 4, 0.2)]:
    W5[a, b] = W5[b, a] = w


def test_best_first_search_hand_computed_order() -> None:
    # start 0 (rel 0.9).  reach: 3 -> 1.0, 1 -> 0.2
    #   f(3) = 0.6*1.0 = 0.60, f(1) = 0.8*0.2 = 0.16               -> take 3 (0.60)
    # reach from 3: 4 -> 0.8.  f(1) = 0.16, f(4) = 0.5*0.8 = 0.40  -> take 4 (0.40)
    # reach from 4: 2 -> 0.1.  f(1) = 0.16, f(2) = 0.7*0.1 = 0.07  -> take 1 (0.16)
    # reach from 1: 2 -> 0.5.  f(2) = 0.7*0.5 = 0.35                -> take 2 (0.35)
    order, prio = best_first_search(REL5, W5, 0, 5)
    np.testing.assert_array_equal(order, [0, 3, 4, 1, 2])
    np.testing.assert_allclose(prio, [0.9, 0.6, 0.4, 0.16, 0.35], atol=1e-12)
    # Algorithm 1 (rank by rel only) would give 0, 1, 2, 3, 4
    assert order.tolist() != np.argsort(-REL5).tolist()
    # budget 3 is a prefix
    np.testing.assert_array_equal(best_first_search(REL5, W5, 0, 3)[0], [0, 3, 4])
    # sparse W gives the same
    sparse_order, sparse_prio = best_first_search(REL5, sp.csr_matrix(W5), 0, 5)
    np.testing.assert_array_equal(sparse_order, order)
    np.testing.assert_allclose(sparse_prio, prio)


def test_best_first_search_restarts_on_disconnected_graph() -> None:
    # components {0, 1} (edge 0.5) and {2, 3} (edge 1.0); W_hat = W / 1.0
    W = np.zeros((4, 4))
    W[0, 1] = W[1, 0] = 0.5
    W[2, 3] = W[3, 2] = 1.0
    rel = np.array([0.1, 0.2, 0.9, 0.3])
    # start 2; frontier {3}: f = 0.3*1.0 -> 3; frontier empty -> restart at best rel of {0, 1}: 1 (0.2);
    # frontier {0}: f = 0.1*0.5 = 0.05 -> 0
    order, prio = best_first_search(rel, W, 2, 4)
    np.testing.assert_array_equal(order, [2, 3, 1, 0])
    np.testing.assert_allclose(prio, [0.9, 0.3, 0.2, 0.05])


def test_best_first_search_budget_edge_cases() -> None:
    order, prio = best_first_search(REL5, W5, 2, 50)
    assert sorted(order.tolist()) == [0, 1, 2, 3, 4]
    assert order[0] == 2 and prio.shape == (5,)
    assert best_first_search(REL5, W5, 2, 0)[0].shape == (0,)
    # no edges at all: every step is a restart, i.e. rel order after the start node
    order, _ = best_first_search(REL5, np.zeros((5, 5)), 3, 5)
    np.testing.assert_array_equal(order, [3, 0, 1, 2, 4])
    # ties in priority go to the lower index
    W = np.zeros((3, 3))
    W[0, 1] = W[1, 0] = W[0, 2] = W[2, 0] = 1.0
    np.testing.assert_array_equal(best_first_search(np.ones(3), W, 0, 3)[0], [0, 1, 2])


def test_best_first_search_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        best_first_search(REL5, -W5, 0, 2)
    with pytest.raises(ValueError):
        best_first_search(REL5, W5, 5, 2)
    with pytest.raises(ValueError):
        best_first_search(REL5, W5, 0, -1)
    with pytest.raises(ValueError):
        best_first_search(REL5[:4], W5, 0, 2)


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_best_first_search_invariants_random(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 30
    x = np.triu(rng.uniform(size=(n, n)) * (rng.uniform(size=(n, n)) < 0.1), 1)
    W = x + x.T
    rel = rng.uniform(-0.2, 1.0, size=n)
    start = int(np.argmax(rel))
    budget = int(rng.integers(1, n + 5))
    order, prio = best_first_search(rel, W, start, budget)
    assert order.shape == (min(budget, n),) and len(set(order.tolist())) == order.shape[0]
    assert order[0] == start
    w_hat = W / W.max()
    for i in range(1, order.shape[0]):
        before, node = order[:i], order[i]
        reach = w_hat[before].max(axis=0)
        frontier = np.setdiff1d(np.flatnonzero(reach > 0), before)
        if frontier.size:  # expanded: the best priority over the frontier, achieved by `node`
            assert node in frontier
            assert prio[i] == pytest.approx(rel[node] * reach[node])
            assert prio[i] == pytest.approx(np.max(rel[frontier] * reach[frontier]))
        else:  # restart: the most relevant unvisited node
            unvisited = np.setdiff1d(np.arange(n), before)
            assert rel[node] == pytest.approx(rel[unvisited].max())


def test_gem_search_starts_at_best_question_owner() -> None:
    nodes = np.array([_at_cos(c) for c in (0.0, 0.1, 0.2, 0.3, 0.4)])
    # node 4 owns the best question (cos 0.95); the rel order would be 4, 0, 1, 2, 3
    questions = np.array([_at_cos(0.9), _at_cos(0.8), _at_cos(0.7), _at_cos(0.6), _at_cos(0.95)])
    owner = np.arange(5)
    W = np.zeros((5, 5))
    W[4, 2] = W[2, 4] = 1.0
    W[2, 3] = W[3, 2] = 1.0
    order, prio = gem_search(PROMPT, questions, owner, nodes, W, 3)
    np.testing.assert_array_equal(order, [4, 2, 3])
    np.testing.assert_allclose(prio, [0.95, 0.7, 0.6], atol=1e-12)
    np.testing.assert_array_equal(rank_algorithm1(PROMPT, questions, owner, nodes, 3)[0], [4, 0, 1])


def test_gem_search_on_similarity_graph() -> None:
    rng = np.random.default_rng(9)
    nodes = rng.normal(size=(8, 6))
    owner = np.repeat(np.arange(8), 2)
    questions = nodes[owner] + 0.3 * rng.normal(size=(16, 6))
    W = adjacency_matrix(symmetrize(similarity_matrix(nodes, questions, owner)))
    order, _ = gem_search(nodes[5], questions, owner, nodes, W, 4)
    assert order.shape == (4,) and len(set(order.tolist())) == 4
    rel = node_relevance(nodes[5], questions, owner, nodes)
    assert order[0] == int(np.argmax(rel))


# ---------------------------------------------------------------- fused ranking


def test_fused_ranking_hand_computed() -> None:
    # node: (node-vector cos, best question cos) -> fused
    #   0: (0.9, 0.2) -> 0.9     1: (0.0, 0.95) -> 0.95
    #   2: (0.5, no questions)  -> 0.5      3: (-1.0, 0.7) -> 0.7
    nodes = np.array([_at_cos(0.9, 3.0), _at_cos(0.0), _at_cos(0.5, 0.2), [-2.0, 0.0]])
    questions = np.array([_at_cos(0.2), _at_cos(0.95), _at_cos(0.1), _at_cos(0.7)])
    owner = np.array([0, 1, 1, 3])
    ids, scores = fused_ranking(PROMPT, nodes, questions, owner, 3)
    np.testing.assert_array_equal(ids, [1, 0, 3])
    np.testing.assert_allclose(scores, [0.95, 0.9, 0.7], atol=1e-12)
    # Algorithm 1 ignores the node vector of question-owning nodes: 1, 3, 2
    np.testing.assert_array_equal(rank_algorithm1(PROMPT, questions, owner, nodes, 3)[0], [1, 3, 2])
    assert fused_ranking(PROMPT, nodes, questions, owner, 10)[0].shape == (4,)


# ---------------------------------------------------------------- top_k_edges


def test_top_k_edges_hand_computed() -> None:
    W = np.array(
        [
            [9.0, 0.5, 0.2, 0.5],
            [0.5, 0.0, 0.0, 0.1],
            [0.2, 0.0, 0.0, 0.0],
            [0.5, 0.1, 0.0, 0.0],
        ]
    )
    src, dst, weight = top_k_edges(W, 2)
    # diagonal ignored; node 0 ties 0.5/0.5 -> lower dst first; node 2 has a single edge
    np.testing.assert_array_equal(src, [0, 0, 1, 1, 2, 3, 3])
    np.testing.assert_array_equal(dst, [1, 3, 0, 3, 0, 0, 1])
    np.testing.assert_allclose(weight, [0.5, 0.5, 0.5, 0.1, 0.2, 0.5, 0.1])
    assert src.dtype == np.int64 and dst.dtype == np.int64 and weight.dtype == np.float64
    for got, want in zip(top_k_edges(sp.csr_matrix(W), 2), (src, dst, weight), strict=True):
        np.testing.assert_array_equal(got, want)
    assert top_k_edges(W, 0)[0].shape == (0,)
    np.testing.assert_array_equal(top_k_edges(W, 1)[1], [1, 0, 0, 0])


@pytest.mark.parametrize("seed", [0, 1])
def test_top_k_edges_dense_matches_sparse_random(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = np.triu(rng.uniform(size=(300, 300)) * (rng.uniform(size=(300, 300)) < 0.2), 1)
    W = x + x.T
    dense = top_k_edges(W, 4)
    sparse = top_k_edges(sp.csr_matrix(W), 4)
    for got, want in zip(sparse, dense, strict=True):
        np.testing.assert_array_equal(got, want)
    counts = np.bincount(dense[0], minlength=300)
    assert np.all(counts == np.minimum(4, (W > 0).sum(axis=1)))


def test_prepared_graph_matches_the_functions_and_validates_once() -> None:
    from gemrag.strategies.gem.search import PreparedGraph

    rng = np.random.default_rng(3)
    nodes = rng.normal(size=(12, 6))
    owner = np.repeat(np.arange(10), 2)  # nodes 10 and 11 own no question
    questions = rng.normal(size=(20, 6)) * 3.0
    W = adjacency_matrix(symmetrize(similarity_matrix(nodes, questions, owner)))
    prepared = PreparedGraph.prepare(questions, owner, nodes, W)
    for _ in range(5):
        p = rng.normal(size=6)
        np.testing.assert_allclose(prepared.relevance(p), node_relevance(p, questions, owner, nodes))
        for got, want in (
            (prepared.search(p, 5), gem_search(p, questions, owner, nodes, W, 5)),
            (prepared.rank(p, 4), rank_algorithm1(p, questions, owner, nodes, 4)),
            (prepared.fused(p, 3), fused_ranking(p, nodes, questions, owner, 3)),
        ):
            np.testing.assert_array_equal(got[0], want[0])
            np.testing.assert_allclose(got[1], want[1])
    assert np.allclose(np.linalg.norm(prepared.unit_questions, axis=1), 1.0)
    with pytest.raises(ValueError, match="needs the edge weights"):
        PreparedGraph.prepare(questions, owner, nodes).search(rng.normal(size=6), 2)
    with pytest.raises(ValueError, match="non-negative"):
        PreparedGraph.prepare(questions, owner, nodes, -W)
    with pytest.raises(ValueError, match=r"W must be \(12, 12\)"):
        PreparedGraph.prepare(questions, owner, nodes, W[:5, :5])
    with pytest.raises(ValueError, match="budget must be >= 0"):
        prepared.rank(rng.normal(size=6), -1)
