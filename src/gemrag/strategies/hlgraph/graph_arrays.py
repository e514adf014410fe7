"""HLGraphRAG's association graph in its published form (Zeng, "HLGraphRAG", section 3, "Encoding"): the store nodes
of an :class:`~gemrag.strategies.hlgraph.facts.Assembly` (kinds ``subject``, ``event``, ``relation``), its arrays (the
graph nodes and every fact in both directions, directional weights DW) and its association edges. No LLM call: a
build assembles what the extraction pass stored, and a removal reassembles what the remaining chunks stored
(:meth:`gemrag.strategies.hlgraph.strategy.HLGraphStrategy.prune`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Protocol

import numpy as np

from gemrag.store import NodeRecord
from gemrag.strategies.base import StrategyContext
from gemrag.strategies.hlgraph.association import directed_relations
from gemrag.strategies.hlgraph.facts import Assembly, assemble, fact_sentence
from gemrag.strategies.hlgraph.prompts import ChunkMemory
from gemrag.strategies.platform.common import chunk_ids_and_vectors
from gemrag.strategies.platform.titles import strategy_reads_titles

NAME = "hlgraph"
SUBJECT, EVENT = 0, 1
"""Values of the ``node_kind`` array."""
PAIR, PARTICIPANT = 0, 1
"""Values of the ``rel_role`` array: a relation between object 1 and object 2, or an event node's edge to one of
its participants."""

AXES = {
    "node_ids": ("n",),
    "node_kind": ("n",),
    "node_vectors": ("n", "d"),
    "rel_src": ("r",),
    "rel_dst": ("r",),
    "rel_labels": ("r", "d"),
    "rel_weight": ("r",),
    "rel_fact": ("r",),
    "rel_role": ("r",),
    "rel_inverse": ("r",),
}
"""Named dimensions of the published arrays: n graph nodes (subjects and events), r relation rows (each fact in
both directions), d embedding size. ``rel_src``/``rel_dst`` hold rows of the ``n`` arrays; ``rel_fact`` the store
id of the fact each row states (a ``relation`` node, or the ``event`` node itself)."""


class GraphSwitches(Protocol):
    """The settings the graph's form depends on (:class:`~gemrag.strategies.hlgraph.strategy.HLGraphConfig`)."""

    @property
    def routing(self) -> bool: ...
    @property
    def passive(self) -> Literal["llm", "rule"]: ...
    @property
    def directional(self) -> bool: ...


