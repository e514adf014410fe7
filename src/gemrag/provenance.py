"""Where each retrieved node comes from: its document(s) and chunks, as one record per hit.

The surfaces that hand retrieval results to other programs (the MCP server :mod:`gemrag.mcp_server`, the
LangChain and LlamaIndex retrievers in :mod:`gemrag.adapters`) all describe a :class:`~gemrag.types.Hit` the
same way, with :func:`describe_hits`: the hit's score, rank, kind and text plus the chunk ids it stands for and
the documents (id and title) those chunks belong to (:func:`retrieve_nodes` retrieves and describes in one call).
A chunk stands for itself; a node a strategy derived (a GEM-RAG eigentheme summary, a RAPTOR summary, a REMem
entity or fact, a gist) stands for the chunks its build recorded as its sources (``node_sources``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from gemrag.store import MemoryStore
from gemrag.types import Hit

if TYPE_CHECKING:
    from gemrag.memory import Memory


class RetrievedNode(BaseModel):
    """One retrieved node with its provenance, JSON-serialisable.

    Attributes:
        node_id: the node's id in the memory's store (int).
        kind: ``"chunk"``, ``"summary"``, ``"verbatim"`` or ``"gist"`` (see :class:`~gemrag.types.Hit`).
        score: the strategy's score (float, higher is better within one retrieval; its scale depends on the
            strategy, see :attr:`gemrag.types.Hit.score`).
        rank: 0-based position in the retrieved context.
        text: the node's text as given to the LLM.
        strategy: the strategy that retrieved it.
        chunk_ids: the chunk ids the node stands for (itself for a chunk, its recorded sources otherwise;
            empty when a derived node recorded none).
        document_ids: the documents of those chunks, ascending.
        titles: those documents' titles, in the order of ``document_ids``.
        meta: the strategy's own details of the hit (e.g. the matched utility question), JSON-safe.
    """

    node_id: int
    kind: str
    score: float
    rank: int
    text: str
    strategy: str
    chunk_ids: list[int] = Field(default_factory=list)
    document_ids: list[int] = Field(default_factory=list)
    titles: list[str] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)

    def metadata(self) -> dict[str, Any]:
        """Every field but ``text``, as a JSON-safe dict (the metadata a framework's document or node carries)."""
        return self.model_dump(exclude={"text"})


def describe_hits(store: MemoryStore, hits: Sequence[Hit], strategy: str) -> list[RetrievedNode]:
    """Describe retrieved hits with their chunks and documents (a few small store queries, no model call).

    Args:
        store: the memory's store the hits were retrieved from.
        hits: the hits, in retrieval order.
        strategy: the name of the strategy that retrieved them.

    Returns:
        One :class:`RetrievedNode` per hit, same order.
    """
    titles = {int(d["id"]): str(d["title"]) for d in store.documents()}
    derived = [h.node_id for h in hits if h.kind != "chunk"]
    sources = store.node_sources(derived) if derived else {}
    doc_of: dict[int, int | None] = {}

    def document_of(node_id: int) -> int | None:
        if node_id not in doc_of:
            try:
                doc_of[node_id] = store.node(node_id).doc_id
            except KeyError:  # a node of a generation replaced since: no provenance, the hit itself stands
                doc_of[node_id] = None
        return doc_of[node_id]

    out = []
    for hit in hits:
        chunk_ids = [int(hit.node_id)] if hit.kind == "chunk" else sources.get(int(hit.node_id), [])
        own = document_of(int(hit.node_id))  # a verbatim turn carries its document too
        docs = {d for d in (document_of(c) for c in chunk_ids) if d is not None}
        if own is not None:
            docs.add(own)
        document_ids = sorted(docs)
        out.append(
            RetrievedNode(
                node_id=int(hit.node_id),
                kind=str(hit.kind),
                score=float(hit.score),
                rank=int(hit.rank),
                text=hit.text,
                strategy=strategy,
                chunk_ids=chunk_ids,
                document_ids=document_ids,
                titles=[titles.get(d, "") for d in document_ids],
                meta=json.loads(json.dumps(hit.meta, default=str)),
            )
        )
    return out


def retrieve_nodes(
    memory: Memory, question: str, budget: int | None = None, strategy: str | None = None
) -> list[RetrievedNode]:
    """:meth:`Memory.retrieve <gemrag.memory.Memory.retrieve>` then :func:`describe_hits`.

    Args:
        memory: an open memory.
        question: the question (non-empty).
        budget: at most this many nodes (default: the strategy's budget).
        strategy: the strategy to retrieve with (default: the memory's configured one).

    Returns:
        The retrieved nodes, best first.

    Raises:
        ValueError: empty question or budget < 1.
        KeyError: no strategy has that name.
        MemoryNotIndexedError: the strategy has not been built in this memory.
    """
    name = strategy or memory.strategy.name
    return describe_hits(memory.store, memory.retrieve(question, budget, name), name)
