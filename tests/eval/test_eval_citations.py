"""Citation recall and precision of cited answers (:mod:`gemrag.eval.citations`): which cited passages are gold (a
gold document among the ones a node was made from, or a LoCoMo gold turn it covers), and the record's fields."""

from __future__ import annotations

from typing import Any

from gemrag.answers.answer import Answer
from gemrag.eval.citations import citation_record, citation_scores, gold_judge, plain_answer, span_judge
from gemrag.types import DocumentRef, Hit, Passage, Provenance


def hit(node_id: int, *store_docs: int, kind: str = "chunk") -> Hit:
    passages = tuple(Passage(100 + d, DocumentRef(d, f"d{d}", f"d{d}.txt", 1), 0, 0, 5) for d in store_docs)
    return Hit(node_id, kind, 1.0, "text", 0, {}, Provenance(passages))  # type: ignore[arg-type]


def test_scores_from_gold_flags() -> None:
    assert citation_scores([True, False, False, True]) == (1.0, 0.5)
    assert citation_scores([False]) == (0.0, 0.0)
    assert citation_scores([]) == (0.0, None)  # nothing cited: no gold passage cited, precision undefined


def test_gold_documents_through_the_provenance_of_cited_nodes() -> None:
    passages = {1: ["Alpha"], 2: ["Beta", "Beta copy"], 3: ["Gamma"]}
    no_turns: Any = lambda hits: (None, [])  # noqa: E731
    judge = gold_judge(["Beta copy", "Gamma"], ["Alpha", "Beta", "Beta copy", "Gamma"], passages, no_turns)
    assert judge is not None
    assert [judge(h) for h in (hit(1, 1), hit(2, 2), hit(3, 1, 3, kind="summary"), Hit(4, "chunk", 0, "t"))] == [
        False,
        True,
        True,  # a summary made from a gold document's chunk contains gold evidence
        False,  # no provenance: nothing to match
    ]
    assert gold_judge([], ["Alpha"], passages, no_turns) is None


def test_gold_turns_of_locomo_through_evidence() -> None:
    covered = {7: ["D1:2"]}

    def evidence(hits: Any) -> tuple[float | None, list[str]]:
        found = [t for h in hits for t in covered.get(h.node_id, [])]
        return (len(found) / 1, found)

    judge = gold_judge(["D1:2"], ["conv-1"], {}, evidence)
    assert judge is not None and judge(hit(7)) and not judge(hit(8))
    assert gold_judge(["D9:9"], ["conv-1"], {}, lambda hits: (None, [])) is None  # no such turn: not scored


def test_the_record_of_a_cited_answer() -> None:
    hits = [hit(1, 1), hit(2, 2), hit(3, 3)]
    answer = Answer("Beta [2] and Gamma [3].", None, hits, 0.1, 0.2, cited=[2, 3], dropped_citations=1)
    rec = citation_record(answer, lambda h: h.node_id == 3)
    assert rec == {"cited": [2, 3], "dropped_citations": 1, "citation_recall": 1.0, "citation_precision": 0.5}
    assert citation_record(answer, None)["citation_recall"] is None
    assert plain_answer(answer) == "Beta and Gamma."


def test_span_questions_judge_a_cited_passage_as_their_recall_does() -> None:
    """COVID-QA and ``eval qa``: the gold passage is the whole document, so a cited node is gold when its text holds a
    gold answer span (normalized, whole words), or overlaps a given evidence passage."""
    judge = span_judge(["the ACE2 receptor"], [])
    assert judge is not None
    holds = Hit(1, "chunk", 1.0, "The virus binds the ACE2 receptor, as shown.", 0)
    lacks = Hit(2, "chunk", 1.0, "The ACE2 gene is expressed in the lung.", 0)
    assert judge(holds) and not judge(lacks)
    assert span_judge(["", "  "], []) is None  # no answer to find: not scored
    by_evidence = span_judge(["ACE2"], ["It binds ACE2 strongly in cell culture."])
    assert by_evidence is not None and not by_evidence(holds)  # the evidence passages decide when given
    assert by_evidence(Hit(3, "chunk", 1.0, "Results: it binds ACE2 strongly in cell culture.", 0))
