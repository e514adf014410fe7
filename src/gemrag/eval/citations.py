"""Citation metrics of cited answers (``[answer] cite``, :mod:`gemrag.answers.answering`) on gold-passage datasets.

An answer cites context passages (``Answer.cited``: its ``[n]`` markers, or the numbers a multiple-choice answer
lists). A cited passage is *gold* when it contains gold evidence: for datasets whose gold passages are documents
(COVID-QA, MuSiQue, ...), when one of the documents it was made from (its provenance, :class:`gemrag.types.Passage`)
is a gold passage; for LoCoMo, whose gold evidence is dialog turns, when the chunks it stands for overlap a gold
turn (:mod:`gemrag.eval.evidence`); for the kinds whose gold passage is the whole document (COVID-QA, ``eval qa``),
the rule of their Recall@k: the cited node's text holds a gold answer span, or overlaps a given evidence passage
(:func:`span_judge`). Per question with gold evidence and a generated answer:

* ``citation_recall``: 1 when the cited passages contain a gold one, else 0 (an answer citing nothing scores 0);
* ``citation_precision``: the share of cited passages that are gold (None when nothing is cited).

The report averages both per strategy with bootstrap intervals (:data:`gemrag.eval.aggregates.METRICS`). This follows
the citation recall / precision of ALCE (Gao et al., EMNLP 2023, "Enabling Large Language Models to Generate Text
with Citations", its citation-quality evaluation), with gold-passage membership in place of ALCE's NLI entailment
judge, and per answer rather than per statement.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from gemrag.answers.answer import Answer
from gemrag.eval.datasets import Question
from gemrag.eval.metrics import answer_recall, passage_recall
from gemrag.prompting import strip_citations
from gemrag.types import Hit

__all__ = ["citation_record", "citation_scores", "gold_judge", "plain_answer", "question_judge", "span_judge"]


def citation_scores(gold: Sequence[bool]) -> tuple[float, float | None]:
    """``(citation recall, citation precision)`` of one answer from whether each cited passage is gold.

    Args:
        gold: one flag per cited passage (distinct passages), True when it contains gold evidence.

    Returns:
        Recall 1.0 if any cited passage is gold else 0.0; precision the share of gold flags in [0, 1], None when
        nothing is cited.
    """
    recall = 1.0 if any(gold) else 0.0
    precision = sum(1 for g in gold if g) / len(gold) if gold else None
    return recall, precision


def gold_judge(
    gold: Sequence[str],
    documents: Collection[str],
    passages: Mapping[int, Sequence[str]],
    evidence: Callable[[Sequence[Hit]], tuple[float | None, list[str]]],
) -> Callable[[Hit], bool] | None:
    """How to tell whether a cited context node contains one question's gold evidence.

    Args:
        gold: the question's gold passage ids (``Question.gold_passages``).
        documents: the dataset's document ids (gold ids among them are gold documents; others are LoCoMo turns).
        passages: ``{store document id: the dataset document ids stored as it}``.
        evidence: the question's evidence recall of some hits (``(recall, covered turn ids)``, recall None when no
            gold id is a turn of the question's documents; :func:`gemrag.eval.evidence.question_evidence`).

    Returns:
        A predicate on hits (with provenance), or None when the question has no gold evidence to cite.
    """
    if not gold:
        return None
    if set(gold) <= set(documents):  # gold documents: a cited node made from one of them
        wanted = set(gold)

        def in_gold_document(hit: Hit) -> bool:
            found = hit.provenance.passages if hit.provenance is not None else ()
            return any(d in wanted for p in found for d in passages.get(p.document.id, []))

        return in_gold_document
    if evidence([])[0] is None:  # no gold id is a turn of the question's documents
        return None
    return lambda hit: bool(evidence([hit])[1])  # gold turns (LoCoMo): a cited node covering one


def span_judge(answers: Sequence[str], evidence_passages: Sequence[str]) -> Callable[[Hit], bool] | None:
    """Whether a cited node contains gold evidence where the gold passage is the whole document (COVID-QA, ``eval qa``):
    by the same rule as those kinds' Recall@k, so that citation recall reads like answer recall.

    Args:
        answers: the question's gold answers (spans of its document).
        evidence_passages: the user's evidence passages (``eval qa``); when given they decide instead of the answers.

    Returns:
        A predicate on hits: the hit's text overlaps an evidence passage
        (:func:`gemrag.eval.metrics.passage_recall`), or else holds a gold answer span after normalization
        (:func:`gemrag.eval.metrics.answer_recall`); None when neither answers nor passages are given.
    """
    if evidence_passages:
        return lambda hit: passage_recall([hit.text], evidence_passages) > 0
    if not any(a.strip() for a in answers):
        return None
    return lambda hit: answer_recall([hit.text], answers) > 0


def question_judge(
    question: Question,
    documents: Collection[str],
    passages: Mapping[int, Sequence[str]],
    evidence: Callable[[Sequence[Hit]], tuple[float | None, list[str]]],
    spans: bool,
) -> Callable[[Hit], bool] | None:
    """The gold-evidence predicate of one question: :func:`span_judge` for a span question (``spans``: a kind whose
    Recall@k reads answer spans, COVID-QA or ``eval qa``) without gold documents, else :func:`gold_judge` (arguments
    as there). None when the question has no gold evidence."""
    gold_documents = bool(question.gold_passages) and set(question.gold_passages) <= set(documents)
    if spans and not gold_documents:
        return span_judge(question.answers, question.metadata.get("evidence_passages", []))
    return gold_judge(question.gold_passages, documents, passages, evidence)


def citation_record(answer: Answer, is_gold: Callable[[Hit], bool] | None) -> dict[str, Any]:
    """The citation fields of one evaluation record.

    Args:
        answer: the generated answer (its ``cited`` numbers index its ``hits``).
        is_gold: whether a cited context node contains gold evidence; None when the question has no gold evidence
            (then only what was cited is recorded).

    Returns:
        ``cited`` (the context numbers cited), ``dropped_citations`` (markers naming no passage), and
        ``citation_recall`` / ``citation_precision`` (None without gold evidence; see :func:`citation_scores`).
    """
    rec: dict[str, Any] = {"cited": list(answer.cited), "dropped_citations": answer.dropped_citations}
    recall, precision = citation_scores([is_gold(h) for h in answer.citations]) if is_gold else (None, None)
    rec["citation_recall"], rec["citation_precision"] = recall, precision
    return rec


def plain_answer(answer: Answer) -> str:
    """The answer's text without citation markers, as the answer metrics (EM, F1, the option read) score it."""
    return strip_citations(answer.text)
