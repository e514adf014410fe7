"""Where each retrieved node comes from, as one description every surface uses.

:func:`with_provenance` gives each :class:`~gemrag.types.Hit` its :class:`~gemrag.types.Provenance`: the chunks it
was made from, each with its document (id, title, source, version), its ordinal among the document's chunks and
its character span ``[start, end)`` in that version's text. A chunk stands for itself; a node a strategy derived
(a GEM-RAG eigentheme summary, a RAPTOR summary, a REMem gist, fact or turn, an UnWeaver class) stands for the
chunks its build recorded as its sources (the store's ``node_sources``); a hit whose text was made from other
nodes names them in ``meta[SOURCE_NODES]`` (HLGraphRAG's relations: the facts rendered) and stands for their
sources; a hit kept for several with the same text (:func:`gemrag.memory.retrieval.distinct_texts` drops the others and
names their nodes in ``meta[SAME_TEXT]``) stands for the sources of all of them. :meth:`gemrag.memory.Memory.retrieve`
calls it on every retrieval (a few small store queries, no model call).

The surfaces that hand results to other programs describe a hit as a :class:`RetrievedNode` (:func:`describe_hits`):
``gemrag ask --json``, the HTTP server, the MCP server (:mod:`gemrag.mcp_server`) and the LangChain and LlamaIndex
retrievers (:mod:`gemrag.adapters`); an answer's cited passages as :class:`CitedNode` (:func:`describe_answer`).
People read a hit's sources as one line (:func:`source_label`, the CLI's context table and ``gemrag demo``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import PurePath
from typing import Any, Protocol

from pydantic import BaseModel, Field

from gemrag.answers.answer import Answer, QuotedSpan, ScoredOption, SentenceCheck
from gemrag.answers.repair import Repair
from gemrag.store.parts import NodeRows
from gemrag.types import SAME_TEXT, DocumentRef, Hit, Passage, Provenance, provenance_nodes


class RetrievedNode(BaseModel):
    """One retrieved node with its provenance, JSON-serialisable.

    Attributes:
        node_id: the node's id in the memory's store (int).
        kind: ``"chunk"``, ``"summary"``, ``"verbatim"``, ``"gist"`` or ``"relations"`` (see
            :class:`~gemrag.types.Hit`).
        score: the strategy's score (float, higher is better within one retrieval; its scale depends on the
            strategy, see :attr:`gemrag.types.Hit.score`).
        rank: 0-based position in the retrieved context (an answer's marker ``[n]`` names rank ``n - 1``).
        text: the node's text as given to the LLM.
        strategy: the strategy that retrieved it.
        documents: the documents the node was made from (id, title, source, version), by id.
        passages: the chunks the node was made from (itself for a chunk), each with its document, ordinal and
            character span ``[start, end)`` in that document version's text (:class:`~gemrag.types.Passage`);
            empty when a derived node recorded none.
        chunk_ids, document_ids, titles: the ids of ``passages``, and the ids and titles of ``documents`` (the
            fields of earlier releases, kept for their users).
        meta: the strategy's own details of the hit (e.g. the matched utility question), JSON-safe.
    """

    node_id: int
    kind: str
    score: float
    rank: int
    text: str
    strategy: str
    documents: list[DocumentRef] = Field(default_factory=list)
    passages: list[Passage] = Field(default_factory=list)
    chunk_ids: list[int] = Field(default_factory=list)
    document_ids: list[int] = Field(default_factory=list)
    titles: list[str] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)

    def metadata(self) -> dict[str, Any]:
        """Every field but ``text``, as a JSON-safe dict (the metadata a framework's document or node carries)."""
        return self.model_dump(mode="json", exclude={"text"})


class CitedNode(RetrievedNode):
    """A context node an answer cites: ``marker`` is the number ``n`` of its ``[n]`` markers (its rank + 1)."""

    marker: int


class DescribedAnswer(BaseModel):
    """An answer with the passages it rests on, JSON-serialisable (``gemrag ask --json``, MCP ``ask``).

    Attributes:
        answer: the answer's text (cited passages marked ``[n]``; for multiple choice the chosen option's text).
        choice: 0-based index of the chosen option (multiple choice), else None.
        cited: the context numbers ``n`` the answer cites, ascending.
        dropped_citations: markers naming no context passage, removed from the text.
        citations: the cited context nodes, in ``cited`` order, each with its provenance.
        context: every context node the LLM was given, in that order.
        retrieval_seconds, answer_seconds: wall time of retrieving and of answering (seconds; answering includes
            the checks of ``verification``).
        verification: each sentence of ``answer`` checked against the passages it cites (``sentence``, its span
            ``start``/``end`` in ``answer``, ``cited``, ``supported``, ``method``); empty when not checked.
        dropped_sentences: under ``[answer] verify = "drop"``, the unsupported sentences removed from ``answer``.
        quotes: under ``[answer] reading = "quote"`` the sentences quoted before answering, under ``"span"`` the
            span the answer is, each with its passage and character span there; empty otherwise.
        dates_completed: over a dated context (``[answer] dates``), the dates of ``answer`` the model wrote without
            their year or as a day the context gives only as a week or weekend, as completed from the context
            (``"5 July 2023"``, ``"the week of 29 May 2023"``; :mod:`gemrag.answers.dates.completion`); empty
            otherwise.
        list_cue: under ``[answer] lists = "auto"``, the words that made the question a list question, asked for
            every item the context names (``"What books has"``; :func:`gemrag.answers.lists.list_cue`); None
            otherwise.
        hypothetical_cue: under ``[answer] hypotheticals = "auto"``, the word that made the question a hypothetical
            question, asked for what the context points to and not declined (``"likely"``;
            :func:`gemrag.answers.hypotheticals.hypothetical_cue`); None otherwise.
        repair: under ``[answer] repair = "auto"``, an answer asked again because its form did not fit the question
            (it restated the question, or said yes or no to alternatives): the fault, the first answer and which
            was kept (:class:`gemrag.answers.repair.Repair`); None otherwise.
        demonstrations: True when worked examples were shown before the question (``[answer] demonstrations``,
            the library's or a ``demonstrations_file``'s; :mod:`gemrag.answers.demonstrations`).
        question_first: True when the question was also shown before the context (``[answer] question_first``).
        example_copied: under ``[answer] demonstrations``, the worked example's name the first answer named while
            neither the context nor the question holds it, the answer being the one asked again without the examples
            (:func:`gemrag.answers.demonstrations.copied_example`); None otherwise.
        choice_scoring: ``"likelihood"`` or ``"calibrated"`` when a multiple-choice answer was chosen by its options'
            likelihood, ``"letter_probability"`` when by its letters' probabilities (``[answer] choice_scoring``),
            else None.
        option_scores: then each option's tokens (None for a letter), log-probabilities and score, in the options'
            order (:class:`~gemrag.answers.answer.ScoredOption`); empty otherwise.
    """

    answer: str
    choice: int | None
    strategy: str
    cited: list[int]
    dropped_citations: int
    citations: list[CitedNode]
    context: list[RetrievedNode]
    retrieval_seconds: float
    answer_seconds: float
    verification: list[SentenceCheck] = Field(default_factory=list)
    dropped_sentences: list[str] = Field(default_factory=list)
    quotes: list[QuotedSpan] = Field(default_factory=list)
    dates_completed: list[str] = Field(default_factory=list)
    list_cue: str | None = None
    hypothetical_cue: str | None = None
    repair: Repair | None = None
    demonstrations: bool = False
    question_first: bool = False
    example_copied: str | None = None
    choice_scoring: str | None = None
    option_scores: list[ScoredOption] = Field(default_factory=list)


def _nodes(hit: Hit) -> list[int]:
    """The store nodes a hit stands for (see the module docstring): its own (:func:`~gemrag.types.provenance_nodes`)
    and those of the hits with the same text a retrieval dropped for it (``meta[SAME_TEXT]``)."""
    same = hit.meta.get(SAME_TEXT)
    return [*provenance_nodes(hit), *([int(i) for i in same] if isinstance(same, list) else [])]


def with_provenance(store: NodeRows, hits: Sequence[Hit]) -> list[Hit]:
    """The hits with their :class:`~gemrag.types.Provenance` (two or three store queries, no model call).

    Args:
        store: the memory's store the hits were retrieved from.
        hits: the hits, in retrieval order.

    Returns:
        The same hits in the same order, each with ``provenance`` set (a node of a generation replaced since gets
        an empty one: its rows are gone).
    """
    nodes = [_nodes(h) for h in hits]
    # a node stands for itself when it is a chunk (store.passages finds it) and for its recorded sources otherwise
    wanted = sorted({n for ns in nodes for n in ns})
    sources = store.node_sources(wanted) if wanted else {}
    members = [sorted({c for n in ns for c in (n, *sources.get(n, []))}) for ns in nodes]
    passages = store.passages(sorted({c for m in members for c in m}))
    out = []
    for hit, chunks in zip(hits, members, strict=True):
        found = sorted((passages[c] for c in chunks if c in passages), key=lambda p: (p.document.id, p.ordinal))
        out.append(replace(hit, provenance=Provenance(tuple(found))))
    return out


def _jsonable(meta: dict[str, Any]) -> dict[str, Any]:
    return dict(json.loads(json.dumps(meta, default=str)))


def describe_hits(store: NodeRows | None, hits: Sequence[Hit], strategy: str) -> list[RetrievedNode]:
    """Describe retrieved hits with their provenance (:func:`with_provenance` for hits that lack it).

    Args:
        store: the memory's store the hits were retrieved from; None when every hit carries its provenance (as
            every hit of :meth:`gemrag.memory.Memory.retrieve`, ``ask`` and ``ask_stream`` does), so no store is
            read (e.g. after the memory was closed).
        hits: the hits, in retrieval order.
        strategy: the name of the strategy that retrieved them.

    Returns:
        One :class:`RetrievedNode` per hit, same order.

    Raises:
        ValueError: ``store`` is None and a hit lacks its provenance.
    """
    if any(h.provenance is None for h in hits):
        if store is None:
            raise ValueError("a hit lacks its provenance and no store was given to find it")
        hits = with_provenance(store, hits)
    out = []
    for hit in hits:
        prov = hit.provenance or Provenance()
        documents = list(prov.documents)
        out.append(
            RetrievedNode(
                node_id=int(hit.node_id),
                kind=str(hit.kind),
                score=float(hit.score),
                rank=int(hit.rank),
                text=hit.text,
                strategy=strategy,
                documents=documents,
                passages=list(prov.passages),
                chunk_ids=[p.chunk_id for p in prov.passages],
                document_ids=[d.id for d in documents],
                titles=[d.title for d in documents],
                meta=_jsonable(hit.meta),
            )
        )
    return out


def describe_answer(store: NodeRows | None, answer: Answer, strategy: str) -> DescribedAnswer:
    """An answer with its context and cited passages, each described by :func:`describe_hits`.

    Args:
        store: the memory's store (None: see :func:`describe_hits`). answer: what
            :meth:`gemrag.memory.Memory.ask` (or the last item of ``ask_stream``) returned.
        strategy: the strategy that retrieved the context.
    """
    context = describe_hits(store, answer.hits, strategy)
    citations = [CitedNode(marker=n, **context[n - 1].model_dump()) for n in answer.cited]
    return DescribedAnswer(
        answer=answer.text,
        choice=answer.choice,
        strategy=strategy,
        cited=list(answer.cited),
        dropped_citations=answer.dropped_citations,
        citations=citations,
        context=context,
        retrieval_seconds=answer.retrieval_seconds,
        answer_seconds=answer.answer_seconds,
        verification=list(answer.verification),
        dropped_sentences=list(answer.dropped_sentences),
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


class _Retriever(Protocol):
    """What :func:`retrieve_nodes` needs of a memory (:class:`gemrag.memory.Memory` is one)."""

    @property
    def store(self) -> NodeRows: ...  # the memory's store, as the rows that give a hit its provenance

    @property
    def strategy(self) -> Any: ...  # noqa: ANN401 - the memory's configured strategy (its ``name``)

    def retrieve(self, question: str, budget: int | None = None, strategy: str | None = None) -> list[Hit]: ...


def retrieve_nodes(
    memory: _Retriever, question: str, budget: int | None = None, strategy: str | None = None
) -> list[RetrievedNode]:
    """:meth:`Memory.retrieve <gemrag.memory.Memory.retrieve>` then :func:`describe_hits`.

    Args:
        memory: an open memory.
        question: the question (non-empty).
        budget: at most this many nodes (default: the strategy's budget).
        strategy: the strategy to retrieve with (default: the memory's configured one).

    Returns:
        The retrieved nodes, best first.

    Raises:
        ValueError: empty question or budget < 1.
        KeyError: no strategy has that name.
        MemoryNotIndexedError: the strategy has not been built in this memory.
    """
    name = strategy or memory.strategy.name
    return describe_hits(memory.store, memory.retrieve(question, budget, name), name)


def document_name(document: DocumentRef) -> str:
    """A short name of a document for people: its file name when its source is a path, else its source (or its
    title when the source is a placeholder such as ``<text>``)."""
    source = document.source
    if source.startswith("<") or not source.strip():
        return document.title
    name = PurePath(source).name
    return name or source


def passage_label(passage: Passage) -> str:
    """One passage for people: ``"story.txt #3 [120:480)"`` (document name, version when > 1, chunk ordinal, span)."""
    version = f" v{passage.document.version}" if passage.document.version > 1 else ""
    span = f" [{passage.start}:{passage.end})" if passage.start is not None else ""
    return f"{document_name(passage.document)}{version} #{passage.ordinal}{span}"


def source_label(provenance: Provenance | None) -> str:
    """A hit's sources in one line: its first passage (:func:`passage_label`), and ``+k`` for the others; ``"—"``
    when it has none."""
    if provenance is None or not provenance.passages:
        return "—"
    first, more = provenance.passages[0], len(provenance.passages) - 1
    return passage_label(first) + (f" +{more}" if more else "")


def cited_sources(answer: Answer, limit: int = 3) -> list[str]:
    """The passages an answer rests on, one line per cited context node: ``"[2] story.txt #3 [120:480)"`` (a
    derived node: its first ``limit`` passages and ``+k more``), then a line counting dropped markers, if any."""
    lines = []
    for n, hit in zip(answer.cited, answer.citations, strict=True):
        passages = hit.provenance.passages if hit.provenance is not None else ()
        if not passages:
            lines.append(f"[{n}] node {hit.node_id} ({hit.kind}): no recorded source")
            continue
        shown = "; ".join(passage_label(p) for p in passages[:limit])
        more = len(passages) - limit
        lines.append(f"[{n}] {shown}" + (f"; +{more} more" if more > 0 else ""))
    if answer.dropped_citations:
        k = answer.dropped_citations
        lines.append(
            f"({k} marker{'s' if k != 1 else ''} named no context passage and {'were' if k != 1 else 'was'} dropped)"
        )
    return lines
