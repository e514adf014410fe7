"""Synonym edges: pairs of entity (phrase) embeddings whose cosine similarity reaches a threshold.

Source: HippoRAG 2 (Gutiérrez et al. 2025, "From RAG to Memory", section 3): phrase nodes whose
embeddings have cosine >= ``synonymy_edge_sim_threshold`` (0.8) are joined by a synonym edge weighted
by that cosine, each node keeping at most ``synonymy_edge_topk`` (100) such neighbours. In HippoRAG 2's code
(``HippoRAG.add_synonymy_edges``) an entity of two or fewer alphanumeric characters looks for no neighbours, but it
can be a longer entity's neighbour: here ``seekers`` marks the rows that look, ``eligible`` the rows that take part
at all.

Two ways to find the pairs: ``"exact"`` (block matrix products, O(n^2 d) work, bounded memory) and
``"hnsw"`` (faiss ``IndexHNSWFlat``, approximate, roughly O(n log n)). faiss is imported only by the
``"hnsw"`` path, so this module imports without it.
"""

from __future__ import annotations

import os
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from gemrag.graph.validate import as_matrix

__all__ = ["HNSW_EF_CONSTRUCTION", "HNSW_EF_SEARCH_MIN", "HNSW_FIRST_K", "HNSW_M", "synonym_pairs"]

HNSW_M = 32
"""Graph degree of the faiss HNSW index (links per node per layer; faiss's default is 32)."""
HNSW_EF_CONSTRUCTION = 100
"""Candidate-list size while building the HNSW index (faiss's default is 40; higher = better graph)."""
HNSW_EF_SEARCH_MIN = 64
"""Smallest candidate-list size while searching; the value used is ``max(this, k)`` for ``k`` answers."""
HNSW_FIRST_K = 16
"""Answers per row in the first HNSW pass; rows that fill them all are searched again for ``top_k + 1``."""

_BLOCK_ROWS = 2048
_BLOCK_ENTRIES = 1 << 25  # float32 similarity entries per block in "exact": 128 MiB
_HNSW_QUERY_ROWS = 16384  # query rows per faiss search call, to bound the (rows, top_k + 1) outputs

Pairs = tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float32]]


