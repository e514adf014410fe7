"""Graph mathematics of GEM-RAG (paper section III.B) and REMem / HippoRAG 2 (section 3): pure numpy/scipy, no LLM,
no storage.

* :mod:`~gemrag.graph.similarity`: utility-question vectors ``v_ij`` and the similarity matrix ``S``
  (III.B.1, "Text Embeddings", "Building the Weighted Complete Graph"), plus a k-nearest-neighbour
  sparse variant for scale and :func:`~gemrag.graph.similarity.extend_similarity` (new nodes' rows and
  columns only).
* :mod:`~gemrag.graph.laplacian`: ``L = D^{-1/2} (S - I) D^{-1/2}`` ("Building the Summary Nodes").
* :mod:`~gemrag.graph.spectrum`: eigenpairs ordered by magnitude, the eigenthemes selected (optionally
  skipping lambda_1 = 1), eigentheme members, Remarks 2-3 ("Analysis of Graph Spectrum").
* :mod:`~gemrag.graph.search`: retrieval, Algorithm 1 and best-first search (III.B.2).
* :mod:`~gemrag.graph.edges`: each node's strongest edges, for storage (not in the paper).
* :mod:`~gemrag.graph.ppr`: Personalized PageRank on an undirected weighted graph
  (:class:`~gemrag.graph.ppr.TransitionMatrix`, prepared once per graph), the walk of HippoRAG 2 / REMem.
* :mod:`~gemrag.graph.synonyms`: synonym edges between entity embeddings above a cosine threshold,
  exact (blockwise) or approximate (faiss HNSW), HippoRAG 2 section 3.
* :mod:`~gemrag.graph.fact_graph`: REMem's fact graph: entity normalization, triple cleaning, passage and entity
  nodes, fact / passage / synonym edges, the symmetric adjacency.
* :mod:`~gemrag.graph.fact_seeds`: the seeds of its Personalized PageRank (min-max fact scores, entity weights,
  passage weights).
* :mod:`~gemrag.graph.association`: HLGraphRAG's AssociationGraph (section 3): embedded nodes, directed edges
  holding lists of labelled relations, directional weights and the (ranked) depth-first traversal.

Functions take numpy arrays (or scipy.sparse matrices where stated) and return numpy arrays; invalid
input raises :class:`ValueError`.
"""

from __future__ import annotations

from gemrag.graph.association import AssociationGraph, Traversal, directed_relations
from gemrag.graph.edges import top_k_edges
from gemrag.graph.laplacian import adjacency_matrix, normalized_laplacian, symmetrize
from gemrag.graph.ppr import TransitionMatrix, personalized_pagerank
from gemrag.graph.search import (
    best_first_search,
    fused_ranking,
    gem_search,
    node_relevance,
    rank_algorithm1,
)
from gemrag.graph.similarity import (
    extend_similarity,
    knn_similarity_matrix,
    knn_sparsify,
    similarity_matrix,
    utility_question_vectors,
)
from gemrag.graph.spectrum import (
    SpectrumReport,
    eigenpairs,
    estimate_num_themes,
    select_eigenthemes,
    spectral_energy,
    spectrum_report,
    theme_members,
)
from gemrag.graph.synonyms import synonym_pairs

__all__ = [
    "AssociationGraph",
    "SpectrumReport",
    "TransitionMatrix",
    "Traversal",
    "adjacency_matrix",
    "best_first_search",
    "directed_relations",
    "eigenpairs",
    "estimate_num_themes",
    "extend_similarity",
    "fused_ranking",
    "gem_search",
    "knn_similarity_matrix",
    "knn_sparsify",
    "node_relevance",
    "normalized_laplacian",
    "personalized_pagerank",
    "rank_algorithm1",
    "select_eigenthemes",
    "similarity_matrix",
    "spectral_energy",
    "spectrum_report",
    "symmetrize",
    "synonym_pairs",
    "theme_members",
    "top_k_edges",
    "utility_question_vectors",
]
