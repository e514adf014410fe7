"""RAPTOR's cost plan (:mod:`gemrag.strategies.platform.planning`): one summary call per cluster (section 3), an
estimate, since the clusters are only known once UMAP and the Gaussian mixtures have run.

* **from scratch** (never built, other settings, or more changed than ``rebuild_fraction``): while a layer has more
  than ``reduction_dim + 1`` nodes, it makes ``ceil(nodes x ratio)`` clusters, each summarized, up to ``max_layers``
  layers. ``ratio`` is the published tree's own clusters per node of layer 0 when it has one, else
  :data:`CLUSTERS_PER_NODE`. A cluster already summarized (same members) is answered by the LLM cache, so a rebuild of
  an unchanged tree costs less than planned: an upper bound.
* **incremental** (:mod:`gemrag.strategies.raptor.update`): each new chunk dirties at most one layer-1 cluster, and a
  dirty summary dirties its parent: ``min(changed, clusters of the layer)`` calls per layer, plus the vacancies a
  delete left.

Each call's prompt is a stand-in: ``1 / ratio`` of the memory's chunks (a cluster's typical size), as
:func:`~gemrag.strategies.raptor.prompts.raptor_summary_prompt` sends them.
"""

from __future__ import annotations

import math
from collections import Counter

from gemrag.models.batch import CompletionRequest
from gemrag.strategies.base import StrategyContext
from gemrag.strategies.platform.planning import PlanWork, StrategyPlan, estimate_pass
from gemrag.strategies.raptor.prompts import raptor_summary_prompt
from gemrag.strategies.raptor.update import VACANCIES, should_rebuild

CLUSTERS_PER_NODE = 0.18
"""Typical clusters per node of a layer: QuALITY's stories gave 6-16 summaries over 33-72 chunks, 0.17-0.22 calls
per chunk over every layer (docs/results.md, "Build cost by story")."""
SUMMARY_FILL = 0.98
"""Typical share of ``summary_tokens`` a summary uses: 1,083 completion tokens in 11 calls of at most 100
(docs/results.md, "Build cost by story")."""


def scratch_calls(nodes: int, floor: int, ratio: float, max_layers: int) -> int:
    """Summaries of a tree built from scratch over ``nodes`` chunks: ``ceil(nodes x ratio)`` per layer while a layer
    has more than ``floor`` nodes, at most ``max_layers`` layers."""
    total = 0
    for _ in range(max_layers):
        if nodes <= floor:
            break
        clusters = math.ceil(nodes * ratio)
        if clusters >= nodes:
            break
        total += clusters
        nodes = clusters
    return total


def plan_raptor(
    ctx: StrategyContext,
    work: PlanWork,
    *,
    reduction_dim: int,
    max_layers: int,
    summary_tokens: int,
    incremental: bool,
    rebuild_fraction: float,
) -> StrategyPlan:
    """RAPTOR's plan (module docstring) with its settings (:class:`~gemrag.strategies.raptor.strategy.RaptorConfig`);
    ``incremental`` is False when the published tree cannot be updated (other settings or input)."""
    new = work.new_chunks(ctx, "raptor")
    plan = StrategyPlan("raptor", len(new))
    if not work.changed(ctx, "raptor") or len(work.chunks) <= reduction_dim + 1:
        return plan
    published = ctx.store.load_published("raptor", mmap=False) if ctx.store.covered_chunks("raptor") else None
    counts: Counter[int] = Counter()
    if published is not None and "layers" in published.arrays:
        counts = Counter(int(x) for x in published.arrays["layers"])
    ratio = counts[1] / counts[0] if counts[0] and counts[1] else CLUSTERS_PER_NODE
    covered = ctx.store.covered_chunks("raptor") or set()
    ids = {c.id for c in work.chunks}
    deleted = sum(1 for i in covered if i not in ids)
    vacant = list(published.meta.get(VACANCIES, [])) if published is not None else []
    update = (
        incremental and counts[1] > 0 and not should_rebuild(counts[0] + deleted, len(new), deleted, rebuild_fraction)
    )
    if update:
        calls, changed = len(vacant), len(new) + deleted
        for layer in range(1, max(counts) + 1):
            changed = min(changed, counts[layer])
            calls += changed
        how = f"incremental update: at most one cluster per changed chunk and layer, {len(vacant)} vacancies"
    else:
        calls = scratch_calls(len(work.chunks), reduction_dim + 1, ratio, max_layers)
        how = f"from scratch: {ratio:.2f} clusters per node and layer"
    size = max(1, min(round(1 / ratio), len(work.chunks)))
    step = max(len(work.chunks) // size, 1)
    members = [work.chunks[i].text for i in range(0, step * size, step)][:size]
    request = CompletionRequest(raptor_summary_prompt(members), None, summary_tokens)
    note = f"{how}; stand-in prompts of {size} chunks"
    passes = estimate_pass(
        work,
        "RAPTOR summaries",
        [request] * calls,
        typical_completion=SUMMARY_FILL * summary_tokens,
        exact=False,
        note=note,
    )[0]
    plan.passes.append(passes)
    plan.notes.append("RAPTOR's clusters are known only after clustering: its calls are an estimate")
    return plan
