"""Approximate nearest neighbours by inner product: a faiss HNSW index over unit vectors.

Source: Malkov & Yashunin, "Efficient and robust approximate nearest neighbor search using Hierarchical
Navigable Small World graphs" (IEEE TPAMI 2020), as implemented by faiss ``IndexHNSWFlat``. Building costs
roughly ``O(n log n)`` distance computations and searching ``O(log n)`` per query, against ``O(n)`` per query
for exact search; the price is recall below 1 (measured by the callers' tests and ``benchmarks/scale.py``).

faiss is imported only inside these functions, so importing this module never loads it. faiss uses at most as
many OpenMP threads as this process may run on (``os.sched_getaffinity``); its previous setting is restored.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "ANN_EF_CONSTRUCTION",
    "ANN_EF_SEARCH",
    "ANN_M",
    "coarse_partition",
    "hnsw_index",
    "hnsw_read",
    "hnsw_search",
    "hnsw_write",
    "list_count",
    "unit_rows32",
]

ANN_M = 16
"""Graph degree of the HNSW index (links per node per layer). 16 builds twice as fast as 32 on 384-d MiniLM
vectors; recall is measured by ``tests/graph/test_knn_ann.py`` and ``benchmarks/scale.py``."""
ANN_EF_CONSTRUCTION = 40
"""Candidate-list size while building (faiss's default)."""
ANN_EF_SEARCH = 64
"""Smallest candidate-list size while searching; a search for ``k`` answers uses ``max(this, k)``."""

_QUERY_ROWS = 16384  # query rows per faiss search call: bounds the (rows, k) outputs
_NORM_ROWS = 65536  # rows normalized per block in unit_rows32: bounds the float64 norm temporaries


@contextmanager
def _threads() -> Iterator[Any]:
    """faiss, with its OpenMP threads limited to this process's CPUs (restored afterwards)."""
    import faiss  # lazy: only the approximate paths need it

    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(max(1, min(before, len(os.sched_getaffinity(0)))))
    try:
        yield faiss
    finally:
        faiss.omp_set_num_threads(before)


def unit_rows32(x: NDArray[np.floating], *, in_place: bool = False) -> NDArray[np.float32]:
    """Rows of ``x`` scaled to unit L2 norm, as a C-contiguous float32 array (norms summed in float64, one block
    of rows at a time, so no float64 copy of ``x`` is made); all-zero rows stay zero.

    Args:
        x: ``(n, d)`` float array.
        in_place: scale ``x`` itself when it is already a C-contiguous float32 array (no copy: at 1M chunks the
            question matrix is 7.7 GB); otherwise a new array either way.

    Returns:
        ``(n, d)`` float32 (``x`` itself when scaled in place).
    """
    reuse = in_place and x.dtype == np.float32 and x.flags.c_contiguous and x.flags.writeable
    out = x if reuse else np.array(x, dtype=np.float32, order="C", copy=True)
    for lo in range(0, out.shape[0], _NORM_ROWS):
        block = out[lo : lo + _NORM_ROWS]
        norms = np.sqrt(np.einsum("ij,ij->i", block, block, dtype=np.float64))
        scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0).astype(np.float32)
        block *= scale[:, None]
    return out


