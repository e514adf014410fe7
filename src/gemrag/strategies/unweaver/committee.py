"""Committee elections over chunks (UnWeaver paper, section 2 and footnote 6): the voting classes' approval
ballots elect K chunks by an approval-based committee rule, computed with the ``abcvoting`` library (Lackner and
Skowron's ABC rules; optional extra ``gemrag[unweaver]``).

Rules (:data:`RULES`) and the abcvoting algorithm passed for each (never abcvoting's default ``"fastest"``, which
tries the license-limited Gurobi first); every call is ``resolute=True`` (one committee). Ties between committees of
equal score: the ``"standard"`` algorithms (AV and the sequential rules) prefer the lower candidate index, i.e. the
earlier chunk; the exact ILP rules (PAV, CC through HiGHS) return whichever optimal committee the solver reaches
first, deterministic for one input but not necessarily the lower-index one. Ties are common with the paper's
unweighted ballots (the default), since several chunks then share one approval count:

* ``av``: Approval Voting, the K chunks with the highest (weighted) approval counts (``"standard"``);
* ``pav``: Proportional Approval Voting, exact, maximizing ``sum_voters w_v (1 + 1/2 + ... + 1/|A_v ∩ W|)``
  (an ILP solved by HiGHS through PuLP: ``"pulp-highs"``);
* ``cc``: Chamberlin–Courant, exact, maximizing the total weight of voters approving at least one elected chunk
  (``"pulp-highs"``);
* ``seq-pav``, ``seq-cc``: their sequential (greedy) variants (``"standard"``);
* ``released``: not an election: the authors' released code's frequency x rank score
  (:func:`gemrag.strategies.unweaver.ballots.released_scores`), top K.

Ballot weights: by default every voter has weight 1, as in the paper (section 2: a voter approves a chunk iff the
chunk holds its class, and the rules footnote 6 names are unweighted). With ``weighted=True`` (gemrag's earlier
default, a variant) each voter (a class) carries its cosine similarity to the question,
floored at :data:`MIN_WEIGHT` (abcvoting needs positive weights) and passed as an abcvoting ``Voter`` weight
(a ``fractions.Fraction`` with denominator at most 10^6). Every rule above sums voter weights in its score (AV's
approval counts, the Thiele scores of PAV and CC and their sequential forms), so weights apply to all of them; the
released score ignores them (it uses rank positions).

The elected committee is returned ranked by (weighted) approval score, ties by the rank of the most similar class
approving the chunk, then by the lower candidate index: an election yields a set, the context needs an order (the
paper is silent on it). The order never changes which chunks are elected.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from fractions import Fraction
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from gemrag.errors import GemragError
from gemrag.graph.validate import top_indices
from gemrag.strategies.unweaver.ballots import Ballots, approval_scores, released_scores

Rule = Literal["av", "pav", "cc", "seq-pav", "seq-cc", "released"]
RULES: dict[str, tuple[str, str]] = {
    "av": ("av", "standard"),
    "pav": ("pav", "pulp-highs"),
    "cc": ("cc", "pulp-highs"),
    "seq-pav": ("seqpav", "standard"),
    "seq-cc": ("seqcc", "standard"),
}
"""gemrag rule name -> (abcvoting rule id, abcvoting algorithm)."""
MIN_WEIGHT = 1e-6
"""Smallest ballot weight (a class less similar than this to the question still votes, barely)."""
_SOLVER_LOCK = threading.Lock()
"""Serializes the ILP solves: silencing file descriptor 1 is process-wide, so two threads (parallel evaluation
questions) must not swap it concurrently, and one HiGHS solve of a few voters takes milliseconds."""


def require_abcvoting(rule: str) -> None:
    """Check that the packages ``rule`` needs are importable, without importing them.

    Raises:
        GemragError: abcvoting (or, for the exact rules, highspy) is missing; the message names the extra.
    """
    if rule not in RULES:
        return
    needed = ["abcvoting"] + (["highspy"] if RULES[rule][1] == "pulp-highs" else [])
    missing = [m for m in needed if importlib.util.find_spec(m) is None]
    if missing:
        raise GemragError(
            f"the unweaver rule {rule!r} needs {', '.join(missing)}: pip install 'gemrag[unweaver]' "
            '(or use rule = "released", which needs no election library)'
        )


def ballot_weights(similarity: NDArray[np.floating]) -> NDArray[np.float64]:
    """Voter weights from the classes' similarities: ``max(s, MIN_WEIGHT)``, as used by :func:`elect` (float64)."""
    return np.maximum(np.asarray(similarity, dtype=np.float64), MIN_WEIGHT)


