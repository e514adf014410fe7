"""The kNN similarity graph of GEM-RAG through approximate nearest neighbours (no ``n x n`` product).

Paper: GEM-RAG (v2), section III.B.1 ("Building the Weighted Complete Graph"): ``s_tv = sum_i cos(v_ti, v_v)``
over node ``t``'s utility-question vectors. :func:`gemrag.graph.similarity.knn_similarity_matrix` keeps each
node's ``k`` largest entries of the symmetric part ``(s_tv + s_vt) / 2`` exactly but computes all ``n^2``
entries (610 s at 100k chunks on 2 cores, growing as ``n^2``). This module finds the same pairs through a faiss
HNSW index (:mod:`gemrag.graph.ann`): not in the paper, our scalable approximation.

Why one index suffices: with ``Qs[t]`` the sum of ``t``'s unit question vectors and ``Vn`` the unit chunk
vectors, ``s_tv = Qs[t] . Vn[v]`` (see :func:`gemrag.graph.similarity.similarity_matrix`), and the symmetric
value ``(Qs[t].Vn[v] + Qs[v].Vn[t]) / 2`` is large only if one of its two terms is. So the candidates of
``t`` are ``t``'s own ANN answers (``v`` with large ``Qs[t].Vn[v]``: node ``t``'s questions find ``v``'s text)
together with every ``v`` whose ANN answers contain ``t`` (``v``'s questions find ``t``'s text): one index over
``Vn``, one query per node (``Qs[t]``, normalized), and each found pair counted for both of its ends. The values
of the candidate pairs are computed exactly; each node keeps its ``k`` largest; the union of the kept pairs is
symmetrized as in :func:`gemrag.graph.similarity.knn_sparsify`.

Cost: the index build ``O(n log n)`` and ``n`` searches; the candidate values ``2 n c d`` multiply-adds for
``c`` candidates per node. Memory: the inputs, ``Vn`` and ``Qs`` (``2 n d`` float32), the index (``n d``
float32 + links) and ``O(n c)`` candidate pairs (int32 ids, float32 values); never ``n x n`` or ``n x M``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from gemrag.graph.ann import hnsw_index, hnsw_search
from gemrag.graph.similarity import _assemble_knn, _prepare32

__all__ = ["ANN_CANDIDATES_MIN", "approximate_knn_similarity_matrix"]

ANN_CANDIDATES_MIN = 64
"""Fewest ANN answers asked per node; ``max(this, 3 k)`` are asked for ``k`` neighbours (on clustered 64-d test
data with k = 16: 48 answers gave recall@k 0.971, 64 gave 0.99, 96 gave 0.998; the candidate count matters more
than the search's candidate-list size, because a symmetric top-k pair need not be in either direction's top k)."""

_SEARCH_BLOCK = 1 << 14  # rows searched and reduced to candidate pair keys per block (12 MB of labels at c = 96)
_PAIR_BLOCK = 1 << 17  # candidate pairs valued per block (four (block, d) float32 gathers: 200 MiB at d = 384)


def approximate_knn_similarity_matrix(
    node_vectors: ArrayLike,
    question_vectors: ArrayLike,
    owner: ArrayLike,
    k: int,
    *,
    candidates: int | None = None,
    keep_diagonal: bool = True,
) -> sp.csr_matrix:
    """:func:`gemrag.graph.similarity.knn_similarity_matrix` through an HNSW index (approximate).

    Same conventions (question-less nodes use their own vector, rows L2-normalized, union symmetrization, the
    symmetric part's diagonal kept) and the same values for every pair it keeps (computed in float32, so equal
    to the exact path to ~1e-6); a pair the index misses is absent, which lowers recall (measured:
    ``tests/graph/test_knn_ann.py``, ``benchmarks/scale.py``).

    Args:
        node_vectors: ``(n, d)`` float, base-text embeddings.
        question_vectors: ``(M, d)`` float, utility-question vectors ``v_ij``; float16 is read one block of rows
            at a time into float32 (no full-size float32 or float64 copy; at 1M chunks and m = 5 it halves the
            7.7 GB of float32 questions; its effect on the graph is measured in ``benchmarks/scale.py``).
        owner: ``(M,)`` integer, owning node of each question.
        k: neighbours per node, ``k >= 1``.
        candidates: ANN answers per node query (default ``max(ANN_CANDIDATES_MIN, 3 k)``, at most ``n``).
        keep_diagonal: store the symmetric part's diagonal ``s_tt`` (see :func:`knn_sparsify`).

    Returns:
        ``(n, n)`` symmetric ``scipy.sparse.csr_matrix`` of float64.

    Raises:
        ValueError: invalid shapes/values (as :func:`similarity_matrix`), ``k < 1`` or ``candidates < 1``.
        ImportError: faiss is not installed.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if candidates is not None and candidates < 1:
        raise ValueError(f"candidates must be >= 1, got {candidates}")
    vn, qs = _prepare32(node_vectors, question_vectors, owner)
    n = vn.shape[0]
    diagonal = _row_dots(qs, vn)
    kk = min(k, n - 1)
    if kk <= 0:
        return _assemble_knn(n, [], diagonal if keep_diagonal else None)
    c = min(n, candidates if candidates is not None else max(ANN_CANDIDATES_MIN, 3 * k))
    index = hnsw_index(vn)
    a, b = _search_candidate_pairs(index, qs, c)
    del index
    values = _pair_values(vn, qs, a, b)
    del vn, qs
    # every pair counts for both of its ends: a CSR matrix of the candidates (int32 ids, float32 values: the
    # O(n c) arrays stay small), then each row's k largest, one block of rows at a time
    cand = sp.csr_matrix(
        (np.concatenate([values, values]), (np.concatenate([a, b]), np.concatenate([b, a]))), shape=(n, n)
    )
    del a, b, values
    return _assemble_knn(n, _row_top_k(cand, kk), diagonal if keep_diagonal else None)


