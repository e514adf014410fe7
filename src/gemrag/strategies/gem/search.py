"""Retrieval on the memory graph from precomputed arrays (paper III.B.2 "Retrieval", Algorithm 1).

Notation: ``n`` nodes with vectors ``v_u`` (``node_vectors``, ``(n, d)``), ``M`` utility-question
vectors (``question_vectors``, ``(M, d)``, question ``j`` owned by node ``owner[j]``), a prompt vector
``v_p = E(p)`` (``(d,)``), a budget ``B`` of nodes, and symmetric non-negative edge weights ``W``
(``(n, n)``, e.g. ``adjacency_matrix(symmetrize(S))``, the clipped symmetric ``S - I``).

The paper gives two descriptions of retrieval that do not coincide:

* the text: find ``q* = argmax_q SIM(v_p, E(q))``, then "from the associated node with q* we perform
  a best first search, to find the next nodes, up to B" (:func:`best_first_search`, :func:`gem_search`);
* Algorithm 1: repeatedly add ``argmax_{n_i in Q \\ C} SIM(v_p, v_{n_i})``, i.e. the ``B`` nodes whose
  best utility question is most similar to the prompt, which never looks at the graph
  (:func:`rank_algorithm1`).

Which question vectors to pass is the caller's choice: the text writes ``E(q)``, Algorithm 1 writes
``v_{n_i}`` (the averaged ``v_ij`` of III.B.1); we recommend the ``v_ij`` used to build the graph.

Every function is vectorized: one matrix-vector product for the similarities and ``O(n)`` numpy work
per retrieved node.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from gemrag.graph.edges import top_k_edges  # re-exported: gemrag.strategies.gem.search.top_k_edges
from gemrag.graph.validate import (
    MatrixLike,
    as_matrix,
    as_owner,
    as_square,
    as_vector,
    top_indices,
    unit_rows,
)

__all__ = [
    "PreparedGraph",
    "best_first_search",
    "fused_ranking",
    "gem_search",
    "node_relevance",
    "rank_algorithm1",
    "top_k_edges",
]


def _unit_prompt(prompt_vec: ArrayLike, d: int) -> NDArray[np.float64]:
    """The prompt as a unit float64 vector of length ``d``; raises ValueError if it is all zero."""
    p = as_vector(prompt_vec, "prompt_vec", size=d)
    norm = float(np.linalg.norm(p))
    if norm == 0.0:
        raise ValueError("prompt_vec is the zero vector")
    return p / norm


def node_relevance(
    prompt_vec: ArrayLike, question_vectors: ArrayLike, owner: ArrayLike, node_vectors: ArrayLike
) -> NDArray[np.float64]:
    """Relevance of each node to the prompt: ``rel(u) = max_j cos(v_p, v_uj)`` (paper III.B.2).

    The best cosine similarity between the prompt and any of node ``u``'s utility-question vectors,
    the quantity Algorithm 1 (line 5) maximizes. A node without questions (see
    :func:`gemrag.graph.similarity.similarity_matrix`) uses its own vector: ``rel(u) = cos(v_p, v_u)``.
    Computed with one matrix-vector product and ``np.maximum.at`` (no loop).

    Args:
        prompt_vec: ``(d,)`` float, ``v_p = E(p)`` (normalized here; need not be unit norm, not zero).
        question_vectors: ``(M, d)`` float, utility-question vectors (any norm; ``M`` may be 0).
        owner: ``(M,)`` integer, owning node of each question, in ``[0, n)``.
        node_vectors: ``(n, d)`` float, node vectors (used for nodes without questions).

    Returns:
        ``(n,)`` float64 cosine similarities in ``[-1, 1]`` (0 for all-zero vectors).

    Raises:
        ValueError: shape/dtype mismatch, NaN/inf, ``owner`` out of range, or a zero prompt.
    """
    return PreparedGraph.prepare(question_vectors, owner, node_vectors).relevance(prompt_vec)


def rank_algorithm1(
    prompt_vec: ArrayLike,
    question_vectors: ArrayLike,
    owner: ArrayLike,
    node_vectors: ArrayLike,
    budget: int,
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Literal Algorithm 1 of the paper (III.B.2): the top-``B`` nodes by :func:`node_relevance`.

    Algorithm 1 adds, while ``|C| < B``, the node ``argmax_{n_i in Q \\ C} SIM(v_p, v_{n_i})``: the
    node (not yet in ``C``) owning the utility question most similar to the prompt. Repeating this is
    exactly sorting nodes by their best question similarity ``rel(u)`` and taking the first ``B``.
    Ties go to the lower node index.

    Args:
        prompt_vec: ``(d,)`` float prompt vector (not zero).
        question_vectors: ``(M, d)`` float utility-question vectors.
        owner: ``(M,)`` integer owning node of each question.
        node_vectors: ``(n, d)`` float node vectors (for nodes without questions).
        budget: ``B``, number of nodes, ``>= 0`` (``B > n`` returns all ``n``).

    Returns:
        ``(node_ids, scores)``: ``(min(B, n),)`` int64 node indices, most relevant first, and their
        float64 ``rel`` cosine scores.

    Raises:
        ValueError: as :func:`node_relevance`, or ``budget < 0``.
    """
    return PreparedGraph.prepare(question_vectors, owner, node_vectors).rank(prompt_vec, budget)


