"""Each chunk's dominant eigentheme in a published GEM graph (GEM-RAG v2, section III.B.1, "Building the Summary
Nodes"), for the memory view (:meth:`GemStrategy.themes <gemrag.strategies.gem.strategy.GemStrategy.themes>`, the
optional ``themes`` of the strategy protocol: the view asks the strategy, it does not know GEM).

GEM publishes the node and utility-question vectors and the walk weights, not the eigenvectors (they are used once,
to choose the summary members). The view recomputes them from the published chunk vectors with the build's own
function (:func:`gemrag.strategies.gem.graph.chunk_graph`: the same ``S``, ``L`` and solver), so the themes shown
are the ones the summary nodes were written from. The paper's "top e components" of an eigenvector are its
largest *signed* values (:func:`gemrag.graph.spectrum.theme_members`); accordingly a chunk's dominant eigentheme is
the summarized eigenvector with the largest signed component on that chunk.
"""

from __future__ import annotations

import numpy as np

from gemrag.errors import GemragError
from gemrag.store.parts import BuildReads
from gemrag.strategies.base import Themes
from gemrag.strategies.gem.graph import GraphMode, chunk_graph
from gemrag.strategies.gem.settings import GemConfig

__all__ = ["chunk_eigenvectors", "dominant_themes", "gem_themes"]


def dominant_themes(eigenvectors: np.ndarray, selected: list[int]) -> np.ndarray:
    """Each node's dominant eigentheme: ``argmax_j x_{selected[j]}[i]`` (signed, ties to the lower ``j``).

    Args:
        eigenvectors: (n, K) float64, eigenvectors as columns by non-increasing |lambda| (sign convention of
            :func:`gemrag.graph.spectrum.eigenpairs`).
        selected: the k column positions that became summary nodes (each < K).

    Returns:
        (n,) int64 theme index in ``[0, k)`` per node.

    Raises:
        ValueError: ``selected`` is empty or out of range.
    """
    if not selected:
        raise ValueError("no eigentheme selected")
    if max(selected) >= eigenvectors.shape[1] or min(selected) < 0:
        raise ValueError(f"selected eigenvectors {selected} out of range for {eigenvectors.shape[1]} columns")
    return np.argmax(eigenvectors[:, selected], axis=1).astype(np.int64)


def chunk_eigenvectors(store: BuildReads, settings: GemConfig) -> tuple[list[int], np.ndarray, list[int]]:
    """The eigenvectors of the chunk graph's L of ``store``'s published ``gem`` generation, recomputed from the
    published chunk and utility-question vectors with the build's function
    (:func:`gemrag.strategies.gem.graph.chunk_graph`, paper III.B.1).

    Args:
        store: an open memory store with a published ``gem`` generation.
        settings: the GEM settings; the build's own parameters recorded in its manifest (``knn``, ...) take
            precedence.

    Returns:
        ``(chunk_ids, eigenvectors, selected)``: the chunks' store ids in L's row order, ``(n, K)`` float64
        eigenvectors by non-increasing |lambda| (K > max(selected)), and the 0-based positions of those that became
        summary nodes (empty, with no eigenvectors computed, when none did).

    Raises:
        GemragError: no published ``gem`` generation. ValueError: inconsistent arrays (see :mod:`gemrag.graph`).
    """
    manifest = store.manifest("gem")
    published = store.load_published("gem")
    if manifest is None or published is None:
        raise GemragError("this memory has no GEM graph yet: run `gemrag index` first")
    selected = [int(i) for i in (manifest.meta.get("eigen_selection") or {}).get("selected_indices", [])]
    node_ids = np.asarray(published.arrays["node_ids"])
    rows = np.flatnonzero(np.isin(node_ids, [n.id for n in store.nodes("chunk")]))
    if not selected:
        return node_ids[rows].tolist(), np.zeros((rows.size, 0)), []
    position = np.full(node_ids.shape[0], -1, dtype=np.int64)
    position[rows] = np.arange(rows.size)
    owner = np.asarray(published.arrays["question_owner"])
    keep = position[owner] >= 0
    params = {k: v for k, v in manifest.params.items() if k in GemConfig.model_fields}
    cfg = settings.model_copy(update={**params, "eigen": max(selected)})
    vectors = np.asarray(published.arrays["node_vectors"])[rows]
    qvectors = np.asarray(published.arrays["question_vectors"])[keep]
    mode: GraphMode = "sparse" if manifest.meta.get("graph") == "sparse" else "dense"
    _, _, (_, eigenvectors), _ = chunk_graph(vectors, qvectors, position[owner[keep]], mode, cfg)
    return node_ids[rows].tolist(), eigenvectors, selected


def gem_themes(store: BuildReads, settings: GemConfig) -> Themes:
    """The eigenthemes of ``store``'s published ``gem`` generation (see :func:`chunk_eigenvectors`).

    Args:
        store: an open memory store. settings: the GEM settings (see :func:`chunk_eigenvectors`).

    Returns:
        The eigenthemes (see :class:`~gemrag.strategies.base.Themes`); ``chunk_theme`` is empty, with a ``note``,
        when there is no published graph or the build selected no eigenvectors.

    Raises:
        ValueError: the published arrays are inconsistent (see :mod:`gemrag.graph`).
    """
    manifest = store.manifest("gem")
    if manifest is None:
        return Themes(note="GEM has no published graph")
    selection = manifest.meta.get("eigen_selection") or {}
    spectrum = manifest.meta.get("spectrum")
    chunk_ids, eigenvectors, selected = chunk_eigenvectors(store, settings)
    if not selected:
        return Themes(spectrum=spectrum, note="no eigenvectors became summary nodes (k-means members or few chunks)")
    themes = dominant_themes(eigenvectors, selected)
    return Themes(
        chunk_theme=dict(zip(chunk_ids, themes.tolist(), strict=True)),
        eigen_indices=selected,
        eigenvalues=[float(v) for v in selection.get("selected_eigenvalues", [])],
        spectrum=spectrum,
    )
