"""The seeds of Personalized PageRank in REMem's default strategy (HippoRAG 2, Gutiérrez et al. 2025, section 3,
"Dense-Sparse Integration" and "Online Retrieval"; REMem seed ``remem-retrieval-strategies.txt``, "Default
Strategy (OpenIE)", steps 1-3): pure numpy.

1. Query-to-fact scores: the cosine of the question to every fact, min-max normalized (:func:`min_max_normalize`).
2. The top ``linking_top_k`` facts are candidates; the recognition filter (an LLM call, in the strategy) keeps
   some or none.
3. Entity seeds (:func:`entity_seed_weights`): every subject and object of a kept fact gets the weight
   ``mean score of the kept facts naming it / number of passages mentioning it`` (a hub entity named by many
   passages says little about any of them); only ``linking_top_k`` entities keep their weight, the rest get 0.
   Which ones (``seed_rank``): by default (``"weight"``) those with the highest *weight*, as HippoRAG 2's code
   ranks them (``HippoRAG.graph_search_with_fact_entities`` hands the weights to ``get_top_k_weights``, which keeps
   the ``link_top_k`` largest); ``"score"`` (gemrag's earlier rule, a variant) keeps those with the highest *mean
   fact score*, so a hub named by the best fact keeps a tiny weight and pushes out a specific entity of a weaker
   fact. Passage seeds (:func:`passage_seed_weights`): every passage, weighted by its min-max normalized dense
   (DPR) score times ``passage_node_weight``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from numpy.typing import NDArray


def min_max_normalize(scores: NDArray[np.floating]) -> NDArray[np.float64]:
    """``(x - min) / (max - min)`` as float64; all ones when every score is equal (nothing to tell apart), an
    empty array for an empty input.

    Raises:
        ValueError: ``scores`` is not 1-D or holds a NaN or infinity.
    """
    x = np.asarray(scores, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"scores must be 1-D, got shape {x.shape}")
    if x.size == 0:
        return x.copy()
    if not np.all(np.isfinite(x)):
        raise ValueError("scores must be finite")
    low, span = x.min(), x.max() - x.min()
    return np.ones_like(x) if span == 0 else (x - low) / span


def top_indices(scores: NDArray[np.floating], k: int) -> NDArray[np.int64]:
    """Indices of the ``k`` highest scores, best first; ties go to the lower index. (k,) int64 (fewer when
    ``scores`` is shorter)."""
    x = np.asarray(scores, dtype=np.float64)
    order = np.lexsort((np.arange(x.size), -x))
    return order[: max(k, 0)].astype(np.int64)


def entity_seed_weights(
    kept: Sequence[int],
    fact_scores: NDArray[np.floating],
    fact_subject: NDArray[np.integer],
    fact_object: NDArray[np.integer],
    entity_passages: NDArray[np.integer],
    link_top_k: int,
    rank: Literal["weight", "score"] = "weight",
) -> NDArray[np.float64]:
    """Reset weights of the entity nodes from the kept facts (module docstring, step 3; HippoRAG 2 section 3,
    "Online Retrieval").

    An entity's weight is ``mean(s_f for the kept facts f naming it) / max(n_passages, 1)``; a fact naming the
    entity as both subject and object counts twice in the mean, as in HippoRAG 2's loop over subject and object.
    (HippoRAG 2 divides each fact score by the passage count before averaging; the count is the entity's, so the
    result is the same.)

    Args:
        kept: indices of the kept facts (into the fact arrays).
        fact_scores: (F,) the facts' normalized query scores.
        fact_subject, fact_object: (F,) int entity indices of each fact's subject and object.
        entity_passages: (E,) int, the number of passages mentioning each entity (0 is treated as 1).
        link_top_k: how many entities keep their weight; >= 1.
        rank: what ranks the entities for the ``link_top_k`` cut (ties: lower index): ``"weight"`` (default,
            HippoRAG 2's ``get_top_k_weights``) the weight itself, ``"score"`` (gemrag's earlier rule) the mean
            fact score before the division.

    Returns:
        (E,) float64 weights, zero for entities outside the kept facts or outside the top ``link_top_k``.

    Raises:
        ValueError: arrays of different lengths, a fact or entity index out of range, ``link_top_k < 1``, an
            unknown ``rank``.
    """
    scores = np.asarray(fact_scores, dtype=np.float64)
    subj, obj = np.asarray(fact_subject, dtype=np.int64), np.asarray(fact_object, dtype=np.int64)
    counts = np.asarray(entity_passages, dtype=np.float64)
    if not (scores.shape == subj.shape == obj.shape) or scores.ndim != 1:
        raise ValueError("fact_scores, fact_subject and fact_object must be 1-D arrays of one length")
    if link_top_k < 1:
        raise ValueError(f"link_top_k must be >= 1, got {link_top_k}")
    if rank not in ("weight", "score"):
        raise ValueError(f"seed_rank must be 'weight' or 'score', got {rank!r}")
    n_entities = counts.shape[0]
    total = np.zeros(n_entities)
    occurrences = np.zeros(n_entities)
    for f in kept:
        if not 0 <= f < scores.size:
            raise ValueError(f"fact index {f} out of range 0..{scores.size - 1}")
        for e in (subj[f], obj[f]):
            if not 0 <= e < n_entities:
                raise ValueError(f"entity index {e} out of range 0..{n_entities - 1}")
            total[e] += scores[f]
            occurrences[e] += 1
    seen = occurrences > 0
    mean = np.zeros(n_entities)
    mean[seen] = total[seen] / occurrences[seen]
    weights = np.zeros(n_entities)
    weights[seen] = mean[seen] / np.maximum(counts[seen], 1.0)
    candidates = np.flatnonzero(seen)
    if candidates.size > link_top_k:
        key = weights if rank == "weight" else mean
        order = np.lexsort((candidates, -key[candidates]))
        weights[candidates[order[link_top_k:]]] = 0.0
    return weights


def passage_seed_weights(dense_scores: NDArray[np.floating], passage_node_weight: float) -> NDArray[np.float64]:
    """Reset weights of the passage nodes: min-max normalized dense scores times ``passage_node_weight``.

    Args:
        dense_scores: (P,) cosine of the question to each passage.
        passage_node_weight: the factor (HippoRAG 2 and REMem: 0.05), >= 0.

    Returns:
        (P,) float64.

    Raises:
        ValueError: a negative factor, or scores that :func:`min_max_normalize` rejects.
    """
    if passage_node_weight < 0:
        raise ValueError(f"passage_node_weight must be >= 0, got {passage_node_weight}")
    return min_max_normalize(dense_scores) * passage_node_weight
