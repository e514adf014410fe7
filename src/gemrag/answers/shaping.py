"""Context shaping (``[answer] shape``): the retrieved passages arranged for a small reader before it answers, with no
LLM call.

Three steps, each its own setting, applied in this order:

* **duplicates merged** (``dedupe``): a passage whose words are all in an earlier (better-ranked) passage is dropped
  (overlapping windows, a summary restating a chunk, the same turn retrieved twice);
* **sentence trimming** (``trim``): each passage keeps the sentences that match the question (cosine of the
  embedder's vectors, the memory's own embedder), at least its best ``keep_min`` sentences and every sentence scoring
  within ``trim_margin`` of the context's best; the cut sentences are shown as ``…`` so the reader sees a gap. This
  is the extractive compression of RECOMP (Xu et al., 2024, "RECOMP: Improving Retrieval-Augmented LMs with
  Compression and Selective Augmentation", section 2.2: the sentences most similar to the query are kept), with
  the memory's embedder in place of a trained one;
* **order** (``order``): ``"rank"`` keeps the retrieval order (best first); ``"edges"`` puts the best passages at the
  two ends of the context and the weakest in the middle, where a small model reads worst (Liu et al., 2024, "Lost in
  the Middle: How Language Models Use Long Contexts", section 2.3: accuracy is highest when the relevant passage is
  at the beginning or end of the input).

The hits themselves are not changed (their text, spans and provenance stay those of the stored node): shaping
returns the order in which they are shown and the text each shows, and the answer's ``hits`` are the shown hits in
the shown order, so a citation ``[n]`` names ``hits[n - 1]`` as always.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from gemrag.answers.evidence import passage_evidence
from gemrag.ingest.chunker import split_sentences
from gemrag.models.base import Embedder
from gemrag.types import Hit

GAP = "…"
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Shaping:
    """How the context is shaped (:func:`shape_context`); all off is the retrieved context as it is.

    Attributes:
        dedupe: drop a passage whose words are all in a better-ranked one.
        trim: keep the sentences of each passage that match the question.
        keep_min: sentences each trimmed passage keeps at least (its best by cosine).
        trim_margin: a sentence within this cosine of the context's best sentence is kept (in [0, 2]).
        order: ``"rank"`` (retrieval order) or ``"edges"`` (best passages at both ends).
    """

    dedupe: bool = True
    trim: bool = True
    keep_min: int = 2
    trim_margin: float = 0.25
    order: str = "edges"


@dataclass
class Shaped:
    """A shaped context.

    Attributes:
        hits: the hits shown, in the order shown (passage ``[n]`` is ``hits[n - 1]``).
        texts: the text shown for each (trimmed sentences replaced by :data:`GAP`), same length as ``hits``.
        dropped: node ids of the hits dropped as duplicates.
        words_before, words_after: words of the context before and after shaping (a word is a ``\\w+`` run).
    """

    hits: list[Hit]
    texts: list[str]
    dropped: list[int] = field(default_factory=list)
    words_before: int = 0
    words_after: int = 0


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def edges_order(n: int) -> list[int]:
    """Positions ``0..n-1`` (best first) arranged best-at-the-ends: ranks 1, 3, 5, ... from the front and 2, 4, ...
    from the back (``edges_order(5) == [0, 2, 4, 3, 1]``)."""
    front = list(range(0, n, 2))
    back = list(range(1, n, 2))
    return front + back[::-1]


def trim_passages(
    question: str, texts: Sequence[str], embedder: Embedder, keep_min: int = 2, margin: float = 0.25
) -> list[str]:
    """Each passage cut to the sentences that match ``question``: per passage its ``keep_min`` best sentences by
    cosine and every sentence within ``margin`` of the best cosine over all passages, in their order, runs of cut
    sentences shown as :data:`GAP`. One embedder call over the question and every sentence.

    Args:
        question: the question (str).
        texts: the passages' texts.
        embedder: returns L2-normalized float32 rows (``(n, d)``).
        keep_min: sentences kept per passage at least (>= 1).
        margin: cosine margin below the context's best sentence (>= 0).

    Returns:
        The trimmed texts, one per passage (a passage of at most ``keep_min`` sentences is unchanged).

    Raises:
        ValueError: ``keep_min`` < 1 or ``margin`` < 0.
    """
    if keep_min < 1 or margin < 0:
        raise ValueError("keep_min must be >= 1 and margin >= 0")
    spans = [split_sentences(t) for t in texts]
    flat = [t[s:e] for t, sp in zip(texts, spans, strict=True) for s, e in sp]
    if not flat:
        return list(texts)
    vecs = np.asarray(embedder.embed([question, *flat]), dtype=np.float32)
    sims = vecs[1:] @ vecs[0]
    best = float(sims.max())
    out: list[str] = []
    at = 0
    for text, sp in zip(texts, spans, strict=True):
        scores = sims[at : at + len(sp)]
        at += len(sp)
        if len(sp) <= keep_min:
            out.append(text)
            continue
        keep = set(np.argsort(-scores, kind="stable")[:keep_min].tolist())
        keep |= {i for i, s in enumerate(scores) if s >= best - margin}
        parts: list[str] = []
        for i, (s, e) in enumerate(sp):
            if i in keep:
                parts.append(text[s:e])
            elif not parts or parts[-1] != GAP:
                parts.append(GAP)
        out.append(" ".join(parts))
    return out


def evidence_score(question: str, texts: Sequence[str], embedder: Embedder) -> float:
    """How well the context can answer ``question``, strategy-neutral: the highest cosine between the question and
    any sentence of the context, with the memory's embedder (one call over the question and every sentence); the
    score behind abstention (``[answer] abstain_below``). Retrieval scores are not comparable across strategies (a
    cosine, a BM25 score, a fused rank), a sentence cosine is.

    Returns:
        The best sentence cosine, in [-1, 1]; -1.0 for an empty context.
    """
    return max(passage_evidence(question, texts, embedder), default=-1.0)


def shape_context(question: str, hits: Sequence[Hit], embedder: Embedder | None, shaping: Shaping) -> Shaped:
    """The context shaped for reading (module docstring): duplicates dropped, sentences trimmed, passages ordered.

    Args:
        question: the question.
        hits: the retrieved hits, best first.
        embedder: the memory's embedder (needed only when ``shaping.trim``).
        shaping: which steps to apply.

    Returns:
        The :class:`Shaped` context (its ``hits`` a reordered subset of ``hits``).

    Raises:
        ValueError: ``shaping.trim`` without an embedder, or an unknown ``shaping.order``.
    """
    if shaping.order not in ("rank", "edges"):
        raise ValueError(f"unknown context order {shaping.order!r} (rank or edges)")
    kept: list[Hit] = []
    dropped: list[int] = []
    seen: list[set[str]] = []
    for hit in hits:
        words = set(_words(hit.text))
        if shaping.dedupe and words and any(words <= s for s in seen):
            dropped.append(hit.node_id)
            continue
        kept.append(hit)
        seen.append(words)
    texts = [h.text for h in kept]
    if shaping.trim and kept:
        if embedder is None:
            raise ValueError("trimming the context needs the memory's embedder")
        texts = trim_passages(question, texts, embedder, shaping.keep_min, shaping.trim_margin)
    order = edges_order(len(kept)) if shaping.order == "edges" else list(range(len(kept)))
    return Shaped(
        [kept[i] for i in order],
        [texts[i] for i in order],
        dropped,
        sum(len(_words(h.text)) for h in hits),
        sum(len(_words(t)) for t in texts),
    )
