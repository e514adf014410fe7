"""Answer and retrieval metrics for the evaluation layer.

* :func:`accuracy`, :func:`hard_accuracy` — multiple-choice accuracy (QuALITY; HARD subset as in
  Pang et al. 2022).
* :func:`normalize_answer`, :func:`exact_match`, :func:`token_f1` — SQuAD answer EM / token F1
  (Rajpurkar et al. 2016, official ``evaluate-v1.1.py``; empty-answer handling of ``evaluate-v2.0.py``).
* :func:`recall_at_k` — passage Recall@k as defined by HippoRAG (Gutierrez et al. 2024).
* :func:`first_passages`, :func:`document_recall_at_k` — the one Recall@k of ``gemrag eval``, the same for every
  strategy: the gold documents among the documents of the strategy's first k retrieved passages (chunks).
* :func:`latency_percentiles` — p50 / p95 / mean of per-question latencies.
* :func:`match_choice` — map a model's free-text answer to a multiple-choice option.
* :func:`says_not_available` — whether an answer declines (LoCoMo category 5, adversarial questions).

Conventions: scores are floats in [0, 1]. Aggregates over an empty input return ``nan`` (there is nothing
to average); per-question definitions that are meaningless for an input raise :class:`ValueError`.
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np

from gemrag.types import Hit

#: The k of every evaluation's Recall@k (:func:`recall_at_ks`).
RECALL_KS = (2, 5)
#: ``recall_rule`` of the records scored by the rule of :func:`gemrag.eval.metrics.first_passages` (records without it
#: were scored under the earlier rule: the first k distinct documents of the ranking, a k-chunk election for
#: committees).
RECALL_RULE = "first k passages"
#: Kinds whose Recall@k is of the gold answer span in the retrieved chunks (:func:`gemrag.eval.metrics.answer_recall`);
#: a question's ``metadata["evidence_passages"]`` (``eval qa``) come first (:func:`gemrag.eval.metrics.passage_recall`).
ANSWER_RECALL_KINDS = frozenset({"covid_qa", "qa"})

__all__ = [
    "ANSWER_RECALL_KINDS",
    "RECALL_KS",
    "RECALL_RULE",
    "PASSAGE_KIND",
    "answer_recall",
    "accuracy",
    "document_recall_at_k",
    "first_passages",
    "recall_at_ks",
    "exact_match",
    "hard_accuracy",
    "latency_percentiles",
    "match_choice",
    "normalize_answer",
    "recall_at_k",
    "says_not_available",
    "token_f1",
]

_PUNCTUATION = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def accuracy(correct: Sequence[bool]) -> float:
    """Share of ``True`` in ``correct`` (shape ``(n,)``); ``nan`` when ``n == 0``."""
    if len(correct) == 0:
        return math.nan
    return sum(1 for c in correct if c) / len(correct)


def hard_accuracy(correct: Sequence[bool], difficult: Sequence[bool | None]) -> float:
    """Accuracy over the questions with ``difficult is True`` (QuALITY HARD subset).

    Args:
        correct: per-question correctness, shape ``(n,)``.
        difficult: per-question HARD flag, shape ``(n,)``; ``None`` (unknown) counts as not HARD.

    Returns:
        The accuracy on the HARD questions, ``nan`` if there are none (e.g. the L-Eval QuALITY file).

    Raises:
        ValueError: the two sequences differ in length.
    """
    if len(correct) != len(difficult):
        raise ValueError(f"correct has {len(correct)} items but difficult has {len(difficult)}")
    return accuracy([c for c, d in zip(correct, difficult, strict=True) if d is True])


def normalize_answer(s: str) -> str:
    """Normalize an answer exactly as the official SQuAD v1.1 evaluation script.

    Lower-case, remove ASCII punctuation (``string.punctuation``), remove the articles "a", "an",
    "the" as whole words, and collapse whitespace to single spaces (stripped).
    """
    s = s.lower()
    s = "".join(ch for ch in s if ch not in _PUNCTUATION)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def _golds(golds: str | Sequence[str]) -> list[str]:
    if isinstance(golds, str):
        return [golds]
    # SQuAD v2.0: a question without gold answers is scored against the empty answer.
    return list(golds) or [""]


def exact_match(pred: str, golds: str | Sequence[str]) -> float:
    """SQuAD exact match: 1.0 if ``normalize_answer(pred)`` equals that of any gold, else 0.0.

    ``golds`` may be one string or a sequence; an empty sequence means "no answer" and matches only an
    empty (after normalization) prediction, as SQuAD v2.0 does.
    """
    p = normalize_answer(pred)
    return max(float(p == normalize_answer(g)) for g in _golds(golds))


def _f1(pred_tokens: list[str], gold_tokens: list[str]) -> float:
    if not pred_tokens or not gold_tokens:
        # SQuAD v2.0 rule: if either is empty, F1 is 1 when both are empty, else 0.
        return float(pred_tokens == gold_tokens)
    common = Counter(pred_tokens) & Counter(gold_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(pred_tokens)
    recall = same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def token_f1(pred: str, golds: str | Sequence[str]) -> float:
    """SQuAD token-level F1 of ``pred`` against the best-matching gold (max over ``golds``).

    Tokens are ``normalize_answer(text).split()``; overlap counts token multiplicity (bag of words).
    Empty cases follow SQuAD v2.0: empty prediction and empty gold -> 1.0; exactly one empty -> 0.0;
    an empty ``golds`` sequence stands for the empty answer.
    """
    p = normalize_answer(pred).split()
    return max(_f1(p, normalize_answer(g).split()) for g in _golds(golds))


def recall_at_k(retrieved_ids: Sequence[str], gold_ids: Sequence[str], k: int) -> float:
    """Passage Recall@k, HippoRAG's definition: ``|set(gold) ∩ set(retrieved[:k])| / |set(gold)|``.

    ``retrieved_ids`` is a ranked list (best first); duplicates are not removed, so a caller that
    retrieves chunks should map them to passage ids and deduplicate (keeping the first occurrence)
    before calling. Gold ids are treated as a set.

    Raises:
        ValueError: ``k < 1``, or ``gold_ids`` is empty (Recall is undefined; exclude such questions
            rather than let a ``nan`` or a fake 0/1 leak into the average).
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    gold = set(gold_ids)
    if not gold:
        raise ValueError("recall_at_k is undefined for a question without gold passages")
    return len(gold.intersection(retrieved_ids[:k])) / len(gold)


