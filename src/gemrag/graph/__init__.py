"""Graph mathematics shared by several methods, or general enough that any method could use it: pure numpy/scipy
(faiss for approximate nearest neighbours), no LLM, no storage, no other library.

The rule (docs/architecture.md, "Where the math lives"): a function named by the field's general terms (similarity
matrix, normalized Laplacian, eigenpairs, Personalized PageRank, synonym edges, entity-name normalization) lives
here; a structure or procedure that one method's paper defines (GEM-RAG's Algorithm 1 and best-first search, REMem's
fact graph and seed weights, UnWeaver's equivalence classes, ballots and alignment, HLGraphRAG's association graph
and ranked DFS) lives in that method's package under ``gemrag.strategies``. Clustering, which needs scikit-learn
and umap-learn, is shared platform code (:mod:`gemrag.strategies.platform.clustering`).

* :mod:`~gemrag.graph.similarity`: utility-question vectors ``v_ij`` and the similarity matrix ``S``
  (GEM-RAG III.B.1, "Text Embeddings", "Building the Weighted Complete Graph"), plus a k-nearest-neighbour
  sparse variant for scale and :func:`~gemrag.graph.similarity.extend_similarity` (new nodes' rows and
  columns only).
* :mod:`~gemrag.graph.laplacian`: ``L = D^{-1/2} (S - I) D^{-1/2}`` ("Building the Summary Nodes").
* :mod:`~gemrag.graph.spectrum`: eigenpairs ordered by magnitude, the eigenthemes selected (optionally
  skipping lambda_1 = 1), eigentheme members, Remarks 2-3 ("Analysis of Graph Spectrum").
* :mod:`~gemrag.graph.edges`: each node's strongest edges, for storage (not in the paper).
* :mod:`~gemrag.graph.ppr`: Personalized PageRank on an undirected weighted graph
  (:class:`~gemrag.graph.ppr.TransitionMatrix`, prepared once per graph), the walk of HippoRAG 2 / REMem.
* :mod:`~gemrag.graph.synonyms`: synonym edges between embeddings above a cosine threshold, exact (blockwise) or
  approximate (faiss HNSW), HippoRAG 2 section 3 (REMem's entities, UnWeaver's equivalence classes).
* :mod:`~gemrag.graph.names`: HippoRAG's entity-name normalization (REMem, HLGraphRAG).

Functions take numpy arrays (or scipy.sparse matrices where stated) and return numpy arrays; invalid
input raises :class:`ValueError`.
"""

from __future__ import annotations

from gemrag.graph.edges import top_k_edges
from gemrag.graph.laplacian import adjacency_matrix, normalized_laplacian, symmetrize
from gemrag.graph.names import normalize_entity
from gemrag.graph.ppr import TransitionMatrix, personalized_pagerank
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
    "SpectrumReport",
    "TransitionMatrix",
    "adjacency_matrix",
    "eigenpairs",
    "estimate_num_themes",
    "extend_similarity",
    "knn_similarity_matrix",
    "knn_sparsify",
    "normalize_entity",
    "normalized_laplacian",
    "personalized_pagerank",
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
