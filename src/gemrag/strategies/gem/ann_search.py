"""GEM-RAG retrieval on a large graph without scanning every utility question per query.

Paper: GEM-RAG (v2), section III.B.2 ("Retrieval", Algorithm 1). :class:`gemrag.strategies.gem.search.PreparedGraph`
computes ``rel(u) = max_j cos(v_p, v_uj)`` for all ``M`` questions per query (``M d`` multiply-adds: 1.9 G at 1M
chunks, m = 5) and walks with ``O(n)`` numpy work per step. The walk only ever reads ``rel`` of

* the start node, the owner of ``q* = argmax_q cos(v_p, v_q)``, and restart nodes (the best unvisited node), and
* the frontier: nodes linked by ``W`` to a visited node,

so this module finds the candidates for the first through an inverted-file partition of the question vectors
(:func:`gemrag.graph.ann.coarse_partition`, built with the graph and published with it: the ``probe`` lists whose
centroids best match the prompt are scanned exactly) and computes ``rel`` exactly, from all of a node's questions,
for every candidate and every frontier node as the walk reaches it. The walk is the same rule as
:func:`gemrag.strategies.gem.search.best_first_search` on dictionaries of the nodes it touched: the same order
whenever the true ``q*`` (and each restart's best node) is among the candidates; ``tests/strategies/gem/
test_gem_ann_search.py`` and ``benchmarks/scale.py`` measure the agreement. Not in the paper: our approximation.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from gemrag.graph.ann import unit_rows32
from gemrag.graph.validate import as_matrix, as_square, as_vector, top_indices
from gemrag.strategies.gem.search import PreparedGraph, _weight_scale

__all__ = ["ANN_CANDIDATES", "ANN_PROBE", "AnnPreparedGraph"]

ANN_PROBE = 32
"""Inverted lists scanned per query (of ~sqrt(M)): at M = 500,000 questions, 32 of 707 lists, ~4.5% of them."""
ANN_CANDIDATES = 64
"""Distinct candidate nodes kept from the scanned lists (at least ``4 B`` for a budget of ``B`` nodes)."""
_GATHER_ROWS = 1 << 16  # question rows re-ordered per block in prepare_ann


class AnnPreparedGraph(PreparedGraph):
    """A :class:`PreparedGraph` (float32 arrays) whose ``search`` touches only the candidate questions' owners and
    the walk's frontier; ``rank`` and ``fused`` (the ablations) stay exact, in float32.

    Attributes (besides :class:`PreparedGraph`'s, here float32):
        centroids: ``(L, d)`` float32 unit list centroids.
        list_ptr: ``(L + 1,)`` int64; the questions of list ``l`` are rows ``list_ptr[l]:list_ptr[l+1]`` of
            ``unit_questions`` (stored sorted by list).
        owner_order: ``(M,)`` int64 question rows sorted by owner; ``owner_ptr`` ``(n + 1,)`` int64 its slices.
        probe: lists scanned per query.
        given_row: ``(M,)`` int64, for each stored question row its row in the order given to :meth:`prepare_ann`.
    """

    def __init__(
        self,
        unit_questions: NDArray[np.float32],
        owner: NDArray[np.int64],
        unit_nodes: NDArray[np.float32],
        weights: sp.csr_matrix | None,
        scale: float,
        centroids: NDArray[np.float32],
        list_ptr: NDArray[np.int64],
        given_row: NDArray[np.int64],
        probe: int = ANN_PROBE,
    ) -> None:
        super().__init__(unit_questions, owner, unit_nodes, weights, scale)  # type: ignore[arg-type]
        self.centroids, self.list_ptr, self.given_row, self.probe = centroids, list_ptr, given_row, probe
        self.owner_order = np.argsort(owner, kind="stable")
        self.owner_ptr = np.searchsorted(owner[self.owner_order], np.arange(self.n + 1)).astype(np.int64)

    @classmethod
    def prepare_ann(
        cls,
        question_vectors: ArrayLike,
        owner: ArrayLike,
        node_vectors: ArrayLike,
        W: sp.spmatrix | None,
        centroids: ArrayLike,
        assignment: ArrayLike,
        *,
        probe: int = ANN_PROBE,
    ) -> AnnPreparedGraph:
        """Normalize the arrays (float32, questions re-ordered by list) and index them.

        Args:
            question_vectors: ``(M, d)`` float question vectors ``v_ij`` (float16 is converted one block of rows at
                a time; the prepared graph holds float32).
            owner: ``(M,)`` integer owning node of each question.
            node_vectors: ``(n, d)`` float node vectors.
            W: ``(n, n)`` non-negative sparse edge weights, or None (ranking only).
            centroids: ``(L, d)`` float list centroids (:func:`gemrag.graph.ann.coarse_partition`).
            assignment: ``(M,)`` integer list of each question, in ``[0, L)``.
            probe: lists scanned per query, ``>= 1``.

        Raises:
            ValueError: mismatched shapes, a list outside ``[0, L)``, ``probe < 1``, or what
                :meth:`PreparedGraph.prepare` rejects.
        """
        nodes = unit_rows32(as_matrix(node_vectors, "node_vectors"))
        n = nodes.shape[0]
        w, scale = None, 0.0
        if W is not None:
            w, size = as_square(W, "W")
            if size != n:
                raise ValueError(f"W must be ({n}, {n}) like node_vectors, got {w.shape}")
            scale = _weight_scale(w)
        cents = unit_rows32(np.asarray(centroids))
        lists = np.asarray(assignment, dtype=np.int64)
        own = np.asarray(owner, dtype=np.int64)
        m = own.shape[0]
        if lists.shape != (m,) or np.shape(question_vectors)[0] != m:
            raise ValueError(f"assignment and question_vectors must have {m} rows like owner")
        if m and (lists.min() < 0 or lists.max() >= cents.shape[0]):
            raise ValueError(f"assignment values must lie in [0, {cents.shape[0]})")
        if probe < 1:
            raise ValueError(f"probe must be >= 1, got {probe}")
        if m and (own.min() < 0 or own.max() >= n):
            raise ValueError(f"owner values must lie in [0, {n})")
        order = np.argsort(lists, kind="stable")
        # one float32 copy of the questions (re-ordered by list), gathered and scaled one block at a time: a
        # float16 input (1M chunks: 3.9 GB) is never held as float32 twice
        given = as_matrix(question_vectors, "question_vectors", ncols=nodes.shape[1], half=True)
        questions = np.empty(given.shape, dtype=np.float32)
        for lo in range(0, m, _GATHER_ROWS):
            questions[lo : lo + _GATHER_ROWS] = given[order[lo : lo + _GATHER_ROWS]]
        unit_rows32(questions, in_place=True)
        list_ptr = np.searchsorted(lists[order], np.arange(cents.shape[0] + 1)).astype(np.int64)
        return cls(questions, own[order], nodes, w, scale, cents, list_ptr, order, probe)

    # -- relevance of some nodes -------------------------------------------------------------------------

    def best_question(self, node: int, prompt_vec: NDArray[np.floating]) -> int | None:
        """:meth:`PreparedGraph.best_question` from ``node``'s slice (rows in the order given to
        :meth:`prepare_ann`)."""
        rows = self.owner_order[self.owner_ptr[node] : self.owner_ptr[node + 1]]
        if not rows.size:
            return None
        return int(self.given_row[rows[np.argmax(self.unit_questions[rows] @ prompt_vec.astype(np.float32))]])

    def relevance_of(self, nodes: NDArray[np.int64], p: NDArray[np.float32]) -> NDArray[np.float64]:
        """``rel(u)`` for the given nodes only (exact: every question of each node), float64 ``(len(nodes),)``."""
        lo, hi = self.owner_ptr[nodes], self.owner_ptr[nodes + 1]
        counts = hi - lo
        out = np.empty(nodes.shape[0], dtype=np.float64)
        if counts.sum():
            rows = self.owner_order[np.repeat(lo - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())]
            sims = self.unit_questions[rows] @ p
            has = counts > 0
            out[has] = np.maximum.reduceat(sims, (np.cumsum(counts) - counts)[has])
        none = counts == 0
        out[none] = self.unit_nodes[nodes[none]] @ p
        return out

    def candidates(self, p: NDArray[np.float32], count: int) -> NDArray[np.int64]:
        """Distinct owners of the questions most similar to ``p`` among the ``probe`` best-matching lists (at most
        ``count``, best first), then the ``count`` nodes without questions best matching ``p`` by their own vector
        (their stand-in question): at most ``2 count`` nodes."""
        probe = min(self.probe, self.centroids.shape[0])
        lists = np.argpartition(-(self.centroids @ p), probe - 1)[:probe]
        rows = np.concatenate(
            [np.arange(self.list_ptr[i], self.list_ptr[i + 1]) for i in lists] + [np.zeros(0, np.int64)]
        )
        owners = np.zeros(0, dtype=np.int64)
        if rows.size:
            sims = self.unit_questions[rows] @ p
            keep = min(count * 8, sims.shape[0])  # m questions per node: 8 per wanted node leaves enough distinct
            top = np.argpartition(-sims, keep - 1)[:keep]
            owners = self.owner[rows[top[np.lexsort((rows[top], -sims[top]))]]]
            _, first = np.unique(owners, return_index=True)
            owners = owners[np.sort(first)][:count]
        if self.no_questions.any():
            bare = np.flatnonzero(self.no_questions)
            owners = np.concatenate([owners, bare[np.argsort(-(self.unit_nodes[bare] @ p), kind="stable")[:count]]])
        return owners

    # -- ranking and search ------------------------------------------------------------------------------

    def _prompt(self, prompt_vec: ArrayLike) -> NDArray[np.float32]:
        p = as_vector(prompt_vec, "prompt_vec", size=self.unit_nodes.shape[1])
        norm = float(np.linalg.norm(p))
        if norm == 0.0:
            raise ValueError("prompt_vec is the zero vector")
        return (p / norm).astype(np.float32)

    def relevance(self, prompt_vec: ArrayLike) -> NDArray[np.float64]:
        """Every node's ``rel(u)`` exactly (:meth:`PreparedGraph.relevance`) with float32 products, so the float32
        question matrix is never copied to float64: used by ``rank`` (literal Algorithm 1) and ``fused``, which
        stay exact (``M d`` multiply-adds per query); the default ``search`` does not call it.

        Raises:
            ValueError: a zero, non-finite or mis-sized prompt vector.
        """
        p = self._prompt(prompt_vec)
        rel = np.full(self.n, -np.inf)
        np.maximum.at(rel, self.owner, self.unit_questions @ p)
        if self.no_questions.any():
            rel[self.no_questions] = self.unit_nodes[self.no_questions] @ p
        return rel

    def fused(self, prompt_vec: ArrayLike, budget: int) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """:meth:`PreparedGraph.fused` in float32 products (exact)."""
        if budget < 0:
            raise ValueError(f"budget must be >= 0, got {budget}")
        score = np.maximum(self.relevance(prompt_vec), self.unit_nodes @ self._prompt(prompt_vec))
        ids = top_indices(score, budget)
        return ids, score[ids]

    def search(self, prompt_vec: ArrayLike, budget: int) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """``q*`` then best-first search (:meth:`PreparedGraph.search`) on the touched nodes only."""
        order, priorities, _ = self.search_path(prompt_vec, budget)
        return order, priorities

    def search_path(
        self, prompt_vec: ArrayLike, budget: int, start: int | None = None
    ) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.int64]]:
        """:meth:`PreparedGraph.search_path` with ``rel`` computed for the candidates and the frontier only
        (``start``: the start node when given, else the most relevant candidate).

        Raises:
            ValueError: ``budget < 0``, no sparse ``W``, an empty graph with ``budget > 0``, a zero prompt, or
                ``start`` out of range.
        """
        if budget < 0:
            raise ValueError(f"budget must be >= 0, got {budget}")
        if not isinstance(self.weights, (sp.spmatrix, sp.sparray)):
            raise ValueError("the approximate search needs the sparse edge weights W")
        if start is not None and not 0 <= start < self.n:
            raise ValueError(f"start node {start} is not in [0, {self.n})")
        p = self._prompt(prompt_vec)
        total = min(int(budget), self.n)
        if self.n == 0 and budget > 0:
            raise ValueError("cannot search an empty graph")
        candidates = self.candidates(p, max(ANN_CANDIDATES, 4 * total))
        if start is not None:
            candidates = np.union1d(candidates, np.array([start], dtype=np.int64))
        rel = dict(zip(candidates.tolist(), self.relevance_of(candidates, p).tolist(), strict=True))
        return _sparse_walk(self, rel, p, total, start)


def _best(scores: dict[int, float]) -> int:
    """The key with the largest value, ties to the lower key (``np.argmax``'s rule over node indices)."""
    return min(scores, key=lambda u: (-scores[u], u))


def _sparse_walk(
    graph: AnnPreparedGraph, rel: dict[int, float], p: NDArray[np.float32], total: int, first: int | None = None
) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.int64]]:
    """The walk of :func:`gemrag.strategies.gem.search._walk` over dictionaries: ``rel`` holds the nodes whose
    relevance is known (it grows by each visited node's neighbours), ``first`` the start node (None: the most
    relevant of ``rel``); returns ``(order, priorities, via)``."""
    w = graph.weights
    assert isinstance(w, (sp.spmatrix, sp.sparray))
    order = np.empty(total, dtype=np.int64)
    priorities = np.empty(total, dtype=np.float64)
    via = np.empty(total, dtype=np.int64)
    visited: set[int] = set()
    reach: dict[int, float] = {}
    parent: dict[int, int] = {}
    if total == 0:
        return order, priorities, via
    node = _best(rel) if first is None else first
    priority, came_from = rel[node], -1
    for step in range(total):
        order[step], priorities[step], via[step] = node, priority, came_from
        visited.add(node)
        lo, hi = w.indptr[node], w.indptr[node + 1]
        cols = w.indices[lo:hi]
        fresh = np.array([c for c in cols.tolist() if c not in rel], dtype=np.int64)
        if fresh.size:
            rel.update(zip(fresh.tolist(), graph.relevance_of(fresh, p).tolist(), strict=True))
        for c, value in zip(cols.tolist(), (w.data[lo:hi] * graph.scale).tolist(), strict=True):
            if value > reach.get(c, 0.0):
                reach[c], parent[c] = value, node
        if step + 1 == total:
            break
        frontier = {u: rel[u] * r for u, r in reach.items() if u not in visited and r > 0}
        if frontier:
            node = _best(frontier)
            priority, came_from = frontier[node], parent[node]
        else:
            unvisited = {u: s for u, s in rel.items() if u not in visited}
            if not unvisited:  # every known node visited (rare: a restart after the candidates): all of them
                everyone = np.arange(graph.n, dtype=np.int64)
                rel.update(zip(everyone.tolist(), graph.relevance_of(everyone, p).tolist(), strict=True))
                unvisited = {u: s for u, s in rel.items() if u not in visited}
            node = _best(unvisited)
            priority, came_from = unvisited[node], -1
    return order, priorities, via