#: The node kind that is a retrieved passage for Recall@k: a chunk of the input. Every other kind is derived
#: (GEM's and RAPTOR's summaries, HLGraphRAG's relations, REMem's gists and turns) and takes no rank.
PASSAGE_KIND = "chunk"


def first_passages(ranking: Sequence[Hit], k: int) -> list[Hit]:
    """The first ``k`` retrieved passages of a strategy's ranking: its chunk hits in rank order, derived nodes
    (:data:`PASSAGE_KIND`) skipped, so a summary at rank 1 neither counts as a passage nor uses one of the k ranks.

    This is the rule of every strategy's Recall@k in ``gemrag eval`` (:func:`document_recall_at_k`,
    :func:`answer_recall`): one ranking per strategy and question, read the same way whether the strategy ranks
    nodes (dense, BM25, GEM) or elects a committee (UnWeaver's PAV/CC: the committee of the ranking's size, in the
    order the strategy returns it).

    Raises:
        ValueError: ``k < 1``.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    return [h for h in ranking if h.kind == PASSAGE_KIND][:k]


def document_recall_at_k(passage_documents: Sequence[Sequence[str]], gold_ids: Sequence[str], k: int) -> float:
    """Recall@k over documents: ``|gold ∩ docs(p_1) ∪ ... ∪ docs(p_k)| / |gold|``.

    HippoRAG's passage Recall@k (:func:`recall_at_k`) when a passage is a chunk of a longer document: a document
    is retrieved at k when one of the first k passages comes from it. Two chunks of one document use two of the k
    ranks (the earlier rule counted the first k *distinct* documents of a deeper list instead).

    Args:
        passage_documents: per retrieved passage, best first (e.g. :func:`first_passages`), the ids of the
            documents it comes from (several when identical texts share one stored document; empty when unknown).
        gold_ids: the question's gold document ids (a set).
        k: the rank cut-off (>= 1); fewer passages than k are read as they are.

    Raises:
        ValueError: ``k < 1``, or ``gold_ids`` is empty (as :func:`recall_at_k`).
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    found = [d for docs in passage_documents[:k] for d in docs]
    return recall_at_k(found, gold_ids, max(len(found), 1))


