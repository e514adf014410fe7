"""A LangChain retriever over a gemrag memory (extra ``langchain``: ``pip install 'gemrag[langchain]'``).

Example::

    from gemrag import Memory
    from gemrag.adapters.langchain import GemragRetriever

    retriever = GemragRetriever(memory=Memory.open("my-memory"), budget=4)
    docs = retriever.invoke("Why was Korvin's door left unlocked?")  # list[Document], best first
    docs[0].metadata["score"], docs[0].metadata["titles"]
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field

from gemrag.answers.provenance import retrieve_nodes
from gemrag.memory import Memory

try:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever, LangSmithRetrieverParams
except ImportError as exc:
    raise ImportError("gemrag.adapters.langchain needs langchain-core: pip install 'gemrag[langchain]'") from exc

__all__ = ["GemragRetriever"]


class GemragRetriever(BaseRetriever):
    """LangChain ``BaseRetriever`` wrapping :meth:`Memory.retrieve <gemrag.memory.Memory.retrieve>`.

    Use it through LangChain's Runnable API (``invoke``, ``batch``, ``ainvoke``; the async calls run the
    synchronous retrieval in an executor). Each retrieved node becomes a ``Document`` whose ``page_content`` is
    the node's text and whose ``metadata`` is :meth:`RetrievedNode.metadata
    <gemrag.answers.provenance.RetrievedNode.metadata>`: ``score`` (the strategy's score, float, higher is better),
    ``rank``, ``node_id``, ``kind``, ``strategy``, ``documents`` (each a dict of ``id``, ``title``, ``source``,
    ``version``), ``passages`` (the chunks the node was made from, each a dict of ``chunk_id``, ``document``,
    ``ordinal`` and its character span ``start``/``end`` in that document version's text), ``chunk_ids``,
    ``document_ids``, ``titles`` and the strategy's ``meta``; ``Document.id`` is ``"gemrag:<node_id>"``. Documents
    come best first.

    Attributes:
        memory: an open :class:`~gemrag.memory.Memory` whose strategy has been built (``index``).
        budget: at most this many nodes per query (None: the strategy's default budget).
        strategy: the strategy to retrieve with (None: the memory's configured one).

    Raises (on retrieval):
        ValueError: empty query or budget < 1.
        KeyError: no strategy has that name.
        MemoryNotIndexedError: the strategy has not been built in this memory.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Memory
    budget: int | None = Field(default=None, ge=1)
    strategy: str | None = None

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return [
            Document(page_content=node.text, metadata=node.metadata(), id=f"gemrag:{node.node_id}")
            for node in retrieve_nodes(self.memory, query, self.budget, self.strategy)
        ]

    def _get_ls_params(self, **kwargs: Any) -> LangSmithRetrieverParams:  # what LangSmith traces name this retriever
        params = super()._get_ls_params(**kwargs)
        params["ls_embedding_model"] = self.memory.embedder.model_id
        return params
