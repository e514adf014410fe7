"""How well each passage an answer cites bears on the question, the same for every strategy.

A strategy's own scores cannot say it: ``dense`` scores a cosine, ``bm25`` a BM25 sum, ``gem`` a walk, ``remem`` a
PageRank mass, and none of them is comparable with another. The **evidence score** of a passage is: the highest
cosine between the question and any sentence of the passage, with the memory's embedder
(:func:`gemrag.answers.shaping.evidence_score` takes the same over the whole context for abstention,
``[answer] abstain_below``). A cited passage whose evidence score is below :data:`WEAK_EVIDENCE` is *weak*: the answer
rests on a passage that hardly speaks of what was asked (the web page marks it, with the threshold).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gemrag.answers.answer import Answer
from gemrag.ingest.chunker import split_sentences
from gemrag.models.base import Embedder

__all__ = ["WEAK_EVIDENCE", "best_sentence_cosines", "cited_evidence", "passage_evidence"]

WEAK_EVIDENCE = 0.3
"""A cited passage whose evidence score (best question-sentence cosine, in [-1, 1]) is below this is weak. With the
default MiniLM embedder a sentence that answers a question scores about 0.4-0.8 against it, an unrelated one
about 0.0-0.2."""


def passage_evidence(question: str, texts: Sequence[str], embedder: Embedder) -> list[float]:
    """Each text's evidence score: the highest cosine between ``question`` and one of its sentences
    (:func:`gemrag.ingest.chunker.split_sentences`), in one embedder call over the question and every sentence.

    Args:
        question: the question.
        texts: the passages' texts.
        embedder: the memory's embedder (rows L2-normalized, so a dot product is the cosine).

    Returns:
        One score per text, in [-1, 1], in the order of ``texts``; -1.0 for a text without a sentence. No embedder
        call when no text has a sentence.
    """
    return [float(s) for s in best_sentence_cosines([question], texts, embedder)[0]]


def best_sentence_cosines(queries: Sequence[str], texts: Sequence[str], embedder: Embedder) -> np.ndarray:
    """For each query and each text, the highest cosine between the query and one of the text's sentences
    (:func:`gemrag.ingest.chunker.split_sentences`), in one embedder call over the queries and every sentence.

    Args:
        queries: the texts to match (a question; answer sentences for a post-hoc citation,
            :mod:`gemrag.answers.verification`).
        texts: the passages' texts.
        embedder: the memory's embedder (rows L2-normalized, so a dot product is the cosine).

    Returns:
        A float32 array of shape ``(len(queries), len(texts))``, values in [-1, 1]; -1.0 in the column of a text
        without a sentence. No embedder call when no text has a sentence or there is no query.
    """
    spans = [split_sentences(t) for t in texts]
    flat = [t[s:e] for t, sp in zip(texts, spans, strict=True) for s, e in sp]
    out = np.full((len(queries), len(texts)), -1.0, dtype=np.float32)
    if not flat or not queries:
        return out
    vecs = np.asarray(embedder.embed([*queries, *flat]), dtype=np.float32)
    sims = vecs[len(queries) :] @ vecs[: len(queries)].T  # (sentences, queries)
    at = 0
    for j, sp in enumerate(spans):
        if sp:
            out[:, j] = sims[at : at + len(sp)].max(axis=0)
        at += len(sp)
    return out


def cited_evidence(question: str, answer: Answer, embedder: Embedder) -> dict[int, float]:
    """The evidence score of each passage ``answer`` cites (:func:`passage_evidence`, rounded to 4 places).

    Args:
        question: the question the answer answers.
        answer: the answer; its ``cited`` markers ``n`` name ``answer.hits[n - 1]``.
        embedder: the memory's embedder.

    Returns:
        ``{n: score}`` for each cited marker; empty (no embedder call) when the answer cites nothing.
    """
    cited = [n for n in answer.cited if 1 <= n <= len(answer.hits)]
    if not cited:
        return {}
    scores = passage_evidence(question, [answer.hits[n - 1].text for n in cited], embedder)
    return {n: round(s, 4) for n, s in zip(cited, scores, strict=True)}