def answer_recall(chunk_texts: Sequence[str], answers: Sequence[str]) -> float:
    """1.0 if a gold answer span occurs in one of the retrieved chunks, else 0.0: the "top-k retrieval accuracy" of
    Karpukhin et al. (DPR, EMNLP 2020, section 5.1) for extractive QA whose gold passage is the whole document
    (COVID-QA: one paper per question, so document Recall@k would be 1 for every strategy). Texts and answers are
    compared after :func:`normalize_answer`; an answer that normalizes to nothing is ignored.
    """
    spans = [a for a in (normalize_answer(x) for x in answers) if a]
    texts = [f" {normalize_answer(t)} " for t in chunk_texts]
    return float(any(f" {a} " in t for a in spans for t in texts))


def passage_recall(chunk_texts: Sequence[str], passages: Sequence[str]) -> float:
    """1.0 if a retrieved chunk and a gold evidence passage overlap, one holding the other, else 0.0: the passage form
    of :func:`answer_recall` for a user's evidence passages (``gemrag eval qa``), which may be shorter than a chunk
    (a sentence) or longer (a paragraph split over several chunks). Compared after :func:`normalize_answer`; a
    chunk or passage that normalizes to nothing is ignored.
    """
    golds = [f" {p} " for p in (normalize_answer(x) for x in passages) if p]
    texts = [f" {t} " for t in (normalize_answer(x) for x in chunk_texts) if t]
    return float(any(g in t or t in g for g in golds for t in texts))


def recall_at_ks(
    ranking: Sequence[Hit],
    ks: Sequence[int],
    documents: Callable[[Hit], Sequence[str]],
    gold: Sequence[str] = (),
    evidence: Sequence[str] = (),
    answers: Sequence[str] = (),
) -> dict[str, float]:
    """``{"recall@k": value}`` for each k: the one Recall@k rule of every strategy, read from the first k
    passages of one ranking (:func:`first_passages`).

    Args:
        ranking: the strategy's hits in rank order (max(B, 5) nodes in the evaluation).
        ks: the k values, each >= 1.
        documents: a chunk hit -> the dataset documents it comes from.
        gold: gold document ids (:func:`document_recall_at_k`); they decide when given.
        evidence: else the user's evidence passages (:func:`passage_recall`, ``eval qa``).
        answers: else the gold answer spans (:func:`answer_recall`, COVID-QA).

    Returns:
        One value in [0, 1] per k; empty when none of ``gold``, ``evidence``, ``answers`` is given.

    Raises:
        ValueError: a k below 1.
    """
    out: dict[str, float] = {}
    for k in ks if gold or evidence or answers else ():
        top = first_passages(ranking, k)
        if gold:
            out[f"recall@{k}"] = document_recall_at_k([list(documents(h)) for h in top], gold, k)
        elif evidence:
            out[f"recall@{k}"] = passage_recall([h.text for h in top], evidence)
        else:
            out[f"recall@{k}"] = answer_recall([h.text for h in top], answers)
    return out


def latency_percentiles(seconds: Sequence[float]) -> dict[str, float]:
    """Summarize latencies (seconds, shape ``(n,)``) as ``{"p50", "p95", "mean"}`` in seconds.

    Percentiles use numpy's default linear interpolation. An empty input gives ``nan`` for every key.

    Raises:
        ValueError: a value is negative or not finite.
    """
    values = np.asarray(seconds, dtype=float).reshape(-1)
    if values.size == 0:
        return {"p50": math.nan, "p95": math.nan, "mean": math.nan}
    if not np.all(np.isfinite(values)) or np.any(values < 0):
        raise ValueError("latencies must be finite and non-negative")
    p50, p95 = np.percentile(values, [50, 95])
    return {"p50": float(p50), "p95": float(p95), "mean": float(values.mean())}


_LETTERS = string.ascii_uppercase


def _letter_index(letter: str, n: int) -> int | None:
    index = _LETTERS.find(letter.upper())
    return index if 0 <= index < n else None


def _text_index(text: str, choices: Sequence[str]) -> int | None:
    """Index of the single choice whose normalized text equals ``text``'s, else ``None``."""
    norm = normalize_answer(text)
    if not norm:
        return None
    hits = {i for i, c in enumerate(choices) if normalize_answer(c) == norm}
    return hits.pop() if len(hits) == 1 else None


