"""An MCP server over one memory: the tools ``remember``, ``recall``, ``ask``, ``forget`` and ``erase`` (Model Context
Protocol).

Built on the official ``mcp`` Python SDK (its :class:`~mcp.server.mcpserver.MCPServer`, formerly FastMCP;
install the ``mcp`` extra). ``gemrag mcp --memory DIR`` (:mod:`gemrag.cli.mcp`) serves it over stdio, so an agent
(Claude Desktop, an IDE, any MCP client) can write to and read from a long-term graph memory:

* ``remember(text, title?)``: add the text as a document and index it incrementally with the server's strategy
  (only the new chunks are embedded / sent to the LLM; cached work is reused), returning the document id and
  what was indexed (:class:`RememberResult`).
* ``recall(question, budget?, strategy?)``: the retrieved nodes with scores and provenance (documents, and the
  chunks each node was made from with their character spans), as structured output (:class:`RecallResult`, each
  node a :class:`~gemrag.answers.provenance.RetrievedNode`).
* ``ask(question, budget?, strategy?)``: the LLM's answer, the context it was given and the passages it cites
  (:class:`AskResult`).
* ``forget(document, purge?, rebuild?)``: delete a document (its id, the ``id`` it was remembered under, or its
  title) with everything derived from it and the chat exchanges resting on it; ``purge`` then erases (as ``erase``),
  ``rebuild`` rebuilds the changed strategies at once (:class:`ForgetResult`).
* ``erase()``: erase every copy of text no current document states (caches, kept versions, the files:
  :meth:`gemrag.memory.Memory.erase`; :class:`EraseResult`).

Bad input (empty text or question, a budget below 1, an unknown strategy, a memory not indexed yet, a memory
another process is building) comes back as a tool error with a one-line message (``isError: true``), never as
a crash of the server. The tools run in the SDK's worker threads, one at a time (a lock around the memory).
Nothing is printed on stdout: while serving, the SDK points file descriptor 1 at stderr and keeps the protocol
on a private duplicate, so stray output of a model runtime cannot corrupt the JSON-RPC stream.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Annotated, TypeVar

from pydantic import BaseModel, Field

from gemrag.answers.answer import QuotedSpan, SentenceCheck
from gemrag.answers.provenance import CitedNode, RetrievedNode, describe_answer, retrieve_nodes
from gemrag.answers.repair import Repair
from gemrag.errors import ConfigError, GemragError, InputError
from gemrag.ingest import Document
from gemrag.ingest.loader import decode_text
from gemrag.memory import Memory
from gemrag.memory.sources import Source
from gemrag.store.erase import PurgeReport
from gemrag.strategies.base import available

try:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "the MCP server needs the official MCP SDK: pip install 'gemrag[mcp]' (the `mcp` package)"
    ) from exc

__all__ = ["AskResult", "ForgetResult", "MemoryTools", "RecallResult", "RememberResult", "create_server"]

T = TypeVar("T")
TITLE_CHARS = 60
"""A ``remember`` without a title is titled with the text's first line, cut to this many characters."""


class RememberResult(BaseModel):
    """What ``remember`` stored and indexed.

    Attributes:
        document_id: the document's id in the memory (int).
        created: False when the same text was already in the memory (under ``id`` when one was given; anonymous
            texts are deduplicated by content).
        status: ``added``, ``updated`` (the id held another text, which this one replaced) or ``unchanged``.
        title: the document's title.
        strategy: the strategy that was (re)built.
        chunk_ids: the document's chunk node ids, in document order.
        new_chunks: chunks this call created (0 for a duplicate).
        chunks_total: chunks in the whole memory afterwards.
        seconds: wall time of adding and indexing (s).
    """

    document_id: int
    created: bool
    status: str = "added"
    title: str
    strategy: str
    chunk_ids: list[int]
    new_chunks: int
    chunks_total: int
    seconds: float


class RecallResult(BaseModel):
    """What ``recall`` retrieved: ``hits`` best first (at most ``budget``), each with score and provenance."""

    question: str
    strategy: str
    hits: list[RetrievedNode]


MULTIPLE_CHOICE_ONLY = {"choice", "choice_scoring", "option_scores"}
"""The fields of ``gemrag ask --json``'s answer that only a multiple-choice question fills; MCP's ``ask`` takes no
options, so :class:`AskResult` leaves them out."""