@contextmanager
def _quiet_stdout() -> Iterator[None]:
    """Silence file descriptor 1 (HiGHS prints its banner from C, past ``sys.stdout``)."""
    sys.stdout.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


def _committee(ballots: Ballots, k: int, rule: str, weights: NDArray[np.float64] | None) -> list[int]:
    require_abcvoting(rule)
    from abcvoting import abcrules
    from abcvoting.preferences import Profile, Voter

    rule_id, algorithm = RULES[rule]
    profile = Profile(int(ballots.candidates.size))
    for a, approved in enumerate(ballots.approved_sets()):
        weight = 1 if weights is None else Fraction(float(weights[a])).limit_denominator(10**6)
        profile.add_voter(Voter(approved, weight=weight))
    if algorithm == "pulp-highs":
        with _SOLVER_LOCK, _quiet_stdout():
            committees = abcrules.compute(rule_id, profile, k, algorithm=algorithm, resolute=True)
    else:
        committees = abcrules.compute(rule_id, profile, k, algorithm=algorithm, resolute=True)
    return sorted(int(c) for c in committees[0])


def rank_committee(ballots: Ballots, members: NDArray[np.int64], scores: NDArray[np.float64]) -> NDArray[np.int64]:
    """Order elected ``members`` (indices into ``ballots.candidates``) for the context: by ``scores`` descending,
    ties by the similarity rank of the first (most similar) voter approving the member, then by the lower index.

    Returns:
        (K,) int64, the members reordered.
    """
    first = np.full(ballots.approvals.shape[1], np.iinfo(np.int64).max, dtype=np.int64)
    for rank, approved in enumerate(ballots.approved_sets()):
        first[approved] = np.minimum(first[approved], rank)
    m = np.asarray(members, dtype=np.int64)
    return m[np.lexsort((m, first[m], -scores[m]))]


def elect(
    ballots: Ballots, k: int, rule: str, *, weighted: bool = False, top_k: int | None = None
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Elect ``k`` of the ballots' candidate chunks by ``rule`` (module docstring).

    Args:
        ballots: the approval profile (:func:`gemrag.strategies.unweaver.ballots.approval_ballots`).
        k: committee size; more than the candidates elects them all.
        rule: one of :data:`RULES` or ``"released"``.
        weighted: weight each ballot by its class's similarity (default False: equal ballots, the paper's; ignored
            by ``released``).
        top_k: the number of classes retrieved, for the released score's ``1 - r / top_k`` (default: voters).

    Returns:
        ``(committee, scores)``: (K,) int64 indices into ``ballots.candidates``, best first
        (:func:`rank_committee`), and (K,) float64 their scores (the approval score, weighted or not; the released
        score for ``released``).

    Raises:
        ValueError: unknown rule or ``k < 1``.
        GemragError: the rule's library is not installed.
    """
    if rule != "released" and rule not in RULES:
        raise ValueError(f"unknown committee rule {rule!r}; rules: {', '.join([*RULES, 'released'])}")
    if k < 1:
        raise ValueError(f"the committee size must be >= 1, got {k}")
    n = int(ballots.candidates.size)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0)
    if rule == "released":
        scores = released_scores(ballots, top_k or ballots.approvals.shape[0])
        chosen = top_indices(scores, k)
        return chosen, scores[chosen]
    weights = ballot_weights(ballots.similarity) if weighted else None
    scores = approval_scores(ballots, weights)
    members = np.arange(n, dtype=np.int64) if k >= n else np.array(_committee(ballots, k, rule, weights), np.int64)
    ranked = rank_committee(ballots, members, scores)
    return ranked, scores[ranked]
