"""Metric tests against hand-computed values (gemrag.eval.metrics)."""

from __future__ import annotations

import math

import pytest

from gemrag.eval.metrics import (
    accuracy,
    answer_recall,
    document_recall_at_k,
    exact_match,
    first_passages,
    hard_accuracy,
    latency_percentiles,
    match_choice,
    normalize_answer,
    recall_at_k,
    token_f1,
)
from gemrag.types import Hit


def test_accuracy() -> None:
    assert accuracy([True, False, True, True]) == 0.75
    assert accuracy([False]) == 0.0
    assert math.isnan(accuracy([]))


def test_hard_accuracy() -> None:
    correct = [True, False, True, False, True]
    difficult = [True, True, None, False, True]
    assert hard_accuracy(correct, difficult) == pytest.approx(2 / 3)  # items 0, 1, 4
    assert math.isnan(hard_accuracy([True, False], [None, False]))
    with pytest.raises(ValueError):
        hard_accuracy([True], [True, False])


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("  The  Quick, brown fox's an apple!  ", "quick brown foxs apple"),
        ("Theater and thematic", "theater and thematic"),  # articles only as whole words
        ("A", ""),
        ("U.S.A.", "usa"),
        ("«hello»", "«hello»"),  # only ASCII punctuation, as in SQuAD
        ("line\nbreak\ttab", "line break tab"),
    ],
)
def test_normalize_answer(raw: str, expected: str) -> None:
    assert normalize_answer(raw) == expected


def test_exact_match() -> None:
    assert exact_match("The Cat!", "cat") == 1.0
    assert exact_match("cats", "cat") == 0.0
    assert exact_match("Paris", ["London", "the paris"]) == 1.0
    assert exact_match("", []) == 1.0  # no gold: only the empty answer matches (SQuAD v2.0)
    assert exact_match("x", []) == 0.0


def test_token_f1_hand_computed() -> None:
    # pred -> [cat, sat, on, mat] (4), gold -> [cat, sat] (2): overlap 2, P=1/2, R=1, F1=2/3
    assert token_f1("the cat sat on the mat", "a cat sat") == pytest.approx(2 / 3)
    # multiplicity: [x, x, y] vs [x, y, y] overlap x:1 + y:1 = 2, P=R=2/3
    assert token_f1("x x y", "x y y") == pytest.approx(2 / 3)
    # max over golds: "paris france" gives P=1, R=1/2, F1=2/3
    assert token_f1("Paris", ["London", "paris france"]) == pytest.approx(2 / 3)
    assert token_f1("alpha beta", "gamma") == 0.0
    assert token_f1("Alpha, beta.", "alpha beta") == 1.0
    # P = 3/5, R = 3/4 -> F1 = 2 * 0.6 * 0.75 / 1.35 = 0.6667
    assert token_f1("one two three four five", "one two three six") == pytest.approx(2 * 0.6 * 0.75 / 1.35)


def test_token_f1_empty_cases() -> None:
    assert token_f1("", "") == 1.0
    assert token_f1("the", "") == 1.0  # normalizes to empty
    assert token_f1("x", "") == 0.0
    assert token_f1("", "x") == 0.0
    assert token_f1("", []) == 1.0
    assert token_f1("x", []) == 0.0


def test_recall_at_k() -> None:
    retrieved = ["a", "b", "c", "d"]
    assert recall_at_k(retrieved, ["b", "d"], 1) == 0.0
    assert recall_at_k(retrieved, ["b", "d"], 2) == 0.5
    assert recall_at_k(retrieved, ["b", "d"], 4) == 1.0
    assert recall_at_k(retrieved, ["b", "d"], 10) == 1.0
    assert recall_at_k(retrieved, ["b", "b"], 2) == 1.0  # gold is a set
    assert recall_at_k(["a", "a", "b"], ["b"], 2) == 0.0  # duplicates take slots
    assert recall_at_k([], ["b"], 5) == 0.0
    with pytest.raises(ValueError, match="without gold"):
        recall_at_k(retrieved, [], 2)
    with pytest.raises(ValueError, match="k must be"):
        recall_at_k(retrieved, ["a"], 0)


def _ranking(*nodes: tuple[str, str]) -> list[Hit]:
    """Hits ``(kind, text)`` in rank order; a chunk's text names its document."""
    return [Hit(i, kind, 1.0 - i / 10, text) for i, (kind, text) in enumerate(nodes)]


def _old_recall(ranking: list[Hit], gold: list[str], k: int) -> float:
    """The rule before issue 38: the first k *distinct* documents of the whole (deeper) ranking's chunks."""
    return recall_at_k(list(dict.fromkeys(h.text for h in ranking if h.kind == "chunk")), gold, k)


