"""UnWeaver's retrieval alignment (UnWeaver paper, Appendix A.2, eqs. 14-21): how strongly each retrieved idea
(equivalence class) should count, given a budget of idea strength per chunk, and what that says about the chunks.

The formulas of A.2 did not survive the text extraction of the paper; what follows is reconstructed from its
prose and the works it cites (Kelly, Maulloo and Tan 1998; Boyd and Vandenberghe 2018, ch. 16), and says so:

* eq. (14), reconstructed: ``maximize sum_j U_j(x_j) subject to R x <= c, x >= 0``; ``R`` (m chunks x k ideas) is
  the retrieval submatrix (a chunk row approves the ideas it contains: the transpose of the ballots), ``x_j`` the
  strength of idea ``j``, ``c_i`` the budget of chunk ``i`` (eq. 16: chunk ``i``'s strength is ``r_i x``).
* eq. (17) (KKT): ``U_j'(x_j) = sum_i R_ij lambda_i``, ``lambda >= 0``, ``lambda_i (c_i - r_i x) = 0``;
  ``lambda_i`` is chunk ``i``'s price (the Lagrange multiplier of its budget).
* eq. (18): ``U_j(x_j) = w_j log x_j`` (proportional fairness); eq. (19), reconstructed: ``w_j`` the relevance of
  idea ``j`` to the query, here its cosine similarity (floored at :data:`MIN_WEIGHT`), normalized to sum to 1.
* eq. (20): ``x_j = w_j / sum_i R_ij lambda_i``. When every idea lies in exactly one chunk the prices are explicit,
  ``lambda_i = sum_{j in i} w_j / c_i`` (Kelly's single-link allocation, :func:`fairness_closed_form`); otherwise
  :func:`fairness_allocation` minimizes the dual ``sum_j w_j log(w_j / (R^T lambda)_j) - sum_j w_j + c^T lambda``
  over ``lambda >= 0`` (L-BFGS-B): the fixed point the paper's "auction-like" price iteration converges to.
* eq. (21), reconstructed: ``minimize ||V x - q||^2 subject to R x = c`` (V: d x k, the ideas' embeddings as
  columns; q the query vector), solved through its KKT equation
  ``[[2 V^T V, R^T], [R, 0]] [x; nu] = [2 V^T q; c]`` (:func:`constrained_least_squares`), by least squares
  (the pseudoinverse solution) when the system is singular — unique exactly when R has independent rows and
  ``[V; R]`` independent columns, the condition the paper states.

Chunk scores for ranking: the price ``lambda_i`` (fairness: the relevance routed through chunk i per unit of its
budget; 0 where the budget does not bind) and ``nu_i`` (least squares: with ``L = ||Vx - q||^2 + nu^T (R x - c)``,
``nu_i = -d p* / d c_i``, how much the error of approximating the query falls per unit more budget on chunk i).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.optimize
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from gemrag.graph.validate import as_matrix, as_vector

MIN_WEIGHT = 1e-6
"""Floor of a relevance weight (eq. 19): log utility needs w_j > 0."""
PRICE_TOL = 1e-9
"""A price at or below this is taken as 0 (the chunk's budget does not bind)."""


@dataclass(frozen=True)
class Allocation:
    """A solution of the alignment problem.

    Attributes:
        x: (k,) float64 idea strengths.
        prices: (m,) float64 chunk multipliers: ``lambda`` (fairness, >= 0) or ``nu`` (least squares).
        load: (m,) float64 ``R x``: each chunk's idea strength.
    """

    x: NDArray[np.float64]
    prices: NDArray[np.float64]
    load: NDArray[np.float64]


def relevance_weights(similarity: ArrayLike) -> NDArray[np.float64]:
    """Eq. (19), reconstructed: ``w_j = max(s_j, MIN_WEIGHT) / sum_l max(s_l, MIN_WEIGHT)`` for the ideas'
    similarities ``s`` to the query. Returns (k,) float64 summing to 1.

    Raises:
        ValueError: empty or non-finite input.
    """
    s = np.maximum(as_vector(similarity, "similarity"), MIN_WEIGHT)
    if s.size == 0:
        raise ValueError("no similarities")
    weights: NDArray[np.float64] = s / s.sum()
    return weights


def _dense(R: ArrayLike | sp.spmatrix) -> NDArray[np.float64]:
    """``R`` as a dense float64 array (a scipy.sparse matrix made dense)."""
    if isinstance(R, (sp.spmatrix, sp.sparray)):
        return np.asarray(R.toarray(), dtype=np.float64)
    return np.asarray(R, dtype=np.float64)


def _routing(
    R: ArrayLike | sp.spmatrix, w: ArrayLike, c: ArrayLike
) -> tuple[NDArray[np.floating], NDArray[np.floating], NDArray[np.floating]]:
    A = as_matrix(_dense(R), "R")
    w = as_vector(w, "w", size=A.shape[1])
    c = as_vector(c, "c", size=A.shape[0])
    if np.any(A < 0) or np.any(w <= 0) or np.any(c <= 0):
        raise ValueError("R must be non-negative and w, c positive")
    if np.any(A.sum(axis=0) <= 0):
        raise ValueError("every idea must lie in at least one chunk (a zero column of R)")
    return A, w, c


def fairness_closed_form(R: ArrayLike | sp.spmatrix, w: ArrayLike, c: ArrayLike) -> Allocation:
    """Eq. (20) where its prices are explicit: every idea lies in exactly one chunk, so the chunks' budgets are
    separate problems and ``lambda_i = sum_{j in i} w_j / c_i``, ``x_j = w_j / lambda_{i(j)}``.

    Args:
        R: (m, k) binary chunk x idea matrix (dense or sparse), one nonzero per column.
        w: (k,) positive weights. c: (m,) positive budgets.

    Raises:
        ValueError: a column of R with other than one nonzero, or bad input.
    """
    A, w, c = _routing(R, w, c)
    if np.any((A > 0).sum(axis=0) != 1):
        raise ValueError("the closed form needs every idea in exactly one chunk")
    lam = (A @ w) / c
    x = w / (A.T @ lam)
    return Allocation(x, lam, A @ x)


def fairness_allocation(
    R: ArrayLike | sp.spmatrix, w: ArrayLike, c: ArrayLike, *, max_iter: int = 10_000
) -> Allocation:
    """The proportional-fairness allocation (eqs. 14-20) for any routing matrix: the closed form when every idea
    lies in one chunk, else the dual minimized by L-BFGS-B (module docstring), ``x = w / (R^T lambda)``.

    Args:
        R: (m, k) non-negative chunk x idea matrix, no zero column. w: (k,) positive weights (eq. 19).
        c: (m,) positive budgets. max_iter: L-BFGS-B iterations.

    Returns:
        The allocation; ``prices`` are the multipliers ``lambda`` (>= 0, below :data:`PRICE_TOL` set to 0).

    Raises:
        ValueError: bad input (see :func:`fairness_closed_form`).
    """
    A, w, c = _routing(R, w, c)
    if np.all((A > 0).sum(axis=0) == 1):
        return fairness_closed_form(A, w, c)
    floor = PRICE_TOL / 10

    def dual(lam: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        y = A.T @ lam
        value = float(np.sum(w * np.log(w / y)) - w.sum() + c @ lam)
        return value, c - A @ (w / y)

    start = (A @ w) / c  # every chunk priced as if it carried all its ideas alone
    result = scipy.optimize.minimize(
        dual,
        start,
        jac=True,
        method="L-BFGS-B",
        bounds=[(floor, None)] * A.shape[0],
        options={"maxiter": max_iter, "ftol": 1e-15, "gtol": 1e-12},
    )
    lam = np.where(result.x <= PRICE_TOL, 0.0, result.x)
    x = w / (A.T @ np.maximum(lam, floor))
    return Allocation(x, lam, A @ x)


def constrained_least_squares(
    A: ArrayLike, b: ArrayLike, C: ArrayLike, d: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``minimize ||A x - b||^2 subject to C x = d`` through its KKT equation (Boyd and Vandenberghe 2018,
    section 16.1; UnWeaver eq. 21): ``[[2 A^T A, C^T], [C, 0]] [x; nu] = [2 A^T b; d]``, solved by
    ``scipy.linalg.lstsq`` (the minimum-norm least-squares solution where the KKT matrix is singular).

    Args:
        A: (p, k). b: (p,). C: (m, k). d: (m,).

    Returns:
        ``(x (k,), nu (m,))`` float64.

    Raises:
        ValueError: shapes disagree or non-finite input.
    """
    A = as_matrix(A, "A")
    k = A.shape[1]
    b = as_vector(b, "b", size=A.shape[0])
    C = as_matrix(C, "C", ncols=k)
    d = as_vector(d, "d", size=C.shape[0])
    m = C.shape[0]
    kkt = np.block([[2 * A.T @ A, C.T], [C, np.zeros((m, m))]])
    rhs = np.concatenate([2 * A.T @ b, d])
    solution = scipy.linalg.lstsq(kkt, rhs)[0]
    return solution[:k], solution[k:]


def least_squares_alignment(
    vectors: ArrayLike, query: ArrayLike, R: ArrayLike | sp.spmatrix, c: ArrayLike
) -> Allocation:
    """Eq. (21), reconstructed: the idea strengths whose combination of idea embeddings best approximates the
    query while every chunk carries exactly its budget.

    Args:
        vectors: (k, d) the ideas' embeddings as rows (``V^T``). query: (d,). R: (m, k) chunk x idea matrix.
        c: (m,) budgets.

    Returns:
        The allocation; ``prices = nu`` (module docstring).
    """
    V = as_matrix(vectors, "vectors")
    Rd = _dense(R)
    x, nu = constrained_least_squares(V.T, query, Rd, c)
    return Allocation(x, nu, Rd @ x)
