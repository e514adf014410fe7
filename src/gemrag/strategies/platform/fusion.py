"""Rank fusion: several ranked lists of the same items become one (pure Python, no storage, no model).

* Reciprocal-rank fusion (Cormack, Clarke & Büttcher 2009, "Reciprocal Rank Fusion outperforms Condorcet and
  individual Rank Learning Methods", SIGIR, eq. 1): ``RRF(d) = sum_p w_p / (k + r_p(d))`` with ``r_p(d)`` the
  1-based rank of ``d`` in list ``p`` (a list without ``d`` adds nothing) and ``k`` = 60 in the paper.
* CombSUM over min-max normalized scores (Fox & Shaw 1994, "Combination of Multiple Searches", TREC-2; the
  normalization of Lee 1997, "Analyses of Multiple Evidence Combination", SIGIR): ``S(d) = sum_p w_p * (s_p(d) -
  min_p) / (max_p - min_p)`` over the scores each list gives its own items (a list whose scores are all equal
  gives each of its items 1); no parameter is learned.

Both return every item of every list with its fused score, best first; ties go to the item with the better best
rank in any list, then to the earlier list, then to the earlier position (deterministic).

* Interleaving (round robin by rank, :func:`interleave`): every list's first item, then every list's second, ...,
  each item at its first place; no score. Every list gets its best item in before any list gets its second
  (``iterative``'s steps, a multiple-choice question's per-option retrievals).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)


def _weights(n: int, weights: Sequence[float] | None) -> list[float]:
    if weights is None:
        return [1.0] * n
    if len(weights) != n:
        raise ValueError(f"{len(weights)} weights for {n} ranked lists")
    if any(w < 0 for w in weights):
        raise ValueError("weights must be >= 0")
    return [float(w) for w in weights]


def _order(scores: dict[K, float], rankings: Sequence[Sequence[K]]) -> list[tuple[K, float]]:
    """Items by fused score (descending), ties by best rank, then list index, then position."""
    first: dict[K, tuple[int, int]] = {}
    for p, ranking in enumerate(rankings):
        for r, item in enumerate(ranking):
            best = first.get(item)
            if best is None or (r, p) < best:
                first[item] = (r, p)
    return sorted(scores.items(), key=lambda kv: (-kv[1], *first[kv[0]]))


def _check_unique(rankings: Sequence[Sequence[K]]) -> None:
    for p, ranking in enumerate(rankings):
        if len(set(ranking)) != len(ranking):
            raise ValueError(f"ranked list {p} names an item twice; deduplicate it first")


def interleave(rankings: Sequence[Sequence[K]]) -> list[tuple[K, int, int]]:
    """Round robin by rank over ranked lists: depth 0 of every list in the lists' order, then depth 1, ..., an item
    kept at its first place only.

    Args:
        rankings: P ranked lists of hashable items, best first.

    Returns:
        ``[(item, list index p, 0-based rank in list p)]`` over the union of the lists, in interleaved order.
    """
    seen: set[K] = set()
    out: list[tuple[K, int, int]] = []
    for rank in range(max((len(r) for r in rankings), default=0)):
        for p, ranking in enumerate(rankings):
            if rank < len(ranking) and ranking[rank] not in seen:
                seen.add(ranking[rank])
                out.append((ranking[rank], p, rank))
    return out


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[K]], k: float = 60.0, weights: Sequence[float] | None = None
) -> list[tuple[K, float]]:
    """Reciprocal-rank fusion (Cormack et al. 2009, eq. 1).

    Args:
        rankings: P ranked lists of hashable items, best first, each without repeats.
        k: the constant damping the top ranks (> 0; 60 in the paper).
        weights: one weight >= 0 per list (default all 1).

    Returns:
        ``[(item, sum_p w_p / (k + rank_p))]`` over the union of the lists, best first (float scores > 0 unless a
        weight is 0).

    Raises:
        ValueError: ``k`` <= 0, a repeated item in one list, or weights of the wrong length or sign.
    """
    if k <= 0:
        raise ValueError("the RRF constant k must be > 0")
    _check_unique(rankings)
    w = _weights(len(rankings), weights)
    scores: dict[K, float] = {}
    for p, ranking in enumerate(rankings):
        for r, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + w[p] / (k + r)
    return _order(scores, rankings)


def minmax_score_fusion(
    rankings: Sequence[Sequence[K]],
    scores: Sequence[Sequence[float]],
    weights: Sequence[float] | None = None,
) -> list[tuple[K, float]]:
    """CombSUM of min-max normalized scores (Fox & Shaw 1994; Lee 1997).

    Args:
        rankings: P ranked lists of hashable items, best first, each without repeats.
        scores: each list's scores of its items (same shapes as ``rankings``; any scale, higher is better).
        weights: one weight >= 0 per list (default all 1).

    Returns:
        ``[(item, sum_p w_p * normalized score)]`` over the union of the lists, best first; each normalized score
        is in [0, 1].

    Raises:
        ValueError: shapes disagree, a repeated item in one list, or weights of the wrong length or sign.
    """
    if len(scores) != len(rankings) or any(len(s) != len(r) for s, r in zip(scores, rankings, strict=True)):
        raise ValueError("scores must have the shape of rankings")
    _check_unique(rankings)
    w = _weights(len(rankings), weights)
    fused: dict[K, float] = {}
    for p, (ranking, values) in enumerate(zip(rankings, scores, strict=True)):
        if not ranking:
            continue
        low, high = min(values), max(values)
        span = high - low
        for item, value in zip(ranking, values, strict=True):
            normalized = 1.0 if span == 0 else (float(value) - low) / span
            fused[item] = fused.get(item, 0.0) + w[p] * normalized
    return _order(fused, rankings)
