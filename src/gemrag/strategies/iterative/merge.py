"""Merging the ranked hits of an iterative retrieval's steps into one context of ``budget`` nodes, a node once.

Two rules (``[iterative] merge``):

* ``"interleave"`` (default): round-robin by rank over the steps — step 1's first hit, step 2's first, ..., then
  every step's second, and so on — each node at its first place, the first ``budget`` kept. Every step gets its best
  new passage in before any step gets its second, so a later hop's passage enters a context of the same budget
  (IRCoT, Trivedi et al. 2023, section 3, instead adds every step's passages to a growing set; a fixed budget B has
  to choose). Nested: the first k of a K-node merge are the k-node merge when every step's list is nested.
* ``"rrf"``: reciprocal-rank fusion of the steps' lists (Cormack et al. 2009, eq. 1, k = 60;
  :func:`gemrag.strategies.platform.fusion.reciprocal_rank_fusion`): a passage several steps found (the bridge
  passage, typically) rises. Not nested (a passage deep in two lists can pass one at the top of one).

Every merged hit is the hit of the step that placed it, with ``rank`` renumbered, ``score`` the merged score
(interleave: ``1 / (1 + rank in the placing step)``; rrf: the fused score) and ``meta["iterative"]`` =
``{"step": placing step (1-based), "query": that step's query, "steps": {step: 1-based rank} of every step that
found it}``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from gemrag.strategies.platform.composite import hit_key, unique_hits
from gemrag.strategies.platform.fusion import interleave, reciprocal_rank_fusion
from gemrag.types import Hit

MergeRule = Literal["interleave", "rrf"]


@dataclass
class Step:
    """One retrieval of an iterative search.

    Attributes:
        query: the text retrieved for (the question, a model-written query or a filled sub-question).
        hits: the base strategy's hits for it, best first, a node once.
        info: what the trace records about the step besides its query (e.g. the sub-question as written).
    """

    query: str
    hits: list[Hit]
    info: dict[str, object] = field(default_factory=dict)


def merge_steps(steps: Sequence[Step], budget: int, rule: MergeRule = "interleave", k: float = 60.0) -> list[Hit]:
    """One context of at most ``budget`` hits from the steps' ranked lists (module docstring).

    Args:
        steps: the steps in order (step 1 first), each list without repeats.
        budget: B, most hits returned (>= 0).
        rule: ``"interleave"`` or ``"rrf"``.
        k: RRF's constant (> 0).

    Returns:
        The merged hits, best first, ``meta["iterative"]`` added (module docstring).

    Raises:
        ValueError: an unknown rule, or (rrf) ``k`` <= 0.
    """
    lists = [unique_hits(s.hits) for s in steps]
    found: dict[tuple[str, int], dict[int, int]] = {}
    for number, hits in enumerate(lists, start=1):
        for rank, h in enumerate(hits, start=1):
            found.setdefault(hit_key(h), {})[number] = rank
    if rule == "interleave":  # (hit, placing step, score)
        order = interleave([[hit_key(h) for h in hits] for hits in lists])
        placed = [(lists[p][rank], p + 1, 1.0 / (1 + rank)) for _, p, rank in order]
    elif rule == "rrf":
        fused = reciprocal_rank_fusion([[hit_key(h) for h in hits] for hits in lists], k)
        # the placing step: the one that ranked the node best (the earlier step on a tie)
        first = {key: min(ranks, key=lambda s: (ranks[s], s)) for key, ranks in found.items()}
        placed = [(lists[first[key] - 1][found[key][first[key]] - 1], first[key], score) for key, score in fused]
    else:
        raise ValueError(f"unknown merge rule {rule!r}; choose interleave or rrf")
    out = []
    for rank, (h, step, score) in enumerate(placed[: max(budget, 0)]):
        trace = {"step": step, "query": steps[step - 1].query, "steps": found[hit_key(h)]}
        out.append(Hit(h.node_id, h.kind, float(score), h.text, rank, {**h.meta, "iterative": trace}))
    return out