class AskResult(BaseModel):
    """What ``ask`` answered: ``answer`` (the LLM's text, its ``[n]`` markers naming context passages), the
    ``context`` nodes it was given (in that order), the passages it rests on (``cited``: the numbers ``n``;
    ``citations``: those nodes with their provenance; ``dropped_citations``: markers naming no passage, removed),
    the seconds spent retrieving and generating, and each answer sentence checked against the passages it cites
    (``verification``: ``sentence``, its span ``start``/``end`` in ``answer``, ``cited``, ``supported``, ``method``,
    ``added_citation``: the passage cited after the answer for a sentence written without a marker, its marker added
    to ``answer``, or that replaced its own markers, which named ``recited_from`` (passages that did not support it);
    ``uncited``: no marker and no passage found to support it; ``dropped_sentences``: the unsupported
    ones removed under ``[answer] verify = "drop"``), and how the answer was read, as ``gemrag ask --json`` gives it
    (:class:`gemrag.answers.provenance.DescribedAnswer`): ``quotes`` (the quote reading's quoted sentences or the span
    answer's span, each with its passage and character span), ``dates_completed`` (the dates completed from a dated
    context), ``list_cue`` (the words that made the question a list question under ``[answer] lists``),
    ``hypothetical_cue`` (the word that made it a hypothetical question under ``[answer] hypotheticals``),
    ``repair`` (an answer asked again because its form did not fit the question, under ``[answer] repair``),
    ``demonstrations`` and ``question_first`` (True when worked examples, or the question, were shown before the
    context) and ``example_copied`` (the worked example's name a first answer copied, the answer asked again without
    the examples, under ``[answer] demonstrations``)."""

    question: str
    answer: str
    strategy: str
    context: list[RetrievedNode]
    cited: list[int] = []
    dropped_citations: int = 0
    citations: list[CitedNode] = []
    retrieval_seconds: float
    answer_seconds: float
    verification: list[SentenceCheck] = []
    dropped_sentences: list[str] = []
    quotes: list[QuotedSpan] = []
    dates_completed: list[str] = []
    list_cue: str | None = None
    hypothetical_cue: str | None = None
    repair: Repair | None = None
    demonstrations: bool = False
    question_first: bool = False
    example_copied: str | None = None


class ForgetResult(BaseModel):
    """What ``forget`` deleted (:class:`gemrag.memory.deletion.DeleteReport`).

    Attributes:
        document_id: the document's id. title: its title. deleted: False when only one of its sources was named
            and the document stays, held by ``kept_by``.
        chunks: chunks deleted. derived_nodes: derived nodes deleted with them (chat exchanges' included).
        purged: with ``purge``: the counts of what was erased (``llm_entries``, ``llm_unverifiable``,
            ``embeddings``, ``versions``, ``exchanges``, ``failures``, ``meta``, ``bytes_before``, ``bytes_after``);
            None without. erase_complete: with ``purge``, False when another reader kept a part from being erased.
        rebuilt: with ``rebuild``, the LLM calls each rebuilt strategy spent. seconds: wall time (s).
    """

    document_id: int
    title: str
    deleted: bool
    kept_by: list[str] = []
    chunks: int
    derived_nodes: int
    purged: dict[str, int] | None = None
    erase_complete: bool | None = None
    rebuilt: dict[str, int] = {}
    seconds: float


class EraseResult(BaseModel):
    """What ``erase`` erased (:class:`gemrag.store.erase.PurgeReport`).

    Attributes:
        erased: the counts (``llm_entries``, ``llm_unverifiable``, ``embeddings``, ``versions``, ``exchanges``,
            ``failures``, ``meta``, ``bytes_before``, ``bytes_after``).
        complete: False while another process reads old bytes (``detail`` names the file or tables: erase again).
        detail: what the physical erase did. seconds: wall time (s).
    """

    erased: dict[str, int]
    complete: bool
    detail: str
    seconds: float


def _erased_counts(report: PurgeReport) -> dict[str, int]:
    """The counts of an erase, for a tool's answer."""
    p, e = report.purged, report.erasure
    return {
        "llm_entries": p.llm_entries,
        "llm_unverifiable": p.llm_unverifiable,
        "embeddings": p.embeddings,
        "versions": p.versions,
        "exchanges": len(report.exchanges),
        "failures": p.failures,
        "meta": p.meta,
        "bytes_before": e.bytes_before,
        "bytes_after": e.bytes_after,
    }


