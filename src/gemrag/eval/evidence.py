"""Evidence recall by dialog turn (LoCoMo): did the retrieved context cover the gold evidence turns?

LoCoMo (Maharana et al., ACL 2024) gives each question the ids of its evidence turns (``"D3:5"``); REMem's
``rag_for_qa`` evaluates retrieval against such gold evidence before answering. Here a question's
``evidence_recall`` is the share of its gold turns whose line in the conversation document (the character
span ``metadata["turns"][i]["start"/"end"]`` written by :mod:`gemrag.eval.loaders.locomo`) overlaps the span
of at least one retrieved chunk of that document, at the retrieval depth given to the LLM (the budget B).

Chunk spans: the turn offsets refer to the dataset's document text, so :func:`~gemrag.ingest.spans.locate_chunks`
finds each chunk in that text again (an exact search with whitespace collapsed the way the store collapses chunk
texts, starting where the previous chunk in document order ended, mapped back to original offsets) instead of
trusting the spans the store records in the stored text. Node texts, the store and every cache key are left
untouched.

Non-chunk hits (summary nodes) count through the chunks they summarize when they name them: ``members``
(GEM's eigentheme summaries) or ``children`` (RAPTOR, followed down through lower-layer summaries) in the
hit's ``meta`` or the stored node's ``meta``. A node naming neither covers nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, Protocol

from gemrag.ingest.spans import Span, locate_chunks
from gemrag.types import Hit

__all__ = ["ChunkSpans", "evidence_recall", "gold_turn_spans", "locate_chunks", "member_chunks", "question_evidence"]

#: Keys of a summary node's meta that list the node ids it was made from.
MEMBER_KEYS = ("members", "children")


class _Node(Protocol):
    @property
    def id(self) -> int: ...
    @property
    def kind(self) -> str: ...
    @property
    def doc_id(self) -> int | None: ...
    @property
    def ord(self) -> int: ...
    @property
    def text(self) -> str: ...
    @property
    def meta(self) -> dict[str, Any]: ...


class _Store(Protocol):
    def node(self, node_id: int) -> _Node: ...
    def nodes(self, kind: str | None = None) -> Sequence[_Node]: ...


class ChunkSpans:
    """Chunk node id -> ``(store document id, start, end)``, located once per stored document (thread-safe).

    Args:
        store: the memory's store (``node``, ``nodes``).
        texts: ``{store document id: the text the turn offsets refer to}`` (the dataset document's text).
    """

    def __init__(self, store: _Store, texts: dict[int, str]) -> None:
        self.store, self.texts = store, texts
        self._spans: dict[int, tuple[int, int, int]] | None = None
        self._lock = threading.Lock()

    def span(self, node_id: int) -> tuple[int, int, int] | None:
        """``(store document id, start, end)`` of a chunk node, or None (not a located chunk)."""
        with self._lock:
            if self._spans is None:
                self._spans = self._locate()
        return self._spans.get(node_id)

    def _locate(self) -> dict[int, tuple[int, int, int]]:
        by_doc: dict[int, list[_Node]] = {}
        for n in self.store.nodes("chunk"):
            if n.doc_id in self.texts:
                by_doc.setdefault(n.doc_id, []).append(n)
        out: dict[int, tuple[int, int, int]] = {}
        for doc_id, nodes in by_doc.items():
            nodes.sort(key=lambda n: n.ord)
            for n, span in zip(nodes, locate_chunks(self.texts[doc_id], [n.text for n in nodes]), strict=True):
                if span is not None:
                    out[n.id] = (doc_id, *span)
        return out


def member_chunks(hit: Hit, store: _Store) -> list[int]:
    """The chunk node ids a hit stands for: itself for a chunk; for another kind the chunks named by
    :data:`MEMBER_KEYS` in its meta (the hit's, else the stored node's), followed recursively through derived
    nodes; ``[]`` when it names none."""
    if hit.kind == "chunk":
        return [hit.node_id]
    out: list[int] = []
    seen = {hit.node_id}
    stack = _named(hit.meta) or _named(store.node(hit.node_id).meta)
    while stack:
        node_id = stack.pop(0)
        if node_id in seen:
            continue
        seen.add(node_id)
        try:
            node = store.node(node_id)
        except KeyError:
            continue
        if node.kind == "chunk":
            out.append(node_id)
        else:
            stack.extend(_named(node.meta))
    return out


def _named(meta: dict[str, Any]) -> list[int]:
    for key in MEMBER_KEYS:
        ids = meta.get(key)
        if isinstance(ids, list) and ids:
            return [int(i) for i in ids]
    return []


def gold_turn_spans(turns: Sequence[dict[str, Any]], gold: Sequence[str]) -> dict[str, Span]:
    """``{dia_id: (start, end)}`` of the gold turn ids found in a document's ``metadata["turns"]``; a gold id
    the document does not have (a typo in the dataset) is left out."""
    by_id = {t["dia_id"]: (int(t["start"]), int(t["end"])) for t in turns}
    return {g: by_id[g] for g in gold if g in by_id}


def evidence_recall(gold: dict[str, Span], retrieved: Sequence[Span]) -> tuple[float, list[str]]:
    """Share of gold turns whose span overlaps a retrieved span (spans ``[start, end)`` in one document).

    Args:
        gold: ``{dia_id: (start, end)}``, see :func:`gold_turn_spans`.
        retrieved: the spans of the retrieved chunks in the same document.

    Returns:
        ``(recall in [0, 1], covered dia_ids in gold order)``.

    Raises:
        ValueError: ``gold`` is empty (recall is undefined; leave the question out).
    """
    if not gold:
        raise ValueError("evidence_recall is undefined without gold turns")
    covered = [g for g, (s, e) in gold.items() if any(cs < e and s < ce for cs, ce in retrieved)]
    return len(covered) / len(gold), covered


def question_evidence(
    gold: Sequence[str],
    documents: Sequence[tuple[int, Sequence[dict[str, Any]]]],
    hits: Sequence[Hit],
    spans: ChunkSpans,
    store: _Store,
) -> tuple[float | None, list[str]]:
    """Evidence recall of one question's retrieved context (:func:`evidence_recall` over its documents).

    Args:
        gold: the question's gold turn ids (``Question.gold_passages``).
        documents: ``(store document id, metadata["turns"])`` of each of the question's documents.
        hits: the retrieved context (the B nodes given to the LLM).
        spans: chunk spans of the memory; store: the memory's store (for summary members).

    Returns:
        ``(recall, covered dia_ids)``; recall is None when no gold id is a turn of the documents.
    """
    retrieved: dict[int, list[Span]] = {}
    for h in hits:
        for chunk_id in member_chunks(h, store):
            located = spans.span(chunk_id)
            if located is not None:
                retrieved.setdefault(located[0], []).append((located[1], located[2]))
    total, covered = 0, []
    for store_id, turns in documents:
        wanted = gold_turn_spans(turns, gold)
        if wanted:
            total += len(wanted)
            covered += evidence_recall(wanted, retrieved.get(store_id, []))[1]
    return (len(covered) / total if total else None), covered
