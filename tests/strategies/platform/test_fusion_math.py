"""Rank fusion math (reciprocal-rank fusion, CombSUM of min-max scores) on hand-made rankings."""

from __future__ import annotations

import pytest

from gemrag.strategies.platform.fusion import interleave, minmax_score_fusion, reciprocal_rank_fusion


def test_rrf_by_hand() -> None:
    fused = dict(reciprocal_rank_fusion([["a", "b", "c"], ["c", "a", "d"]], k=60))
    assert fused["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert fused["b"] == pytest.approx(1 / 62)
    assert fused["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert fused["d"] == pytest.approx(1 / 63)
    order = [item for item, _ in reciprocal_rank_fusion([["a", "b", "c"], ["c", "a", "d"]], k=60)]
    assert order == ["a", "c", "b", "d"]  # a: 1/61 + 1/62 > c: 1/61 + 1/63


def test_rrf_small_k_favours_top_ranks_and_weights_count() -> None:
    lists = [["x", "y"], ["y", "z"], ["y", "x"]]
    assert [i for i, _ in reciprocal_rank_fusion(lists, k=1)][0] == "y"  # 1/3 + 1/2 + 1/2 vs x: 1/2 + 1/3
    # one list weighted 10: its order wins
    assert [i for i, _ in reciprocal_rank_fusion([["p", "q"], ["q", "p"]], k=60, weights=[10, 1])] == ["p", "q"]
    assert [i for i, _ in reciprocal_rank_fusion([["p", "q"], ["q", "p"]], k=60, weights=[1, 10])] == ["q", "p"]


def test_ties_go_to_the_better_rank_then_the_earlier_list() -> None:
    # p and q tie (1/61 + 1/62 each); both have best rank 1, p in the earlier list
    assert [i for i, _ in reciprocal_rank_fusion([["p", "q"], ["q", "p"]])] == ["p", "q"]
    # r (rank 1 in list 2) and s (rank 1 in list 1): equal scores, s's list is earlier
    assert [i for i, _ in reciprocal_rank_fusion([["s"], ["r"]])] == ["s", "r"]


def test_minmax_fusion_by_hand() -> None:
    fused = dict(minmax_score_fusion([["a", "b", "c"], ["b", "d"]], [[0.9, 0.5, 0.1], [12.0, 2.0]]))
    assert fused["a"] == pytest.approx(1.0)
    assert fused["b"] == pytest.approx(0.5 + 1.0)
    assert fused["c"] == pytest.approx(0.0)
    assert fused["d"] == pytest.approx(0.0)
    # scale-free: multiplying a list's scores changes nothing
    again = dict(minmax_score_fusion([["a", "b", "c"], ["b", "d"]], [[9, 5, 1], [1200.0, 200.0]]))
    assert again == pytest.approx(fused)
    # a list whose scores are all equal gives each item 1
    assert dict(minmax_score_fusion([["a", "b"]], [[0.3, 0.3]])) == {"a": 1.0, "b": 1.0}


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="twice"):
        reciprocal_rank_fusion([["a", "a"]])
    with pytest.raises(ValueError, match="k"):
        reciprocal_rank_fusion([["a"]], k=0)
    with pytest.raises(ValueError, match="weights"):
        reciprocal_rank_fusion([["a"], ["b"]], weights=[1.0])
    with pytest.raises(ValueError, match="shape"):
        minmax_score_fusion([["a", "b"]], [[1.0]])
    assert reciprocal_rank_fusion([[], []]) == []


def test_interleave_takes_every_lists_best_first_and_keeps_an_item_at_its_first_place() -> None:
    order = interleave([["a", "b", "c"], ["d", "a", "e"], ["f"]])
    assert order == [("a", 0, 0), ("d", 1, 0), ("f", 2, 0), ("b", 0, 1), ("c", 0, 2), ("e", 1, 2)]  # "a" once
    assert interleave([]) == [] and interleave([[], ["x"]]) == [("x", 1, 0)]
