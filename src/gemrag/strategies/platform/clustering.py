"""Clustering of embedding vectors: RAPTOR's soft GMM clustering and k-means theme members (no LLM).

* RAPTOR (Sarthi et al. 2024, "RAPTOR: Recursive Abstractive Processing for Tree-Organized Retrieval",
  section 3 "Clustering Algorithm", and the authors' ``raptor/cluster_utils.py``): vectors are reduced
  with UMAP, a Gaussian mixture model is fitted with the number of components chosen by the Bayesian
  Information Criterion (BIC), and every point joins each component whose posterior probability exceeds
  a threshold (soft clustering: a point may belong to several clusters). Clustering is two-stage: a
  *global* UMAP (``n_neighbors = int(sqrt(n - 1))``) and GMM, then, inside each global cluster, a *local*
  UMAP (``n_neighbors = 10``) and GMM. A cluster whose texts are longer than the summarizer's context is
  clustered again (recursively) on its own (:func:`raptor_clusters`).
* GEM-RAG's "k-Means" ablation (GEM-RAG paper, Table I, last row "GEM-RAG (k-Means)"): the members of
  each summary node are the chunks nearest each k-means centroid instead of the top components of an
  eigenvector (:func:`kmeans_members`).

scikit-learn and umap-learn are optional dependencies (``pip install 'gemrag[eval]'``) and are imported
lazily, inside the functions: importing umap takes seconds and its first fit compiles numba code
(~20 s), so nothing here is paid for until it is used. Every function is deterministic for a fixed
``random_state``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from gemrag.graph.validate import as_matrix

if TYPE_CHECKING:
    from sklearn.mixture import GaussianMixture

__all__ = [
    "RANDOM_SEED",
    "Reducer",
    "gmm_soft_clusters",
    "kmeans_members",
    "optimal_cluster_count",
    "raptor_clusters",
    "umap_reducer",
]

RANDOM_SEED = 224
"""The seed of RAPTOR's published clustering code."""

LOCAL_NEIGHBORS = 10
"""``n_neighbors`` of the local (per global cluster) UMAP, as in RAPTOR's code."""

Reducer = Callable[[NDArray[np.float64], int, int], NDArray[np.float64]]
"""``reducer(X, n_components, n_neighbors) -> Y``: ``X`` is ``(n, d)``, ``Y`` is ``(n, n_components)``."""


def umap_reducer(metric: str = "cosine", random_state: int = RANDOM_SEED) -> Reducer:
    """RAPTOR's dimension reduction: ``umap.UMAP(n_neighbors, n_components, metric).fit_transform``.

    umap is imported on the first call (not when this function is called). A fixed ``random_state``
    makes UMAP deterministic (and single-threaded).

    Args:
        metric: UMAP's input metric (RAPTOR: ``"cosine"``).
        random_state: UMAP's seed.

    Returns:
        A :data:`Reducer`.
    """

    def reduce(X: NDArray[np.float64], n_components: int, n_neighbors: int) -> NDArray[np.float64]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "n_jobs overridden by setting random_state", numba notices
            import umap

            model = umap.UMAP(
                n_neighbors=n_neighbors, n_components=n_components, metric=metric, random_state=random_state
            )
            return np.asarray(model.fit_transform(X), dtype=np.float64)

    return reduce


def _best_gmm(X: NDArray[np.float64], max_clusters: int, random_state: int) -> GaussianMixture:
    """The full-covariance GMM with the lowest BIC among 1, ..., min(max_clusters, n) - 1 components."""
    from sklearn.mixture import GaussianMixture
    from threadpoolctl import threadpool_limits

    n = X.shape[0]
    candidates = range(1, max(2, min(max_clusters, n)))  # RAPTOR: np.arange(1, min(max_clusters, n))
    best: GaussianMixture | None = None
    best_bic = math.inf
    # Single-threaded BLAS: the matrices are tiny (dim x dim), and competing OpenBLAS thread pools (numpy's and
    # scipy's) made these fits ~10x slower on a 2-core machine.
    with warnings.catch_warnings(), threadpool_limits(limits=1, user_api="blas"):
        warnings.simplefilter("ignore")  # ConvergenceWarning on degenerate data
        for k in candidates:
            gm = GaussianMixture(n_components=k, random_state=random_state).fit(X)
            bic = float(gm.bic(X))
            if bic < best_bic:  # strict: ties keep the smaller k
                best, best_bic = gm, bic
    assert best is not None
    return best


def optimal_cluster_count(X: ArrayLike, max_clusters: int = 50, random_state: int = RANDOM_SEED) -> int:
    """Number of Gaussian mixture components with the lowest BIC (RAPTOR section 3, ``get_optimal_clusters``).

    Tries ``k = 1, ..., min(max_clusters, n) - 1`` (as RAPTOR's code; ``k = 1`` when ``n <= 2``), each a
    full-covariance ``sklearn.mixture.GaussianMixture`` with the given seed; BIC ties keep the smaller k.

    Args:
        X: ``(n, d)`` float points, ``n >= 1``.
        max_clusters: upper bound on k (RAPTOR: 50).
        random_state: the GMM seed.

    Returns:
        The chosen number of components, ``>= 1``.

    Raises:
        ValueError: ``X`` is not a finite 2-D array with at least one row.
    """
    pts = _points(X)
    return int(_best_gmm(pts, max_clusters, random_state).n_components)


