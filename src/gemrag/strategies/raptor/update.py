"""Incremental RAPTOR: new chunks join the existing tree; only the clusters that changed, and their ancestors, are
summarized again (cost in proportion to the change).

Not in the RAPTOR paper (Sarthi et al. 2024, section 3 builds the tree once over a fixed corpus) — gemrag's
extension so that adding or deleting a document does not re-run the whole tree's LLM summaries (re-clustering
with UMAP and Gaussian mixtures moves most cluster boundaries, so a full rebuild after adding 5% of the chunks
re-summarizes nearly every cluster). The rule:

1. Each new chunk joins the one layer-1 cluster whose centroid (the normalized mean of its members' unit
   vectors) is the most cosine-similar to the chunk's vector (a hard assignment, where the paper's soft
   clustering lets a node join several clusters when built from scratch).
2. A summary node is *dirty* when its current children differ from those it summarized (recorded in its
   ``meta["children"]``): it gained a new chunk, or a deleted document took some of its children away
   (:mod:`gemrag.strategies.platform.incremental` pruned them). Layer by layer, bottom-up, each dirty summary is
   replaced by a new summary of its current children (same prompt and length as a full build, so an unchanged
   member set hits the LLM cache); a summary left with no children is dropped. Either way its parent becomes
   dirty, so a change climbs to the root and nothing else is touched.
3. The tree is rebuilt from scratch instead (:func:`update_tree` returns None) when it was built before
   summaries recorded their children, has no summary layer, was built with other parameters, when the chunks
   added and deleted since its build exceed ``rebuild_fraction`` of those it covers, or when a grown cluster's
   texts no longer fit the summarizer's context (``cluster_tokens``).

Deleting then re-indexing restores every cluster's original member set, hence (LLM and embedding caches) the
original summaries: the tree equals the one built without the document.

Forgetting (DESIGN.md): a summary with a removed chunk under it leaves the memory at once, with its text
(:mod:`gemrag.strategies.platform.forgetting`), and so does every ancestor of it. What the update needs of it is
kept without any text: its id, layer and recorded children form a *vacancy* in the pruned generation's meta
(:data:`VACANCIES`, :func:`vacancies`), which the next update puts back as an empty row (:func:`add_vacancies`). A
vacancy's current children differ from those it summarized, so rule 2 writes its replacement like any dirty
summary's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from gemrag.store import NodeRecord
from gemrag.strategies.raptor.tree import RaptorTree

CHILDREN_KEY = "children"
"""``meta`` key of a RAPTOR summary node: the ids of the nodes it summarized (sorted)."""

VACANCIES = "vacancies"
"""Key of a pruned generation's meta: the summaries removed with a chunk, as ``{"id", "layer", "children"}`` dicts
(ids and numbers only, no text) for the next update to fill (module docstring)."""


@dataclass
class TreeState:
    """The published tree being updated: the tree's rows plus what the update needs besides.

    Attributes:
        tree: the rows (node ids, layers, token counts, ``(N, d)`` float32 unit vectors, sources); changed in
            place: new chunk rows and new summaries appended, retired rows removed at the end.
        texts: each row's text, same order (appended to alongside ``tree``).
        children: summary id -> its current child ids (the published ``child`` edges).
        recorded: summary id -> the child ids it summarized (its ``meta["children"]``, in prompt order).
    """

    tree: RaptorTree
    texts: list[str]
    children: dict[int, list[int]]
    recorded: dict[int, list[int]]


Summarize = Callable[[int, list[list[int]]], list[int | None]]
"""``summarize(layer, clusters)``: clusters are lists of row indices of the tree being updated; returns, per
cluster, the row of its new summary (appended to the tree) or None when the LLM failed."""


def ordered_children(recorded: dict[int, list[int]], current: dict[int, set[int]]) -> dict[int, list[int]]:
    """Each summary's current children in prompt order: those it summarized, in the order it summarized them,
    then any others by id. Keeping the order (and putting a replacement where the node it replaces was, see
    :func:`update_tree`) makes an unchanged member set give the same prompt, hence a cached summary.

    Args:
        recorded: summary id -> the child ids it summarized, in prompt order.
        current: summary id -> its current child ids (the published ``child`` edges).
    """
    out: dict[int, list[int]] = {}
    for node_id, kids in current.items():
        before = recorded.get(node_id, [])
        out[node_id] = [c for c in before if c in kids] + sorted(kids - set(before))
    return out


def should_rebuild(n_covered: int, n_new: int, n_deleted: int, fraction: float) -> bool:
    """True when the chunks added and deleted since the tree's build exceed ``fraction`` of the ``n_covered``
    chunks it was built over (then re-clustering is worth its LLM calls)."""
    return n_covered == 0 or (n_new + n_deleted) > fraction * n_covered


def assign_to_clusters(
    new_vectors: NDArray[np.float32], member_vectors: Sequence[NDArray[np.float32]]
) -> NDArray[np.int64]:
    """Index of the most cosine-similar cluster centroid for each new vector (rule 1 of the module docstring).

    Args:
        new_vectors: ``(n, d)`` float32 unit rows.
        member_vectors: per cluster, its members' ``(m_j, d)`` unit rows (m_j >= 1).

    Returns:
        ``(n,)`` int64 cluster indices (ties: the lowest index).

    Raises:
        ValueError: no clusters, or a cluster without members.
    """
    if not member_vectors or any(len(m) == 0 for m in member_vectors):
        raise ValueError("every cluster needs at least one member")
    centroids = np.stack([np.asarray(m, dtype=np.float64).mean(axis=0) for m in member_vectors])
    norms = np.linalg.norm(centroids, axis=1, keepdims=True)
    centroids = centroids / np.where(norms > 0, norms, 1.0)
    return np.argmax(np.asarray(new_vectors, dtype=np.float64) @ centroids.T, axis=1).astype(np.int64)


def dirty_summaries(state: TreeState, layer: int) -> list[int]:
    """Summary ids of ``layer`` whose current children differ from those they summarized (rule 2)."""
    t = state.tree
    return [
        node_id
        for node_id, at in zip(t.node_ids, t.layers, strict=True)
        if at == layer and set(state.children.get(node_id, [])) != set(state.recorded.get(node_id, []))
    ]


def update_tree(
    state: TreeState,
    chunks: Sequence[NodeRecord],
    chunk_vectors: NDArray[np.float32],
    summarize: Summarize,
    fits: Callable[[list[int]], bool],
) -> list[int] | None:
    """Bring the published tree (already without deleted nodes) up to date with ``chunks``, in place.

    Args:
        state: the tree and its children (see :class:`TreeState`).
        chunks: every chunk of the memory now. chunk_vectors: their ``(n, d)`` float32 unit rows, same order.
        summarize: writes new summaries, appending their rows (see :data:`Summarize`).
        fits: whether a cluster (row indices) fits the summarizer's context.

    Returns:
        The ids of the summary nodes replaced or dropped (to retire), or None when the tree must be rebuilt
        from scratch (a grown cluster does not fit, or there is no layer-1 cluster to join).
    """
    t = state.tree
    row_of = {node_id: r for r, node_id in enumerate(t.node_ids)}
    new = [(c, v) for c, v in zip(chunks, chunk_vectors, strict=True) if c.id not in row_of]
    layer1 = [n for n, at in zip(t.node_ids, t.layers, strict=True) if at == 1 and state.children.get(n)]
    if new and not layer1:
        return None
    if new:
        members = [np.stack([t.vectors[row_of[c]] for c in state.children[s]]) for s in layer1]
        picks = assign_to_clusters(np.stack([v for _, v in new]), members)
        for (chunk, _), pick in zip(new, picks.tolist(), strict=True):
            row_of[chunk.id] = len(t.node_ids)
            t.node_ids.append(chunk.id)
            t.layers.append(0)
            t.n_tokens.append(chunk.n_tokens)
            t.sources.append({chunk.id})
            state.texts.append(chunk.text)
            state.children[layer1[pick]].append(chunk.id)
        t.vectors = np.vstack([t.vectors, np.stack([v for _, v in new])]).astype(np.float32)
    retired: list[int] = []
    parents: dict[int, list[int]] = {}
    for parent, kids in state.children.items():
        for child in kids:
            parents.setdefault(child, []).append(parent)
    for layer in range(1, max(t.layers, default=0) + 1):
        dirty = dirty_summaries(state, layer)
        keep = [s for s in dirty if state.children.get(s)]
        for s in dirty:
            if not state.children.get(s):  # every child gone: drop it
                retired.append(s)
                _detach(state, parents, s, None)
        clusters = [[row_of[c] for c in state.children[s]] for s in keep]
        if not all(fits(c) for c in clusters):
            return None
        written = summarize(layer, clusters) if clusters else []
        for s, new_row in zip(keep, written, strict=True):
            if new_row is None:  # the LLM failed: the old summary stays (still dirty: the next build retries)
                continue
            new_id = t.node_ids[new_row]
            row_of[new_id] = new_row
            state.children[new_id] = list(state.children[s])
            state.recorded[new_id] = list(state.children[s])
            retired.append(s)
            _detach(state, parents, s, new_id)
    _remove_rows(state, {row_of[s] for s in retired if s in row_of})
    return retired


def vacancies(removed: Sequence[NodeRecord], carried: Sequence[dict[str, object]]) -> list[dict[str, object]]:
    """The vacancies a prune leaves (module docstring): the ``carried`` ones of the generation being pruned, then one
    per removed summary ``removed`` (its id, layer and recorded children; summaries built before children were
    recorded are left out)."""
    out = [dict(v) for v in carried]
    seen = {int(str(v["id"])) for v in out}
    for n in removed:
        if n.kind != "chunk" and CHILDREN_KEY in n.meta and n.id not in seen:
            children = [int(c) for c in n.meta[CHILDREN_KEY]]
            out.append({"id": int(n.id), "layer": int(n.meta.get("layer", 1)), "children": children})
    return out


def add_vacancies(state: TreeState, current: dict[int, set[int]], found: Sequence[dict[str, object]]) -> list[int]:
    """Put each vacancy back into the tree as an empty row (no text, zero vector, no sources) of its layer, with its
    recorded children and those of them still in the tree (or vacant) as its current children, so that
    :func:`update_tree` writes its replacement. Changes ``state.tree``, ``state.texts``, ``state.recorded`` and
    ``current`` in place; returns the vacant ids."""
    t = state.tree
    ids = [int(str(v["id"])) for v in found]
    alive = set(t.node_ids) | set(ids)
    for v, node_id in zip(found, ids, strict=True):
        children = [int(c) for c in v["children"]]  # type: ignore[attr-defined]
        t.node_ids.append(node_id)
        t.layers.append(int(str(v["layer"])))
        t.n_tokens.append(0)
        t.sources.append(set())
        state.texts.append("")
        state.recorded[node_id] = children
        current[node_id] = {c for c in children if c in alive}
    if ids:
        t.vectors = np.vstack([t.vectors, np.zeros((len(ids), t.vectors.shape[1]), np.float32)]).astype(np.float32)
    return ids


def _detach(state: TreeState, parents: dict[int, list[int]], old: int, new: int | None) -> None:
    """Replace child ``old`` by ``new`` in place (or remove it when None) in the current children of each of its
    parents (soft clustering: a node can belong to several clusters)."""
    for parent in parents.pop(old, []):
        kids = state.children[parent]
        if new is None:
            kids.remove(old)
        else:
            kids[kids.index(old)] = new
    if new is not None:
        parents[new] = [p for p, kids in state.children.items() if new in kids]


def _remove_rows(state: TreeState, drop: set[int]) -> None:
    """Remove the rows ``drop`` from the tree and the texts."""
    t = state.tree
    keep = [r for r in range(len(t.node_ids)) if r not in drop]
    t.node_ids = [t.node_ids[r] for r in keep]
    t.layers = [t.layers[r] for r in keep]
    t.n_tokens = [t.n_tokens[r] for r in keep]
    t.sources = [t.sources[r] for r in keep]
    t.vectors = t.vectors[keep].astype(np.float32)
    state.texts[:] = [state.texts[r] for r in keep]
    alive = set(t.node_ids)
    for node_id in [n for n in state.children if n not in alive]:
        del state.children[node_id]
