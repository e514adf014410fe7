"""Personalized PageRank (graph/ppr.py): a closed form, networkx as reference, input errors."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from gemrag.graph import TransitionMatrix, personalized_pagerank


def test_star_closed_form() -> None:
    # Star: center c = node 0 joined to leaves 1, 2, 3 with weight 1; reset r = e_1 (leaf 1), damping d.
    # P^T moves all of a leaf's mass to c, and c's mass in thirds to the leaves. Fixed point
    # p = d P^T p + (1 - d) r, with x = p_c, y = p_1, z = p_2 = p_3 (by symmetry):
    #   x = d (y + 2 z)
    #   y = d x / 3 + (1 - d)
    #   z = d x / 3
    # Substituting y, z: x = d (d x + 1 - d)  =>  x = d (1 - d) / (1 - d^2) = d / (1 + d).
    # With d = 0.5: x = 1/3, z = 1/18, y = 1/18 + 1/2 = 5/9; sum 1/3 + 5/9 + 2/18 = 1.
    W = np.zeros((4, 4))
    W[0, 1:] = W[1:, 0] = 1.0
    p = personalized_pagerank(W, np.array([0.0, 1.0, 0.0, 0.0]), damping=0.5, tol=1e-15)
    np.testing.assert_allclose(p, [1 / 3, 5 / 9, 1 / 18, 1 / 18], atol=1e-9)
    d = 0.85
    x = d / (1 + d)
    p = personalized_pagerank(sp.csr_matrix(W), [0, 7, 0, 0], damping=d, tol=1e-15)
    np.testing.assert_allclose(p, [x, d * x / 3 + 1 - d, d * x / 3, d * x / 3], atol=1e-9)


def test_weighted_path_with_isolated_node() -> None:
    # Path 0 -(2)- 1 -(1)- 2, plus isolated node 3; reset uniform on {0, 3}; d = 0.5.
    # P: 0 -> 1 (prob 1); 1 -> 0 (2/3), 1 -> 2 (1/3); 2 -> 1 (1). Node 3 is dangling: its mass
    # goes back to r (r_0 = r_3 = 1/2). Let m = p_3 (dangling mass). Equations (d = 1/2):
    #   p0 = 1/2 (2/3 p1) + 1/2 (m / 2) + 1/4
    #   p1 = 1/2 (p0 + p2)
    #   p2 = 1/2 (1/3 p1)
    #   p3 = 1/2 (m / 2) + 1/4  =>  m = m/4 + 1/4  =>  m = 1/3
    # Then p2 = p1 / 6, p1 = (p0 + p1/6) / 2 => p1 = 6 p0 / 11, and
    # p0 = p1/3 + 1/12 + 1/4 = 2 p0 / 11 + 1/3 => p0 = 11/27, p1 = 6/27, p2 = 1/27, p3 = 9/27.
    W = np.array([[0, 2, 0, 0], [2, 0, 1, 0], [0, 1, 0, 0], [0, 0, 0, 0]], dtype=float)
    tm = TransitionMatrix.from_adjacency(W)
    assert tm.dangling.tolist() == [False, False, False, True]
    p = tm.pagerank([1, 0, 0, 1], damping=0.5, tol=1e-15)
    np.testing.assert_allclose(p, np.array([11, 6, 1, 9]) / 27, atol=1e-9)
    assert p.sum() == pytest.approx(1.0, abs=1e-12)


def _random_graph(n: int, seed: int) -> tuple[np.ndarray, nx.Graph]:
    rng = np.random.default_rng(seed)
    upper = np.triu(rng.random((n, n)) * (rng.random((n, n)) < 0.1), 1)
    upper[:, :6] = 0  # nodes 0..5 isolated (dangling)
    upper[:6, :] = 0
    upper[10, 10] = 0.7  # a self-loop
    W = upper + np.triu(upper, 1).T
    G = nx.Graph()
    G.add_nodes_from(range(n))
    for i, j in zip(*np.nonzero(upper), strict=True):
        G.add_edge(int(i), int(j), weight=float(upper[i, j]))
    return W, G


@pytest.mark.parametrize("damping", [0.5, 0.85])
def test_matches_networkx(damping: float) -> None:
    n = 60
    W, G = _random_graph(n, seed=1)
    tm = TransitionMatrix.from_adjacency(sp.csr_matrix(W))
    rng = np.random.default_rng(2)
    resets = [
        np.eye(n)[7],  # one seed
        np.eye(n)[3] + np.eye(n)[20],  # an isolated seed and a connected one
        rng.random(n) * (rng.random(n) < 0.2) + np.eye(n)[30],  # sparse weighted seeds
        rng.random(n),  # dense
    ]
    for r in resets:
        ours = tm.pagerank(r, damping=damping, tol=1e-13)
        ref = nx.pagerank(
            G, alpha=damping, personalization={i: float(r[i]) for i in range(n)}, weight="weight", tol=1e-13
        )
        ref_vec = np.array([ref[i] for i in range(n)])
        assert np.abs(ours - ref_vec).max() < 1e-8
        assert ours.sum() == pytest.approx(1.0, abs=1e-12)
        dense = personalized_pagerank(W, r, damping=damping, tol=1e-13)  # dense W, same result
        np.testing.assert_allclose(ours, dense, rtol=0, atol=1e-14)


def test_default_tolerance_close_to_networkx() -> None:
    W, G = _random_graph(60, seed=3)
    r = np.eye(60)[12]
    ref = nx.pagerank(G, alpha=0.5, personalization={12: 1.0}, weight="weight", tol=1e-14)
    assert np.abs(personalized_pagerank(W, r) - np.array([ref[i] for i in range(60)])).max() < 1e-8


def test_damping_zero_returns_reset_and_max_iter_returns_iterate() -> None:
    W, _ = _random_graph(30, seed=4)
    r = np.zeros(30)
    r[[8, 9]] = [1.0, 3.0]
    np.testing.assert_allclose(personalized_pagerank(W, r, damping=0.0), r / 4)
    one_step = personalized_pagerank(W, r, damping=0.5, max_iter=1)  # not converged: no error
    assert one_step.shape == (30,) and one_step.sum() == pytest.approx(1.0)


def test_nan_and_negative_reset_entries_count_as_zero() -> None:
    W, _ = _random_graph(20, seed=5)
    clean = np.zeros(20)
    clean[[7, 11]] = [2.0, 1.0]
    dirty = clean.copy()
    dirty[[0, 3, 15]] = [np.nan, -5.0, -np.inf]
    np.testing.assert_allclose(personalized_pagerank(W, dirty), personalized_pagerank(W, clean), atol=0)
    assert np.isnan(dirty[0])  # the caller's array is not modified


def test_errors() -> None:
    W = np.ones((3, 3))
    tm = TransitionMatrix.from_adjacency(W)
    with pytest.raises(ValueError, match="no positive entry"):
        tm.pagerank(np.zeros(3))
    with pytest.raises(ValueError, match="no positive entry"):
        tm.pagerank([np.nan, -1.0, 0.0])
    with pytest.raises(ValueError, match="inf"):
        tm.pagerank([np.inf, 1.0, 0.0])
    with pytest.raises(ValueError, match="shape"):
        tm.pagerank(np.ones(4))
    with pytest.raises(ValueError, match="shape"):
        tm.pagerank(np.ones((3, 1)))
    for bad in (-0.1, 1.0, 1.5, float("nan")):
        with pytest.raises(ValueError, match="damping"):
            tm.pagerank(np.ones(3), damping=bad)
    with pytest.raises(ValueError, match="tol"):
        tm.pagerank(np.ones(3), tol=0.0)
    with pytest.raises(ValueError, match="max_iter"):
        tm.pagerank(np.ones(3), max_iter=0)
    with pytest.raises(ValueError, match="non-negative"):
        TransitionMatrix.from_adjacency(np.array([[0.0, -1.0], [-1.0, 0.0]]))
    with pytest.raises(ValueError, match="non-negative"):
        TransitionMatrix.from_adjacency(sp.csr_matrix(np.array([[0.0, -1.0], [-1.0, 0.0]])))
    with pytest.raises(ValueError, match="square"):
        TransitionMatrix.from_adjacency(np.ones((2, 3)))
    with pytest.raises(ValueError, match="NaN"):
        TransitionMatrix.from_adjacency(np.array([[0.0, np.nan], [np.nan, 0.0]]))