def gmm_soft_clusters(
    X: ArrayLike, threshold: float = 0.1, *, max_clusters: int = 50, random_state: int = RANDOM_SEED
) -> list[NDArray[np.int64]]:
    """Soft GMM clustering with k chosen by BIC (RAPTOR section 3, ``GMM_cluster``).

    The GMM with the lowest BIC (:func:`optimal_cluster_count`) is fitted; point ``i`` belongs to every
    component ``c`` with posterior ``P(c | x_i) > threshold``, so a point between two clusters can be in
    both. RAPTOR's code refits the chosen k with another seed; we keep the model fitted during the BIC
    search (one fit fewer, same kind of model). Components no point belongs to are dropped.

    Args:
        X: ``(n, d)`` float points, ``n >= 1``.
        threshold: posterior probability a point needs to join a cluster (RAPTOR: 0.1), in ``[0, 1)``.
        max_clusters: upper bound on the number of components.
        random_state: the GMM seed.

    Returns:
        Clusters as int64 arrays of point indices (ascending), in component order. A point with no
        posterior above the threshold (possible only when ``threshold >= 1 / k``) joins its most
        probable component, so every point is in at least one cluster.

    Raises:
        ValueError: ``X`` is not a finite 2-D array with at least one row, or ``threshold`` outside
            ``[0, 1)``.
    """
    if not 0.0 <= threshold < 1.0:
        raise ValueError(f"threshold must be in [0, 1), got {threshold}")
    pts = _points(X)
    gm = _best_gmm(pts, max_clusters, random_state)
    probs = gm.predict_proba(pts)
    member = probs > threshold
    member[np.arange(len(pts)), np.argmax(probs, axis=1)] = True
    return [np.flatnonzero(member[:, c]).astype(np.int64) for c in range(probs.shape[1]) if member[:, c].any()]


def _two_stage(
    X: NDArray[np.float64],
    dim: int,
    threshold: float,
    reducer: Reducer,
    max_clusters: int,
    random_state: int,
) -> list[NDArray[np.int64]]:
    """RAPTOR's ``perform_clustering``: global reduction + GMM, then local reduction + GMM per cluster."""
    n = X.shape[0]
    if n <= dim + 1:  # too few points for UMAP (RAPTOR does not cluster such layers): one cluster
        return [np.arange(n, dtype=np.int64)]
    n_neighbors = max(2, int(math.sqrt(n - 1)))
    reduced = reducer(X, min(dim, n - 2), n_neighbors)
    clusters: list[NDArray[np.int64]] = []
    for members in gmm_soft_clusters(reduced, threshold, max_clusters=max_clusters, random_state=random_state):
        if len(members) <= dim + 1:
            clusters.append(members)
            continue
        local = reducer(X[members], dim, min(LOCAL_NEIGHBORS, len(members) - 1))
        for sub in gmm_soft_clusters(local, threshold, max_clusters=max_clusters, random_state=random_state):
            clusters.append(members[sub])
    return clusters


def _split_in_order(members: NDArray[np.int64], lengths: NDArray[np.int64], max_length: int) -> list[NDArray[np.int64]]:
    """Consecutive pieces of ``members`` whose lengths sum to at most ``max_length`` (single items may exceed)."""
    pieces: list[NDArray[np.int64]] = []
    start, total = 0, 0
    for pos, idx in enumerate(members.tolist()):
        if pos > start and total + int(lengths[idx]) > max_length:
            pieces.append(members[start:pos])
            start, total = pos, 0
        total += int(lengths[idx])
    pieces.append(members[start:])
    return pieces