def match_choice(answer_text: str, choices: Sequence[str]) -> int | None:
    """Map a model's free-text answer to a 0-based choice index, or ``None`` when unclear.

    Tried in order (letters ``A``.. index the choices; numbers are 1-based):

    1. the whole answer is a label: ``"B"``, ``"(B)"``, ``"B)"``, ``"B."``, ``"2"``, ``"(2)"``;
    2. the answer starts with a label followed by text: ``"(B) text"``, ``"B) text"``, ``"B. text"``,
       ``"B: text"`` — ambiguous if the text exactly matches a *different* option or names another
       parenthesized label (``"(A) or (B)"``);
    3. an explicit statement: ``"answer is (B)"``, ``"Answer: B"``, ``"option 2"``, ``"choice C"``;
    4. the normalized answer equals exactly one normalized option text;
    5. exactly one distinct parenthesized label ``(X)`` occurs in the answer;
    6. exactly one option's normalized text occurs inside the normalized answer.

    Returns ``None`` for an empty answer, a label outside the options, or when a step finds several
    candidates (or none succeeds).
    """
    n = len(choices)
    text = answer_text.strip()
    if not text or n == 0:
        return None
    letters = _LETTERS[: min(n, 26)]
    whole = re.fullmatch(r"\(?\s*([A-Za-z]|\d+)\s*\)?[.:]?", text)
    if whole:
        label = whole.group(1)
        if label.isdigit():
            return int(label) - 1 if 1 <= int(label) <= n else None
        return _letter_index(label, n)
    lead = re.match(rf"\(?([{letters}])(?:\)|\.|:|\)\.|\):)\s+(\S.*)", text, re.DOTALL)
    if lead:
        index = _letter_index(lead.group(1), n)
        by_text = _text_index(lead.group(2), choices)
        others = {_letter_index(m, n) for m in re.findall(rf"\(([{letters}])\)", lead.group(2))}
        return index if (by_text is None or by_text == index) and others <= {index} else None
    stated = re.search(
        r"\b(?i:answer|option|choice)\s*(?i:is|would be)?\s*:?\s*"
        r"(?:\(\s*([A-Za-z]|\d+)\s*\)|([A-Z]|\d+)(?![\w']))",
        text,
    )
    if stated:
        label = stated.group(1) or stated.group(2)
        if label.isdigit():
            return int(label) - 1 if 1 <= int(label) <= n else None
        return _letter_index(label, n)
    exact = _text_index(text, choices)
    if exact is not None:
        return exact
    labels = {m.upper() for m in re.findall(rf"\(([{letters}])\)", text)}
    if len(labels) == 1:
        return _letter_index(labels.pop(), n)
    norm = f" {normalize_answer(text)} "
    contained = {i for i, c in enumerate(choices) if normalize_answer(c) and f" {normalize_answer(c)} " in norm}
    return contained.pop() if len(contained) == 1 else None


#: Phrases (after :func:`normalize_answer`, so without punctuation or apostrophes) by which an answer says the
#: information is not available. LoCoMo's own evaluation (Maharana et al. 2024, ``task_eval/evaluation.py``)
#: accepts "no information available" and "not mentioned"; the others are what small models say instead.
NOT_AVAILABLE_PHRASES = (
    "not mentioned",
    "no mention",
    "never mentioned",
    "isnt mentioned",
    "no information",
    "not available",
    "not specified",
    "not stated",
    "not provided",
    "not given",
    "not known",
    "unknown",
    "not enough information",
    "insufficient information",
    "does not say",
    "doesnt say",
    "does not mention",
    "doesnt mention",
    "does not contain",
    "doesnt contain",
    "does not provide",
    "doesnt provide",
    "does not specify",
    "doesnt specify",
    "cannot be determined",
    "cant be determined",
    "cannot determine",
    "cant determine",
    "cannot answer",
    "cant answer",
    "not possible to determine",
    "not in context",
    "not discussed",
)


def says_not_available(answer_text: str) -> bool:
    """Whether an answer says the information is not available (LoCoMo category 5, "adversarial").

    LoCoMo's adversarial questions ask about something the conversation never says (Maharana et al., ACL 2024,
    section 4.1); an answer is correct iff it declines. The answer is normalized with :func:`normalize_answer`
    and is a refusal iff it contains one of :data:`NOT_AVAILABLE_PHRASES` as whole words, e.g. "It is not
    mentioned in the conversation.", "No information available", "The context doesn't say." An empty answer
    is not a refusal. Known limits: a phrase used for another purpose ("an unknown artist painted it") counts
    as a refusal, and an unusual refusal ("I have no idea") does not.
    """
    norm = f" {normalize_answer(answer_text)} "
    return any(f" {phrase} " in norm for phrase in NOT_AVAILABLE_PHRASES)
