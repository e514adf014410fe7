"""Small value types shared by every layer: retrieval hits and node kinds."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

NodeKind = Literal["chunk", "summary", "verbatim", "gist", "relations"]


@dataclass(frozen=True)
class Hit:
    """One retrieved context node.

    Attributes:
        node_id: id of the node in the memory's store (int).
        kind: ``"chunk"`` for a passage of the input, ``"summary"`` for an eigentheme summary node
            (GEM-RAG, section III.B.1) or another strategy's summary, ``"verbatim"`` for a conversation turn and
            ``"gist"`` for a gist of a session window (``remem_gist``, REMem seed "Return Chunk Type"), ``"relations"``
            for the relations and events one main idea's traversal collected, as sentences (``hlgraph``).
        score: the strategy's score for this node (float, higher is better within one retrieval). What it is
            depends on the strategy and search mode:

            * ``gem``, ``search="best_first"`` (default): the best-first walk's priority when the node was
              picked (paper III.B.2): ``rel(u) * max_c W[c, u] / max(W)`` for a node reached over an edge from
              the retrieved set ``C``, ``rel(u)`` for the start node and for restarts. It is NOT ``rel(u)``, and
              it need not decrease along the ranks.
            * ``gem``, ``search="rank"`` (literal Algorithm 1): ``rel(u) = max_j cos(v_p, v_uj)``, the prompt's
              cosine to the node's best utility question, in [-1, 1].
            * ``gem``, ``search="fused"``: ``max(cos(v_p, v_u), rel(u))``, in [-1, 1].
            * ``dense``: the cosine of the prompt and node embeddings, in [-1, 1].
            * ``bm25``: the BM25 score of the node for the query (>= 0, unbounded).
            * ``raptor`` (collapsed tree): the cosine of the prompt and the node's embedding, in [-1, 1].
            * ``remem_gist``: ``1 / (1 + rank)`` in the order the agent retrieved the nodes.
            * ``full``: 0.0 (the whole document is the context; nothing is scored).
            * ``hlgraph``: a ``"relations"`` hit: the main idea's cosine to its start node, in [-1, 1]; a source
              ``"chunk"`` hit: how many of the rendered facts it states (>= 1); after the dense fallback, the cosine.
        text: the node's text, as given to the LLM.
        rank: 0-based position in the retrieved context.
        meta: strategy-specific details (e.g. the matched utility question; for ``gem``'s best-first search
            ``via``, the node whose edge led the walk here, None for the start node and restarts).
    """

    node_id: int
    kind: NodeKind
    score: float
    text: str
    rank: int = 0
    meta: dict[str, object] = field(default_factory=dict)
