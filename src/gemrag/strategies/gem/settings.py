"""GEM-RAG's own settings, the ``[gem]`` section (the memory's chunk size, budget and titles are ``[memory]``:
:class:`gemrag.memory_settings.MemorySettings`).

:class:`GemConfig` is named as every other method's section model (``RaptorConfig``, ``RememConfig``, ...); the
names of earlier releases, ``GemSettings`` and ``gem_settings``, still import from here with a
:class:`DeprecationWarning`."""

from __future__ import annotations

import warnings
from typing import Any, Literal

from pydantic import Field

from gemrag.config import Config, ReadTitles
from gemrag.strategies.base import validate_section

__all__ = ["GemConfig", "gem_config"]


class GemConfig(ReadTitles):
    """GEM-RAG parameters (paper section IV.E defaults; the chunk size T and the budget B are the memory's,
    :class:`~gemrag.memory_settings.MemorySettings`). ``read_titles`` (:class:`ReadTitles`): GEM reads titles
    only when set to true (the paper's utility questions and chunk vectors are of the chunk alone, section III.B.1).

    Attributes:
        questions: m, utility questions per chunk (0 = compare chunk embeddings directly), default 5.
        eigen: k, eigenvectors that become summary nodes, default 2.
        eigen_top: e, top components of each eigenvector summarized together, default 5.
        search: ``"best_first"`` (section III.B.2), ``"rank"`` (literal Algorithm 1) or ``"fused"`` (no
            graph walk: top-B by ``max(cos(v_p, v_u), max_j cos(v_p, v_uj))``, an ablation measuring what the
            walk adds).
        members: how summary nodes pick their e members: ``"spectral"`` (the top e components of each of
            the top k eigenvectors, section III.B.1) or ``"kmeans"`` (the e chunks nearest each of k
            k-means centroids of the chunk vectors: Table I, "GEM-RAG (k-Means)").
        summary_words: length limit of a summary node (words).
        skip_trivial: drop the first eigenpair (lambda_1 = 1, whose eigenvector is the degree/Perron vector
            D^(1/2) 1: the most central chunks, not a theme) when choosing the k summary eigenvectors, and take
            the next k. Default False, as in the paper (section III.B.1, "Building the Summary Nodes": the top
            k eigenvectors by |lambda|); see benchmarks/first_eigenvector.py for what it changes.
        graph: ``"dense"`` (the paper's complete graph: N x N float64 S, L and W; full eigendecomposition),
            ``"sparse"`` (k-nearest-neighbour S as scipy CSR, Lanczos ``eigsh`` for the top eigenpairs, CSR W;
            not in the paper) or ``"auto"`` (default: sparse when the memory has more than ``sparse_above``
            chunks).
        sparse_above: chunk count above which ``graph="auto"`` goes sparse, default 2000: a dense N x N
            float64 matrix is 32 MB at N = 2000 (several are alive during a build) and 800 MB at 10,000, and
            the dense eigendecomposition is O(N^3); below 2000 the dense build takes seconds.
        knn: neighbours per node of the sparse graph (the union of every node's ``knn`` strongest links),
            default 32: enough that each chunk keeps its strongest links and the graph stays connected, while S,
            L and W hold O(N * knn) entries (under 1% of the complete graph's at N = 10,000).
        ann_above: chunk count from which the sparse graph's neighbours are found through a faiss HNSW index
            (approximate; :mod:`gemrag.graph.knn_ann`) instead of every pair of chunks, and retrieval ranks utility
            questions through one (:mod:`gemrag.strategies.gem.ann_search`); default 20000 (at 20k the exact
            kNN graph takes ~30 s on 2 cores and grows as N^2, the approximate one as ~N log N; recall and
            agreement are measured in ``benchmarks/scale.py``). 0 = always approximate on the sparse path.
        dedupe_questions: drop a node's repeated utility questions (default False: the paper sums the edge weight
            over the m questions the LLM wrote, a repeated one twice, III.B.1; True: gemrag's earlier rule, which
            left such a node fewer than m questions and lighter edges). Applies to questions generated from now
            on; stored questions stay as they are.
    """

    questions: int = Field(5, ge=0, le=20)
    eigen: int = Field(2, ge=0, le=64)
    eigen_top: int = Field(5, ge=1, le=100)
    search: Literal["best_first", "rank", "fused"] = "best_first"
    members: Literal["spectral", "kmeans"] = "spectral"
    summary_words: int = Field(80, ge=10, le=1000)
    skip_trivial: bool = False
    graph: Literal["auto", "dense", "sparse"] = "auto"
    sparse_above: int = Field(2000, ge=0)
    knn: int = Field(32, ge=1, le=1000)
    ann_above: int = Field(20000, ge=0)
    dedupe_questions: bool = False


def gem_config(config: Config) -> GemConfig:
    """GEM's validated ``[gem]`` section of ``config`` (its defaults when absent), for GEM's own code and its tests
    (code outside GEM reads any strategy's section through :func:`gemrag.strategies.strategy_config`).

    Raises:
        ConfigError: the section has an unknown key or an invalid value.
    """
    settings = validate_section("gem", GemConfig, config.section("gem"))
    assert isinstance(settings, GemConfig)
    return settings


_DEPRECATED = {"GemSettings": ("GemConfig", GemConfig), "gem_settings": ("gem_config", gem_config)}
"""Names of earlier releases: old name -> (new name, the object it now names)."""


def __getattr__(name: str) -> Any:
    """``GemSettings`` and ``gem_settings``, the names of earlier releases, as :class:`GemConfig` and
    :func:`gem_config` with a :class:`DeprecationWarning`.

    Raises:
        AttributeError: ``name`` is no attribute of this module.
    """
    if name in _DEPRECATED:
        new, value = _DEPRECATED[name]
        warnings.warn(f"{__name__}.{name} is deprecated: use {new}", DeprecationWarning, stacklevel=2)
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
