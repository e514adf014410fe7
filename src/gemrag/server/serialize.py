"""The library's results as the HTTP API's response bodies (:mod:`gemrag.server.schemas`): hits with their
provenance, answers with their citations, a namespace's build state per strategy and per document, and any value
made JSON-safe."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Generator, Iterator, Sequence
from dataclasses import asdict
from typing import Any

from gemrag.answers.answer import Answer, QuotedSpan, ScoredOption
from gemrag.answers.evidence import cited_evidence
from gemrag.answers.provenance import describe_hits
from gemrag.answers.repair import Repair
from gemrag.memory import Memory
from gemrag.server import schemas as m
from gemrag.types import Hit

__all__ = ["answer_out", "build_state_out", "hits_out", "jsonable", "with_evidence"]


def hits_out(hits: Sequence[Hit], strategy: str) -> list[m.HitOut]:
    """The hits as the API returns them: :func:`gemrag.answers.provenance.describe_hits` of hits that carry their
    provenance
    (as :meth:`Memory.retrieve <gemrag.memory.Memory.retrieve>`, ``ask`` and ``ask_stream`` give them; no store
    query, so a streamed answer is described after its memory was closed), meta made JSON-safe."""
    return [m.HitOut(**{**n.model_dump(), "meta": jsonable(n.meta)}) for n in describe_hits(None, hits, strategy)]


def answer_out(answer: Answer, strategy: str, evidence: dict[int, float] | None = None) -> m.AnswerOut:
    """The answer as the API returns it, whole or as a stream's final ``answer`` event: its context with provenance
    (:func:`hits_out`), the cited context nodes with their evidence scores (``evidence``: marker -> score, as
    :func:`gemrag.answers.evidence.cited_evidence` gives them; a marker missing from it has None), and whether it
    abstained (``answer.reading["abstained"]``; None when abstention was not checked)."""
    hits = hits_out(answer.hits, strategy)
    evidence = evidence or {}
    checked = "evidence" in answer.reading
    return m.AnswerOut(
        text=answer.text,
        choice=answer.choice,
        hits=hits,
        cited=list(answer.cited),
        dropped_citations=answer.dropped_citations,
        citations=[m.CitedHitOut(marker=n, evidence=evidence.get(n), **hits[n - 1].model_dump()) for n in answer.cited],
        retrieval_seconds=answer.retrieval_seconds,
        answer_seconds=answer.answer_seconds,
        usage=m.UsageOut(**asdict(answer.usage)),
        verification=list(answer.verification),
        dropped_sentences=list(answer.dropped_sentences),
        abstained=bool(answer.reading.get("abstained")) if checked else None,
        evidence=answer.reading["evidence"] if checked else None,
        quotes=[QuotedSpan.of(q) for q in answer.quotes],
        dates_completed=list(answer.reading.get("dates_completed", [])),
        list_cue=answer.reading.get("list_cue"),
        hypothetical_cue=answer.reading.get("hypothetical_cue"),
        repair=Repair.of(answer.reading),
        demonstrations=bool(answer.reading.get("demonstrations")),
        question_first=bool(answer.reading.get("question_first")),
        example_copied=answer.reading.get("example_copied"),
        choice_scoring=answer.reading.get("choice_scoring"),
        option_scores=ScoredOption.listed(answer.reading),
    )


def with_evidence(
    memory: Memory, question: str, stream: Iterator[str | Answer], scores: dict[int, float]
) -> Generator[str | Answer, None, None]:
    """``stream``'s pieces as they come (a streamed answer, :meth:`gemrag.memory.Memory.ask_stream`); before handing
    over its final Answer, ``scores`` is filled with the evidence score of each passage it cites
    (:func:`gemrag.answers.evidence.cited_evidence`, one call of the memory's embedder, while the memory is open), for
    :func:`answer_out`. Closing this closes ``stream`` (which stops the generation)."""
    try:
        for item in stream:
            if isinstance(item, Answer):
                scores.update(cited_evidence(question, item, memory.embedder))
            yield item
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()


def jsonable(value: Any) -> Any:
    """``value`` with what JSON cannot hold (numpy scalars and arrays, tuples, paths) turned into plain values."""
    return _finite(json.loads(json.dumps(value, default=_plain)))


def _finite(value: Any) -> Any:
    """``value`` with NaN and infinite floats (not valid JSON) replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, list):
        return [_finite(v) for v in value]
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    return value


def _plain(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=str)
    return str(value)


def build_state_out(memory: Memory) -> m.BuildStateOut:
    """The namespace's build state: each strategy's (:meth:`gemrag.memory.Memory.strategy_states`) and, per document
    and per strategy, whether that strategy's published build covers every chunk of the document.

    A document is ``stale`` for a built strategy when it is not chunked yet or one of its chunks is not among the
    chunks the build covers (``Store.covered_chunks``); every document is ``never built`` for a strategy without a
    build. Reads the chunk rows once and each built strategy's covered chunk ids once (O(chunks)).
    """
    states = memory.strategy_states()
    store = memory.store
    chunks_of: dict[int, list[int]] = defaultdict(list)
    for node in store.nodes("chunk"):
        if node.doc_id is not None:
            chunks_of[int(node.doc_id)].append(int(node.id))
    covered = {name: store.covered_chunks(name) or set() for name, st in states.items() if st.state != "never built"}
    strategies = [
        m.StrategyStateOut(
            strategy=name,
            state=st.state,
            generation=st.generation,
            new_documents=st.new_documents,
            new_chunks=st.new_chunks,
            deleted_chunks=st.deleted_chunks,
            published_at=st.published_at,
            describe=st.describe(),
        )
        for name, st in sorted(states.items())
    ]
    documents = []
    for doc in store.documents():
        ids = chunks_of.get(int(doc["id"]), [])
        per: dict[str, Any] = {}
        for name, st in sorted(states.items()):
            if st.state == "never built":
                per[name] = "never built"
            else:
                whole = bool(doc["chunked"]) and all(i in covered[name] for i in ids)
                per[name] = "built" if whole else "stale"
        documents.append(m.DocumentStateOut(**doc, chunks=len(ids), strategies=per))
    return m.BuildStateOut(strategies=strategies, documents=documents, default=memory.strategy.name)


def failures_since(memory: Memory, since: float, limit: int = 200) -> list[dict[str, Any]]:
    """The failures the memory recorded at or after ``since`` (Unix seconds; a build's items whose model answer stayed
    invalid after its retries), each in words for people: ``document`` (its title, None for a derived node or none),
    ``passage`` (1-based chunk number in it, None when unknown), ``phase`` and ``message``; at most ``limit``,
    oldest first."""
    rows = [f for f in memory.store.failures() if f["at"] >= since][:limit]
    ids = sorted({int(f["node_id"]) for f in rows if f["node_id"] is not None})
    nodes = memory.store.nodes_by_id(ids) if ids else {}
    titles = {int(d["id"]): str(d["title"]) for d in memory.store.documents()}
    out = []
    for f in rows:
        node = nodes.get(int(f["node_id"])) if f["node_id"] is not None else None
        doc_id = getattr(node, "doc_id", None)
        out.append(
            {
                "document": titles.get(int(doc_id)) if doc_id is not None else None,
                "passage": int(node.ord) + 1 if node is not None and doc_id is not None else None,
                "phase": str(f["phase"]),
                "message": str(f["message"]),
            }
        )
    return out
