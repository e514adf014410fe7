"""Small value types shared by every layer: retrieval hits, node kinds, and where a hit comes from (its provenance:
the documents and chunk spans it was made from, :class:`Provenance`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

NodeKind = Literal["chunk", "summary", "verbatim", "gist", "relations"]

SOURCE_NODES = "source_nodes"
"""Key of a hit's ``meta`` listing the store node ids whose recorded sources its text was made from, when that is
not the hit's own node (``hlgraph``'s ``"relations"`` hit: the facts it renders as sentences)."""

SAME_TEXT = "same_text"
"""Key of a hit's ``meta`` listing the nodes of lower-ranked hits with the same text that a retrieval dropped
(:func:`gemrag.memory.retrieval.distinct_texts`; each named by :func:`provenance_nodes`): the hit stands for their
sources too, so its provenance names every document the text came from."""


def provenance_nodes(hit: Hit) -> list[int]:
    """The store nodes whose sources a hit's text stands for: ``meta[SOURCE_NODES]`` when given, else the hit's own
    node (a chunk: itself; a derived node: its recorded sources)."""
    named = hit.meta.get(SOURCE_NODES)
    return [int(i) for i in named] if isinstance(named, list) else [int(hit.node_id)]


@dataclass(frozen=True)
class DocumentRef:
    """A stored document as provenance names it.

    Attributes:
        id: the document's id in the memory's store (kept across versions).
        title: its title. source: where its text came from (a file's path, an id's source, ``<text>``...).
        version: 1, 2, ... the number of its current version (each replacement of its text adds one).
    """

    id: int
    title: str
    source: str
    version: int


@dataclass(frozen=True)
class Passage:
    """One chunk of a document version, and where it is in it.

    Attributes:
        chunk_id: the chunk's node id.
        document: the document the chunk belongs to (its current version).
        ordinal: the chunk's 0-based position among the document's chunks.
        start, end: the chunk's character span ``[start, end)`` in that version's text (offsets in Python
            characters, i.e. code points): ``" ".join(text[start:end].split())`` is the chunk's stored text
            (whitespace runs are collapsed in stored chunks). None when the span is unknown (a chunk the
            migration of an older memory could not find in its document's text).
    """

    chunk_id: int
    document: DocumentRef
    ordinal: int
    start: int | None
    end: int | None


@dataclass(frozen=True)
class Provenance:
    """Where a hit comes from: the chunks it was made from, each with its document and span.

    A chunk stands for itself (one passage); a node a strategy derived (a GEM-RAG eigentheme summary, a RAPTOR
    summary, a REMem gist, fact or turn, an UnWeaver class, HLGraphRAG relations) for the chunks its build recorded
    as its sources. Empty when a derived node recorded none, or its node is gone (a generation replaced since).

    Attributes:
        passages: the chunks, ordered by document id then ordinal.
    """

    passages: tuple[Passage, ...] = ()

    @property
    def documents(self) -> tuple[DocumentRef, ...]:
        """The distinct documents of :attr:`passages`, by id."""
        seen = {p.document.id: p.document for p in self.passages}
        return tuple(seen[i] for i in sorted(seen))


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
            ``via``, the node whose edge led the walk here, None for the start node and restarts; see also
            :data:`SOURCE_NODES`).
        provenance: the documents and chunk spans the node was made from (:class:`Provenance`), filled by
            :meth:`gemrag.memory.Memory.retrieve`; None on a strategy's own hits, before they are described.
    """

    node_id: int
    kind: NodeKind
    score: float
    text: str
    rank: int = 0
    meta: dict[str, object] = field(default_factory=dict)
    provenance: Provenance | None = field(default=None, compare=False)
