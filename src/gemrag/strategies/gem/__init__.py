"""GEM-RAG: Graphical Eigen Memories (Rappazzo et al.; seeds ``gem-rag-paper-v1.txt`` and ``gem-rag-paper-v2.txt``).

Implements section III.B of the paper:

* :mod:`~gemrag.strategies.gem.strategy`: :class:`GemStrategy` (``gem``, the default strategy): build and
  retrieve, III.B.1 and III.B.2;
* :mod:`~gemrag.strategies.gem.utility_questions`: "Generating Utility Questions", Q(CHUNK_i, m);
* :mod:`~gemrag.strategies.gem.graph`: "Building the Weighted Complete Graph" and the eigenpairs of
  "Building the Summary Nodes" (dense, or a kNN graph with Lanczos at scale);
* :mod:`~gemrag.strategies.gem.summaries`: the eigentheme summary nodes ("Building the Summary Nodes"; the k-means
  ablation of Table I);
* :mod:`~gemrag.strategies.gem.search`: retrieval, Algorithm 1 and the best-first search (III.B.2);
* :mod:`~gemrag.strategies.gem.prompts`: the utility-question and summary prompts.

The graph math it shares with other methods (S, L, eigenpairs, Remarks 2-3) is in :mod:`gemrag.graph`.
"""

from gemrag.strategies.gem.strategy import GemStrategy

__all__ = ["GemStrategy"]