def _row_top_k(
    cand: sp.csr_matrix, k: int, block_rows: int = 65536
) -> list[tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]]:
    """(row, col, value) of each row's ``k`` largest entries of ``cand`` (ties: lower column), in row blocks."""
    parts = []
    n = cand.shape[0]
    for lo in range(0, n, block_rows):
        hi = min(n, lo + block_rows)
        a, b = cand.indptr[lo], cand.indptr[hi]
        rows = np.repeat(np.arange(lo, hi, dtype=np.int64), np.diff(cand.indptr[lo : hi + 1]))
        cols, vals = cand.indices[a:b].astype(np.int64), cand.data[a:b].astype(np.float64)
        order = np.lexsort((cols, -vals, rows))
        rows, cols, vals = rows[order], cols[order], vals[order]
        rank = np.arange(rows.shape[0]) - np.searchsorted(rows, rows)
        keep = rank < k
        parts.append((rows[keep], cols[keep], vals[keep]))
    return parts


def _search_candidate_pairs(
    index: object, qs: NDArray[np.float32], c: int, block_rows: int = _SEARCH_BLOCK
) -> tuple[NDArray[np.int32], NDArray[np.int32]]:
    """Unordered candidate pairs ``(a, b)``, ``a < b``, each once: every row's ``c`` ANN answers for its
    normalized ``qs`` row, searched and reduced to pair keys one block of rows at a time, so the ``(n, c)`` answer
    matrix (768 MB of int64 labels at n = 1M, c = 96) and its expanded source/target copies never exist at once.
    At n = 1M the within-block de-duplication leaves the ``O(n c)`` int64 keys as the largest array."""
    n = qs.shape[0]
    keys = []
    for lo in range(0, n, block_rows):
        _, labels = hnsw_search(index, qs[lo : lo + block_rows], c, normalize=True)
        keys.append(_pair_keys(labels, lo, n))
    key = np.unique(np.concatenate(keys + [np.zeros(0, dtype=np.int64)]))
    del keys
    return (key // n).astype(np.int32), (key % n).astype(np.int32)


def _pair_keys(labels: NDArray[np.int64], first_row: int, n: int) -> NDArray[np.int64]:
    """Sorted unique keys ``min * n + max`` of the pairs (row, answer) of a block of ANN answers whose first row
    is ``first_row`` (failed slots -1 and self-answers dropped)."""
    src = np.repeat(np.arange(first_row, first_row + labels.shape[0], dtype=np.int64), labels.shape[1])
    dst = labels.ravel()
    ok = (dst >= 0) & (dst != src)
    src, dst = src[ok], dst[ok]
    return np.unique(np.minimum(src, dst) * n + np.maximum(src, dst))


def _pair_values(
    vn: NDArray[np.float32], qs: NDArray[np.float32], a: NDArray[np.int32], b: NDArray[np.int32]
) -> NDArray[np.float32]:
    """``(Qs[a].Vn[b] + Qs[b].Vn[a]) / 2`` for each pair, float32, one block at a time."""
    out = np.empty(a.shape[0], dtype=np.float32)
    for lo in range(0, a.shape[0], _PAIR_BLOCK):
        x, y = a[lo : lo + _PAIR_BLOCK], b[lo : lo + _PAIR_BLOCK]
        out[lo : lo + x.shape[0]] = (_row_dots(qs[x], vn[y]) + _row_dots(qs[y], vn[x])) / 2
    return out


def _row_dots(x: NDArray[np.float32], y: NDArray[np.float32]) -> NDArray[np.float64]:
    """``(r,)`` float64 row-wise dot products of two ``(r, d)`` float32 arrays (float32 arithmetic, blocks of
    :data:`_PAIR_BLOCK` rows, so no float64 copy of the inputs)."""
    out = np.empty(x.shape[0], dtype=np.float64)
    for lo in range(0, x.shape[0], _PAIR_BLOCK):
        out[lo : lo + _PAIR_BLOCK] = np.einsum("ij,ij->i", x[lo : lo + _PAIR_BLOCK], y[lo : lo + _PAIR_BLOCK])
    return out
