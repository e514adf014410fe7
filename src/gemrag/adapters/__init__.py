"""Retrievers for other frameworks over a gemrag memory, each behind its own optional extra.

* :mod:`gemrag.adapters.langchain`: ``GemragRetriever``, a LangChain ``BaseRetriever`` returning
  ``Document`` objects (extra ``langchain``: langchain-core).
* :mod:`gemrag.adapters.llamaindex`: ``GemragRetriever``, a LlamaIndex ``BaseRetriever`` returning
  ``NodeWithScore`` objects (extra ``llamaindex``: llama-index-core).

Both wrap :meth:`Memory.retrieve <gemrag.memory.Memory.retrieve>` and carry each node's score and provenance
(:class:`~gemrag.answers.provenance.RetrievedNode`) as metadata. Importing one without its framework raises an
``ImportError`` naming the extra to install; this package itself imports neither.
"""