def test_recall_reads_the_documents_of_the_first_k_passages() -> None:
    # document A spans three chunks: the old rule skipped A's second and third chunks and reached B and C
    ranking = _ranking(("chunk", "A"), ("chunk", "A"), ("chunk", "A"), ("chunk", "B"), ("chunk", "C"))
    docs = [[h.text] for h in first_passages(ranking, 2)]
    assert docs == [["A"], ["A"]]
    assert document_recall_at_k(docs, ["A", "B"], 2) == 0.5
    assert _old_recall(ranking, ["A", "B"], 2) == 1.0  # the rules differ here
    top5 = [[h.text] for h in first_passages(ranking, 5)]
    assert document_recall_at_k(top5, ["A", "B"], 5) == 1.0
    assert document_recall_at_k(top5, ["A", "B", "C", "D"], 5) == 0.75
    assert _old_recall(ranking, ["C"], 2) == 0.0 and document_recall_at_k(top5, ["C"], 2) == 0.0


def test_derived_nodes_take_no_rank_and_a_committee_is_read_as_one_ranking() -> None:
    # a summary at rank 1 and HLGraphRAG-style relations at rank 3 are skipped: the 2 passages are B then C
    ranking = _ranking(("summary", "about A and B"), ("chunk", "B"), ("relations", "A"), ("chunk", "C"))
    assert [h.text for h in first_passages(ranking, 2)] == ["B", "C"]
    assert document_recall_at_k([[h.text] for h in first_passages(ranking, 2)], ["A"], 2) == 0.0
    # a 5-chunk committee in the order the strategy returns it: R@2 reads its first two members, as for dense
    # (the old rule read a separately elected 2-chunk committee, here {D, E}, which the ranking does not begin with)
    committee = _ranking(*(("chunk", d) for d in "ABCDE"))
    assert document_recall_at_k([[h.text] for h in first_passages(committee, 2)], ["D"], 2) == 0.0
    assert answer_recall([h.text for h in first_passages(committee, 2)], ["E"]) == 0.0
    assert answer_recall([h.text for h in first_passages(committee, 5)], ["E"]) == 1.0


def test_document_recall_counts_every_document_of_a_passage_and_checks_its_input() -> None:
    # identical texts stored once: one passage stands for two dataset documents
    assert document_recall_at_k([["A", "A2"], ["B"]], ["A2", "B"], 1) == 0.5
    assert document_recall_at_k([[], ["B"]], ["B"], 2) == 1.0  # a passage of no known document
    assert document_recall_at_k([], ["B"], 2) == 0.0  # nothing retrieved
    with pytest.raises(ValueError, match="without gold"):
        document_recall_at_k([["A"]], [], 2)
    with pytest.raises(ValueError, match="k must be"):
        document_recall_at_k([["A"]], ["A"], 0)
    with pytest.raises(ValueError, match="k must be"):
        first_passages([], 0)


def test_latency_percentiles() -> None:
    stats = latency_percentiles([4.0, 1.0, 3.0, 2.0])
    # sorted [1, 2, 3, 4]: p50 = 2.5; p95 at position 0.95 * 3 = 2.85 -> 3 + 0.85 * 1 = 3.85
    assert stats == pytest.approx({"p50": 2.5, "p95": 3.85, "mean": 2.5})
    assert latency_percentiles([0.2]) == pytest.approx({"p50": 0.2, "p95": 0.2, "mean": 0.2})
    assert all(math.isnan(v) for v in latency_percentiles([]).values())
    with pytest.raises(ValueError):
        latency_percentiles([1.0, -0.1])
    with pytest.raises(ValueError):
        latency_percentiles([float("nan")])


CHOICES = ["red apple", "green pear", "yellow banana", "purple grape"]


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("B", 1),
        ("b", 1),
        ("(B)", 1),
        ("B)", 1),
        ("B.", 1),
        (" (c) ", 2),
        ("2", 1),
        ("(4)", 3),
        ("(B) green pear", 1),
        ("B) Green pear.", 1),
        ("C. some explanation that is not an option", 2),
        ("D: purple grape", 3),
        ("(B) red apple", None),  # label and text disagree
        ("The answer is (C).", 2),
        ("Answer: D", 3),
        ("I pick option 2 because...", 1),
        ("answer is a dog", None),  # lower-case 'a' in prose is not a label
        ("Red Apple!", 0),
        ("I think (C) is right", 2),
        ("It is the yellow banana, obviously.", 2),
        ("red apple or green pear", None),
        ("(A) or (B)", None),
        ("E", None),
        ("5", None),
        ("", None),
        ("   ", None),
        ("no idea", None),
    ],
)
def test_match_choice(answer: str, expected: int | None) -> None:
    assert match_choice(answer, CHOICES) == expected


def test_match_choice_duplicate_option_texts_are_ambiguous() -> None:
    assert match_choice("same", ["same", "same", "other"]) is None
    assert match_choice("A", []) is None