def graph_arrays(
    ctx: StrategyContext,
    generation: int,
    chunks: list[NodeRecord],
    answers: Mapping[int, ChunkMemory],
    cfg: GraphSwitches,
) -> tuple[dict[str, Any], dict[str, Any], tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The association graph of ``chunks`` from their extraction answers (:func:`assemble`, in reading order):
    subject, event and relation store nodes added to ``generation``, and ``(arrays, meta, association edges)`` to
    publish (arrays: :data:`AXES`; edges: ``(src, dst, weight)`` store ids, one per directed node pair). No LLM call;
    the embedder embeds the nodes and labels (cache hits for texts embedded before).

    Args:
        cfg: the switches ``routing``, ``passive`` and ``directional`` (:class:`GraphSwitches`).
    """
    titles = strategy_reads_titles(ctx, NAME)
    asm = assemble([c.id for c in chunks], answers, routing=cfg.routing, passive=cfg.passive)
    d = int(chunk_ids_and_vectors(ctx, chunks[:1], titles=titles)[1].shape[1])
    node_vectors = ctx.embedder.embed([n.text for n in asm.nodes]) if asm.nodes else np.zeros((0, d), np.float32)
    node_ids, fact_ids = store_nodes(ctx, generation, asm)
    rows: list[tuple[int, int, str, str, int, int, float]] = []  # (o1, o2, label, passive, role, fact, weight)
    for i, f in enumerate(asm.facts):
        weight = float(len(f.sources))
        if f.object2 >= 0:
            rows.append((f.object1, f.object2, f.label, f.passive, PAIR, fact_ids[i], weight))
        if f.kind == "event":  # the event node and its participants, labelled with the event both ways
            rows += [
                (p, f.event_node, f.label, f.label, PARTICIPANT, fact_ids[i], weight)
                for p in (f.object1, f.object2)
                if p >= 0
            ]
    texts = sorted({r[2] for r in rows} | {r[3] for r in rows})
    vectors = dict(zip(texts, ctx.embedder.embed(texts), strict=True)) if texts else {}

    def column(k: int, dtype: Any) -> np.ndarray:
        return np.array([r[k] for r in rows], dtype=dtype)

    def labels_of(k: int) -> np.ndarray:
        return np.stack([vectors[str(r[k])] for r in rows]) if rows else np.zeros((0, d), np.float32)

    src, dst, labels, which, inverse = directed_relations(
        column(0, np.int64), column(1, np.int64), labels_of(2), labels_of(3), directional=cfg.directional
    )
    ids = np.array(node_ids, dtype=np.int64)
    arrays = {
        "node_ids": ids,
        "node_kind": np.array([SUBJECT if n.kind == "subject" else EVENT for n in asm.nodes], np.int8),
        "node_vectors": np.asarray(node_vectors, np.float32),
        "rel_src": src,
        "rel_dst": dst,
        "rel_labels": labels,
        "rel_weight": column(6, np.float32)[which],
        "rel_fact": column(5, np.int64)[which],
        "rel_role": column(4, np.int8)[which],
        "rel_inverse": inverse.astype(np.int8),
    }
    meta = {
        "subjects": sum(n.kind == "subject" for n in asm.nodes),
        "events": sum(n.kind == "event" for n in asm.nodes),
        "relations": sum(f.kind == "relation" for f in asm.facts),
        "relation_rows": int(src.size),
        "passive_by_rule": sum(f.passive_by_rule for f in asm.facts),
        "extracted_chunks": asm.extracted,
        "directional": cfg.directional,
        "routing": cfg.routing,
    }
    edges = pair_edges(ids[src] if src.size else src, ids[dst] if dst.size else dst, arrays["rel_weight"])
    return arrays, meta, edges


def store_nodes(ctx: StrategyContext, generation: int, asm: Assembly) -> tuple[list[int], list[int]]:
    """Insert the graph's nodes (kinds ``subject``, ``event``) and the SRQ facts (kind ``relation``); returns
    ``(graph node ids, fact ids)``, an event's fact id being its event node's id. Each fact's ``meta`` holds
    ``kind, object1, label, object2, passive, why, time`` (the texts the sentences are rendered from)."""
    event_meta = {f.event_node: f for f in asm.facts if f.kind == "event"}
    names = [n.text for n in asm.nodes]

    def meta(f: Any) -> dict[str, Any]:
        other = names[f.object2] if f.object2 >= 0 else ""
        return {
            "kind": f.kind,
            "object1": names[f.object1],
            "label": f.label,
            "object2": other,
            "passive": f.passive,
            "passive_by_rule": f.passive_by_rule,
            "why": f.why,
            "time": f.time,
        }

    with ctx.store.transaction():
        node_ids = [
            ctx.store.add_node(
                NAME,
                generation,
                n.kind,
                n.text,
                ord_=i,
                sources=n.sources,
                meta=meta(event_meta[i]) if i in event_meta else None,
            )
            for i, n in enumerate(asm.nodes)
        ]
        fact_ids = [
            node_ids[f.event_node]
            if f.kind == "event"
            else ctx.store.add_node(
                NAME,
                generation,
                "relation",
                fact_sentence(f.kind, names[f.object1], f.label, names[f.object2]),
                ord_=i,
                meta=meta(f),
                sources=f.sources,
            )
            for i, f in enumerate(asm.facts)
        ]
    return node_ids, fact_ids


def pair_edges(src: np.ndarray, dst: np.ndarray, weight: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One store edge per directed node pair (store ids), weighted by the summed weights of its relations."""
    total: dict[tuple[int, int], float] = {}
    for a, b, w in zip(src.tolist(), dst.tolist(), np.asarray(weight).tolist(), strict=True):
        total[(a, b)] = total.get((a, b), 0.0) + w
    pairs = list(total)
    return (
        np.array([a for a, _ in pairs], np.int64),
        np.array([b for _, b in pairs], np.int64),
        np.array([total[p] for p in pairs], np.float64),
    )


__all__ = [
    "AXES",
    "EVENT",
    "NAME",
    "PAIR",
    "PARTICIPANT",
    "SUBJECT",
    "GraphSwitches",
    "graph_arrays",
    "pair_edges",
    "store_nodes",
]
