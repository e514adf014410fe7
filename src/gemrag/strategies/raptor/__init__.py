"""RAPTOR, the tree baseline of the GEM-RAG paper (Sarthi et al. 2024, "RAPTOR: Recursive Abstractive Processing
for Tree-Organized Retrieval", section 3; GEM-RAG paper section IV, Tables I and II).

* :mod:`~gemrag.strategies.raptor.strategy`: :class:`RaptorStrategy` (``raptor``): the tree build (section 3,
  "Clustering Algorithm", "Model-Based Summarization") and collapsed-tree retrieval ("Querying");
* :mod:`~gemrag.strategies.raptor.tree`: the published tree (:class:`RaptorTree`);
* :mod:`~gemrag.strategies.raptor.update`: gemrag's incremental tree update after adding or deleting documents
  (not in the paper; ``raptor.incremental``);
* :mod:`~gemrag.strategies.raptor.prompts`: the authors' summary prompt.

Its clustering (UMAP + GMM) is in :mod:`gemrag.strategies.platform.clustering`, shared with GEM-RAG's k-means
ablation.
"""

from gemrag.strategies.raptor.strategy import RaptorStrategy

__all__ = ["RaptorStrategy"]
