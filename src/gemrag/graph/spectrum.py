"""Eigenthemes: the spectrum of the normalized Laplacian ``L`` and what the paper reads from it.

Paper: GEM-RAG (v2), section III.B.1, "Building the Summary Nodes" (eigen-decomposition
``L x = lambda x``, eigenvalues ordered by non-increasing magnitude, top ``e`` components of each
eigenvector ``x_k`` form the ``k``-th theme) and "Analysis of Graph Spectrum" (Remarks 1-3).

``L`` is the output of :func:`gemrag.graph.laplacian.normalized_laplacian` (symmetric, eigenvalues
in ``[-1, 1]``), but the functions work for any real symmetric matrix.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Literal

import numpy as np
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.linalg
from numpy.typing import ArrayLike, NDArray

from gemrag.graph.validate import MatrixLike, as_matrix, as_square, as_vector, max_asymmetry, top_indices

__all__ = [
    "SpectrumReport",
    "eigenpairs",
    "estimate_num_themes",
    "select_eigenthemes",
    "spectral_energy",
    "spectrum_report",
    "theme_members",
]

DENSE_MAX_N = 1000
"""In ``method="auto"``, dense matrices up to this size always use the full dense solver."""

MAGNITUDE_DECIMALS = 10
"""Eigenvalue magnitudes equal to this many decimals are ties (ordered positive first)."""


def _order_by_magnitude(values: NDArray[np.float64]) -> NDArray[np.int64]:
    """Permutation sorting ``values`` by non-increasing ``|lambda|``; ties: positive first."""
    mags = np.round(np.abs(values), MAGNITUDE_DECIMALS)
    return np.lexsort((-values, -mags)).astype(np.int64)


def _fix_signs(vectors: NDArray[np.float64]) -> NDArray[np.float64]:
    """Flip each column so its largest-|x| component is positive.

    Components within a relative ``1e-8`` of the largest magnitude are ties; the lowest index among
    them decides, so the convention does not depend on rounding noise between solvers.
    """
    if vectors.size == 0:
        return vectors
    mags = np.abs(vectors)
    peak = mags.max(axis=0, keepdims=True)
    pivot = np.argmax(mags >= peak * (1 - 1e-8), axis=0)
    signs = np.where(vectors[pivot, np.arange(vectors.shape[1])] < 0, -1.0, 1.0)
    return vectors * signs[None, :]


def eigenpairs(
    L: MatrixLike,
    k: int | None = None,
    *,
    method: Literal["auto", "dense", "sparse"] = "auto",
    tol: float = 0.0,
    ncv: int | None = None,
    maxiter: int | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Eigenvalues and eigenvectors of a symmetric ``L``, largest magnitude first (paper III.B.1).

    The paper orders ``lambda_1, ..., lambda_n`` "in non-increasing order of their magnitude"; the
    eigenvectors ``x_1, ..., x_n`` "represent the principal themes". Magnitude ties (e.g. ``1`` and
    ``-1`` of a bipartite component) put the positive eigenvalue first.

    Solvers: ``"dense"`` is ``scipy.linalg.eigh`` (all eigenpairs, O(n^3)); ``"sparse"`` is ARPACK
    Lanczos ``scipy.sparse.linalg.eigsh(which="LM")`` (the paper cites Lanczos) with a fixed start
    vector, so results are reproducible. ``"auto"`` uses ``"sparse"`` when ``k < n - 1`` and either
    ``L`` is scipy.sparse or ``n > DENSE_MAX_N`` and ``5 k < n``; otherwise ``"dense"``. ``"sparse"``
    falls back to ``"dense"`` when ``k >= n - 1`` (ARPACK needs ``k < n``).

    Sign convention (an eigenvector's sign is arbitrary): each eigenvector is flipped so that its
    largest-magnitude component is positive (lowest index among near-ties). Within a repeated
    eigenvalue the basis of the eigenspace is solver-dependent; only the eigenspace is defined.

    Args:
        L: ``(n, n)`` real symmetric float matrix, dense ndarray or scipy.sparse.
        k: number of eigenpairs, ``1 <= k``; ``None`` (default) or ``k > n`` means all ``n``.
        method: ``"auto"``, ``"dense"`` or ``"sparse"`` (see above).
        tol: ARPACK's relative accuracy of the eigenvalues (``"sparse"`` only; 0 = machine precision, default).
        ncv: Lanczos vectors kept between restarts (``"sparse"`` only; None = ARPACK's default ``2 k + 1``,
            capped at ``n``). On GEM's 100k-chunk kNN graph (top eigenvalues within 0.004 of 1) ``tol=1e-6,
            ncv=64`` took 39 s against 105 s for the defaults, with the same eigenvalues to 6 decimals and
            eigenvectors to |cosine| 1.00000 (``benchmarks/scale.py``, ``docs/scale.md``).
        maxiter: at most this many ARPACK restarts (``"sparse"`` only; None = ARPACK's default ``10 n``, i.e.
            unbounded in practice). If ARPACK has not converged by then, LOBPCG (Knyazev 2001, scipy's
            ``lobpcg``) refines the ``k`` largest *algebraic* eigenpairs from ARPACK's converged vectors (padded
            with random ones) for at most :data:`LOBPCG_MAXITER` iterations and a :class:`RuntimeWarning` says so:
            a bounded time at the price of accuracy. Largest algebraic equals largest magnitude unless ``L`` has
            an eigenvalue below ``-lambda_k`` (a near-bipartite component); a kNN similarity graph's ``L`` has its
            top eigenvalues near 1 and none near -1 (``benchmarks/scale.py`` prints them).

    Returns:
        ``(values, vectors)``: ``values`` ``(k,)`` float64, ordered by non-increasing ``|lambda|``;
        ``vectors`` ``(n, k)`` float64 with unit-norm columns, ``vectors[:, i]`` belongs to
        ``values[i]``.

    Raises:
        ValueError: ``L`` not square, not finite or not symmetric (relative tolerance 1e-9), ``k < 1``,
            or an unknown ``method``.
    """
    if method not in ("auto", "dense", "sparse"):
        raise ValueError(f"method must be 'auto', 'dense' or 'sparse', got {method!r}")
    m, n = as_square(L, "L")
    scale = max(1.0, float(abs(m).max()) if n else 1.0)
    if max_asymmetry(m) > 1e-9 * scale:
        raise ValueError("L must be symmetric")
    if k is not None and k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    k = n if k is None else min(int(k), n)
    if n == 0:
        return np.zeros(0), np.zeros((0, 0))
    if method == "auto":
        wants_sparse = sp.issparse(m) or (n > DENSE_MAX_N and 5 * k < n)
        method = "sparse" if wants_sparse and k < n - 1 else "dense"
    if method == "sparse" and k < n - 1:
        v0 = np.random.default_rng(0).uniform(-1.0, 1.0, n)
        lanczos = None if ncv is None else min(n, max(int(ncv), 2 * k + 1))
        try:
            values, vectors = scipy.sparse.linalg.eigsh(
                m, k=k, which="LM", v0=v0, tol=tol, ncv=lanczos, maxiter=maxiter
            )
        except scipy.sparse.linalg.ArpackNoConvergence as stopped:
            if maxiter is None:
                raise
            values, vectors = _lobpcg_refine(m, k, stopped.eigenvectors, tol, maxiter)
    else:
        dense = m if isinstance(m, np.ndarray) else m.toarray()
        values, vectors = scipy.linalg.eigh(dense)
    order = _order_by_magnitude(values)[:k]
    return np.asarray(values[order], dtype=np.float64), _fix_signs(np.asarray(vectors[:, order]))