def raptor_clusters(
    X: ArrayLike,
    lengths: Sequence[int] | NDArray[np.integer] | None = None,
    max_length: int | None = None,
    *,
    dim: int = 10,
    threshold: float = 0.1,
    reducer: Reducer | None = None,
    max_clusters: int = 50,
    random_state: int = RANDOM_SEED,
) -> list[NDArray[np.int64]]:
    """RAPTOR's clustering of one tree layer (section 3; ``RAPTOR_Clustering.perform_clustering``).

    1. Global: reduce ``X`` to ``min(dim, n - 2)`` dimensions with ``n_neighbors = int(sqrt(n - 1))``
       and cluster it with :func:`gmm_soft_clusters`.
    2. Local: inside each global cluster of more than ``dim + 1`` points, reduce again (``dim``
       dimensions, ``n_neighbors = 10``) and cluster; smaller global clusters are kept whole.
    3. Re-clustering: a cluster of two or more points whose ``lengths`` sum to more than ``max_length``
       is clustered again on its own, recursively. When that cannot split it (one cluster comes back),
       it is cut into consecutive pieces that fit (where RAPTOR's code would recurse without end).

    Small inputs never crash: with ``n <= dim + 1`` points there is no reduction and one cluster.

    Args:
        X: ``(n, d)`` float vectors (e.g. chunk embeddings), ``n >= 1``.
        lengths: ``(n,)`` token counts of the points' texts; None disables re-clustering.
        max_length: the longest text (tokens) one cluster may hold (RAPTOR: 3500).
        dim: reduced dimension (RAPTOR: 10).
        threshold: soft-assignment probability (RAPTOR: 0.1).
        reducer: the dimension reduction; None = :func:`umap_reducer` (cosine metric). Tests pass a cheap
            one, e.g. the identity ``lambda X, k, nn: X``.
        max_clusters: upper bound on the GMM components per stage.
        random_state: seed of the GMMs (and of the default UMAP).

    Returns:
        Clusters as int64 arrays of point indices (ascending, may overlap), covering every point.

    Raises:
        ValueError: bad ``X``, ``lengths`` of the wrong length, ``dim < 1``, ``max_length < 1`` or a
            threshold outside ``[0, 1)``.
    """
    pts = _points(X)
    if dim < 1:
        raise ValueError(f"dim must be >= 1, got {dim}")
    reduce = reducer or umap_reducer(random_state=random_state)
    lens: NDArray[np.int64] | None = None
    if lengths is not None:
        lens = np.asarray(lengths, dtype=np.int64)
        if lens.shape != (pts.shape[0],):
            raise ValueError(f"lengths must have shape ({pts.shape[0]},), got {lens.shape}")
        if max_length is None or max_length < 1:
            raise ValueError(f"max_length must be >= 1 when lengths are given, got {max_length}")

    def cluster(idx: NDArray[np.int64]) -> list[NDArray[np.int64]]:
        found = [idx[c] for c in _two_stage(pts[idx], dim, threshold, reduce, max_clusters, random_state)]
        if lens is None or max_length is None:
            return found
        out: list[NDArray[np.int64]] = []
        for members in found:
            if len(members) < 2 or int(lens[members].sum()) <= max_length:
                out.append(members)
            elif len(members) < len(idx):
                out.extend(cluster(members))
            else:  # no split possible: consecutive pieces
                out.extend(_split_in_order(members, lens, max_length))
        return out

    return cluster(np.arange(pts.shape[0], dtype=np.int64))


def kmeans_members(
    vectors: ArrayLike, k: int, top_e: int, *, random_state: int = 0, n_init: int = 10
) -> list[NDArray[np.int64]]:
    """Theme members by k-means: the ``e`` points nearest each of ``k`` centroids (GEM-RAG Table I, "k-Means").

    ``sklearn.cluster.KMeans(n_clusters=k, n_init, random_state)`` is fitted on the vectors; theme ``j``
    is the ``e`` points with the smallest Euclidean distance to centroid ``j`` (for unit vectors, the
    largest cosine to it), nearest first, ties to the lower index. Themes are ordered by cluster size,
    largest first (ties: lower centroid index), mirroring the eigenthemes' order by ``|lambda|``.

    Args:
        vectors: ``(n, d)`` float vectors (e.g. chunk embeddings).
        k: number of centroids, ``1 <= k <= n``.
        top_e: ``e``, points per theme, ``>= 1`` (``e > n`` returns all ``n`` points).
        random_state: the k-means seed.
        n_init: k-means restarts (the best inertia is kept).

    Returns:
        ``k`` int64 arrays of length ``min(e, n)``, point indices nearest first.

    Raises:
        ValueError: bad ``vectors``, ``k`` outside ``[1, n]`` or ``top_e < 1``.
    """
    from sklearn.cluster import KMeans
    from threadpoolctl import threadpool_limits

    pts = _points(vectors)
    n = pts.shape[0]
    if not 1 <= k <= n:
        raise ValueError(f"k must be in [1, {n}], got {k}")
    if top_e < 1:
        raise ValueError(f"top_e must be >= 1, got {top_e}")
    with warnings.catch_warnings(), threadpool_limits(limits=1, user_api="blas"):
        warnings.simplefilter("ignore")  # ConvergenceWarning when there are fewer distinct points than k
        km = KMeans(n_clusters=k, n_init=n_init, random_state=random_state).fit(pts)
    dist = km.transform(pts)  # (n, k) Euclidean distances to the centroids
    sizes = np.bincount(km.labels_, minlength=k)
    order = np.argsort(-sizes, kind="stable")
    e = min(top_e, n)
    return [np.argsort(dist[:, j], kind="stable")[:e].astype(np.int64) for j in order.tolist()]


def _points(X: ArrayLike) -> NDArray[np.float64]:
    pts = np.asarray(as_matrix(X, "X"), dtype=np.float64)
    if pts.shape[0] == 0:
        raise ValueError("X has no rows")
    return pts