def best_first_search(
    rel: ArrayLike, W: MatrixLike, start: int, budget: int
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Best-first search on the memory graph from a start node (paper III.B.2, "Retrieval").

    The paper says only: "from the associated node with q* we perform a best first search, to find
    the next nodes, up to B". It does not define the priority function; **this one is our choice**:
    follow strong edges out of what was already retrieved while staying relevant to the prompt.

    * ``C = [start]``; ``W_hat = W / max(W)`` (edge weights scaled to ``[0, 1]``).
    * Frontier: every node not in ``C`` with an edge (``W > 0``) from some node of ``C``.
    * Priority ``f(u) = rel(u) * max_{c in C} W_hat[c, u]``; the frontier node with the highest ``f``
      joins ``C`` (ties: lower index). Repeat until ``|C| = min(B, n)``.
    * If the frontier is empty before that (disconnected graph, or ``W = 0``), restart from the
      node not in ``C`` with the highest ``rel`` (ties: lower index).

    A running vector ``max_{c in C} W_hat[c, :]`` is updated with one row of ``W`` per added node, so
    the cost is ``O(B * n)`` time and ``O(n)`` extra memory (no heap, no loop over pairs).

    When ``rel(u) < 0`` the product ranks every non-negative-relevance frontier node first, and among
    negative ones prefers the *weaker* edge; such nodes are irrelevant to the prompt anyway.

    Args:
        rel: ``(n,)`` float prompt relevance per node (e.g. :func:`node_relevance`, cosines).
        W: ``(n, n)`` float non-negative edge weights, dense or scipy.sparse; ``W[c, u]`` is read as
            the weight from retrieved ``c`` to candidate ``u`` (symmetric in practice).
        start: index of the start node (the node owning ``q*``: ``argmax rel``), in ``[0, n)``.
        budget: ``B``, number of nodes to return, ``>= 0`` (``B > n`` returns all ``n``).

    Returns:
        ``(order, priorities)``: ``(min(B, n),)`` int64 node indices in visit order, and float64
        priorities: ``f(u)`` for nodes reached over an edge, ``rel(u)`` for the start node and
        restart nodes.

    Raises:
        ValueError: shapes disagree, NaN/inf, a negative weight, ``start`` out of range, ``budget < 0``.
    """
    w, n = as_square(W, "W")
    scores = as_vector(rel, "rel", size=n)
    if budget < 0:
        raise ValueError(f"budget must be >= 0, got {budget}")
    if not 0 <= start < n:
        raise ValueError(f"start must be in [0, {n}), got {start}")
    return _walk(scores, w, _weight_scale(w), int(start), int(budget))


def _weight_scale(w: NDArray[np.float64] | sp.csr_matrix) -> float:
    """``1 / max(W)`` (0.0 for an all-zero W); raises ValueError for a negative weight."""
    entries = w.data if isinstance(w, (sp.spmatrix, sp.sparray)) else w
    if entries.size and entries.min() < 0:
        raise ValueError("W must be non-negative (clip negative similarities first)")
    wmax = float(entries.max()) if entries.size else 0.0
    return 1.0 / wmax if wmax > 0 else 0.0


def _walk(
    scores: NDArray[np.float64],
    w: NDArray[np.float64] | sp.csr_matrix,
    scale: float,
    start: int,
    budget: int,
    via: NDArray[np.int64] | None = None,
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The best-first walk of :func:`best_first_search` on validated inputs (``scale = 1 / max(W)``).

    ``via``, when given (``(min(budget, n),)`` int64, filled in place), receives for each step the node of ``C``
    whose edge gave the node its priority (``argmax_{c in C} W[c, u]``, the earliest such ``c`` on ties), or -1
    for the start node and restarts: the edges of the walk's path."""
    n = scores.shape[0]
    total = min(int(budget), n)
    order = np.empty(total, dtype=np.int64)
    priorities = np.empty(total, dtype=np.float64)
    visited = np.zeros(n, dtype=bool)
    reach = np.zeros(n, dtype=np.float64)  # max_{c in C} W_hat[c, :]
    parent = np.full(n, -1, dtype=np.int64)  # the c attaining reach[u]
    node, priority, came_from = int(start), float(scores[start]), -1
    for step in range(total):
        order[step], priorities[step] = node, priority
        if via is not None:
            via[step] = came_from
        visited[node] = True
        if isinstance(w, (sp.spmatrix, sp.sparray)):
            lo, hi = w.indptr[node], w.indptr[node + 1]
            cols = w.indices[lo:hi]
            row = w.data[lo:hi] * scale
            parent[cols[row > reach[cols]]] = node
            reach[cols] = np.maximum(reach[cols], row)
        else:
            row = w[node] * scale
            parent[row > reach] = node
            np.maximum(reach, row, out=reach)
        if step + 1 == total:
            break
        frontier = ~visited & (reach > 0)
        if frontier.any():
            f = np.where(frontier, scores * reach, -np.inf)
            node = int(np.argmax(f))
            priority, came_from = float(f[node]), int(parent[node])
        else:
            node = int(np.argmax(np.where(visited, -np.inf, scores)))
            priority, came_from = float(scores[node]), -1
    return order, priorities


def gem_search(
    prompt_vec: ArrayLike,
    question_vectors: ArrayLike,
    owner: ArrayLike,
    node_vectors: ArrayLike,
    W: MatrixLike,
    budget: int,
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """GEM-RAG retrieval as described in the text of III.B.2: ``q*``, then best-first search.

    ``rel = node_relevance(...)``; the start node is the owner of ``q* = argmax_q SIM(v_p, v_q)``,
    i.e. ``argmax rel`` (ties: lower index); then :func:`best_first_search` with budget ``B``.

    Args:
        prompt_vec: ``(d,)`` float prompt vector (not zero).
        question_vectors: ``(M, d)`` float utility-question vectors.
        owner: ``(M,)`` integer owning node of each question.
        node_vectors: ``(n, d)`` float node vectors.
        W: ``(n, n)`` float non-negative edge weights, dense or scipy.sparse.
        budget: ``B >= 0``.

    Returns:
        ``(order, priorities)`` as :func:`best_first_search`.

    Raises:
        ValueError: as :func:`node_relevance` and :func:`best_first_search`; also when ``n = 0`` and
            ``budget > 0``.
    """
    return PreparedGraph.prepare(question_vectors, owner, node_vectors, W).search(prompt_vec, budget)


def fused_ranking(
    prompt_vec: ArrayLike,
    node_vectors: ArrayLike,
    question_vectors: ArrayLike,
    owner: ArrayLike,
    budget: int,
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Graph-free baseline: top-``B`` nodes by ``max(cos(v_p, v_u), max_j cos(v_p, v_uj))``.

    Not in the paper: it ranks by the best of the node's own text vector and its utility questions,
    without the graph, so comparing it with :func:`gem_search` measures what the graph walk adds.
    Ties go to the lower node index.

    Args:
        prompt_vec: ``(d,)`` float prompt vector (not zero).
        node_vectors: ``(n, d)`` float node vectors.
        question_vectors: ``(M, d)`` float utility-question vectors.
        owner: ``(M,)`` integer owning node of each question.
        budget: ``B >= 0`` (``B > n`` returns all ``n``).

    Returns:
        ``(node_ids, scores)``: ``(min(B, n),)`` int64 and float64 cosine scores, best first.

    Raises:
        ValueError: as :func:`node_relevance`, or ``budget < 0``.
    """
    return PreparedGraph.prepare(question_vectors, owner, node_vectors).fused(prompt_vec, budget)


class PreparedGraph:
    """Retrieval arrays validated and normalized once, then searched for many prompts.

    The functions above prepare their inputs on every call; a strategy answering many questions keeps one
    ``PreparedGraph`` instead, so a query costs one ``(M, d)`` matrix-vector product and ``O(B * n)`` walk
    work, not a re-normalization of every question vector and a scan of all ``n²`` weights.

    Attributes:
        unit_questions: ``(M, d)`` float64 utility-question vectors scaled to unit norm.
        owner: ``(M,)`` int64 owning node of each question.
        unit_nodes: ``(n, d)`` float64 node vectors scaled to unit norm.
        no_questions: ``(n,)`` bool, nodes that own no question (their relevance is their own cosine).
        weights: ``(n, n)`` float64 dense or CSR edge weights ``W``, or None (ranking only).
        scale: ``1 / max(W)`` (0.0 for ``W = 0`` or no ``W``).
    """

    def __init__(
        self,
        unit_questions: NDArray[np.float64],
        owner: NDArray[np.int64],
        unit_nodes: NDArray[np.float64],
        weights: NDArray[np.float64] | sp.csr_matrix | None,
        scale: float,
    ) -> None:
        self.unit_questions, self.owner, self.unit_nodes = unit_questions, owner, unit_nodes
        self.weights, self.scale = weights, scale
        self.no_questions = np.bincount(owner, minlength=unit_nodes.shape[0]) == 0

    @classmethod
    def prepare(
        cls, question_vectors: ArrayLike, owner: ArrayLike, node_vectors: ArrayLike, W: MatrixLike | None = None
    ) -> PreparedGraph:
        """Validate and normalize the arrays (shapes as in :func:`node_relevance`; ``W`` as in
        :func:`best_first_search`, optional).

        Raises:
            ValueError: shape/dtype mismatch, NaN/inf, ``owner`` out of range, a negative or mis-sized ``W``.
        """
        nodes = as_matrix(node_vectors, "node_vectors")
        n, d = nodes.shape
        questions = as_matrix(question_vectors, "question_vectors", ncols=d)
        own = as_owner(owner, questions.shape[0], n)
        w, scale = None, 0.0
        if W is not None:
            w, size = as_square(W, "W")
            if size != n:
                raise ValueError(f"W must be ({n}, {n}) like node_vectors, got {w.shape}")
            scale = _weight_scale(w)
        return cls(unit_rows(questions), own, unit_rows(nodes), w, scale)

    @property
    def n(self) -> int:
        """Number of nodes."""
        return int(self.unit_nodes.shape[0])

    def relevance(self, prompt_vec: ArrayLike) -> NDArray[np.float64]:
        """``(n,)`` float64 ``rel(u) = max_j cos(v_p, v_uj)``, see :func:`node_relevance`.

        Raises:
            ValueError: a zero, non-finite or mis-sized prompt vector.
        """
        p = _unit_prompt(prompt_vec, self.unit_nodes.shape[1])
        rel = np.full(self.n, -np.inf)
        np.maximum.at(rel, self.owner, self.unit_questions @ p)
        if self.no_questions.any():
            rel[self.no_questions] = self.unit_nodes[self.no_questions] @ p
        return rel

    def best_question(self, node: int, prompt_vec: NDArray[np.floating]) -> int | None:
        """The row (in the order given to :meth:`prepare`) of ``node``'s question most similar to the prompt, or
        None for a node without questions."""
        own = np.flatnonzero(self.owner == node)
        return int(own[np.argmax(self.unit_questions[own] @ prompt_vec)]) if own.size else None

    def rank(self, prompt_vec: ArrayLike, budget: int) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """Literal Algorithm 1, see :func:`rank_algorithm1`. Raises ValueError for ``budget < 0``."""
        _check_budget(budget)
        rel = self.relevance(prompt_vec)
        ids = top_indices(rel, budget)
        return ids, rel[ids]

    def search(self, prompt_vec: ArrayLike, budget: int) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """``q*`` then best-first search, see :func:`gem_search`.

        Raises:
            ValueError: ``budget < 0``, no ``W`` was prepared, or an empty graph with ``budget > 0``.
        """
        _check_budget(budget)
        if self.weights is None:
            raise ValueError("best-first search needs the edge weights W: prepare(..., W)")
        rel = self.relevance(prompt_vec)
        if self.n == 0:
            if budget > 0:
                raise ValueError("cannot search an empty graph")
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        return _walk(rel, self.weights, self.scale, int(np.argmax(rel)), int(budget))

    def search_path(
        self, prompt_vec: ArrayLike, budget: int, start: int | None = None
    ) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.int64]]:
        """:meth:`search` and the walk's path: ``(order, priorities, via)``, where ``via`` ``(len(order),)`` int64
        gives for each visited node the index of the already-visited node whose edge led to it (the ``c`` of
        ``max_c W_hat[c, u]`` in :func:`best_first_search`), or -1 for the start node (the owner of ``q*``) and
        for restarts. ``order[0]`` is the start node: ``start`` when given (the owner of ``q*`` found by a
        nearest-neighbour search elsewhere, e.g. the store's vector index), else ``argmax rel``.

        Raises:
            ValueError: as :meth:`search`, or ``start`` out of range.
        """
        _check_budget(budget)
        if self.weights is None:
            raise ValueError("best-first search needs the edge weights W: prepare(..., W)")
        if self.n == 0:
            order, priorities = self.search(prompt_vec, budget)
            return order, priorities, np.zeros(0, dtype=np.int64)
        rel = self.relevance(prompt_vec)
        if start is not None and not 0 <= start < self.n:
            raise ValueError(f"start node {start} is not in [0, {self.n})")
        first = int(np.argmax(rel)) if start is None else int(start)
        via = np.empty(min(int(budget), self.n), dtype=np.int64)
        order, priorities = _walk(rel, self.weights, self.scale, first, int(budget), via)
        return order, priorities, via

    def fused(self, prompt_vec: ArrayLike, budget: int) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """Graph-free ranking by ``max(cos(v_p, v_u), rel(u))``, see :func:`fused_ranking`."""
        _check_budget(budget)
        score = np.maximum(
            self.relevance(prompt_vec), self.unit_nodes @ _unit_prompt(prompt_vec, self.unit_nodes.shape[1])
        )
        ids = top_indices(score, budget)
        return ids, score[ids]


def _check_budget(budget: int) -> None:
    if budget < 0:
        raise ValueError(f"budget must be >= 0, got {budget}")
