"""Request and response bodies of the HTTP API (pydantic models; they make the OpenAPI schema)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from gemrag.answers.answer import QuotedSpan, ScoredOption, SentenceCheck
from gemrag.answers.evidence import WEAK_EVIDENCE
from gemrag.answers.provenance import RetrievedNode
from gemrag.answers.repair import Repair
from gemrag.memory.index_plan import IndexPlan

DEFAULT_SOURCE = "<http>"
"""The source of a document given without one (such a document has no identity unless it has an id)."""

MAX_TEXT_CHARS = 5_000_000
"""Largest document text accepted in one request (characters)."""


class Strict(BaseModel):
    """A request body that rejects unknown fields (a misspelt field is a 422, not silently ignored)."""

    model_config = ConfigDict(extra="forbid")


class DocumentIn(Strict):
    """A document given as text."""

    text: str = Field(min_length=1, max_length=MAX_TEXT_CHARS, description="The document's text (UTF-8).")
    title: str = Field("text", min_length=1, max_length=500, description="A title, shown in listings and hits.")
    source: str = Field(
        DEFAULT_SOURCE,
        min_length=1,
        max_length=1000,
        description="Where the text came from. Unless it is the default, it identifies the document (when no id is "
        "given): adding another text from the same source replaces the document.",
    )
    id: str | None = Field(
        None,
        min_length=1,
        max_length=1000,
        description="The document's identity: adding another text under the same id replaces the document (its "
        "chunks and what was derived from them), the same text changes nothing. Without id or source the "
        "document is anonymous and deduplicated by its text.",
    )


class AddDocuments(Strict):
    """Documents to add, each checked before any is stored (one bad document adds none)."""

    documents: list[DocumentIn] = Field(min_length=1, max_length=1000)


class Added(BaseModel):
    """One added document: its id (kept across versions); ``created`` False when the same text was already in the
    memory; ``status`` ``added``, ``updated`` (its identity held another text, which it replaced), ``unchanged``
    or ``same`` (its text is byte-identical to a stored document's: it became another source of that document, no
    new chunk); ``version`` 1, 2, ... the number of this version of its source."""

    doc_id: int
    created: bool
    status: Literal["added", "updated", "unchanged", "same", "moved"] = "added"
    version: int = 1


class AddedDocuments(BaseModel):
    """The added documents, in request order."""

    documents: list[Added]


class DocumentInfo(BaseModel):
    """A stored document (its text excluded). ``n_chars``: length in characters; ``chunked``: split into chunks
    by an index job yet; ``key``: its identity (its id, or explicit source; None for an anonymous document);
    ``version``: 1, 2, ... the number of its current version."""

    id: int
    source: str
    title: str
    n_chars: int
    chunked: bool
    key: str | None = None
    version: int = 1


class DocumentList(BaseModel):
    """The documents of a namespace, by id."""

    documents: list[DocumentInfo]


class DocumentText(DocumentInfo):
    """A stored document with its current text: the text the character spans of its passages'
    provenance (``passages[].start`` / ``end``, ``[start, end)`` in characters) point into."""

    text: str


BuildStateName = Literal["built", "stale", "never built"]
"""A strategy's build state (:class:`gemrag.store.graph_rows.BuildState`)."""


class StrategyStateOut(BaseModel):
    """One strategy's build in the namespace compared with its chunks now: ``state`` built (over exactly the
    memory's chunks), stale (``new_documents`` not chunked yet, ``new_chunks`` added or ``deleted_chunks`` removed
    since its build) or never built; ``generation`` the published build generation (None when never built),
    ``published_at`` its Unix time; ``describe`` one line for people."""

    strategy: str
    state: BuildStateName
    generation: int | None = None
    new_documents: int = 0
    new_chunks: int = 0
    deleted_chunks: int = 0
    published_at: float | None = None
    describe: str


class DocumentStateOut(DocumentInfo):
    """A stored document with its chunk count and, per strategy, whether that strategy's published build covers
    it: ``built`` (every chunk of it), ``stale`` (not chunked yet, or a chunk of it is not in the build) or
    ``never built`` (the strategy has no build at all)."""

    chunks: int
    strategies: dict[str, BuildStateName]


