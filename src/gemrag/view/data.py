"""What the memory view shows, read from a memory through the platform's store API (no strategy special-cased: the
themes the chunks are coloured by are the strategy's own, its optional ``themes``, GEM's eigenthemes): the nodes a
strategy published (chunks plus its own kinds), its published edges above a weight threshold, each node's text and
utility questions, and the path of one retrieval.

Every strategy publishes its nodes (``Store.nodes(strategy=...)``) and edges (``Store.edge_list``) the same way,
so one reader serves GEM's chunk/summary similarity graph, REMem's passage/entity graph (fact, passage and synonym
edges; fact nodes, which have no edges of their own, are linked to the chunks they came from) and any later
strategy's graph. A strategy that publishes no graph (``dense``, ``bm25``, ...) is shown as its chunks alone, with
a message saying so.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

from gemrag.config import Config
from gemrag.store import NodeRecord
from gemrag.store.parts import BuildReads
from gemrag.strategies import Themes, strategy_themes
from gemrag.types import Hit

__all__ = [
    "EDGES_PER_NODE",
    "RetrievalPath",
    "ViewData",
    "auto_threshold",
    "retrieval_path",
    "strongest_edges",
    "view_data",
]

EDGES_PER_NODE = 3
"""Without ``min_weight``, the view keeps the strongest ``EDGES_PER_NODE * N`` edges of N nodes (all when fewer)."""

LABEL_WORDS = 6
"""Words of a derived node's text in its label."""

SOURCE_EDGE = "source"
"""Kind of the edges drawn from a derived node without published edges to the chunks it was made from."""


@dataclass
class RetrievalPath:
    """One retrieval as the view highlights it.

    Attributes:
        question: the question asked. strategy: the strategy that answered.
        steps: the returned nodes in retrieval order: ``{"node": store id, "via": store id of the node whose edge
            led to it or None (the start node, owner of q*, and restarts), "score": float, "rank": int}``.
            ``via`` is only known for strategies that walk a graph and report it (GEM's best-first search).
        q_star: the stored question q* that chose the start node, as the first hit's ``meta["matched_question"]``
            names it (GEM: the utility question argmax_q SIM(v_p, v_q), paper III.B.2), or "" (a strategy that
            names none).
    """

    question: str
    strategy: str
    steps: list[dict[str, Any]]
    q_star: str = ""


@dataclass
class ViewData:
    """Everything the HTML page draws, JSON-friendly (:meth:`as_json_dict`).

    Attributes:
        strategy: the strategy whose graph is shown.
        nodes: ``{"id", "kind", "label", "text", "questions": [str], "theme": int | None, "doc": int | None,
            "members": [store ids] (summary nodes)}`` per node, chunks first, in store-id order.
        edges: ``{"from", "to", "kind", "weight"}`` per undirected edge kept (weight >= ``threshold``, or a
            node's strongest edge when the threshold was chosen automatically).
        edges_total: undirected edges the strategy published (before the threshold).
        threshold: the weight threshold applied (float).
        themes: per eigentheme ``{"index", "eigen_index", "eigenvalue", "summary": store id | None}`` (GEM only).
        spectrum: GEM's spectrum report (top eigenvalues, Remark 2 estimate, Remark 3 Lambda) or None.
        message: a sentence for the reader (e.g. "this strategy publishes no graph"), or "".
        path: the highlighted retrieval, or None.
    """

    strategy: str
    nodes: list[dict[str, Any]]
    edges: list[dict[str, Any]]
    edges_total: int
    threshold: float
    themes: list[dict[str, Any]] = field(default_factory=list)
    spectrum: dict[str, Any] | None = None
    message: str = ""
    path: RetrievalPath | None = None

    def as_json_dict(self) -> dict[str, Any]:
        """The data as plain dicts and lists (for ``json.dumps``)."""
        return asdict(self)


def auto_threshold(weights: list[float], n_nodes: int, per_node: int = EDGES_PER_NODE) -> float:
    """The weight that keeps the strongest ``per_node * n_nodes`` edges (0.0 when there are no more than that).

    Args:
        weights: the undirected edges' weights (any order).
        n_nodes: number of nodes shown. per_node: edges kept per node on average (>= 1).

    Returns:
        The threshold (float): the ``per_node * n_nodes``-th largest weight; ties at it are kept too.
    """
    keep = max(1, per_node) * n_nodes
    if len(weights) <= keep:
        return 0.0
    return float(sorted(weights, reverse=True)[keep - 1])


def strongest_edges(pairs: dict[tuple[int, int], tuple[str, float]]) -> set[tuple[int, int]]:
    """Each node's strongest edge (ties: the first pair in sorted order), so that no node with an edge is drawn
    alone.

    Args:
        pairs: ``(a, b) -> (kind, weight)`` per undirected edge, ``a < b``.

    Returns:
        The pairs that are the strongest edge of at least one of their two nodes.
    """
    best: dict[int, tuple[float, tuple[int, int]]] = {}
    for pair, (_, weight) in sorted(pairs.items()):
        for node in pair:
            if node not in best or weight > best[node][0]:
                best[node] = (weight, pair)
    return {pair for _, pair in best.values()}


def _label(node: NodeRecord) -> str:
    """A short label: a chunk's document/position, another node's first words."""
    if node.kind == "chunk":
        return f"d{node.doc_id}:{node.ord}"
    words = node.text.split()
    return " ".join(words[:LABEL_WORDS]) + (" …" if len(words) > LABEL_WORDS else "")