LOBPCG_MAXITER = 200
"""Iterations of the LOBPCG refinement in :func:`eigenpairs` after ARPACK stopped at ``maxiter`` restarts."""


def _lobpcg_refine(
    m: MatrixLike, k: int, start: NDArray[np.float64], tol: float, restarts: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The ``k`` largest algebraic eigenpairs of symmetric ``m`` by LOBPCG (Knyazev, SIAM J. Sci. Comput. 23(2),
    2001), started from ARPACK's converged ``start`` columns ``(n, j)`` plus ``k - j`` random ones (seed 0),
    at most :data:`LOBPCG_MAXITER` iterations; warns (RuntimeWarning) that ARPACK stopped after ``restarts``."""
    n = m.shape[0]
    rng = np.random.default_rng(0)
    have = np.asarray(start, dtype=np.float64).reshape(n, -1)[:, :k]
    x0 = np.hstack([have, rng.uniform(-1.0, 1.0, (n, k - have.shape[1]))])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # lobpcg's own "not reaching the requested tolerance"
        values, vectors = scipy.sparse.linalg.lobpcg(m, x0, largest=True, tol=max(tol, 1e-5), maxiter=LOBPCG_MAXITER)
    warnings.warn(
        f"eigsh did not converge in {restarts} restarts; the top {k} eigenpairs are LOBPCG's after at most "
        f"{LOBPCG_MAXITER} iterations (largest algebraic, possibly less accurate)",
        RuntimeWarning,
        stacklevel=3,
    )
    return np.asarray(values, dtype=np.float64), np.asarray(vectors, dtype=np.float64)


def theme_members(
    eigenvectors: ArrayLike, top_e: int, *, by: Literal["signed", "abs"] = "signed"
) -> list[NDArray[np.int64]]:
    """Node indices of each eigentheme: the top ``e`` components of each eigenvector (paper III.B.1).

    Paper: "for each eigenvector x_k, select the top e components x_k1, ..., x_ke, representing the
    most relevant nodes for the k-th theme", whose texts are then summarized by an LLM.

    "Top" is ambiguous for a vector with both signs. ``by="signed"`` (default) takes the ``e``
    largest *signed* values, after the sign convention of :func:`eigenpairs` (largest-|x| component
    positive): this is one pole of the theme. An eigenvector's overall sign is arbitrary, and for
    ``k >= 2`` an eigenvector of ``L`` is orthogonal to the Perron vector ``D^{1/2} 1`` so it has both
    signs, splitting the graph into two groups (Remark 1: for a two-block ``S`` the second
    eigenvector is positive on one block and negative on the other). Ranking by ``|x|`` would mix
    the two poles, i.e. two unrelated groups of passages, in one summary. ``by="abs"`` ranks by
    ``|x|`` for callers who want that anyway. Column 0 of a connected graph is the Perron vector
    (all components of one sign, proportional to ``sqrt(degree)``): its top components are the most
    central nodes; the paper does not exclude it, and by default neither do we
    (:func:`select_eigenthemes` with ``skip_trivial=True`` does).

    Ties are broken by the lower node index.

    Args:
        eigenvectors: ``(n, k)`` float, eigenvectors as columns (e.g. from :func:`eigenpairs`).
        top_e: ``e``, nodes per theme, ``>= 1`` (``e > n`` returns all ``n`` nodes).
        by: ``"signed"`` or ``"abs"``.

    Returns:
        List of ``k`` int64 arrays, each of length ``min(e, n)``, node indices best first.

    Raises:
        ValueError: ``eigenvectors`` not 2-D or not finite, ``top_e < 1``, or an unknown ``by``.
    """
    if by not in ("signed", "abs"):
        raise ValueError(f"by must be 'signed' or 'abs', got {by!r}")
    if top_e < 1:
        raise ValueError(f"top_e must be >= 1, got {top_e}")
    x = np.asarray(as_matrix(eigenvectors, "eigenvectors"), dtype=np.float64)
    scores = np.abs(x) if by == "abs" else x
    return [top_indices(scores[:, col], top_e) for col in range(x.shape[1])]


def estimate_num_themes(eigenvalues: ArrayLike, cutoff: float = 0.1, *, min_ratio: float = 0.5) -> int:
    """Estimated number of essential themes from the eigen-gap, literally per Remark 2 (paper III.B.1).

    Remark 2: with ratios ``beta_i = lambda_i / lambda_1`` for ``i >= 2``, "if there exists some index
    ``d >= 2`` such that ``beta_d`` is close to 1, and ``beta_d - beta_{d+1} > c`` where ``c`` indicates
    the cutoff that identifies the first significant gap between a pair of adjacent ratios, then
    ``d`` is the estimated number of essential themes".

    Our precise rule (1-based indices as in the paper):

    1. Sort the eigenvalues by non-increasing magnitude (as :func:`eigenpairs` returns them).
    2. ``beta_i = lambda_i / lambda_1`` for ``i = 2..K`` (``K`` = number of eigenvalues given), and
       ``beta_{K+1} := 0``: eigenvalues not supplied are taken as ~0, as Remark 1 describes the
       non-theme eigenvalues (``|lambda_i| < epsilon``). So passing only the top few eigenvalues of a
       graph with many themes yields ``K``, a lower bound.
    3. "``beta_d`` close to 1" means ``beta_d >= min_ratio`` (a parameter, default 0.5).
    4. Return the **smallest** ``d >= 2`` with ``beta_d >= min_ratio`` and
       ``beta_d - beta_{d+1} > cutoff`` (the *first* significant gap).
    5. If there is none (in particular when ``beta_2 < min_ratio``: ``lambda_1`` stands alone),
       return 1, a single theme, which is Remark 1 with ``k = 1``. If ``|lambda_1|`` is ~0 (a graph
       without edges) or no eigenvalue is given, return 0.

    The ordering is by magnitude, literally as in the paper, so a large *negative* eigenvalue (a
    near-bipartite component, outside Remark 1's model) occupies an index and is counted when it
    precedes the gap, but can never itself satisfy "close to 1".

    Args:
        eigenvalues: ``(K,)`` float, e.g. the first output of :func:`eigenpairs`; any order.
        cutoff: ``c``, the minimum gap between adjacent ratios (dimensionless, default 0.1).
        min_ratio: threshold for "close to 1" (dimensionless, default 0.5).

    Returns:
        The estimated number of themes ``d`` (int, ``0 <= d <= K``).

    Raises:
        ValueError: ``eigenvalues`` not 1-D or not finite, or ``cutoff < 0``.
    """
    if cutoff < 0:
        raise ValueError(f"cutoff must be >= 0, got {cutoff}")
    lam = as_vector(eigenvalues, "eigenvalues")
    if lam.shape[0] == 0:
        return 0
    lam = lam[_order_by_magnitude(lam)]
    if abs(lam[0]) <= 1e-12:
        return 0
    beta = np.append(lam[1:] / lam[0], 0.0)  # beta_2 .. beta_K, beta_{K+1} = 0
    hits = np.flatnonzero((beta[:-1] >= min_ratio) & (beta[:-1] - beta[1:] > cutoff))
    return int(hits[0]) + 2 if hits.size else 1


def spectral_energy(eigenvalues: ArrayLike) -> float:
    """Remark 3's ``Lambda = sum_i lambda_i^2`` (paper III.B.1, "Analysis of Graph Spectrum").

    A higher ``Lambda`` indicates more distinct clustering themes. Over the *full* spectrum of a
    symmetric ``L`` this equals ``||L||_F^2`` (squared Frobenius norm), which
    :func:`spectrum_report` uses so it needs no full eigendecomposition; pass only the top
    eigenvalues to get their share.

    Args:
        eigenvalues: ``(K,)`` float (dimensionless).

    Returns:
        ``Lambda`` as a Python float (``>= 0``).

    Raises:
        ValueError: ``eigenvalues`` not 1-D or not finite.
    """
    lam = as_vector(eigenvalues, "eigenvalues")
    return float(np.dot(lam, lam))


@dataclass(frozen=True)
class SpectrumReport:
    """Summary of the spectrum of ``L`` (paper III.B.1, "Analysis of Graph Spectrum").

    Attributes:
        n: number of nodes (size of ``L``).
        top_eigenvalues: ``(k,)`` float64, the ``k = min(top, n)`` largest-magnitude eigenvalues,
            ordered by non-increasing magnitude.
        estimated_themes: Remark 2 estimate from ``top_eigenvalues`` (:func:`estimate_num_themes`).
        spectral_energy: Remark 3's ``Lambda`` over the full spectrum, ``||L||_F^2``.
        trace: ``trace(L) = sum_i lambda_i`` (0 in the paper, when ``S - I`` has a zero diagonal).
    """

    n: int
    top_eigenvalues: NDArray[np.float64]
    estimated_themes: int
    spectral_energy: float
    trace: float

    def as_dict(self) -> dict[str, object]:
        """JSON-friendly dict (eigenvalues as a list of floats)."""
        return {
            "n": self.n,
            "top_eigenvalues": [float(x) for x in self.top_eigenvalues],
            "estimated_themes": self.estimated_themes,
            "spectral_energy": self.spectral_energy,
            "trace": self.trace,
        }


def spectrum_report(
    L: MatrixLike,
    top: int = 10,
    *,
    cutoff: float = 0.1,
    min_ratio: float = 0.5,
    eigenvalues: ArrayLike | None = None,
) -> SpectrumReport:
    """Compute a :class:`SpectrumReport` of a symmetric ``L`` (paper III.B.1, Remarks 2 and 3).

    Args:
        L: ``(n, n)`` symmetric float matrix, dense or scipy.sparse.
        top: number of largest-magnitude eigenvalues to compute and report, ``>= 1``.
        cutoff: Remark 2 cutoff ``c`` (see :func:`estimate_num_themes`).
        min_ratio: Remark 2 "close to 1" threshold (see :func:`estimate_num_themes`).
        eigenvalues: ``L``'s largest-magnitude eigenvalues, already computed (e.g. by the caller's
            :func:`eigenpairs`, so the eigendecomposition runs once per build); the first ``min(top, n)``
            are used. None (default) computes them here.

    Returns:
        The report. Eigenvalues via :func:`eigenpairs` (``method="auto"``) unless given.

    Raises:
        ValueError: as :func:`eigenpairs`, ``top < 1``, or fewer than ``min(top, n)`` eigenvalues given.
    """
    if top < 1:
        raise ValueError(f"top must be >= 1, got {top}")
    m, n = as_square(L, "L")
    if eigenvalues is not None:
        given = as_vector(eigenvalues, "eigenvalues")
        if given.shape[0] < min(top, n):
            raise ValueError(f"need {min(top, n)} eigenvalues, got {given.shape[0]}")
        values = given[_order_by_magnitude(given)][: min(top, n)]
    else:
        values, _ = eigenpairs(m, min(top, n)) if n else (np.zeros(0), None)
    if not isinstance(m, np.ndarray):  # sparse
        m.sum_duplicates()
        energy = float(np.dot(m.data, m.data))
    else:
        energy = float(np.sum(m * m))
    return SpectrumReport(
        n=n,
        top_eigenvalues=values,
        estimated_themes=estimate_num_themes(values, cutoff, min_ratio=min_ratio),
        spectral_energy=energy,
        trace=float(m.diagonal().sum()),
    )


TRIVIAL_TOL = 1e-6
"""``lambda_1`` within this of 1 is the trivial (Perron) eigenvalue that ``skip_trivial`` drops."""


def select_eigenthemes(values: ArrayLike, k: int, *, skip_trivial: bool = False) -> NDArray[np.int64]:
    """Positions of the ``k`` eigenpairs that become eigentheme summary nodes (paper III.B.1).

    The paper summarizes the top ``k`` eigenvectors in order of non-increasing ``|lambda|``, so the first
    is always ``lambda_1 = 1``, whose eigenvector is the Perron vector ``D^{1/2} 1 / ||D^{1/2} 1||``
    ("Analysis of Graph Spectrum": ``lambda_1 = 1``): every component has the same sign and is
    proportional to ``sqrt(degree)``, so its "top e components" are the most central nodes of the whole
    graph, not a theme. With ``skip_trivial=True`` the first eigenpair is dropped when its eigenvalue is
    1 (within :data:`TRIVIAL_TOL`) and the next ``k`` are taken. (A graph with ``c`` connected components
    has ``c`` eigenvalues 1, Remark 1's block indicators; only one of them is dropped.) The paper's
    choice, ``skip_trivial=False``, is the default. Negative eigenvalues (near-bipartite structure) are
    selected when their magnitude ranks them among the top ``k``, literally as in the paper.

    Args:
        values: ``(K,)`` float eigenvalues ordered by non-increasing ``|lambda|`` (from :func:`eigenpairs`).
        k: number of themes, ``>= 0``.
        skip_trivial: drop ``lambda_1 = 1`` (see above).

    Returns:
        ``(min(k, K - skipped),)`` int64 positions into ``values``, in order.

    Raises:
        ValueError: ``values`` not 1-D or not finite, or ``k < 0``.
    """
    lam = as_vector(values, "values")
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    start = 1 if skip_trivial and lam.shape[0] and abs(lam[0] - 1.0) <= TRIVIAL_TOL else 0
    return np.arange(start, min(start + k, lam.shape[0]), dtype=np.int64)
