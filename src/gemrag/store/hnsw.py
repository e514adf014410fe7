"""Query-time approximate nearest neighbours on a store without a vector index of its own (SQLite): its
vector-search part, :class:`HnswSearch`, over the build arrays part's artefacts.

Every strategy's nearest-neighbour step goes through the store's vector-search part
(:func:`gemrag.strategies.platform.common.nearest`). On SQLite it was an exact numpy product over all ``n`` rows of
the published array (``n d`` multiply-adds per query: 0.38 G at 1M chunks of d = 384); PostgreSQL + pgvector already
answers from an HNSW index above its ``hnsw_above``. This part gives SQLite the same shape of answer:

* at publish time, a ``search`` array (``write_publication(..., search=[name])``) of at least
  :data:`ANN_ABOVE` rows gets a faiss HNSW index over its unit rows (:func:`gemrag.graph.ann.hnsw_index`),
  written as the build artefact ``<name>-hnsw`` (:meth:`HnswSearch.index_vectors`: the arrays part's
  ``artifact_path``, fsynced, named in the manifest's ``paths``: published atomically with the arrays, removed with
  their generation, checked present on load);
* at query time, the artefact is read once per opened memory and generation (kept by the part), the
  ``max(k, ANN_CANDIDATES)`` best rows by HNSW are found and rescored exactly
  (:meth:`gemrag.store.vectors.ExactSearch.nearest` with ``rows=``), so the scores are the exact path's and only
  the membership of the top ``k`` is approximate (recall@k measured by ``tests/strategies/platform/
  test_vector_index.py`` and ``benchmarks/dense_ann.py``).

Below :data:`ANN_ABOVE` rows, for a filtered search (``rows=``), on PostgreSQL, and for a build published
before this index existed (no artefact: re-index to get one), the search stays exact and unchanged.

Why persisted rather than built when a memory is opened: the HNSW build is the expensive part (measured in
``docs/results.md``, "Dense top-k through HNSW on SQLite", 384-d rows on 2 shared cores: 95 s at 100k rows, 370 s
at 300k), while reading the file back (``~n (4 d + 8 M)`` bytes: 181 MB at 100k) took 0.5-1.4 s. Concurrent
queries share the index (faiss searches are read-only; the candidate-list size is set per call). Not in
any paper: the Embed baseline of GEM-RAG (section IV) is exact; this is our scalable approximation, HNSW as in
Malkov & Yashunin (IEEE TPAMI 2020).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
from numpy.typing import NDArray

from gemrag.graph.ann import hnsw_index, hnsw_read, hnsw_search, hnsw_write, unit_rows32
from gemrag.store.parts import StoreParts
from gemrag.store.vectors import Array, ExactSearch, Vectors

__all__ = ["ANN_ABOVE", "ANN_CANDIDATES", "EF_SEARCH", "INDEX_M", "HnswSearch", "index_artifact_name"]

ANN_ABOVE = 20_000
"""Rows from which a search array gets an HNSW artefact on SQLite (the same size as PostgreSQL's default
``hnsw_above`` and ``gem.ann_above``; below it an exact query costs under ~5 ms on 2 cores)."""

ANN_CANDIDATES = 64
"""Fewest HNSW answers rescored exactly per query; ``max(this, k)`` are asked for ``k`` rows (the search's
candidate list is ``max(ANN_EF_SEARCH, this)``)."""

EF_SEARCH = 128
"""HNSW candidate-list size of a query (``max(this, candidates)``). Measured on 300k clustered rows
(``benchmarks/dense_ann.py``, M = 32, 200 queries, load 7): 64 gave recall@10 0.958 at p50 1.11 ms, 128 gave 0.974
at 1.25 ms, 256 gave 0.983 (no query below 0.8) at 19 ms; exact p50 was 110 ms."""

INDEX_M = 32
"""HNSW graph degree of the query index (GEM's kNN graph uses 16, :data:`gemrag.graph.ann.ANN_M`). Measured on
100k clustered 384-d rows (``benchmarks/dense_ann.py``'s data, 200 queries, recall@10 of 64 candidates against
exact): M = 16 built in 60 s with recall 0.954, 5 queries finding none of their 10 (a tight cluster the graph
does not reach); M = 32 built in 90 s with recall 0.998 and none missed; efConstruction 100 at M = 16 reached
1.0 but took 164 s."""


def index_artifact_name(name: str) -> str:
    """The artefact name of search array ``name``'s HNSW index (``<name>-hnsw``)."""
    return f"{name}-hnsw"


class HnswSearch(ExactSearch):
    """SQLite's vector-search part: exact numpy search, with the candidates of a large array's HNSW artefact (module
    docstring).

    Args:
        parts: the store's parts (the artefacts are the build-arrays part's, looked up when used).
    """

    def __init__(self, parts: StoreParts) -> None:
        self._parts = parts
        self._indexes: dict[tuple[str, str], tuple[int, Any]] = {}  # (strategy, name) -> (generation, index or None)
        self._lock = threading.Lock()

    def index_vectors(self, strategy: str, generation: int, name: str, vectors: NDArray[np.floating]) -> list[str]:
        """Build and write the HNSW artefact of an unpublished build's search array when it has :data:`ANN_ABOVE`
        rows or more (the build must be writable: the caller is building).

        Args:
            strategy, generation: the build (from ``begin_build``); name: the array's name.
            vectors: ``(n, d)`` float rows, as written with ``write_array``.

        Returns:
            The artefact's name in a list, to publish with ``paths=[...]``; empty when ``n <`` :data:`ANN_ABOVE`.

        Raises:
            ImportError: faiss is not installed.
            RuntimeError: faiss could not write the file.
        """
        if vectors.ndim != 2 or vectors.shape[0] < ANN_ABOVE:
            return []
        artefact = index_artifact_name(name)
        arrays = self._parts.arrays
        path = arrays.artifact_path(strategy, generation, artefact)
        index = hnsw_index(unit_rows32(vectors), m=INDEX_M)
        hnsw_write(index, path)
        del index
        arrays.sync_path(path)
        return [artefact]

    def _candidates(self, array: Array, vectors: Vectors, query: Vectors, k: int) -> NDArray[np.int64] | None:
        """The candidates of the array's HNSW artefact (:meth:`_approximate_rows`), rescored exactly by
        :meth:`gemrag.store.vectors.ExactSearch.nearest`; None (exact) without one."""
        strategy, generation, name = array
        return self._approximate_rows(strategy, generation, name, np.shape(vectors)[0], query, k)

    def _approximate_rows(
        self, strategy: str, generation: int, name: str, n: int, query: NDArray[np.floating], k: int
    ) -> NDArray[np.int64] | None:
        """The candidate rows of an approximate search for ``query``, or None when the search must stay exact.

        Reads the build's HNSW artefact once per opened memory and generation; None when there is none (an array
        below :data:`ANN_ABOVE` rows, whose artefact is not even looked for; a build without one).

        Args:
            strategy, generation: the loaded build.
            name: the search array's name; n: its rows.
            query: ``(d,)`` float, not all zero (normalized here).
            k: rows the caller wants; ``max(k, ANN_CANDIDATES)`` candidates are returned.

        Returns:
            ``(c,)`` int64 distinct row indices (unordered quality: the caller rescores them exactly), or None.

        Raises:
            RuntimeError: the artefact exists but faiss cannot read it.
        """
        if n < ANN_ABOVE:
            return None
        cached = self._indexes.get((strategy, name))
        if cached is None or cached[0] != generation:
            with self._lock:
                path = self._parts.arrays.artifact_path(strategy, generation, index_artifact_name(name))
                cached = (generation, hnsw_read(path) if path.is_file() else None)
                self._indexes[(strategy, name)] = cached
        index = cached[1]
        if index is None:
            return None
        c = min(int(index.ntotal), max(int(k), ANN_CANDIDATES))
        if c < 1:
            return None
        q = np.asarray(query, dtype=np.float32).reshape(1, -1)
        _, labels = hnsw_search(index, q, c, ef_search=max(EF_SEARCH, c), normalize=True)
        found = labels[0]
        return np.unique(found[found >= 0]).astype(np.int64)