def hnsw_index(unit: NDArray[np.float32], *, m: int = ANN_M, ef_construction: int = ANN_EF_CONSTRUCTION) -> Any:
    """A faiss ``IndexHNSWFlat`` (inner-product metric) holding the rows of ``unit``.

    Args:
        unit: ``(n, d)`` float32 rows, normally unit-norm (then inner product = cosine similarity).
        m: HNSW graph degree (default :data:`ANN_M`).
        ef_construction: candidate-list size while building (default :data:`ANN_EF_CONSTRUCTION`).

    Returns:
        The faiss index; row ``i`` of ``unit`` has label ``i``. Memory: ``n d`` floats plus ``~2 m n`` links.

    Raises:
        ImportError: faiss is not installed.
    """
    with _threads() as faiss:
        index = faiss.IndexHNSWFlat(unit.shape[1], m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = ef_construction
        index.add(np.ascontiguousarray(unit, dtype=np.float32))
    return index


def hnsw_write(index: Any, path: str | os.PathLike[str]) -> None:
    """Write an index from :func:`hnsw_index` to ``path`` (faiss's own format, streamed: no in-memory copy).

    Raises:
        RuntimeError: faiss could not write the file (faiss raises RuntimeError for I/O errors).
        ImportError: faiss is not installed.
    """
    import faiss

    faiss.write_index(index, os.fspath(path))


def hnsw_read(path: str | os.PathLike[str]) -> Any:
    """The index :func:`hnsw_write` wrote to ``path``, read into memory (``n d`` float32 plus the links).

    Raises:
        RuntimeError: the file is missing, truncated or not a faiss index.
        ImportError: faiss is not installed.
    """
    import faiss

    return faiss.read_index(os.fspath(path))


def hnsw_search(
    index: Any, queries: NDArray[np.floating], k: int, *, ef_search: int | None = None, normalize: bool = False
) -> tuple[NDArray[np.float32], NDArray[np.int64]]:
    """The ``k`` rows of ``index`` with the largest inner product with each query (approximate).

    Args:
        index: an index from :func:`hnsw_index`.
        queries: ``(q, d)`` float queries (converted to float32 one block of rows at a time).
        k: answers per query, ``>= 1``.
        ef_search: candidate-list size (default ``max(ANN_EF_SEARCH, k)``).
        normalize: scale each query block to unit rows first (no normalized copy of all queries is made).

    Returns:
        ``(similarities, labels)``: ``(q, k)`` float32 inner products, best first, and ``(q, k)`` int64 row
        labels; a slot faiss could not fill has label -1.

    Raises:
        ValueError: ``k < 1``.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    sims = np.empty((queries.shape[0], k), dtype=np.float32)
    labels = np.empty((queries.shape[0], k), dtype=np.int64)
    with _threads():
        index.hnsw.efSearch = ef_search if ef_search is not None else max(ANN_EF_SEARCH, k)
        for lo in range(0, queries.shape[0], _QUERY_ROWS):
            block = np.ascontiguousarray(queries[lo : lo + _QUERY_ROWS], dtype=np.float32)
            if normalize:
                block = unit_rows32(block)
            sims[lo : lo + block.shape[0]], labels[lo : lo + block.shape[0]] = index.search(block, k)
    return sims, labels


def list_count(rows: int) -> int:
    """Inverted lists for :func:`coarse_partition` of ``rows`` vectors: ``round(sqrt(rows))``, at least 1 (the
    usual IVF choice: a probe of ``p`` lists then scans ``~p sqrt(rows)`` vectors)."""
    return max(1, round(float(np.sqrt(rows))))


def coarse_partition(
    vectors: NDArray[np.floating], n_lists: int, *, seed: int = 0, train_per_list: int = 64, iterations: int = 10
) -> tuple[NDArray[np.float32], NDArray[np.int32]]:
    """An inverted-file partition of ``vectors``: spherical k-means centroids and each row's nearest centroid.

    Source: the IVF index of Jégou, Douze & Schmid, "Product quantization for nearest neighbor search" (IEEE
    TPAMI 2011, section IV.A), here without compression: faiss ``Kmeans`` (spherical, trained on at most
    ``train_per_list * n_lists`` rows sampled with ``seed``) and an exact inner-product assignment of every row.
    A search then scans only the rows of the lists whose centroids best match the query.

    Rows need not be unit-norm: the training sample is normalized (a copy of at most ``train_per_list * n_lists``
    rows) and a row's nearest centroid by inner product does not depend on its norm, so ``vectors`` is read one
    block at a time and never copied whole (float16 input at 1M chunks: 3.9 GB, not another 7.7 GB of float32).

    Args:
        vectors: ``(M, d)`` float32 or float16 rows (the cosine is what counts), ``M >= 1``.
        n_lists: number of lists, ``1 <= n_lists <= M``.
        seed: sampling and k-means seed (the partition is reproducible).
        train_per_list: training rows per list.
        iterations: k-means iterations.

    Returns:
        ``(centroids, assignment)``: ``(n_lists, d)`` float32 unit centroids and ``(M,)`` int32 list of each row.

    Raises:
        ValueError: ``n_lists`` outside ``[1, M]``.
        ImportError: faiss is not installed.
    """
    m, d = vectors.shape
    if not 1 <= n_lists <= m:
        raise ValueError(f"n_lists must lie in [1, {m}], got {n_lists}")
    rng = np.random.default_rng(seed)
    sample = slice(None) if m <= train_per_list * n_lists else np.sort(rng.choice(m, train_per_list * n_lists, False))
    train = unit_rows32(vectors[sample])
    with _threads() as faiss:
        kmeans = faiss.Kmeans(d, n_lists, niter=iterations, seed=seed, spherical=True, verbose=False)
        kmeans.cp.min_points_per_centroid = 1
        kmeans.cp.max_points_per_centroid = train_per_list
        kmeans.train(train)
        centroids = np.ascontiguousarray(kmeans.centroids, dtype=np.float32)
        quantizer = faiss.IndexFlatIP(d)
        quantizer.add(centroids)
        assignment = np.empty(m, dtype=np.int32)
        for lo in range(0, m, _QUERY_ROWS * 4):
            block = np.ascontiguousarray(vectors[lo : lo + _QUERY_ROWS * 4], dtype=np.float32)
            assignment[lo : lo + block.shape[0]] = quantizer.search(block, 1)[1][:, 0]
    return centroids, assignment
