"""Eigentheme summary nodes (GEM-RAG section III.B.1, "Building the Summary Nodes").

For each of the top k eigenvectors x_k of the normalized Laplacian (ordered by non-increasing |λ|), the
texts of its top e components are summarized by the LLM into a new summary node. The node then gets
utility questions, embeddings and edges like every other node (done by the caller when it rebuilds the
graph over all nodes). The nodes belong to the caller's build generation: readers keep seeing the previous
generation's summary nodes until the caller publishes the new one, which deletes the old ones in the same
transaction (:mod:`gemrag.store.publish`).

With ``gem.members = "kmeans"`` (the paper's Table I ablation "GEM-RAG (k-Means)") the members of theme j
are instead the e chunks nearest the j-th of k k-means centroids of the chunk vectors
(:func:`gemrag.strategies.platform.clustering.kmeans_members`); everything else is unchanged.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gemrag.graph.spectrum import eigenpairs, select_eigenthemes, theme_members
from gemrag.strategies.base import StrategyContext
from gemrag.strategies.gem.prompts import summary_prompt
from gemrag.strategies.gem.settings import GemConfig
from gemrag.strategies.gem.utility_questions import generate_utility_questions
from gemrag.strategies.platform.clustering import kmeans_members
from gemrag.strategies.platform.common import count_tokens, require
from gemrag.strategies.platform.extraction import summarize_each

MIN_NODES = 3
KMEANS_SEED = 0
"""random_state of the k-means ablation (fixed, so the members are reproducible)."""


Eigen = tuple[np.ndarray, np.ndarray]
"""``(values (K,) float64, vectors (n, K) float64)`` from :func:`gemrag.graph.spectrum.eigenpairs`."""


def summary_members(
    L: np.ndarray | None,
    chunk_vectors: np.ndarray | None,
    k: int,
    top_e: int,
    method: str = "spectral",
    *,
    eigen: Eigen | None = None,
    skip_trivial: bool = False,
) -> list[tuple[np.ndarray, dict[str, Any]]]:
    """The member chunks of each summary node and what to record about the theme.

    Args:
        L: (n, n) float64 normalized Laplacian of the chunk graph (dense or scipy.sparse; used by
            ``"spectral"`` when ``eigen`` is not given).
        chunk_vectors: (n, d) float chunk vectors in L's order (needed by ``"kmeans"``).
        k: number of themes, 1 <= k <= n.
        top_e: e, members per theme (capped at n).
        method: ``"spectral"`` (top e components of each top-k eigenvector, section III.B.1) or
            ``"kmeans"`` (e chunks nearest each of k k-means centroids, Table I "GEM-RAG (k-Means)").
        eigen: L's eigenpairs already computed (ordered by non-increasing |lambda|, at least k, or k + 1
            with ``skip_trivial``), so the build decomposes L once; None computes them from ``L``.
        skip_trivial: skip lambda_1 = 1 (the Perron vector) when choosing the k eigenvectors
            (:func:`gemrag.graph.spectrum.select_eigenthemes`).

    Returns:
        Per theme: (member indices into L's rows, best first, int64; meta: ``eigen_index`` (0-based position
        in the |lambda| order) and ``eigenvalue`` for spectral, ``kmeans_index`` for kmeans).

    Raises:
        ValueError: an unknown method, ``"kmeans"`` without chunk vectors, or ``"spectral"`` with neither
            ``L`` nor ``eigen``.
    """
    if method == "spectral":
        if eigen is None:
            if L is None:
                raise ValueError("members='spectral' needs L or its eigenpairs")
            eigen = eigenpairs(L, min(k + int(skip_trivial), L.shape[0]))
        values, vectors = eigen
        e = min(top_e, vectors.shape[0])
        chosen = select_eigenthemes(values, k, skip_trivial=skip_trivial)
        members = theme_members(vectors[:, chosen], e)
        return [
            (idx, {"eigen_index": int(j), "eigenvalue": float(values[j])})
            for j, idx in zip(chosen.tolist(), members, strict=True)
        ]
    if method == "kmeans":
        if chunk_vectors is None:
            raise ValueError("members='kmeans' needs the chunk vectors")
        e = min(top_e, chunk_vectors.shape[0])
        found = kmeans_members(chunk_vectors, k, e, random_state=KMEANS_SEED)
        return [(idx, {"kmeans_index": j}) for j, idx in enumerate(found)]
    raise ValueError(f"unknown members method {method!r}")


def build_eigentheme_summaries(
    ctx: StrategyContext,
    L: np.ndarray | None,
    chunk_ids: list[int],
    *,
    k: int,
    top_e: int,
    chunk_vectors: np.ndarray | None = None,
    generation: int,
    strategy: str = "gem",
    eigen: Eigen | None = None,
    settings: GemConfig | None = None,
) -> list[int]:
    """Create generation ``generation``'s summary nodes: one per eigentheme (or k-means theme, see ``gem.members``).

    Args:
        ctx: the strategy context.
        L: (n, n) float64 normalized Laplacian of the chunk graph, dense or scipy.sparse (unused when
            ``eigen`` is given).
        chunk_ids: (n,) store ids of the chunks, in L's order.
        k: number of eigenvectors summarized (0 = no summary nodes).
        top_e: e, components per eigenvector.
        chunk_vectors: (n, d) float32 chunk vectors in L's order (required when ``gem.members="kmeans"``).
        generation: the build generation the nodes belong to (from ``store.begin_build``).
        strategy: the building strategy (the nodes' namespace).
        eigen: L's eigenpairs, already computed by the caller (see :func:`summary_members`).
        settings: GEM's settings (``members``, ``skip_trivial``, ``summary_words``, ``questions``,
            ``dedupe_questions``); None: the defaults.

    Returns:
        The new summary node ids, in theme order. Summaries whose member texts did not change cost no LLM call
        (cache). A summary the LLM fails to write is recorded (phase ``index/summaries``) and left out.

    Raises:
        GemragError: ``gem.members="kmeans"`` and scikit-learn is not installed.
    """
    n = len(chunk_ids)
    k = min(k, n)
    if k == 0 or n < MIN_NODES:
        return []
    cfg = settings or GemConfig()
    if cfg.members == "kmeans":
        require("sklearn", strategy="gem (members='kmeans')")
    found = summary_members(L, chunk_vectors, k, top_e, cfg.members, eigen=eigen, skip_trivial=cfg.skip_trivial)
    themes = [(j, [chunk_ids[i] for i in np.sort(idx).tolist()], theme) for j, (idx, theme) in enumerate(found)]
    # members in document order (reads better); one summary per theme through the extraction pipeline
    created: list[int] = []

    def save(item: tuple[int, list[int], dict[str, Any]], text: str) -> None:
        j, member_ids, theme = item
        meta = {**theme, "members": member_ids}
        created.append(
            ctx.store.add_summary_node(
                j, text, count_tokens(text), meta, strategy=strategy, generation=generation, sources=member_ids
            )
        )

    summarize_each(
        ctx,
        themes,
        "eigentheme summaries",
        lambda item: summary_prompt([ctx.store.node(i).text for i in item[1]], cfg.summary_words),
        max_tokens=int(cfg.summary_words * 2),
        save=save,
        phase="index/summaries",
        label=lambda item: f"eigentheme {item[0] + 1}",
    )
    own = ctx.store.nodes("summary", strategy=strategy, build=(strategy, generation))
    # a summary node is no chunk of a document: it has no title to read
    generate_utility_questions(ctx, own, cfg.questions, titles=False, dedupe=cfg.dedupe_questions)
    return created
