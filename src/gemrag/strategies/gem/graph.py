"""GEM's build math between the embeddings and the summary nodes: S, L and the eigenpairs, each computed once.

Paper: GEM-RAG (v2), section III.B.1 ("Building the Weighted Complete Graph", "Building the Summary Nodes",
"Analysis of Graph Spectrum"). One build computes

1. the symmetric part of the chunk similarity matrix ``S`` — dense ``(n, n)`` (the paper's complete graph) or,
   above ``gem.sparse_above`` chunks, a k-nearest-neighbour CSR matrix (``gem.graph``, ``gem.knn``; not in the
   paper: the complete graph's O(n^2) memory and O(n^3) eigendecomposition do not scale), whose neighbours come
   from an HNSW index from ``gem.ann_above`` chunks on (:mod:`gemrag.graph.knn_ann`; exact below);
2. ``L = D^-1/2 (S - I) D^-1/2`` (zero diagonal) and its top eigenpairs ONCE — a full ``eigh`` (dense) or
   Lanczos ``eigsh`` (sparse) — shared by the spectrum report (Remarks 2-3) and the summary members;
3. after the summary nodes exist, ``S`` over all nodes by adding only their rows and columns
   (:func:`gemrag.graph.similarity.extend_similarity`), so ``S`` is formed once; the walk weights ``W`` are its
   clipped, zero-diagonal form (dense ndarray or CSR, like ``S``).

The store keeps ``W`` as given (a dense array or a scipy.sparse matrix, see :mod:`gemrag.store`).
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from gemrag.graph.knn_ann import approximate_knn_similarity_matrix
from gemrag.graph.laplacian import normalized_laplacian, symmetrize
from gemrag.graph.similarity import knn_similarity_matrix, similarity_matrix
from gemrag.graph.spectrum import SpectrumReport, eigenpairs, select_eigenthemes, spectrum_report
from gemrag.strategies.gem.settings import GemConfig

REPORT_TOP = 10
"""Eigenvalues in the spectrum report (``gemrag info``)."""
LARGE_EIGSH_TOL = 1e-6
"""eigsh's tolerance from ``gem.ann_above`` chunks on (measured not to change the eigenpairs: ``eigenpairs``)."""
LARGE_EIGSH_NCV = 64
"""eigsh's Lanczos vectors from ``gem.ann_above`` chunks on (2.7x faster at 100k chunks: ``eigenpairs``)."""
LARGE_EIGSH_MAXITER = 100
"""eigsh's restarts at most from ``gem.ann_above`` chunks on, then LOBPCG with a warning (``eigenpairs``): a build's
eigenpairs take a bounded time. ``benchmarks/scale.py`` reports whether the cap was reached (not at 10k, 100k, 1M)."""

GraphMode = Literal["dense", "sparse"]
Matrix: TypeAlias = NDArray[np.float64] | sp.csr_matrix


def graph_mode(cfg: GemConfig, n_chunks: int) -> GraphMode:
    """``"sparse"`` or ``"dense"`` for a build over ``n_chunks`` chunks: ``gem.graph``, where ``"auto"`` means
    sparse when ``n_chunks > gem.sparse_above``."""
    if cfg.graph == "auto":
        return "sparse" if n_chunks > cfg.sparse_above else "dense"
    return cfg.graph


def chunk_graph(
    vectors: np.ndarray, qvectors: np.ndarray, owner: np.ndarray, mode: GraphMode, cfg: GemConfig
) -> tuple[Matrix, Matrix, tuple[NDArray[np.float64], NDArray[np.float64]], SpectrumReport]:
    """The chunk graph's symmetric ``S``, ``L``, its top eigenpairs and the spectrum report, each computed once.

    Args:
        vectors: (n, d) float32 chunk vectors v_i, n >= 1.
        qvectors: (M, d) float32 utility-question vectors v_ij.
        owner: (M,) int64 chunk index of each question.
        mode: ``"dense"`` (complete graph, ``eigh``; ``eigsh`` on the dense L when n > 1000 and 5 k < n) or
            ``"sparse"`` (``gem.knn`` neighbours per node, ``eigsh``; from ``gem.ann_above`` chunks on, the
            neighbours come from an HNSW index, :func:`approximate_knn_similarity_matrix`).
        cfg: the GEM settings (``eigen``, ``skip_trivial``, ``knn``, ``ann_above``).

    Returns:
        ``(S, L, (values, vectors), report)``: S the (n, n) float64 symmetric part of the similarity matrix
        (dense or CSR), L the (n, n) float64 normalized Laplacian (same kind), the
        ``min(n, max(REPORT_TOP, k + 1))`` largest-|lambda| eigenpairs ((K,) float64, (n, K) float64, ordered by
        non-increasing |lambda|) and the Remarks 2-3 report.

    Raises:
        ValueError: invalid arrays (see :mod:`gemrag.graph`).
    """
    if mode == "sparse" and vectors.shape[0] >= cfg.ann_above:
        S: Matrix = approximate_knn_similarity_matrix(vectors, qvectors, owner, cfg.knn)
    elif mode == "sparse":
        S = knn_similarity_matrix(vectors, qvectors, owner, cfg.knn)
    else:
        S = symmetrize(similarity_matrix(vectors, qvectors, owner))
    # The paper: "The similarity matrix S − I, with zero diagonals". Our s_tt sums m cosines (≈ 0.7·m, not
    # 1), so the literal S − I would keep self-loops and break Σλ = 0; we zero the diagonal as intended.
    L = normalized_laplacian(S, diagonal="zero")
    n = L.shape[0]
    large = mode == "sparse" and n >= cfg.ann_above  # a looser, faster Lanczos on the large path (eigenpairs)
    eigen = eigenpairs(
        L,
        min(n, max(REPORT_TOP, cfg.eigen + 1)),
        method="sparse" if mode == "sparse" else "auto",
        tol=LARGE_EIGSH_TOL if large else 0.0,
        ncv=LARGE_EIGSH_NCV if large else None,
        maxiter=LARGE_EIGSH_MAXITER if large else None,
    )
    return S, L, eigen, spectrum_report(L, top=REPORT_TOP, eigenvalues=eigen[0])


def eigen_selection(values: NDArray[np.float64], cfg: GemConfig) -> dict[str, Any]:
    """What the spectrum report says about the eigenvectors chosen for summary nodes (section III.B.1).

    Args:
        values: (K,) float64 eigenvalues by non-increasing |lambda| (from :func:`chunk_graph`).
        cfg: the GEM settings (``eigen`` = k, ``skip_trivial``).

    Returns:
        JSON-friendly dict: ``skip_trivial``; ``selected_indices`` (0-based positions in the |lambda| order) and
        ``selected_eigenvalues`` of the summarized eigenvectors; ``negative_selected``, the negative ones among
        them; ``negative_in_top_k``, the negative eigenvalues among the top k by |lambda| (the paper's choice).
    """
    k = min(cfg.eigen, values.shape[0])
    chosen = select_eigenthemes(values, k, skip_trivial=cfg.skip_trivial)
    selected = [float(values[i]) for i in chosen.tolist()]
    return {
        "skip_trivial": cfg.skip_trivial,
        "selected_indices": chosen.tolist(),
        "selected_eigenvalues": selected,
        "negative_selected": [v for v in selected if v < 0],
        "negative_in_top_k": [float(v) for v in values[:k] if v < 0],
    }