class MemoryTools:
    """The four tools as plain methods over an open :class:`~gemrag.memory.Memory` (usable without MCP).

    Calls are serialised by a lock: the SDK runs synchronous tools in worker threads, and one memory is one
    SQLite connection and one model.

    Args:
        memory: an open, writable memory (``remember`` needs write access; ``recall``/``ask`` work read-only).
        strategy: the strategy ``remember`` builds and the other tools use by default (default: the memory's
            configured one).

    Raises:
        ConfigError: ``strategy`` names no registered strategy.
    """

    def __init__(self, memory: Memory, strategy: str | None = None) -> None:
        self.memory = memory
        self.strategy = check_strategy(strategy) if strategy else memory.strategy.name
        self._lock = threading.Lock()

    def remember(self, text: str, title: str | None = None, id: str | None = None) -> RememberResult:
        """Add ``text`` as a document and index it with :attr:`strategy` (incremental: cached work is reused).
        With ``id`` the document has that identity: remembering another text under the same id replaces it
        (:mod:`gemrag.memory.sources`); without, it is anonymous and deduplicated by its text.

        Raises:
            InputError: the text is empty (or only whitespace).
            MemoryBusyError: another process is building this memory.
            ReadOnlyMemoryError: the memory is open read-only.
            GemragError: the strategy's model could not be loaded.
        """
        if not text.strip():
            raise InputError("the text to remember is empty")
        title = (title or "").strip() or _default_title(text)
        with self._lock:
            start = time.perf_counter()
            source = f"mcp:{id}" if id else "<mcp>"
            change = self.memory.put([Source(Document(source, title, decode_text(text.encode(), source)), id)]).changes[
                0
            ]
            doc_id, created = change.doc_id, change.status in ("added", "updated")
            report = self.memory.index(self.strategy)
            chunk_ids = [n.id for n in self.memory.store.nodes("chunk") if n.doc_id == doc_id]
            stored = next(d for d in self.memory.store.documents() if d["id"] == doc_id)
            return RememberResult(
                document_id=doc_id,
                created=created,
                status=change.status,
                title=str(stored["title"]),
                strategy=self.strategy,
                chunk_ids=chunk_ids,
                new_chunks=report.new_chunks,
                chunks_total=report.chunks,
                seconds=time.perf_counter() - start,
            )

    def recall(self, question: str, budget: int | None = None, strategy: str | None = None) -> RecallResult:
        """Retrieve at most ``budget`` nodes for ``question`` (default budget: the strategy's).

        Raises:
            ValueError: empty question or budget < 1.
            ConfigError: unknown strategy.
            MemoryNotIndexedError: the strategy has not been built in this memory.
        """
        name = self._resolve(strategy, budget)
        with self._lock:
            hits = retrieve_nodes(self.memory, question, budget, name)
        return RecallResult(question=question, strategy=name, hits=hits)

    def ask(self, question: str, budget: int | None = None, strategy: str | None = None) -> AskResult:
        """Retrieve a context for ``question`` and let the memory's LLM answer from it.

        Raises:
            ValueError: empty question or budget < 1.
            ConfigError: unknown strategy.
            MemoryNotIndexedError: the strategy has not been built in this memory.
            GemragError: the LLM could not be loaded or called.
        """
        name = self._resolve(strategy, budget)
        with self._lock:
            answer = self.memory.ask(question, None, budget, name)
            described = describe_answer(self.memory.store, answer, name)
            return AskResult(question=question, **described.model_dump(exclude=MULTIPLE_CHOICE_ONLY))

    def forget(self, document: str, purge: bool = False, rebuild: bool = False) -> ForgetResult:
        """Delete ``document`` (its id, the ``id`` given to ``remember``, or its title) with its chunks and every
        derived node resting on them (:meth:`gemrag.memory.Memory.delete`); ``purge`` also erases every copy of its
        text, ``rebuild`` rebuilds the strategies it changed now.

        Raises:
            GemragError: no such document, or a name matching several.
            MemoryBusyError: another process is building this memory. ReadOnlyMemoryError: opened read-only.
        """
        with self._lock:
            report = self.memory.delete(document, purge=purge, rebuild=rebuild)
        purged = None if report.purge is None else _erased_counts(report.purge)
        return ForgetResult(
            document_id=int(report.document["id"]),
            title=str(report.document["title"]),
            deleted=not report.kept_by,
            kept_by=report.kept_by,
            chunks=report.chunks,
            derived_nodes=report.derived_nodes,
            purged=purged,
            erase_complete=None if report.purge is None else report.purge.erasure.complete,
            rebuilt=report.rebuilt,
            seconds=report.seconds,
        )

    def erase(self) -> EraseResult:
        """Erase every byte of text no current document states (:meth:`gemrag.memory.Memory.erase`).

        Raises:
            MemoryBusyError: another process is building this memory. ReadOnlyMemoryError: opened read-only.
            DatabaseLockedError: the database stayed locked.
        """
        with self._lock:
            report = self.memory.erase()
        e = report.erasure
        return EraseResult(erased=_erased_counts(report), complete=e.complete, detail=e.detail, seconds=report.seconds)

    def _resolve(self, strategy: str | None, budget: int | None) -> str:
        """The strategy to use (checked), after checking ``budget`` (Memory.retrieve takes 0 as "default").

        Raises:
            ValueError: budget < 1. ConfigError: unknown strategy.
        """
        if budget is not None and budget < 1:
            raise ValueError(f"budget must be >= 1 (got {budget})")
        return check_strategy(strategy) if strategy else self.strategy


