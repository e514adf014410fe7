"""The strongest edges of every node, for persisting a sparse view of the memory graph.

Not in the paper: GEM-RAG (III.B.1) builds a complete graph; a store only needs each node's
strongest links (for display, inspection and neighbour look-ups).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from gemrag.graph.validate import MatrixLike, as_square

__all__ = ["top_k_edges"]


def top_k_edges(W: MatrixLike, k: int) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]:
    """The ``k`` strongest edges of every node, for storage (not in the paper).

    For each node ``u`` (row of ``W``): its off-diagonal entries with ``W[u, v] > 0``, the ``k``
    largest, by decreasing weight (ties: lower ``v``). Output is grouped by ``src`` ascending. This is
    a directed listing: an undirected edge ``{u, v}`` appears twice when it is among the top ``k`` of
    both endpoints.

    Args:
        W: ``(n, n)`` float edge weights, dense or scipy.sparse.
        k: edges per node, ``>= 0``.

    Returns:
        ``(src, dst, weight)``: equal-length 1-D arrays, int64, int64 and float64.

    Raises:
        ValueError: ``W`` not square or not finite, or ``k < 0``.
    """
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    w, n = as_square(W, "W")
    if isinstance(w, np.ndarray):
        return _top_k_edges_dense(w, k)
    coo = w.tocoo()
    coo.sum_duplicates()
    rows, cols, vals = coo.row.astype(np.int64), coo.col.astype(np.int64), coo.data
    keep = (vals > 0) & (rows != cols)
    rows, cols, vals = rows[keep], cols[keep], vals[keep]
    order = np.lexsort((cols, -vals, rows))
    rows, cols, vals = rows[order], cols[order], vals[order]
    rank = np.arange(rows.shape[0]) - np.searchsorted(rows, rows)  # position within the source row
    sel = rank < k
    return rows[sel], cols[sel], vals[sel].astype(np.float64)


def _top_k_edges_dense(
    w: NDArray[np.float64], k: int, block_rows: int = 256
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]:
    """Dense :func:`top_k_edges`: a stable sort of each row, ``block_rows`` rows at a time."""
    n = w.shape[0]
    kk = min(k, n - 1)
    srcs, dsts, wts = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)], [np.zeros(0)]
    for lo in range(0, n if kk > 0 else 0, block_rows):
        block = w[lo : lo + block_rows].copy()
        local = np.arange(block.shape[0])
        block[local, lo + local] = -np.inf
        block[block <= 0] = -np.inf
        cols = np.argsort(-block, axis=1, kind="stable")[:, :kk]
        vals = np.take_along_axis(block, cols, axis=1)
        ok = np.isfinite(vals)
        srcs.append(np.broadcast_to((lo + local)[:, None], cols.shape)[ok].astype(np.int64))
        dsts.append(cols[ok].astype(np.int64))
        wts.append(vals[ok])
    return np.concatenate(srcs), np.concatenate(dsts), np.concatenate(wts).astype(np.float64)
