"""UnWeaver's alignment (strategies/unweaver/alignment.py, Appendix A.2, eqs. 14-21).

The numerical example of Appendix A.3 lost all its numbers in the paper's text extraction (eqs. 22-27 are empty):
what survives is its shape — a few chunks, a few ideas spread over them, a query, one budget per chunk, and the
claim that the KKT conditions (17) hold at the solution, whose active chunks form the context. The example below
has that shape with our own numbers, and the test checks those conditions and the closed form (20).
"""

from __future__ import annotations

import numpy as np
import pytest

from gemrag.strategies.unweaver.alignment import (
    constrained_least_squares,
    fairness_allocation,
    fairness_closed_form,
    least_squares_alignment,
    relevance_weights,
)

# Four chunks x three ideas (A.3's shape): idea 0 in chunks 0 and 1, idea 1 in chunks 1 and 2, idea 2 in chunk 3.
R = np.array([[1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 1]], dtype=float)
C = np.ones(4)


def kkt_residuals(R: np.ndarray, w: np.ndarray, c: np.ndarray, x: np.ndarray, lam: np.ndarray) -> dict[str, float]:
    """Eq. (17) with U_j = w_j log x_j: stationarity w/x = R^T lambda, primal and dual feasibility, slackness."""
    return {
        "stationarity": float(np.max(np.abs(w / x - R.T @ lam))),
        "primal": float(max(0.0, np.max(R @ x - c))),
        "dual": float(max(0.0, -np.min(lam))),
        "slackness": float(np.max(np.abs(lam * (c - R @ x)))),
    }


def test_relevance_weights_are_floored_and_normalized() -> None:
    w = relevance_weights([0.6, 0.2, -0.3])
    assert w.sum() == pytest.approx(1.0)
    assert w[0] == pytest.approx(3 * w[1]) and 0 < w[2] < 1e-5


def test_closed_form_is_kellys_single_link_allocation() -> None:
    """Every idea in one chunk: chunk i shares its budget among its ideas in proportion to their weights."""
    R1 = np.array([[1, 1, 0], [0, 0, 1]], dtype=float)
    w = np.array([0.5, 0.25, 0.25])
    alloc = fairness_closed_form(R1, w, np.array([3.0, 2.0]))
    np.testing.assert_allclose(alloc.x, [2.0, 1.0, 2.0])  # 3 x 2/3, 3 x 1/3, 2
    np.testing.assert_allclose(alloc.prices, [0.25, 0.125])  # (0.5 + 0.25) / 3, 0.25 / 2
    np.testing.assert_allclose(alloc.load, [3.0, 2.0])  # every budget binds
    with pytest.raises(ValueError, match="exactly one chunk"):
        fairness_closed_form(R, np.ones(3) / 3, C)


def test_iterative_solution_meets_the_kkt_conditions_on_the_a3_shaped_example() -> None:
    w = relevance_weights([0.8, 0.5, 0.3])
    alloc = fairness_allocation(R, w, C)
    for name, value in kkt_residuals(R, w, C, alloc.x, alloc.prices).items():
        assert value < 1e-5, (name, value)
    # chunk 1 holds ideas 0 and 1, so it binds; chunks 0 and 2 hold one of them each and stay slack
    assert alloc.prices[1] > 0 and alloc.prices[3] > 0
    assert alloc.prices[0] == 0 and alloc.prices[2] == 0
    # known optimum: chunk 1's budget split in proportion w0 : w1 (both ideas are limited only there)
    np.testing.assert_allclose(alloc.x[:2], w[:2] / w[:2].sum(), atol=1e-6)
    assert alloc.x[2] == pytest.approx(1.0, abs=1e-6)


def test_iterative_solver_agrees_with_the_closed_form_where_it_applies() -> None:
    R1 = np.array([[1, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]], dtype=float)
    w = relevance_weights([0.9, 0.4, 0.7, 0.2])
    c = np.array([1.0, 2.0, 0.5])
    closed = fairness_closed_form(R1, w, c)
    # force the iterative path on the same problem by duplicating a chunk row (same constraint twice)
    R2, c2 = np.vstack([R1, R1[2]]), np.append(c, c[2])
    alloc = fairness_allocation(R2, w, c2)
    np.testing.assert_allclose(alloc.x, closed.x, rtol=1e-5)


def test_bad_routing_matrices_are_rejected() -> None:
    with pytest.raises(ValueError, match="at least one chunk"):
        fairness_allocation(np.array([[1.0, 0.0]]), np.array([0.5, 0.5]), np.ones(1))
    with pytest.raises(ValueError):
        fairness_allocation(R, np.array([0.5, 0.5, 0.0]), C)


def test_constrained_least_squares_meets_its_kkt_equation() -> None:
    rng = np.random.default_rng(0)
    A, b = rng.normal(size=(6, 3)), rng.normal(size=6)
    Cm, d = np.array([[1.0, 1.0, 1.0]]), np.array([1.0])
    x, nu = constrained_least_squares(A, b, Cm, d)
    assert Cm @ x == pytest.approx(d)
    np.testing.assert_allclose(2 * A.T @ (A @ x - b) + Cm.T @ nu, 0, atol=1e-9)
    # no feasible point does better
    for _ in range(50):
        z = rng.normal(size=3)
        z = x + z - z.mean()  # stays on sum(x) = 1
        assert np.sum((A @ z - b) ** 2) >= np.sum((A @ x - b) ** 2) - 1e-9


def test_least_squares_alignment_prices_the_chunk_whose_idea_matches_the_query() -> None:
    """Two chunks, two ideas (one each); the query equals idea 0's vector: raising chunk 0's budget reduces the
    error (positive price), raising chunk 1's increases it (negative)."""
    vectors = np.array([[1.0, 0.0], [0.0, 1.0]])
    R1 = np.eye(2)
    alloc = least_squares_alignment(vectors, np.array([2.0, 0.0]), R1, np.ones(2))
    np.testing.assert_allclose(alloc.x, [1.0, 1.0])
    np.testing.assert_allclose(alloc.prices, [2.0, -2.0])  # nu = -2 (x - q) per idea: d error / d c_0 = -2