class BuildStateOut(BaseModel):
    """The namespace's build state: each strategy's (every registered one and every one built here), and each
    document's per strategy."""

    strategies: list[StrategyStateOut]
    documents: list[DocumentStateOut]
    default: str | None = Field(None, description="The strategy a request naming none uses (the server's setting).")


class IndexRequest(Strict):
    """Start an index job."""

    strategy: str | None = Field(
        None, max_length=64, description="The strategy to build (default: the server's configured one)."
    )


class PlanRequest(IndexRequest):
    """Plan an index job without starting it (``POST .../index/plan``)."""

    calibrate: bool = Field(
        False,
        description="Time the server's model on this machine when no calibration of it is cached (seconds to a "
        "minute); default: the cached calibration or the memory's recorded rates, else unknown minutes.",
    )


class StageOut(BaseModel):
    """One progress stage of a job: ``completed`` of ``total`` items, LLM completion ``tokens`` generated."""

    description: str
    total: int
    completed: int
    tokens: int
    note: str


class FailureOut(BaseModel):
    """One item of a build that failed, in words: its ``document`` (title; None for a derived node), ``passage``
    (1-based chunk number in it), the ``phase`` and the error ``message``."""

    document: str | None
    passage: int | None
    phase: str
    message: str


class LogLineOut(BaseModel):
    """One line of a job's log: Unix ``time`` (seconds) and ``text`` for people."""

    time: float
    text: str


class UsageOut(BaseModel):
    """Tokens, backend seconds and calls (see :class:`gemrag.models.base.Usage`)."""

    prompt_tokens: int
    completion_tokens: int
    embedding_tokens: int
    seconds: float
    calls: int
    cached: int


class IndexReportOut(BaseModel):
    """What a finished index job did (:class:`gemrag.memory.indexing.IndexReport`)."""

    documents: int
    chunks: int
    new_chunks: int
    summary_nodes: int
    seconds: float
    usage: UsageOut
    failures: int
    llm_calls: int


class JobError(BaseModel):
    """Why a job failed: the error's class name and message."""

    type: str
    message: str


class JobOut(BaseModel):
    """An index job: its status, progress stages, and once done its report or error. Times are Unix seconds.
    ``cancel_requested``: ``POST .../jobs/{id}/cancel`` asked it to stop; it stops at its next progress event and
    ends ``cancelled``."""

    id: str
    namespace: str
    strategy: str | None
    status: Literal["queued", "running", "succeeded", "failed", "cancelled"]
    created: float
    started: float | None
    finished: float | None
    stages: list[StageOut]
    plan: IndexPlan | None = Field(
        None, description="What the build costs (LLM calls, tokens, minutes per pass), made before its first LLM call."
    )
    report: IndexReportOut | None
    error: JobError | None
    cancel_requested: bool = False
    log: list[LogLineOut] = Field(
        default_factory=list,
        description="What happened so far, oldest first: stages started and ended, notes, cancel asked, the outcome.",
    )
    failures: list[FailureOut] = Field(
        default_factory=list, description="The build's items that failed (after their retries), in words."
    )


class JobList(BaseModel):
    """The namespace's jobs still kept, oldest first."""

    jobs: list[JobOut]


class RetrieveRequest(Strict):
    """A question to retrieve context for."""

    question: str = Field(min_length=1, max_length=10_000)
    strategy: str | None = Field(None, max_length=64, description="Strategy to read (default: the configured one).")
    budget: int | None = Field(None, ge=1, le=1000, description="At most this many nodes (default: the strategy's).")


class HitOut(RetrievedNode):
    """One retrieved node (:class:`gemrag.types.Hit`) with its provenance, as every surface describes it
    (:class:`gemrag.answers.provenance.RetrievedNode`): ``score`` is the strategy's score (higher is better within one
    retrieval; its scale depends on the strategy), ``rank`` the 0-based position; ``documents`` (id, title, source,
    version) and ``passages`` (each chunk the node was made from: its document, ordinal and character span
    ``[start, end)`` in that document version's text) say where it comes from."""


