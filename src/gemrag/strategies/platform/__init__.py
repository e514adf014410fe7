"""The platform every strategy builds on (no method of its own):

* :mod:`~gemrag.strategies.platform.extraction`: the one pipeline through which every LLM pass of a build runs
  (batches, structured output, resume, failures);
* :mod:`~gemrag.strategies.platform.common`: chunk nodes and their vectors, cosine top-k, build parameters, and
  publishing / loading a build's arrays through the store;
* :mod:`~gemrag.strategies.platform.titles`: whether a strategy reads a chunk with its document's title (its paper's
  choice, its ``read_titles`` setting, what its build recorded) and the chunk's indexed text;
* :mod:`~gemrag.strategies.platform.incremental`: pruning a published build after a document is deleted;
* :mod:`~gemrag.strategies.platform.clustering`: RAPTOR's UMAP + GMM soft clustering and the k-means members of
  GEM-RAG's k-means ablation (scikit-learn, umap-learn);
* :mod:`~gemrag.strategies.platform.conversation`: conversation turns, dates and session windows (REMem's episodic
  strategies and the chat memory);
* :mod:`~gemrag.strategies.platform.composite`: strategies over strategies (other strategies reached by name, hits
  deduplicated by node), and :mod:`~gemrag.strategies.platform.fusion` their rank-fusion math (``fused``,
  ``iterative``).

The registry itself is :mod:`gemrag.strategies.base`.
"""
