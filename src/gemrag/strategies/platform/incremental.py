"""Deleting a document from every strategy's published build, without the LLM (cost ∝ the change).

:meth:`gemrag.memory.Memory.delete` asks each built strategy for a *pruned* generation: the published build
with the deleted nodes' rows and columns removed, its surviving derived nodes and edges carried over, and the
chunk set it covers unchanged (so the strategy reads "stale: N deleted chunks" until the next ``index``
recomputes what depended on them — e.g. GEM's eigenvectors and the summaries whose members changed). All
pruned generations and the deletion of the rows are published in ONE transaction.

A strategy may define ``prune(ctx, gone, generation) -> Publication | None`` (None: drop its build, so it must
be rebuilt); otherwise :func:`generic_prune` is used, which handles every build whose arrays are indexed by
node ids through a ``node_ids`` array on axis ``"n"`` (every array with an ``"n"`` axis loses the deleted rows
along it) and whose other arrays do not refer to rows of ``"n"``.

A build that *merges* what several chunks state into one node or one weight (REMem's entities, facts and edge
counts, HLGraphRAG's subjects, relations and events, UnWeaver's classes) cannot be pruned by dropping rows: a merged
node keeps the first source's wording and an edge keeps the removed source's count. Such a strategy reassembles its
build at the removal from the stored extraction artefacts of the chunks that remain (:func:`rebuild_inputs`; no
LLM call, the embedder's cache answers the texts it embedded before) and publishes it as a *rebuilt* generation
(:func:`pruned_publication` with ``carry=False``: new nodes replace the previous generation's), so the memory equals
one built without the removed text (DESIGN.md, "Forgetting").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import scipy.sparse as sp

from gemrag.store import NodeRecord
from gemrag.store.arrays import Matrix
from gemrag.store.hnsw import index_artifact_name
from gemrag.store.publish import KEEP_COVERS, Publication, Published
from gemrag.store.publish_types import Edges
from gemrag.strategies.base import Strategy, StrategyContext
from gemrag.strategies.platform.common import SEARCH_META, document_order, write_publication

NODE_AXIS = "n"
"""The axis name of arrays indexed like a build's ``node_ids``."""

Prune = Callable[[StrategyContext, set[int], int], "Publication | None"]


def take(array: Matrix, axes: tuple[str, ...] | None, axis: str, keep: np.ndarray) -> Matrix:
    """``array`` with only the ``keep`` positions along every dimension named ``axis``.

    Args:
        array: a dense array or a scipy.sparse matrix.
        axes: its axis names (None: returned unchanged).
        axis: the axis to filter. keep: (len,) bool mask.
    """
    if axes is None:
        return array
    out = array
    for dim, name in enumerate(axes):
        if name != axis:
            continue
        if sp.issparse(out):
            csr = sp.csr_matrix(out)
            out = csr[keep] if dim == 0 else csr[:, keep]
        else:
            out = np.compress(keep, np.asarray(out), axis=dim)
    return out


def _axes(ctx: StrategyContext, strategy: str) -> dict[str, tuple[str, ...] | None]:
    manifest = ctx.store.manifest(strategy)
    return {} if manifest is None else {name: e.axes for name, e in manifest.arrays.items()}


def pruned_publication(
    ctx: StrategyContext,
    published: Published,
    generation: int,
    arrays: dict[str, Matrix],
    axes: dict[str, tuple[str, ...] | None],
    meta: dict[str, Any] | None = None,
    *,
    carry: bool = True,
    edges: Edges | Mapping[str, Edges] | None = None,
) -> Publication:
    """Write a pruned generation's arrays and return its publication: the covered chunk set kept, the previous
    build's parameters and model ids kept; derived nodes and edges carried over (``carry``), or, with
    ``carry=False``, a reassembled build's: the nodes it added to ``generation`` and its ``edges`` replace the
    previous generation's."""
    clean_axes = {k: v for k, v in axes.items() if v is not None}
    publication = write_publication(
        ctx,
        published.strategy,
        generation,
        arrays,
        axes=clean_axes,
        meta={**published.meta, **(meta or {}), "pruned_from": published.generation},
        edges=edges,
        covers=KEEP_COVERS,
        carry=carry,
        search=[n for n in published.meta.get(SEARCH_META, []) if n in arrays],
    )
    return replace(publication, params=published.params, models=published.models)


