"""Nearest-neighbour search over a build's vectors, exact, in numpy: the exact vector-search part
(:class:`ExactSearch`), what SQLite's part rescores the candidates of its HNSW artefact with, and what the PostgreSQL
backend falls back to (and rescores its candidates with, so both backends give the same scores).

The rule is that of every strategy's cosine ranking (``strategies/platform/common.py: cosine_ranking``): cosine
similarity in float64 of the rows scaled to unit norm (an all-zero row scores 0), the ``k`` best first, ties to the
lower row.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from gemrag.store.parts import VectorSearch

Vectors = NDArray[np.floating]
"""A float array: ``(n, d)`` rows, or a ``(d,)`` query."""

Array = tuple[str, int, str]
"""A build's array: ``(strategy, generation, name)``."""


def unit_query(query: NDArray[np.floating], dim: int) -> NDArray[np.float64]:
    """``query / |query|`` in float64.

    Raises:
        ValueError: the query is all zero, not finite, or not ``(dim,)``.
    """
    p = np.asarray(query, dtype=np.float64).reshape(-1)
    if p.shape[0] != dim:
        raise ValueError(f"the query vector has {p.shape[0]} dimensions, the vectors {dim}")
    norm = float(np.linalg.norm(p))
    if norm == 0.0 or not np.isfinite(norm):
        raise ValueError("the query vector is all zero or not finite")
    return p / norm


def cosines(
    vectors: NDArray[np.floating],
    query: NDArray[np.floating],
    rows: NDArray[np.int64],
    unit: NDArray[np.floating] | None = None,
) -> NDArray[np.float64]:
    """``cos(query, vectors[r])`` for each ``r`` in ``rows``: ``(len(rows),)`` float64 (a zero row scores 0).

    Args:
        unit: optional ``(n, d)`` rows of ``vectors`` already scaled to unit norm, float32
            (:func:`gemrag.graph.ann.unit_rows32`) or float64, made once per loaded build: the cosines are then
            products of those rows with the unit query in float32 (no copy of the rows per query, as the
            strategy's own numpy search computes them).

    Raises:
        ValueError: as :func:`unit_query`.
    """
    mat = np.asarray(vectors)
    p = unit_query(query, mat.shape[1])
    if unit is not None:
        return np.asarray(unit[rows] @ p.astype(np.float32), dtype=np.float64)
    sub = np.asarray(mat[rows], dtype=np.float64)
    norms = np.linalg.norm(sub, axis=1, keepdims=True)
    unit = np.divide(sub, norms, out=np.zeros_like(sub), where=norms > 0)
    return unit @ p


def best_first(
    rows: NDArray[np.int64], scores: NDArray[np.float64], k: int
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The ``k`` best of ``(rows, scores)``: highest score first, ties to the lower row (a partial sort: only the
    scores at least the k-th best are ordered)."""
    k = max(0, int(k))
    if 0 < k < len(scores):
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        keep = np.flatnonzero(scores >= kth)
        rows, scores = rows[keep], scores[keep]
    order = np.lexsort((rows, -scores))[:k]
    return rows[order].astype(np.int64, copy=False), scores[order]


def exact_nearest(
    vectors: NDArray[np.floating],
    query: NDArray[np.floating],
    k: int,
    rows: NDArray[np.int64] | None = None,
    unit: NDArray[np.floating] | None = None,
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The ``k`` rows of ``vectors`` (among ``rows`` when given) most cosine-similar to ``query``.

    Args:
        vectors: ``(n, d)`` float.
        query: ``(d,)`` float, not all zero.
        k: how many (``k > n`` returns all).
        rows: optional ``(m,)`` int row indices to search among (None: all ``n``).
        unit: optional unit rows of ``vectors`` (see :func:`cosines`).

    Returns:
        ``(row indices (min(k, m),) int64 into vectors, best first; their cosines float64)``.

    Raises:
        ValueError: a zero or mis-sized query, or ``vectors`` not 2-D.
    """
    mat = np.asarray(vectors)
    if mat.ndim != 2:
        raise ValueError(f"vectors must be (n, d), got shape {mat.shape}")
    candidates = np.arange(mat.shape[0], dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
    if rows is None and unit is not None:
        return best_first(
            candidates, np.asarray(unit @ unit_query(query, mat.shape[1]).astype(np.float32), np.float64), k
        )
    return best_first(candidates, cosines(mat, query, candidates, unit), k)


class ExactSearch(VectorSearch):
    """The exact vector-search part (:class:`gemrag.store.parts.VectorSearch`): numpy over the loaded array, nothing
    indexed. The base of SQLite's part (:class:`gemrag.store.hnsw.HnswSearch`) and PostgreSQL's
    (:class:`gemrag.store.postgres.vectors.PgVectorSearch`), whose index proposes the candidates (``_candidates``)
    that :meth:`nearest` rescores here, so every backend gives the same scores; without an index they answer the
    same way as this one."""

    def index_vectors(self, strategy: str, generation: int, name: str, vectors: NDArray[np.floating]) -> list[str]:
        # The exact search keeps no index: nothing written.
        return []

    def nearest(
        self,
        strategy: str,
        generation: int,
        name: str,
        vectors: NDArray[np.floating],
        query: NDArray[np.floating],
        k: int,
        *,
        rows: NDArray[np.int64] | None = None,
        unit: NDArray[np.floating] | None = None,
    ) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        if rows is None:  # an index's candidates, rescored exactly (none here: every row)
            rows = self._candidates((strategy, generation, name), vectors, query, k)
        return exact_nearest(vectors, query, k, rows, unit)

    def _candidates(self, array: Array, vectors: Vectors, query: Vectors, k: int) -> NDArray[np.int64] | None:
        """The rows an index proposes for the ``k`` nearest of ``query`` among ``vectors`` (the build's array
        ``(strategy, generation, name)``), which :meth:`nearest` rescores exactly; None: search every row (always,
        here)."""
        return None
