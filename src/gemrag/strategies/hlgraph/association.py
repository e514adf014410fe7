"""The AssociationGraph of HLGraphRAG (Zeng, "HLGraphRAG: A Graph Retrieval Augmentation System for Human-like
Synthesis of Information", section 3 "Design"): pure numpy, no LLM, no storage, no text.

* **Nodes** are embedded subjects and events (the paper embeds them with all-MiniLM-L6-v2): row ``i`` of
  ``node_vectors``.
* **Edges** are directed; the edge ``u -> v`` holds a *list* of labelled, weighted relations ("the edges are a list
  of weights so that objects can have multiple relationships with each other"), so several relations between the
  same pair are kept side by side. A relation is a row of the relation arrays: its source and target node rows,
  the embedding of its label (e.g. ``"pushes"``), its weight, and the fact it states.
* **Directional weights** (DW, section 3): :func:`directed_relations` stores every fact in both directions, the
  forward row with the fact's label (``John -> Selena``: "pushes") and the reverse row with its inverse voice
  (``Selena -> John``: "was pushed by"). With DW off both rows carry the forward label: the paper's error case,
  where the edge Selena -> John reads "pushes" as well.
* **Retrieval** (section 3, "Retrieval system" and "Ranked Retrieval"): :meth:`AssociationGraph.nearest` finds the
  node most similar to a main idea; :meth:`AssociationGraph.traverse` is the depth-first traversal from it that
  collects up to ``max_nodes`` nodes. With ranked retrieval (RR) a node's unvisited neighbours are sorted, just
  before the traversal descends from it, by

      score(v | u, q) = ( cos(q, x_v) + max_{r in R(u -> v)} cos(q, l_r) ) / 2

  (``x_v`` the neighbour's vector, ``l_r`` the label vectors of the relations on the edge ``u -> v``; the paper
  says it "prioritizes the nodes and edge labels with the highest similarity" without saying how the two
  combine: gemrag averages the node's similarity and the best label's), highest first; ties go to the edge with
  the larger total weight, then to the earlier edge. Without RR the neighbours are taken in the order their edges
  were first added (the "standard DFS"). The paper does not use the weights in the traversal either.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gemrag.graph.validate import unit_rows


def directed_relations(
    subjects: np.ndarray,
    objects: np.ndarray,
    labels: np.ndarray,
    inverse_labels: np.ndarray,
    *,
    directional: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Both directions of ``f`` facts ``subject --label--> object`` (HLGraphRAG section 3, "Directional Weights").

    Args:
        subjects, objects: (f,) int node rows of each fact's object 1 and object 2.
        labels: (f, d) float vectors of the forward labels ("pushes").
        inverse_labels: (f, d) float vectors of the inverse labels ("was pushed by").
        directional: DW on (default): the reverse row carries the inverse label; off: the forward label.

    Returns:
        ``(src (2f,) int64, dst (2f,) int64, label vectors (2f, d) float32, fact (2f,) int64 index of the fact,
        inverse (2f,) bool)``: row ``2i`` is fact ``i`` forward, row ``2i + 1`` its reverse.

    Raises:
        ValueError: the arrays disagree in length or dimension.
    """
    s, o = np.asarray(subjects, dtype=np.int64), np.asarray(objects, dtype=np.int64)
    fwd, inv = np.asarray(labels, dtype=np.float32), np.asarray(inverse_labels, dtype=np.float32)
    f = s.shape[0]
    if o.shape != (f,) or fwd.ndim != 2 or fwd.shape[0] != f or inv.shape != fwd.shape:
        raise ValueError(
            f"subjects {s.shape}, objects {o.shape}, labels {fwd.shape} and inverse labels {inv.shape} disagree"
        )
    src = np.empty(2 * f, dtype=np.int64)
    dst = np.empty(2 * f, dtype=np.int64)
    src[0::2], dst[0::2], src[1::2], dst[1::2] = s, o, o, s
    vectors = np.empty((2 * f, fwd.shape[1]), dtype=np.float32)
    vectors[0::2] = fwd
    vectors[1::2] = inv if directional else fwd
    fact = np.repeat(np.arange(f, dtype=np.int64), 2)
    inverse = np.tile(np.array([False, True]), f)
    return src, dst, vectors, fact, inverse


@dataclass(frozen=True)
class Traversal:
    """One depth-first traversal.

    Attributes:
        nodes: node rows in the order collected (the start first).
        parents: the row each node was reached from (-1 for the start), same length.
        scores: each node's score when picked: the start's cosine to the query, then the RR score (module
            docstring) with RR on, or the neighbour's cosine to the query with RR off (for reporting only).
    """

    nodes: list[int]
    parents: list[int]
    scores: list[float]