def synonym_pairs(
    vectors: ArrayLike,
    threshold: float = 0.8,
    top_k: int = 100,
    *,
    method: Literal["auto", "exact", "hnsw"] = "auto",
    exact_below: int = 20000,
    eligible: ArrayLike | None = None,
    seekers: ArrayLike | None = None,
) -> Pairs:
    """Each row's nearest other rows by cosine similarity, down to ``threshold`` (HippoRAG 2 section 3).

    For every row ``i``: the at most ``top_k`` other rows ``j`` with ``cos(v_i, v_j) >= threshold``,
    the most similar first. Pairs are directed (``j`` may be among ``i``'s neighbours but not the
    reverse); the caller symmetrizes them into undirected edges. A row is never its own neighbour, but
    a duplicate vector at another index is.

    The rows are normalized here to unit L2 norm (norms summed in float64, rows kept float32), so unnormalized
    input is accepted; all-zero rows are skipped (they neither get nor are neighbours), as are rows
    with ``eligible[i]`` False. A row with ``seekers[i]`` False gets no neighbours of its own but can be another
    row's neighbour (HippoRAG 2's rule for short entities); the caller's symmetrization then joins it to the rows
    that found it.

    ``method="exact"`` computes every similarity in blocks of rows (at most 2,048 rows and 2^25
    similarities, 128 MiB, per block): O(n^2 d) work. Where a row has more than ``top_k`` candidates,
    which of the tied ones at the ``top_k``-th place are kept is unspecified. ``method="hnsw"`` uses
    faiss ``IndexHNSWFlat`` with the inner-product metric (M = :data:`HNSW_M` = 32, efConstruction =
    :data:`HNSW_EF_CONSTRUCTION` = 100) searched in two passes: the :data:`HNSW_FIRST_K` = 16 nearest of
    every row (efSearch 64), then ``top_k + 1`` (efSearch ``max(64, top_k + 1)``) only for the rows
    whose 15 non-self answers all met the threshold. It is approximate: it may miss pairs (recall
    >= 0.99 on the clustered data of ``benchmarks/bench_synonyms.py``), but every pair it returns meets
    the threshold (by faiss's float32 inner product, equal to a numpy one to ~1e-6). faiss uses at most
    as many OpenMP threads as this process may run on (``os.sched_getaffinity``); its previous setting
    is restored afterwards. ``method="auto"`` is exact when fewer than ``exact_below`` rows are
    eligible, else hnsw.

    Args:
        vectors: ``(n, d)`` float embeddings (float32 recommended), finite.
        threshold: least cosine similarity of a pair, in ``[-1, 1]`` (HippoRAG 2: 0.8).
        top_k: most neighbours per row, ``>= 0`` (HippoRAG 2: 100).
        method: ``"auto"``, ``"exact"`` or ``"hnsw"``.
        exact_below: ``"auto"`` switches to hnsw from this many eligible rows on.
        eligible: optional ``(n,)`` bool mask of rows that take part.
        seekers: optional ``(n,)`` bool mask of the rows whose neighbours are returned (default: every row).

    Returns:
        ``(src, dst, similarity)``: ``(E,)`` int64, int64 and float32, ordered by ``src`` ascending,
        then similarity descending (ties: ``dst`` ascending). Indices are rows of ``vectors``.

    Raises:
        ValueError: ``vectors`` not 2-D or not finite; ``threshold`` outside ``[-1, 1]``;
            ``top_k < 0``; an unknown ``method``; ``eligible`` or ``seekers`` of the wrong shape or not boolean.
        ImportError: ``"hnsw"`` chosen (or picked by ``"auto"``) and faiss is not installed.
    """
    x = as_matrix(vectors, "vectors")
    n = x.shape[0]
    if not (-1.0 <= threshold <= 1.0):
        raise ValueError(f"threshold must lie in [-1, 1], got {threshold}")
    if top_k < 0:
        raise ValueError(f"top_k must be >= 0, got {top_k}")
    if method not in ("auto", "exact", "hnsw"):
        raise ValueError(f"method must be 'auto', 'exact' or 'hnsw', got {method!r}")
    norms = np.sqrt(np.einsum("ij,ij->i", x, x, dtype=np.float64))  # float64 sums, no float64 copy of x
    keep = norms > 0
    if eligible is not None:
        keep &= _mask(eligible, n, "eligible")
    seeking = None if seekers is None else _mask(seekers, n, "seekers")
    rows = np.flatnonzero(keep).astype(np.int64)
    if rows.shape[0] < 2 or top_k == 0:
        return _empty()
    unit = x[rows].astype(np.float32, copy=False)  # a copy (fancy indexing): scaled in place
    unit /= norms[rows, None].astype(np.float32)
    if method == "auto":
        method = "exact" if rows.shape[0] < exact_below else "hnsw"
    if method == "exact":
        src, dst, sim = _exact(unit, float(threshold), int(top_k))
    else:
        src, dst, sim = _hnsw(unit, float(threshold), int(top_k))
    src, dst = rows[src], rows[dst]
    if seeking is not None:  # each row's list is its own, so dropping whole lists leaves the others as they were
        sel = seeking[src]
        src, dst, sim = src[sel], dst[sel], sim[sel]
    return src, dst, sim


def _mask(values: ArrayLike, n: int, name: str) -> NDArray[np.bool_]:
    mask = np.asarray(values)
    if mask.shape != (n,) or mask.dtype != np.bool_:
        raise ValueError(f"{name} must be a bool array of shape ({n},), got {mask.dtype} {mask.shape}")
    return mask


def _empty() -> Pairs:
    return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)


def _ordered(src: NDArray[np.int64], dst: NDArray[np.int64], sim: NDArray[np.float32], top_k: int) -> Pairs:
    """Sort pairs by (src, -sim, dst) and keep the first ``top_k`` of each ``src``."""
    order = np.lexsort((dst, -sim, src))
    src, dst, sim = src[order], dst[order], sim[order]
    rank = np.arange(src.shape[0]) - np.searchsorted(src, src)
    sel = rank < top_k
    return src[sel], dst[sel], sim[sel]