class CitedHitOut(HitOut):
    """A context node the answer cites: ``marker`` is the ``n`` of its ``[n]`` markers (its rank + 1); ``evidence``:
    its evidence score, the best cosine between the question and one of its sentences
    (:func:`gemrag.answers.evidence.passage_evidence`; None when not computed)."""

    marker: int
    evidence: float | None = None


class Hits(BaseModel):
    """The retrieved context, best first."""

    hits: list[HitOut]
    seconds: float = Field(description="Retrieval wall time in seconds.")


class AskRequest(RetrieveRequest):
    """A question to answer from the memory; with ``choices`` the LLM picks exactly one."""

    choices: list[str] | None = Field(None, min_length=2, max_length=10)
    stream: bool = Field(
        False,
        description="Answer as Server-Sent Events (text/event-stream) while the model writes: token events, then one "
        "answer event holding the JSON answer.",
    )


class AnswerOut(BaseModel):
    """The answer (``choice``: 0-based index of the picked option, or None), with the evidence it was given and the
    passages it rests on: ``cited`` (the context numbers ``n`` its ``[n]`` markers name, ascending), ``citations``
    (those context nodes with their provenance) and ``dropped_citations`` (markers naming no context passage,
    removed from ``text``); ``verification``: each sentence of ``text`` checked against the passages it cites
    (``sentence``, its span ``start``/``end`` in ``text``, ``cited``, ``supported``, ``method``: ``"entailment"``,
    ``"overlap"`` or ``"quote"``; ``added_citation``: the passage cited after the answer for a sentence written
    without a marker, its marker added to ``text``, or for a sentence its own markers did not support, its marker
    replacing them (``recited_from``: the passages they named); ``uncited``: no marker and no passage found to
    support it; ``[answer] verify``, ``verify_uncited``, ``verify_miscited``), and ``dropped_sentences``: the
    unsupported ones removed under ``"drop"``.
    ``weak_below``: a citation whose ``evidence`` is below it is weak (:data:`gemrag.answers.evidence.WEAK_EVIDENCE`).
    ``abstained``: True when the answer is "Not found in the memory." because the context's evidence score
    (``evidence``) was below ``[answer] abstain_below``, False when it was checked and sufficed, None when the server
    does not check (``abstain_below`` unset). ``quotes``: the sentences quoted before answering (``[answer] reading =
    "quote"``) or the span the answer is (``"span"``), each with its context number and character span there.
    ``dates_completed``: over a dated context, the dates the model wrote without their year or as a day the context
    gives only as a week, as completed from the context (:mod:`gemrag.answers.dates.completion`). ``list_cue``: under
    ``[answer] lists = "auto"``, the words that made the question a list question (:mod:`gemrag.answers.lists`),
    else None. ``hypothetical_cue``: under ``[answer] hypotheticals = "auto"``, the word that made the question a
    hypothetical question (:mod:`gemrag.answers.hypotheticals`), else None. ``repair``: under ``[answer] repair =
    "auto"``, an answer asked again because its form did not fit the question (the fault, the first answer, which was
    kept; :class:`gemrag.answers.repair.Repair`), else None. ``demonstrations``: True when worked examples were shown
    before the question (``[answer] demonstrations``); ``question_first``: True when the question was also shown
    before the context (``[answer] question_first``). ``example_copied``: under ``[answer] demonstrations``,
    the worked example's name a first answer copied, the answer being the one asked again without the examples
    (:func:`gemrag.answers.demonstrations.copied_example`), else None. ``choice_scoring`` and
    ``option_scores``: a multiple-choice answer chosen by its options' likelihood or its letters' probabilities
    (``[answer] choice_scoring``), how, and each option's tokens, log-probabilities and score
    (:class:`gemrag.answers.answer.ScoredOption`); None and empty otherwise."""

    text: str
    choice: int | None
    hits: list[HitOut]
    cited: list[int] = Field(default_factory=list)
    dropped_citations: int = 0
    citations: list[CitedHitOut] = Field(default_factory=list)
    retrieval_seconds: float
    answer_seconds: float
    usage: UsageOut
    verification: list[SentenceCheck] = Field(default_factory=list)
    dropped_sentences: list[str] = Field(default_factory=list)
    weak_below: float = WEAK_EVIDENCE
    abstained: bool | None = None
    evidence: float | None = Field(None, description="The context's evidence score, when abstention checked it.")
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


