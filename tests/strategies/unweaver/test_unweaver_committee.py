"""UnWeaver's ballots (strategies/unweaver/ballots.py) and committee rules (strategies/unweaver/committee.py,
abcvoting) on hand-made
profiles whose winning committees are known and differ between AV, PAV and CC."""

from __future__ import annotations

import os
import subprocess
import sys
from itertools import combinations

import numpy as np
import pytest
import scipy.sparse as sp

from gemrag.strategies.unweaver.ballots import Ballots, approval_ballots, approval_scores, released_scores
from gemrag.strategies.unweaver.committee import elect

# Ten voters over five candidates (0..4), committee size 3. Unique winners:
#   AV  {1, 3, 4}: approval counts 3, 6, 3, 7, 4 -> the three most approved, 3, 1 and 4.
#   PAV {0, 1, 3}: sum over voters of 1 + 1/2 + ... + 1/|A ∩ W| = 12.33, above every other committee (brute force
#       below): 0's three voters gain a first approved member, while 4's voters already approve 1 and 3.
#   CC  {0, 3, 4}: the only committee in which every voter approves a member (coverage 10).
PROFILE = [[0], [0, 1, 3], [0, 2], [1, 2, 3], [1, 3], [1, 3, 4], [1, 3, 4], [1, 3, 4], [2, 3], [4]]
AV, PAV, CC = {1, 3, 4}, {0, 1, 3}, {0, 3, 4}


def ballots_of(profile: list[list[int]], n: int, similarity: list[float] | None = None) -> Ballots:
    rows = [a for a, approved in enumerate(profile) for _ in approved]
    cols = [c for approved in profile for c in approved]
    A = sp.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)), shape=(len(profile), n))
    s = np.array(similarity if similarity is not None else [1.0] * len(profile))
    return Ballots(np.arange(len(profile)), s, np.arange(n), A)


def thiele(profile: list[list[int]], committee: set[int], weights: list[float], rule: str) -> float:
    total = 0.0
    for approved, w in zip(profile, weights, strict=True):
        hits = len(set(approved) & committee)
        total += w * (min(hits, 1) if rule == "cc" else sum(1 / i for i in range(1, hits + 1)))
    return total


def best(profile: list[list[int]], n: int, k: int, rule: str, weights: list[float]) -> set[int]:
    scored = sorted(((thiele(profile, set(c), weights, rule), c) for c in combinations(range(n), k)), reverse=True)
    assert scored[0][0] > scored[1][0] + 1e-9, "the hand-made profile must have a unique winner"
    return set(scored[0][1])


def test_the_profile_has_different_unique_winners_by_brute_force() -> None:
    ones = [1.0] * len(PROFILE)
    assert best(PROFILE, 5, 3, "pav", ones) == PAV
    assert best(PROFILE, 5, 3, "cc", ones) == CC
    assert len({frozenset(AV), frozenset(PAV), frozenset(CC)}) == 3


@pytest.mark.parametrize(("rule", "expected"), [("av", AV), ("pav", PAV), ("cc", CC), ("seq-pav", PAV), ("seq-cc", CC)])
def test_each_rule_elects_its_known_committee(rule: str, expected: set[int]) -> None:
    committee, scores = elect(ballots_of(PROFILE, 5), 3, rule, weighted=False)
    assert set(committee.tolist()) == expected
    assert list(scores) == sorted(scores, reverse=True)  # ranked by approval score
    counts = approval_scores(ballots_of(PROFILE, 5))
    np.testing.assert_array_equal(scores, counts[committee])


def test_ballot_weights_change_the_winner() -> None:
    """Two groups of voters; weights by similarity let the smaller, more similar group win AV and PAV."""
    profile = [[0], [0], [0], [1], [1]]
    unweighted, _ = elect(ballots_of(profile, 2), 1, "av", weighted=False)
    assert unweighted.tolist() == [0]
    sims = [0.1, 0.1, 0.1, 0.9, 0.8]  # 0.3 for candidate 0, 1.7 for candidate 1
    for rule in ("av", "pav", "cc", "seq-pav", "seq-cc"):
        committee, scores = elect(ballots_of(profile, 2, sims), 1, rule, weighted=True)
        assert committee.tolist() == [1], rule
        assert scores[0] == pytest.approx(1.7)


def test_a_committee_larger_than_the_candidates_elects_them_all() -> None:
    committee, _ = elect(ballots_of([[0, 1], [1]], 2), 5, "pav", weighted=False)
    assert committee.tolist() == [1, 0]  # by approval count


def test_unknown_rule_and_bad_size_are_errors() -> None:
    with pytest.raises(ValueError, match="rule"):
        elect(ballots_of(PROFILE, 5), 3, "borda")
    with pytest.raises(ValueError, match="size"):
        elect(ballots_of(PROFILE, 5), 0, "av")


