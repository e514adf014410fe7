"""The fact graph of REMem's ``openie`` strategy (HippoRAG 2, Gutiérrez et al. 2025, section 3; REMem seed
``remem-retrieval-strategies.txt``, "Default Strategy (OpenIE)"): pure Python/numpy/scipy, no LLM, no storage.

Nodes: the passages (chunks) first, then the entities. An entity is the normalized subject or object of a
triple (:func:`~gemrag.graph.names.normalize_entity`: lowercase, every non-alphanumeric character to a space). Edges,
all undirected:

* **fact edges** between a triple's subject and object, weighted by how many triple occurrences (one per passage
  stating it) link the two;
* **passage edges** (weight 1.0) between a passage and every entity of its triples;
* **synonym edges** between entities whose embeddings are similar (weights from
  :func:`gemrag.graph.synonyms.synonym_pairs`).

Weights (``edge_weights``): by default as HippoRAG 2's released code makes them (``"hipporag2"``): it stores every
fact and synonym edge once per direction in an undirected graph, so the two directions add: a fact edge weighs
twice its triple count, a synonym edge found from both ends twice its similarity, and where an ordered pair has a
synonym its similarity replaces that direction's fact count; a passage edge is stored once (1.0). ``"once"``
(gemrag's earlier rule, a variant) counts every edge once and adds the kinds joining one pair (the count plus the
larger similarity), which sends relatively more PageRank mass along passage edges.

Facts (unique normalized triples) are not nodes: they are
embedded on their own and link a question to the entities that seed Personalized PageRank
(:mod:`gemrag.strategies.remem.fact_seeds`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from gemrag.graph.names import normalize_entity

Triple = tuple[str, str, str]


def clean_triples(
    triples: Sequence[Sequence[str]], entities: Sequence[str] = (), *, require_entity: bool = True
) -> tuple[list[Triple], int]:
    """Normalize a passage's extracted triples and drop the unusable ones.

    A triple is kept when it has exactly three elements, each non-empty after normalization, and (with
    ``require_entity``) its subject or object matches one of the passage's named ``entities`` (HippoRAG 2's
    OpenIE asks for triples containing at least one of them): equal after normalization, or one containing
    the other as whole words ("alan turing" matches "turing"). Duplicates within the passage are dropped.
    With no entities at all, ``require_entity`` is not applied (nothing to match against).

    Args:
        triples: the model's ``[subject, predicate, object]`` lists.
        entities: the passage's named entities (raw).
        require_entity: apply the named-entity condition.

    Returns:
        ``(kept normalized triples in input order, number dropped)``.
    """
    names = [f" {n} " for n in (normalize_entity(e) for e in entities) if n]

    def named(element: str) -> bool:
        padded = f" {element} "
        return any(n in padded or padded in n for n in names)

    kept: list[Triple] = []
    seen: set[Triple] = set()
    dropped = 0
    for raw in triples:
        parts = [normalize_entity(str(x)) for x in raw] if len(raw) == 3 else []
        if len(parts) != 3 or not all(parts):
            dropped += 1
            continue
        s, p, o = parts
        triple = (s, p, o)
        if (require_entity and names and not (named(s) or named(o))) or triple in seen:
            dropped += 1
            continue
        seen.add(triple)
        kept.append(triple)
    return kept, dropped


@dataclass
class FactIndex:
    """Entities, unique facts and their links, from the passages' cleaned triples.

    Attributes:
        n_passages: P, the number of passages (graph nodes 0..P-1).
        entities: E normalized entity names, in order of first appearance (graph nodes P..P+E-1).
        facts: F unique normalized triples, in order of first appearance.
        fact_subject, fact_object: (F,) int64 entity indices (0..E-1) of each fact's subject and object.
        fact_passages: for each fact, the sorted passages (0..P-1) stating it.
        mentions: (M, 2) int64 unique ``(passage, entity)`` pairs: the entities of each passage's triples.
        pair_counts: ``{(a, b): count}`` with entity indices a < b: triple occurrences linking the two.
    """

    n_passages: int
    entities: list[str] = field(default_factory=list)
    facts: list[Triple] = field(default_factory=list)
    fact_subject: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    fact_object: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    fact_passages: list[list[int]] = field(default_factory=list)
    mentions: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.int64))
    pair_counts: dict[tuple[int, int], int] = field(default_factory=dict)

    @property
    def n_nodes(self) -> int:
        """P + E graph nodes."""
        return self.n_passages + len(self.entities)

    def entity_sources(self) -> list[list[int]]:
        """For each entity, the sorted passages mentioning it."""
        out: list[list[int]] = [[] for _ in self.entities]
        for passage, entity in self.mentions.tolist():
            out[entity].append(passage)
        return [sorted(p) for p in out]


def index_facts(passage_triples: Sequence[Sequence[Triple]]) -> FactIndex:
    """Collect the entities, unique facts, mentions and fact-edge counts of cleaned triples.

    Args:
        passage_triples: for each passage (in graph order), its normalized triples (:func:`clean_triples`).

    Returns:
        The :class:`FactIndex`. A triple whose subject equals its object is a fact but adds no fact edge.
    """
    idx = FactIndex(n_passages=len(passage_triples))
    entity_id: dict[str, int] = {}
    fact_id: dict[Triple, int] = {}
    subjects: list[int] = []
    objects: list[int] = []
    mentions: set[tuple[int, int]] = set()

    def entity(name: str) -> int:
        if name not in entity_id:
            entity_id[name] = len(idx.entities)
            idx.entities.append(name)
        return entity_id[name]

    for passage, triples in enumerate(passage_triples):
        for triple in triples:
            s, o = entity(triple[0]), entity(triple[2])
            mentions.update(((passage, s), (passage, o)))
            if triple not in fact_id:
                fact_id[triple] = len(idx.facts)
                idx.facts.append(triple)
                idx.fact_passages.append([])
                subjects.append(s)
                objects.append(o)
            sources = idx.fact_passages[fact_id[triple]]
            if not sources or sources[-1] != passage:
                sources.append(passage)
            if s != o:
                key = (min(s, o), max(s, o))
                idx.pair_counts[key] = idx.pair_counts.get(key, 0) + 1
    idx.fact_subject = np.array(subjects, dtype=np.int64)
    idx.fact_object = np.array(objects, dtype=np.int64)
    idx.mentions = np.array(sorted(mentions), dtype=np.int64).reshape(-1, 2)
    return idx


@dataclass(frozen=True)
class EdgeLists:
    """The graph's edges by kind, in graph node indices (passages 0..P-1, entities P..), each undirected pair
    once: ``kind -> (src (K,) int64, dst (K,) int64, weight (K,) float64)``."""

    kinds: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]


def fact_graph_edges(
    index: FactIndex,
    synonyms: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    weights: str = "hipporag2",
) -> EdgeLists:
    """The fact, passage and synonym edges of the graph (module docstring).

    Args:
        index: from :func:`index_facts`.
        synonyms: directed entity pairs ``(src (K,), dst (K,), similarity (K,))`` in entity indices (as
            :func:`gemrag.graph.synonyms.synonym_pairs` returns them).
        weights: ``"hipporag2"`` (default: each direction counted, as HippoRAG 2's code) or ``"once"`` (a pair
            found in both directions becomes one edge with the larger similarity; a fact edge weighs its count).

    Raises:
        ValueError: unknown ``weights``.

    Returns:
        :class:`EdgeLists` with kinds ``"fact"``, ``"passage"`` and ``"synonym"``.
    """
    if weights not in ("hipporag2", "once"):
        raise ValueError(f"edge weights must be 'hipporag2' or 'once', got {weights!r}")
    if weights == "hipporag2":
        return _hipporag2_edges(index, synonyms)
    p = index.n_passages
    pairs = sorted(index.pair_counts.items())
    fact = (
        np.array([a + p for (a, _), _ in pairs], dtype=np.int64),
        np.array([b + p for (_, b), _ in pairs], dtype=np.int64),
        np.array([c for _, c in pairs], dtype=np.float64),
    )
    passage = (
        index.mentions[:, 0].copy(),
        index.mentions[:, 1] + p,
        np.ones(len(index.mentions), dtype=np.float64),
    )
    best: dict[tuple[int, int], float] = {}
    if synonyms is not None:
        for a, b, w in zip(*(np.asarray(x).tolist() for x in synonyms), strict=True):
            if a != b:
                key = (min(a, b), max(a, b))
                best[key] = max(best.get(key, 0.0), float(w))
    syn_pairs = sorted(best.items())
    synonym = (
        np.array([a + p for (a, _), _ in syn_pairs], dtype=np.int64),
        np.array([b + p for (_, b), _ in syn_pairs], dtype=np.int64),
        np.array([w for _, w in syn_pairs], dtype=np.float64),
    )
    return EdgeLists({"fact": fact, "passage": passage, "synonym": synonym})


def _passage_edges(index: FactIndex) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    p = index.n_passages
    return index.mentions[:, 0].copy(), index.mentions[:, 1] + p, np.ones(len(index.mentions), dtype=np.float64)


def _hipporag2_edges(index: FactIndex, synonyms: tuple[np.ndarray, np.ndarray, np.ndarray] | None) -> EdgeLists:
    """HippoRAG 2's weights: per ordered entity pair, the synonym similarity if one was found in that direction,
    else the triple count; each undirected pair's fact and synonym weights are the sums over its two directions."""
    p = index.n_passages
    directed_syn: dict[tuple[int, int], float] = {}
    if synonyms is not None:
        for a, b, w in zip(*(np.asarray(x).tolist() for x in synonyms), strict=True):
            if a != b:
                directed_syn[(int(a), int(b))] = float(w)
    fact_w: dict[tuple[int, int], float] = {}
    syn_w: dict[tuple[int, int], float] = {}
    for (a, b), count in index.pair_counts.items():
        for direction in ((a, b), (b, a)):
            if direction not in directed_syn:
                fact_w[(a, b)] = fact_w.get((a, b), 0.0) + count
    for (a, b), w in directed_syn.items():
        key = (min(a, b), max(a, b))
        syn_w[key] = syn_w.get(key, 0.0) + w

    def lists(weights: dict[tuple[int, int], float]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        items = sorted(weights.items())
        return (
            np.array([a + p for (a, _), _ in items], dtype=np.int64),
            np.array([b + p for (_, b), _ in items], dtype=np.int64),
            np.array([w for _, w in items], dtype=np.float64),
        )

    return EdgeLists({"fact": lists(fact_w), "passage": _passage_edges(index), "synonym": lists(syn_w)})


def adjacency(n_nodes: int, edges: EdgeLists) -> sp.csr_matrix:
    """The symmetric weighted adjacency W of the graph: (n, n) float64 CSR, W[a, b] = W[b, a] = the sum of the
    weights of every edge joining a and b.

    Raises:
        ValueError: an edge names a node outside 0..n_nodes-1, or a weight is negative or not finite.
    """
    src = np.concatenate([e[0] for e in edges.kinds.values()] or [np.zeros(0, np.int64)])
    dst = np.concatenate([e[1] for e in edges.kinds.values()] or [np.zeros(0, np.int64)])
    weight = np.concatenate([e[2] for e in edges.kinds.values()] or [np.zeros(0)])
    if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n_nodes):
        raise ValueError(f"an edge names a node outside 0..{n_nodes - 1}")
    if weight.size and (not np.all(np.isfinite(weight)) or weight.min() < 0):
        raise ValueError("edge weights must be finite and non-negative")
    rows = np.concatenate([src, dst])
    cols = np.concatenate([dst, src])
    data = np.concatenate([weight, weight])
    return sp.csr_matrix(sp.coo_matrix((data, (rows, cols)), shape=(n_nodes, n_nodes)))