class ChatRequest(Strict):
    """One message of a character chat over the memory (``gemrag chat``)."""

    message: str = Field(min_length=1, max_length=10_000, description="What the user says.")
    persona: str = Field("Assistant", min_length=1, max_length=80, description="The character's name.")
    strategy: str | None = Field(
        None, max_length=64, description="Strategy recalling memories (default: the server's)."
    )
    budget: int | None = Field(None, ge=1, le=1000, description="At most this many memories a turn.")


class ChatOut(BaseModel):
    """One chat turn: the ``reply``, its ``turn`` number, the ``strategy`` that recalled the ``hits`` (the memories
    the reply was given, with their provenance) and the turn's wall time (``seconds``: recall, reply, storing and
    indexing the exchange)."""

    persona: str
    turn: int
    reply: str
    strategy: str
    hits: list[HitOut]
    seconds: float


class ChatExchangeOut(BaseModel):
    """One stored exchange: the user's message, the reply (None when the turn was interrupted before it) and the
    id of the document holding it."""

    turn: int
    user: str
    reply: str | None
    document: int


class ChatHistoryOut(BaseModel):
    """A chat's stored exchanges with ``persona``, oldest first."""

    persona: str
    exchanges: list[ChatExchangeOut]


class PurgedOut(BaseModel):
    """The cache, history and log rows a purge removed (:class:`gemrag.store.erase.Purged`): LLM cache entries whose
    input or output held the text, those with no recorded input (``llm_unverifiable``) and those kept; embedding
    entries removed and kept; kept version texts cleared; failure and meta rows deleted."""

    llm_entries: int
    llm_unverifiable: int
    llm_kept: int
    embeddings: int
    embeddings_kept: int
    versions: int
    failures: int
    meta: int


class ErasureOut(BaseModel):
    """The physical erase (:class:`gemrag.store.erase.Erasure`): ``complete`` False when another reader kept a part
    from being rewritten (``detail`` says which); the database's bytes before and after; stale files removed."""

    complete: bool
    bytes_before: int
    bytes_after: int
    files_removed: int
    detail: str


class PurgeOut(BaseModel):
    """What an erase erased (``POST .../erase``, or ``?purge=true`` after a delete; :class:`gemrag.store.erase.
    PurgeReport`): the marks of removed text erased (of those the removals had quarantined), the chat exchanges the
    delete withdrew (they rested on its chunks), the rows purged, the physical erase (``erasure.complete`` false:
    another process still reads old bytes, ``erasure.detail`` names the file or tables: erase again) and the
    seconds it took."""

    fragments: int
    exchanges: list[DocumentInfo]
    purged: PurgedOut
    erasure: ErasureOut
    quarantined: int = 0
    seconds: float = 0.0


class DeleteOut(BaseModel):
    """What deleting a document did (:class:`gemrag.memory.deletion.DeleteReport`): with ``?purge=true`` also ``purge``,
    with ``?rebuild=true`` the LLM calls each rebuilt strategy spent (``rebuilt``; ``llm_calls`` is their sum)."""

    document: DocumentInfo
    chunks: int
    derived_nodes: int
    pruned: list[str]
    withdrawn: list[str]
    llm_calls: int
    seconds: float
    kept_by: list[str] = Field(default_factory=list)
    purge: PurgeOut | None = None
    rebuilt: dict[str, int] = Field(default_factory=dict)
    dependents: list[DocumentInfo] = Field(default_factory=list)


class NamespaceList(BaseModel):
    """The namespaces holding a memory that the caller's key may use."""

    namespaces: list[str]


class ErrorOut(BaseModel):
    """An error: its kind (the gemrag error class) and a one-line message."""

    error: str
    detail: str


class Health(BaseModel):
    """The server is up."""

    status: Literal["ok"] = "ok"
    version: str