def test_approval_ballots_take_the_top_classes_and_restrict_to_approved_chunks() -> None:
    # classes x chunks: class 2 approves nothing, chunk 3 is approved by no retrieved class
    D = sp.csr_matrix(np.array([[1, 0, 0, 1], [0, 1, 1, 0], [0, 0, 0, 0], [1, 1, 0, 0]], np.float32))
    scores = np.array([0.2, 0.9, 0.95, 0.5])
    b = approval_ballots(D, scores, top_k=3)  # classes 2, 1, 3 by similarity; 2 approves nothing
    assert b.classes.tolist() == [1, 3]
    assert b.similarity.tolist() == [0.9, 0.5]
    assert b.candidates.tolist() == [0, 1, 2]
    assert b.approved_sets() == [[1, 2], [0, 1]]
    with pytest.raises(ValueError):
        approval_ballots(D, scores[:3], top_k=3)


def test_released_score_is_frequency_times_rank() -> None:
    # voters in similarity order; top_k = 4 retrieved classes. Links: chunk0: 2, chunk1: 1, chunk2: 1 (total 4).
    b = ballots_of([[1], [0, 2], [0]], 3)
    scores = released_scores(b, top_k=4)
    # chunk0: 2/4 * (1 - 1/4); chunk1: 1/4 * (1 - 0/4); chunk2: 1/4 * (1 - 1/4)
    np.testing.assert_allclose(scores, [0.375, 0.25, 0.1875])
    committee, top = elect(b, 2, "released", top_k=4)
    assert committee.tolist() == [0, 1]
    np.testing.assert_allclose(top, [0.375, 0.25])


def test_exact_rules_keep_the_solver_banner_off_stdout_and_restore_it() -> None:
    """HiGHS prints its banner from C once per process: a fresh process shows whether it reaches stdout."""
    script = (
        "import sys; sys.path.insert(0, 'tests/strategies/unweaver')\n"
        "from test_unweaver_committee import PROFILE, ballots_of\n"
        "from gemrag.strategies.unweaver.committee import elect\n"
        "print(sorted(elect(ballots_of(PROFILE, 5), 3, 'cc', weighted=False)[0].tolist()), flush=True)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(["src", os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "[0, 3, 4]\n"  # CC's committee, and nothing else on stdout


def test_a_missing_election_library_names_the_extra_and_released_needs_none(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from gemrag.errors import GemragError
    from gemrag.strategies.unweaver.committee import require_abcvoting

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "highspy" else real(name, *a))
    require_abcvoting("av")  # the standard algorithms need no ILP solver
    with pytest.raises(GemragError, match=r"gemrag\[unweaver\]"):
        require_abcvoting("pav")
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    require_abcvoting("released")
    committee, _ = elect(ballots_of(PROFILE, 5), 3, "released", top_k=10)
    assert committee.size == 3


def test_equal_ballots_tie_two_chunks_that_weights_would_separate() -> None:
    """The paper's rule (section 2): a voter approves a chunk iff it holds the voter's class, every ballot equal.
    Two chunks each approved by one class tie at one approval each; by default (unweighted) the tie goes to the
    chunk approved by the more similar class in the ranking, and AV elects the lower index. Weighted ballots (the
    variant) elect the chunk of the more similar class outright, with its similarity as score."""
    profile = [[1], [0]]  # voter 0 (most similar, 0.9) approves chunk 1; voter 1 (0.2) approves chunk 0
    ballots = ballots_of(profile, 2, [0.9, 0.2])
    committee, scores = elect(ballots, 2, "pav")  # the default: unweighted
    np.testing.assert_array_equal(scores, [1.0, 1.0])  # equal ballots: a tie
    assert committee.tolist() == [1, 0]  # ranked by the most similar approving class
    one, _ = elect(ballots, 1, "av")
    assert one.tolist() == [0]  # AV's tie: the lower candidate index (abcvoting's standard algorithm)
    weighted, w_scores = elect(ballots, 1, "av", weighted=True)
    assert weighted.tolist() == [1] and w_scores[0] == pytest.approx(0.9)


def test_a_k_committee_is_not_the_prefix_of_a_larger_one() -> None:
    """PAV committees are not nested: the size-1 winner is not among the size-2 winners here. (The evaluation reads
    Recall@k from one committee's first k chunks all the same, the rule of every strategy: eval/metrics.py.)"""
    # chunk 0: 7 approvals (3 shared with chunk 1, 3 with chunk 2, 1 alone); chunks 1 and 2: 6 each, disjoint
    profile = [[0, 1]] * 3 + [[0, 2]] * 3 + [[1]] * 3 + [[2]] * 3 + [[0]]
    ones = [1.0] * len(profile)
    assert best(profile, 3, 1, "pav", ones) == {0}
    assert best(profile, 3, 2, "pav", ones) == {1, 2}  # 12 against {0, 1}'s 7 + 6 - 3/2 = 11.5
    one, _ = elect(ballots_of(profile, 3), 1, "pav")
    two, _ = elect(ballots_of(profile, 3), 2, "pav")
    assert one.tolist() == [0]
    assert set(two.tolist()) == {1, 2}