def check_strategy(name: str) -> str:
    """``name`` if a strategy of that name is registered.

    Raises:
        ConfigError: it is not (the message lists the available ones).
    """
    if name not in available():
        raise ConfigError(f"unknown strategy {name!r}; available: {', '.join(available())}")
    return name


def _default_title(text: str) -> str:
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return first[:TITLE_CHARS] or "text"


def _tool_call(fn: Callable[[], T]) -> T:
    """Run one tool call, turning gemrag's anticipated errors into MCP tool errors (a message for the model)."""
    try:
        return fn()
    except (GemragError, ValueError) as exc:
        raise ToolError(str(exc)) from exc


Question = Annotated[str, Field(description="The question (a non-empty string).", min_length=1)]
Budget = Annotated[
    int | None, Field(description="How many context nodes to retrieve (default: the strategy's budget).", ge=1)
]
StrategyName = Annotated[
    str | None, Field(description="A strategy built in this memory (default: the server's, e.g. fused or gem).")
]


def create_server(tools: MemoryTools, name: str = "gemrag") -> MCPServer:
    """An MCP server exposing ``tools`` as the MCP tools ``remember``, ``recall``, ``ask``, ``forget`` and ``erase``.

    Args:
        tools: the memory's tools.
        name: the server name announced to clients.

    Returns:
        The server; ``server.run("stdio")`` serves it on this process's stdin/stdout.
    """
    server = MCPServer(
        name,
        instructions=(
            "A long-term graph memory (gemrag). Use `remember` to store a text, `recall` to retrieve the passages "
            "relevant to a question with scores and sources, `ask` to get an answer grounded in the memory, and "
            "`forget` to delete a document (with purge: every copy of its text), `erase` to erase every copy of what "
            "was removed earlier."
        ),
        log_level="WARNING",
    )

    def remember(
        text: Annotated[str, Field(description="The text to remember (plain text or Markdown).")],
        title: Annotated[str | None, Field(description="A title (default: the text's first line).")] = None,
        id: Annotated[
            str | None,
            Field(
                description="An identity for the text (e.g. a note's name): remembering another text under the same "
                "id replaces the old one. Without it the text is stored as a new memory.",
                min_length=1,
            ),
        ] = None,
    ) -> RememberResult:
        """Store a text in the memory and index it, so later recall and ask calls can find it."""
        return _tool_call(lambda: tools.remember(text, title, id))

    def recall(question: Question, budget: Budget = None, strategy: StrategyName = None) -> RecallResult:
        """Retrieve the memory's passages (and summary nodes) most relevant to a question, best first, with
        scores, node ids and the documents they come from. No LLM call."""
        return _tool_call(lambda: tools.recall(question, budget, strategy))

    def ask(question: Question, budget: Budget = None, strategy: StrategyName = None) -> AskResult:
        """Answer a question from the memory: retrieve a context, let the memory's LLM answer, and return the
        answer with the context it used."""
        return _tool_call(lambda: tools.ask(question, budget, strategy))

    def forget(
        document: Annotated[
            str, Field(description="The document: its id, the id it was remembered under, or its title.", min_length=1)
        ],
        purge: Annotated[
            bool, Field(description="Also erase every copy of its text: caches, kept versions, the files.")
        ] = False,
        rebuild: Annotated[bool, Field(description="Rebuild the memory's indexes now rather than later.")] = False,
    ) -> ForgetResult:
        """Delete a document from the memory with everything derived from it; with purge, erase every copy of its
        text too, so nothing of it can be recalled or recovered."""
        return _tool_call(lambda: tools.forget(document, purge, rebuild))

    server.add_tool(remember, title="Remember a text")
    server.add_tool(recall, title="Recall from memory")
    server.add_tool(ask, title="Ask the memory")

    def erase() -> EraseResult:
        """Erase every copy of text no current document states (what forget, a replaced text or a removal took out
        of the memory: cached model answers, embeddings, kept versions, bytes left in the files). Safe to repeat;
        complete is false while another process still reads old bytes (call it again later)."""
        return _tool_call(tools.erase)

    server.add_tool(remember, title="Remember a text")
    server.add_tool(recall, title="Recall from memory")
    server.add_tool(ask, title="Ask the memory")
    server.add_tool(forget, title="Forget a document")
    server.add_tool(erase, title="Erase removed text")
    return server
