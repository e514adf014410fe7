"""A LlamaIndex retriever over a gemrag memory (extra ``llamaindex``: ``pip install 'gemrag[llamaindex]'``).

Example::

    from gemrag import Memory
    from gemrag.adapters.llamaindex import GemragRetriever

    retriever = GemragRetriever(Memory.open("my-memory"), budget=4)
    for hit in retriever.retrieve("Why was Korvin's door left unlocked?"):  # list[NodeWithScore], best first
        print(hit.score, hit.node.metadata["titles"], hit.node.get_content()[:80])

It plugs into LlamaIndex's query engines like any retriever, e.g.
``RetrieverQueryEngine.from_args(retriever, llm=...)``.
"""

from __future__ import annotations

from gemrag.answers.provenance import retrieve_nodes
from gemrag.memory import Memory

try:
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
except ImportError as exc:
    raise ImportError("gemrag.adapters.llamaindex needs llama-index-core: pip install 'gemrag[llamaindex]'") from exc

__all__ = ["GemragRetriever"]


class GemragRetriever(BaseRetriever):
    """LlamaIndex ``BaseRetriever`` wrapping :meth:`Memory.retrieve <gemrag.memory.Memory.retrieve>`.

    ``retrieve(query)`` (or ``aretrieve``) returns one ``NodeWithScore(TextNode, score)`` per retrieved node,
    best first: ``score`` is the strategy's score (float, higher is better within one retrieval), the
    ``TextNode``'s ``id_`` is ``"gemrag:<node_id>"``, its ``text`` the node's text and its ``metadata``
    :meth:`RetrievedNode.metadata <gemrag.answers.provenance.RetrievedNode.metadata>` (``score``, ``rank``,
    ``node_id``, ``kind``, ``strategy``, ``documents`` and ``passages`` (the chunks the node was made from, each with
    its document and character span ``start``/``end`` in that document version's text), ``chunk_ids``,
    ``document_ids``, ``titles``, ``meta``). The metadata is
    excluded from the text LlamaIndex gives an LLM or an embedder, which see the node's text only.

    Args:
        memory: an open :class:`~gemrag.memory.Memory` whose strategy has been built (``index``).
        budget: at most this many nodes per query (None: the strategy's default budget).
        strategy: the strategy to retrieve with (None: the memory's configured one).
        callback_manager: LlamaIndex callbacks (default: the global ones).

    Raises:
        ValueError: ``budget`` < 1 (here), or an empty query (on retrieval).
        KeyError: no strategy has that name (on retrieval).
        MemoryNotIndexedError: the strategy has not been built in this memory (on retrieval).
    """

    def __init__(
        self,
        memory: Memory,
        budget: int | None = None,
        strategy: str | None = None,
        callback_manager: CallbackManager | None = None,
    ) -> None:
        if budget is not None and budget < 1:
            raise ValueError("budget must be >= 1")
        self.memory = memory
        self.budget = budget
        self.strategy = strategy
        super().__init__(callback_manager=callback_manager)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        out = []
        for node in retrieve_nodes(self.memory, query_bundle.query_str, self.budget, self.strategy):
            metadata = node.metadata()
            text_node = TextNode(
                id_=f"gemrag:{node.node_id}",
                text=node.text,
                metadata=metadata,
                excluded_llm_metadata_keys=list(metadata),
                excluded_embed_metadata_keys=list(metadata),
            )
            out.append(NodeWithScore(node=text_node, score=node.score))
        return out