def _undirected(rows: list[tuple[str, int, int, float]]) -> dict[tuple[int, int], tuple[str, float]]:
    """Published edges (both directions, or one) merged per unordered pair and kind; the strongest kind wins."""
    out: dict[tuple[int, int], tuple[str, float]] = {}
    for kind, src, dst, weight in rows:
        if src == dst:
            continue
        key = (min(src, dst), max(src, dst))
        if key not in out or weight > out[key][1]:
            out[key] = (kind, weight)
    return out


def view_data(
    store: BuildReads,
    strategy: str,
    *,
    min_weight: float | None = None,
    config: Config | None = None,
    path: RetrievalPath | None = None,
) -> ViewData:
    """Read what ``strategy`` published in ``store`` into a :class:`ViewData`.

    Args:
        store: an open memory store (read-only is enough).
        strategy: the strategy whose graph to show (e.g. ``"gem"``, ``"remem"``).
        min_weight: keep the edges with weight >= this (units of the strategy's edge weights: for GEM the summed
            cosines of S, paper III.B.1); None: the edges above :func:`auto_threshold` plus each node's strongest
            edge (:func:`strongest_edges`).
        config: the configuration whose section of ``strategy`` its themes are computed with (the chunk colours,
            :func:`gemrag.strategies.strategy_themes`: GEM's eigenthemes; default: the section's defaults; the build's
            recorded parameters take precedence).
        path: a retrieval to highlight (:func:`retrieval_path`).

    Returns:
        The view data. With no published generation, or a strategy that publishes no nodes or edges, the chunks
        alone and a ``message``.
    """
    chunks = store.nodes("chunk")
    manifest = store.manifest(strategy)
    own = store.nodes(strategy=strategy) if manifest is not None else []
    rows = store.edge_list(strategy) if manifest is not None else []
    message = ""
    if manifest is None:
        message = f"strategy {strategy!r} has no published build in this memory: showing its {len(chunks)} chunks only"
    elif not own and not rows:
        message = f"strategy {strategy!r} publishes no graph: showing the memory's {len(chunks)} chunks only"
    nodes = chunks + own
    ids = {n.id for n in nodes}
    pairs = {k: v for k, v in _undirected(rows).items() if k[0] in ids and k[1] in ids}
    linked = {i for pair in pairs for i in pair}
    sources = store.node_sources([n.id for n in own if n.id not in linked])
    for node_id, chunk_ids in sources.items():  # e.g. REMem's fact nodes: no edges of their own
        for chunk_id in chunk_ids:
            if chunk_id in ids:
                pairs.setdefault((min(node_id, chunk_id), max(node_id, chunk_id)), (SOURCE_EDGE, 1.0))
    threshold = auto_threshold([w for _, w in pairs.values()], len(nodes)) if min_weight is None else min_weight
    backbone = strongest_edges(pairs) if min_weight is None else set()
    edges = [
        {"from": a, "to": b, "kind": kind, "weight": round(weight, 6)}
        for (a, b), (kind, weight) in sorted(pairs.items())
        if weight >= threshold or (a, b) in backbone
    ]
    themes = (strategy_themes(strategy, store, config) if manifest else None) or Themes()
    if themes.note and not message:
        message = themes.note
    questions: dict[int, list[str]] = defaultdict(list)
    for _, node_id, text in store.questions():
        questions[node_id].append(text)
    summary_of = {n.meta.get("eigen_index"): n.id for n in own if n.kind == "summary"}
    out_nodes = []
    for n in nodes:
        theme = themes.chunk_theme.get(n.id)
        if n.kind == "summary" and n.meta.get("eigen_index") in themes.eigen_indices:
            theme = themes.eigen_indices.index(n.meta["eigen_index"])
        item = {
            "id": n.id,
            "kind": n.kind,
            "label": _label(n),
            "text": n.text,
            "questions": questions.get(n.id, []),
            "theme": theme,
            "doc": n.doc_id,
        }
        if "members" in n.meta:
            item["members"] = [int(m) for m in n.meta["members"]]
        out_nodes.append(item)
    return ViewData(
        strategy=strategy,
        nodes=out_nodes,
        edges=edges,
        edges_total=len(pairs),
        threshold=float(threshold),
        themes=[
            {"index": j, "eigen_index": e, "eigenvalue": v, "summary": summary_of.get(e)}
            for j, (e, v) in enumerate(zip(themes.eigen_indices, themes.eigenvalues, strict=False))
        ],
        spectrum=themes.spectrum,
        message=message,
        path=path,
    )


def retrieval_path(question: str, strategy: str, hits: list[Hit]) -> RetrievalPath:
    """The path of one retrieval from its hits (in retrieval order).

    Args:
        question: the question. strategy: the strategy that retrieved.
        hits: what ``Memory.retrieve`` returned; ``hit.meta["via"]`` (a graph walk such as GEM's best-first search)
            gives the walk's edges and the first hit's ``meta["matched_question"]`` (a start node chosen by matching
            stored questions, such as GEM's) is q*; a strategy setting neither draws its hits in order.

    Returns:
        The :class:`RetrievalPath`.
    """
    steps = [
        {"node": h.node_id, "via": h.meta.get("via"), "score": round(float(h.score), 6), "rank": h.rank} for h in hits
    ]
    q_star = str(hits[0].meta.get("matched_question", "")) if hits else ""
    return RetrievalPath(question, strategy, steps, q_star)