class AssociationGraph:
    """A directed graph of embedded nodes whose edges hold lists of labelled, weighted relations (module
    docstring; HLGraphRAG section 3).

    Args:
        node_vectors: (n, d) float node embeddings (any norm; cosines use unit rows).
        src, dst: (r,) int node rows of each relation (a self-loop is allowed but never walked).
        label_vectors: (r, d) float embeddings of each relation's label.
        weight: (r,) float weights (default all 1.0).

    Raises:
        ValueError: shapes disagree or a relation names a row outside ``0..n-1``.
    """

    def __init__(
        self,
        node_vectors: np.ndarray,
        src: np.ndarray,
        dst: np.ndarray,
        label_vectors: np.ndarray,
        weight: np.ndarray | None = None,
    ) -> None:
        x = np.asarray(node_vectors, dtype=np.float64)
        if x.ndim != 2:
            raise ValueError(f"node_vectors must be (n, d), got {x.shape}")
        s, t = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        r = s.shape[0]
        labels = np.asarray(label_vectors, dtype=np.float64).reshape(r, -1) if r else np.zeros((0, x.shape[1]))
        w = np.ones(r) if weight is None else np.asarray(weight, dtype=np.float64)
        if t.shape != (r,) or w.shape != (r,) or labels.shape != (r, x.shape[1]):
            raise ValueError(f"src {s.shape}, dst {t.shape}, labels {labels.shape}, weight {w.shape} disagree")
        if r and (min(s.min(), t.min()) < 0 or max(s.max(), t.max()) >= x.shape[0]):
            raise ValueError(f"a relation names a node outside 0..{x.shape[0] - 1}")
        self.node_vectors = unit_rows(x) if x.shape[0] else x
        self.label_vectors = unit_rows(labels) if r else labels
        self.src, self.dst, self.weight = s, t, w
        self._out: list[dict[int, list[int]]] = [{} for _ in range(x.shape[0])]
        for i, (a, b) in enumerate(zip(s.tolist(), t.tolist(), strict=True)):
            self._out[a].setdefault(b, []).append(i)  # dicts keep the order edges were first added

    @property
    def n_nodes(self) -> int:
        """Number of nodes."""
        return len(self._out)

    @property
    def n_relations(self) -> int:
        """Number of relation rows (each direction counts once)."""
        return int(self.src.shape[0])

    def neighbours(self, u: int) -> list[int]:
        """Targets of ``u``'s outgoing edges, in the order the edges were first added."""
        return list(self._out[u])

    def relations(self, u: int, v: int) -> list[int]:
        """The relation rows on the edge ``u -> v`` (empty: no edge), in the order added."""
        return list(self._out[u].get(v, ()))

    def similarities(self, query: np.ndarray) -> np.ndarray:
        """``cos(q, x_v)`` for every node: (n,) float64.

        Raises:
            ValueError: the query is all zero or has the wrong dimension.
        """
        q = _unit(query, self.node_vectors.shape[1])
        return self.node_vectors @ q

    def nearest(self, query: np.ndarray) -> tuple[int, float]:
        """The node most similar to ``query`` (ties: the lower row) and its cosine.

        Raises:
            ValueError: the graph has no node, or as :meth:`similarities`.
        """
        if not self._out:
            raise ValueError("the graph has no node")
        sims = self.similarities(query)
        best = int(np.argmax(sims))
        return best, float(sims[best])

    def ranked_neighbours(self, u: int, query: np.ndarray, exclude: set[int] | None = None) -> list[tuple[int, float]]:
        """``u``'s neighbours (minus ``exclude``) sorted by the RR score (module docstring), highest first; ties:
        larger total edge weight, then the earlier edge.

        Returns:
            ``[(neighbour row, score)]`` with scores in [-1, 1].
        """
        q = _unit(query, self.node_vectors.shape[1])
        skip = exclude or set()
        scored = []
        for position, (v, rows) in enumerate(self._out[u].items()):
            if v in skip or v == u:
                continue
            node = float(self.node_vectors[v] @ q)
            label = float(np.max(self.label_vectors[rows] @ q))
            scored.append(((node + label) / 2.0, float(self.weight[rows].sum()), -position, v))
        scored.sort(reverse=True)
        return [(v, score) for score, _, _, v in scored]

    def traverse(self, start: int, query: np.ndarray, max_nodes: int = 5, *, ranked: bool = True) -> Traversal:
        """Depth-first traversal from ``start`` collecting up to ``max_nodes`` nodes (HLGraphRAG section 3,
        "Retrieval system"; "Ranked Retrieval" when ``ranked``).

        Each node's children are ordered once, when the traversal first descends from it: by the RR score with
        ``ranked``, else in edge order; the traversal then descends into the first unvisited child, and backtracks
        when a node has none left. Iterative (no recursion limit on long chains).

        Args:
            start: the start node row. query: (d,) the main idea's vector. max_nodes: nodes to collect (>= 1).
            ranked: RR on (default) or off.

        Raises:
            ValueError: ``max_nodes < 1``, ``start`` out of range, or a bad query.
        """
        if max_nodes < 1:
            raise ValueError(f"max_nodes must be >= 1, got {max_nodes}")
        if not 0 <= start < self.n_nodes:
            raise ValueError(f"start {start} is not a node row (0..{self.n_nodes - 1})")
        sims = self.similarities(query)
        visited = {start}
        out = Traversal([start], [-1], [float(sims[start])])

        def children(u: int) -> list[tuple[int, float]]:
            if ranked:
                return self.ranked_neighbours(u, query)
            return [(v, float(sims[v])) for v in self._out[u] if v != u]

        stack = [(start, iter(children(start)))]
        while stack and len(out.nodes) < max_nodes:
            u, pending = stack[-1]
            for v, score in pending:
                if v not in visited:
                    visited.add(v)
                    out.nodes.append(v)
                    out.parents.append(u)
                    out.scores.append(score)
                    stack.append((v, iter(children(v))))
                    break
            else:
                stack.pop()
        return out

    def relations_among(self, nodes: list[int]) -> list[int]:
        """Relation rows on edges between the given nodes (both ends among them), grouped by source node in the
        order given, then by edge order."""
        members = set(nodes)
        rows: list[int] = []
        for u in nodes:
            for v, rel in self._out[u].items():
                if v in members and v != u:
                    rows.extend(rel)
        return rows


def _unit(query: np.ndarray, d: int) -> np.ndarray:
    q = np.asarray(query, dtype=np.float64).reshape(-1)
    if q.shape[0] != d:
        raise ValueError(f"the query has dimension {q.shape[0]}, the graph {d}")
    norm = float(np.linalg.norm(q))
    if norm == 0.0:
        raise ValueError("the query vector is all zero")
    return q / norm