def remaining_chunks(ctx: StrategyContext, strategy: str, gone: set[int]) -> list[NodeRecord]:
    """The chunks the published build of ``strategy`` covers that stay after the removal of ``gone``, in reading
    order (:func:`~gemrag.strategies.platform.common.document_order`, the order a build reads them in); chunks added
    since the build are not among them (the reassembled build covers what the pruned one did)."""
    covered = (ctx.store.covered_chunks(strategy) or set()) - gone
    return sorted((c for c in ctx.store.nodes("chunk") if c.id in covered), key=document_order)


def rebuild_inputs(ctx: StrategyContext, strategy: str, gone: set[int]) -> tuple[Published, list[NodeRecord]] | None:
    """What a strategy that reassembles its build at a removal starts from: its published build and the chunks of it
    that remain (:func:`remaining_chunks`, in reading order); None when there is no published build or no chunk of it
    remains (the strategy's ``prune`` then returns None: its build is dropped)."""
    published = ctx.store.load_published(strategy, mmap=False)
    chunks = remaining_chunks(ctx, strategy, gone)
    if published is None or not chunks:
        return None
    return published, chunks


def generic_prune(
    ctx: StrategyContext, strategy: str, gone: set[int], generation: int, meta: dict[str, Any] | None = None
) -> Publication | None:
    """The published build of ``strategy`` without the rows of the nodes in ``gone`` (see the module docstring);
    ``meta``: entries to set in the pruned generation's meta (over the published build's).

    Returns:
        The pruned generation, written but not published; None when the build cannot be pruned generically
        (it has non-array artefacts, or arrays on axis ``"n"`` but no ``node_ids``).
    """
    published = ctx.store.load_published(strategy, mmap=False)
    if published is None:
        return None
    indexes = {index_artifact_name(n) for n in published.meta.get(SEARCH_META, [])}
    if any(name not in indexes for name in published.paths):  # HNSW artefacts are rebuilt by write_publication
        return None
    axes = _axes(ctx, strategy)
    uses_n = any(a is not None and NODE_AXIS in a for a in axes.values())
    if uses_n and "node_ids" not in published.arrays:
        return None
    arrays = dict(published.arrays)
    if uses_n:
        keep = ~np.isin(np.asarray(arrays["node_ids"]), np.fromiter(gone, dtype=np.int64, count=len(gone)))
        arrays = {name: take(a, axes.get(name), NODE_AXIS, keep) for name, a in arrays.items()}
    return pruned_publication(ctx, published, generation, arrays, axes, meta)


def referencing_prune(
    ctx: StrategyContext,
    strategy: str,
    gone: set[int],
    generation: int,
    *,
    axis: str,
    references: tuple[str, ...],
    ids: str | None = None,
) -> Publication | None:
    """The published build without the deleted nodes, for builds with a second axis whose rows refer to rows of
    ``"n"``: every array loses the deleted rows along ``"n"``; a row of ``axis`` is dropped when a reference of it
    (arrays ``references``, (rows,) int64 indices into ``"n"``) points to a dropped node, or when its own store
    id (array ``ids``, if given) is in ``gone``; the references of the kept rows are re-indexed.

    Returns:
        The pruned generation, written but not published; None when the strategy has no published build.
    """
    published = ctx.store.load_published(strategy, mmap=False)
    if published is None:
        return None
    axes = _axes(ctx, strategy)
    gone_ids = np.fromiter(gone, dtype=np.int64, count=len(gone))
    keep = ~np.isin(np.asarray(published.arrays["node_ids"]), gone_ids)
    refs = {name: np.asarray(published.arrays[name], dtype=np.int64) for name in references}
    n_rows = next(iter(refs.values())).shape[0] if refs else 0
    keep_rows = np.ones(n_rows, dtype=bool)
    for ref in refs.values():
        keep_rows &= keep[ref] if ref.size else keep_rows
    if ids is not None:
        keep_rows &= ~np.isin(np.asarray(published.arrays[ids]), gone_ids)
    new_index = np.cumsum(keep) - 1
    arrays: dict[str, Matrix] = {}
    for name, a in published.arrays.items():
        a = take(a, axes.get(name), NODE_AXIS, keep)
        arrays[name] = take(a, axes.get(name), axis, keep_rows)
    for name, ref in refs.items():
        arrays[name] = new_index[ref[keep_rows]].astype(np.int64)
    return pruned_publication(ctx, published, generation, arrays, axes)


def prune_strategy(
    ctx: StrategyContext, name: str, strategy: Strategy | None, gone: set[int], generation: int
) -> Publication | None:
    """The strategy's own ``prune`` when it has one, else :func:`generic_prune`."""
    prune: Prune | None = getattr(strategy, "prune", None) if strategy is not None else None
    if prune is not None:
        return prune(ctx, gone, generation)
    return generic_prune(ctx, name, gone, generation)
