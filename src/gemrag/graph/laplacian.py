"""The paper's normalized graph Laplacian ``L = D^{-1/2} (S - I) D^{-1/2}``.

Paper: GEM-RAG (v2), section III.B.1, "Building the Summary Nodes" (definition of ``L``) and
"Analysis of Graph Spectrum" (properties: ``sum_i lambda_i = 0``, ``lambda_i in [-1, 1]``,
``lambda_1 = 1``).

Despite its name this ``L`` is the *normalized adjacency* matrix ``D^{-1/2} A D^{-1/2}`` of the graph
with adjacency ``A = S - I`` (the textbook normalized Laplacian would be ``I`` minus it). With ``D``
the diagonal matrix of the row sums of ``A`` and ``A`` symmetric and non-negative, ``L`` is similar to
the random-walk matrix ``D^{-1} A`` (row-stochastic), so every eigenvalue lies in ``[-1, 1]`` and
``lambda_1 = 1`` exactly (eigenvector ``D^{1/2} 1``) for every connected component that has an edge.
``sum_i lambda_i = trace(L) = sum_i A_ii / d_i`` is 0 only when ``A`` has a zero diagonal, i.e. when
``diag(S) = 1`` as the paper assumes ("the similarity matrix S - I, with zero diagonals").

All functions accept a dense ndarray or any scipy.sparse matrix and return the same kind (dense
float64 ndarray or float64 CSR matrix).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from gemrag.graph.validate import MatrixLike, as_square, max_asymmetry

__all__ = ["adjacency_matrix", "normalized_laplacian", "symmetrize"]

DiagonalMode = Literal["subtract_identity", "zero"]

SYMMETRY_TOL = 1e-9
"""Largest ``|A - A^T|`` entry (relative to ``max(1, max|A|)``) accepted as symmetric."""


def symmetrize(S: MatrixLike) -> NDArray[np.float64] | sp.csr_matrix:
    """Symmetric part ``(S + S^T) / 2`` of a similarity matrix.

    The paper's ``S`` (III.B.1) is asymmetric: ``s_tv`` sums node ``t``'s utility questions against
    node ``v``'s text, ``s_vt`` the other way round. The eigen-analysis of III.B.1 (``L x = lambda x``
    with real eigenvalues in ``[-1, 1]``) needs a symmetric matrix, so we use the symmetric part of
    ``S``, i.e. the undirected edge weight ``(s_tv + s_vt) / 2`` (the paper does not say how it handles
    the asymmetry).

    Args:
        S: ``(n, n)`` float, dense or scipy.sparse.

    Returns:
        ``(n, n)`` float64, symmetric; a dense ndarray or a CSR matrix, like the input.

    Raises:
        ValueError: ``S`` is not square or contains NaN/inf.
    """
    m, _ = as_square(S, "S")
    out = (m + m.T) / 2
    return sp.csr_matrix(out) if sp.issparse(out) else np.asarray(out)


def adjacency_matrix(
    S: MatrixLike,
    *,
    clip_negative: bool = True,
    diagonal: DiagonalMode = "subtract_identity",
) -> NDArray[np.float64] | sp.csr_matrix:
    """Edge-weight (adjacency) matrix ``A = S - I`` of the memory graph, optionally clipped at 0.

    This is the matrix inside the paper's ``L = D^{-1/2} (S - I) D^{-1/2}`` (III.B.1) and the natural
    weight matrix ``W`` for :func:`gemrag.strategies.gem.search.best_first_search`.

    Args:
        S: ``(n, n)`` float similarity matrix, dense or scipy.sparse (make it symmetric with
            :func:`symmetrize` first if you need a symmetric ``A``; this function does not check).
        clip_negative: replace negative entries of ``A`` by 0 (default ``True``). Cosine similarities
            can be negative, but edge weights of a graph must not be: negative degrees would make
            ``D^{-1/2}`` undefined and break the ``[-1, 1]`` eigenvalue bound.
        diagonal: ``"subtract_identity"`` (default) is the paper's literal ``S - I``;
            ``"zero"`` sets the diagonal to 0 (removes all self-loops). The two agree when
            ``diag(S) = 1``, which the paper assumes; our :func:`~gemrag.graph.similarity.similarity_matrix`
            has ``s_tt = sum_i cos(v_ti, v_t)``, generally not 1, so only ``"zero"`` guarantees
            ``sum_i lambda_i = 0`` there.

    Returns:
        ``(n, n)`` float64, dense ndarray or CSR matrix like the input.

    Raises:
        ValueError: ``S`` not square or not finite, or an unknown ``diagonal`` mode.
    """
    if diagonal not in ("subtract_identity", "zero"):
        raise ValueError(f"diagonal must be 'subtract_identity' or 'zero', got {diagonal!r}")
    m, n = as_square(S, "S")
    if sp.issparse(m):
        a = sp.csr_matrix(m, copy=True)
        if diagonal == "zero":
            a.setdiag(0.0)
        else:
            a = sp.csr_matrix(a - sp.identity(n, format="csr"))
        if clip_negative:
            a.data = np.maximum(a.data, 0.0)
        a.eliminate_zeros()
        return a
    a_dense = np.array(m, dtype=np.float64, copy=True)
    if diagonal == "zero":
        np.fill_diagonal(a_dense, 0.0)
    else:
        a_dense[np.diag_indices(n)] -= 1.0
    if clip_negative:
        np.maximum(a_dense, 0.0, out=a_dense)
    return a_dense


def normalized_laplacian(
    S: MatrixLike,
    *,
    clip_negative: bool = True,
    diagonal: DiagonalMode = "subtract_identity",
    check_symmetric: bool = True,
) -> NDArray[np.float64] | sp.csr_matrix:
    """The paper's normalized Laplacian variant ``L = D^{-1/2} (S - I) D^{-1/2}`` (III.B.1).

    ``A = S - I`` is built by :func:`adjacency_matrix` (negative entries clipped to 0 when
    ``clip_negative``), ``D = diag(d_i)`` with ``d_i = sum_j A_ij`` the row sums (degrees) of ``A``,
    and ``L_ij = A_ij / sqrt(d_i d_j)``.

    Properties (paper, "Analysis of Graph Spectrum"), for symmetric non-negative ``A``: ``L`` is
    symmetric, its eigenvalues lie in ``[-1, 1]`` and ``lambda_1 = 1`` exactly (eigenvector
    ``D^{1/2} 1``); ``sum_i lambda_i = trace(L) = 0`` when ``A`` has a zero diagonal.

    Zero-degree nodes (isolated, e.g. all similarities clipped away) have ``D^{-1/2}`` set to 0: their
    row and column of ``L`` are zero (eigenvalue 0), and nothing is divided by zero.

    Args:
        S: ``(n, n)`` float **symmetric** similarity matrix, dense or scipy.sparse (pass the output
            of :func:`symmetrize` for the paper's asymmetric ``S``).
        clip_negative: clip negative edge weights to 0 (see :func:`adjacency_matrix`).
        diagonal: ``"subtract_identity"`` (paper, default) or ``"zero"`` (see :func:`adjacency_matrix`).
        check_symmetric: raise if ``S`` is not symmetric (within ``SYMMETRY_TOL``, relative).

    Returns:
        ``(n, n)`` float64 ``L``: a dense ndarray, or a CSR matrix for sparse input.

    Raises:
        ValueError: ``S`` not square, not finite, not symmetric (when ``check_symmetric``), or
            (with ``clip_negative=False``) a node has a negative degree.
    """
    a = adjacency_matrix(S, clip_negative=clip_negative, diagonal=diagonal)
    scale = max(1.0, float(abs(a).max()) if a.shape[0] else 1.0)
    if check_symmetric and max_asymmetry(a) > SYMMETRY_TOL * scale:
        raise ValueError("S must be symmetric; call gemrag.graph.symmetrize(S) first")
    degree = np.asarray(a.sum(axis=1), dtype=np.float64).ravel()
    if np.any(degree < 0):
        raise ValueError("a node has a negative degree; use clip_negative=True for cosine similarities")
    inv_sqrt = np.divide(1.0, np.sqrt(degree), out=np.zeros_like(degree), where=degree > 0)
    if sp.issparse(a):
        scaler = sp.diags(inv_sqrt, format="csr")
        out = sp.csr_matrix(scaler @ a @ scaler)
        out.eliminate_zeros()
        return out
    return inv_sqrt[:, None] * a * inv_sqrt[None, :]