def _exact(unit: NDArray[np.float32], threshold: float, top_k: int) -> Pairs:
    """All-pairs search over unit rows, one block of rows at a time (see :func:`synonym_pairs`)."""
    m = unit.shape[0]
    block = max(1, min(_BLOCK_ROWS, _BLOCK_ENTRIES // m))
    out_src, out_dst, out_sim = [], [], []
    for lo in range(0, m, block):
        hi = min(m, lo + block)
        sims = unit[lo:hi] @ unit.T  # (b, m) float32
        local = np.arange(hi - lo)
        sims[local, lo + local] = -np.inf  # never one's own neighbour
        hits = sims >= threshold
        heavy = hits.sum(axis=1) > top_k
        if heavy.any():
            # rows with more than top_k candidates: their top_k largest all meet the threshold
            hrows = np.flatnonzero(heavy)
            cols = np.argpartition(-sims[hrows], top_k - 1, axis=1)[:, :top_k]
            out_src.append(np.repeat(lo + hrows, top_k).astype(np.int64))
            out_dst.append(cols.ravel().astype(np.int64))
            out_sim.append(np.take_along_axis(sims[hrows], cols, axis=1).ravel())
            hits[hrows] = False
        r, c = np.nonzero(hits)
        out_src.append((lo + r).astype(np.int64))
        out_dst.append(c.astype(np.int64))
        out_sim.append(sims[r, c])
    if not out_src:
        return _empty()
    return _ordered(np.concatenate(out_src), np.concatenate(out_dst), np.concatenate(out_sim).astype(np.float32), top_k)


def _hnsw(unit: NDArray[np.float32], threshold: float, top_k: int) -> Pairs:
    """Approximate search with a faiss HNSW inner-product index (see :func:`synonym_pairs`).

    Two passes: every row asks for its :data:`HNSW_FIRST_K` nearest (efSearch :data:`HNSW_EF_SEARCH_MIN`);
    only rows whose farthest answer still meets the threshold (they may have more neighbours) ask again
    for ``top_k + 1`` (efSearch ``max(HNSW_EF_SEARCH_MIN, top_k + 1)``). Most entities have few synonyms,
    so the second pass is small.
    """
    import faiss  # lazy: only this path needs it

    m, d = unit.shape
    k_full = min(top_k + 1, m)  # +1: a row usually finds itself first
    k_first = min(k_full, HNSW_FIRST_K)
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(max(1, min(before, len(os.sched_getaffinity(0)))))
    try:
        index = faiss.IndexHNSWFlat(d, HNSW_M, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
        index.add(np.ascontiguousarray(unit))
        index.hnsw.efSearch = max(HNSW_EF_SEARCH_MIN, k_first)
        parts = [_search(index, unit, np.arange(m, dtype=np.int64), k_first, threshold)]
        if k_full > k_first:
            src, _, sim = parts[0]
            full = np.bincount(src, minlength=m) >= k_first - 1  # every answer but (usually) itself passed
            again = np.flatnonzero(full)
            if again.size:
                keep = ~full[src]
                parts[0] = (src[keep], parts[0][1][keep], sim[keep])
                index.hnsw.efSearch = max(HNSW_EF_SEARCH_MIN, k_full)
                parts.append(_search(index, unit, again, k_full, threshold))
    finally:
        faiss.omp_set_num_threads(before)
    src, dst, sim = (np.concatenate(col) for col in zip(*parts, strict=True))
    return _ordered(src, dst, sim, top_k)


def _search(index: object, unit: NDArray[np.float32], rows: NDArray[np.int64], k: int, threshold: float) -> Pairs:
    """The ``k`` nearest of each of ``rows`` in ``index``, minus self, failed slots and those below threshold."""
    out_src, out_dst, out_sim = [], [], []
    for lo in range(0, rows.shape[0], _HNSW_QUERY_ROWS):
        chunk = rows[lo : lo + _HNSW_QUERY_ROWS]
        sims, labels = index.search(np.ascontiguousarray(unit[chunk]), k)  # type: ignore[attr-defined]
        src = np.repeat(chunk, k)
        dst = labels.ravel().astype(np.int64)
        sim = sims.ravel().astype(np.float32)
        ok = (dst >= 0) & (dst != src) & (sim >= threshold)
        out_src.append(src[ok])
        out_dst.append(dst[ok])
        out_sim.append(sim[ok])
    return np.concatenate(out_src), np.concatenate(out_dst), np.concatenate(out_sim)
