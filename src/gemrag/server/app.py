"""The FastAPI app: :func:`create_app` builds it over a root directory holding one memory per namespace.

Routes (all JSON; the OpenAPI schema is at ``/openapi.json``, the interactive docs at ``/docs``):

* ``GET /v1/health``; ``GET /v1/namespaces`` (the namespaces the key may use that hold a memory);
* ``POST /v1/namespaces/{ns}/documents`` (texts) and ``POST .../documents/upload`` (``.txt``/``.md`` files,
  multipart), ``GET .../documents``, ``GET .../documents/{document}/text`` (a document with its text, the text its
  passages' character spans point into), ``DELETE .../documents/{document}`` (id, source or title;
  ``?purge=true`` erases every copy of its text, ``?rebuild=true`` rebuilds at once);
* ``GET /v1/namespaces/{ns}/build-state``: each strategy's build state, and each document's per strategy (built,
  stale, never built) with its chunk count;
* ``POST /v1/namespaces/{ns}/index`` starts a background index job (202 with its id), ``GET .../jobs`` and
  ``GET .../jobs/{job_id}`` show its cost plan (made before its first LLM call), its progress stages, then its report
  or error; ``POST .../jobs/{job_id}/cancel`` stops it at its next progress event; ``POST .../index/plan`` returns
  the plan alone, starting nothing (:mod:`gemrag.memory.index_plan`);
* ``POST /v1/namespaces/{ns}/retrieve`` (question, strategy, budget -> hits), ``POST .../ask`` (LLM answer; with
  ``"stream": true`` as Server-Sent Events, :mod:`gemrag.server.streaming`), ``GET .../stats``;
* ``POST /v1/namespaces/{ns}/chat`` (one turn of a character chat, its recalled memories and reply; the exchange is
  stored and indexed) and ``GET .../chat/{persona}`` (its history): :mod:`gemrag.server.chat`;
* ``GET /v1/namespaces/{ns}/view`` (HTML): the memory view (:mod:`gemrag.view`) of a strategy's graph, with an
  optional question's retrieval path.

The web page (:mod:`gemrag.server.web`) is served at ``/`` (its assets under ``/web/``), outside the schema.

Keys (:mod:`gemrag.server.auth`) are sent as ``Authorization: Bearer KEY`` or ``X-API-Key: KEY``. Endpoints are
plain ``def`` functions: FastAPI runs them in its thread pool, and :mod:`gemrag.server.namespaces` gives each
its own Memory, so retrievals go on while an index job runs. Each request is a trace span continuing the caller's
W3C ``traceparent`` (:mod:`gemrag.server.trace_context`).
"""

import time
from collections.abc import AsyncIterator, Generator
from contextlib import asynccontextmanager, suppress
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, File, Query, Request, Security, UploadFile
from fastapi import Path as PathParam
from fastapi.responses import HTMLResponse
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from gemrag import __version__
from gemrag.answers.answer import Answer
from gemrag.answers.evidence import cited_evidence
from gemrag.config import Config
from gemrag.errors import InputError
from gemrag.ingest import Document
from gemrag.ingest.loader import SUPPORTED_SUFFIXES, decode_text
from gemrag.memory import Memory
from gemrag.memory.index_plan import IndexPlan
from gemrag.memory.sources import Source
from gemrag.models.base import LLM, Embedder
from gemrag.server import schemas as m
from gemrag.server import trace_context
from gemrag.server.auth import KeyRing
from gemrag.server.chat import install_chat
from gemrag.server.errors import AuthError, ConflictError, ForbiddenError, NotFoundError, install_handlers
from gemrag.server.jobs import JobManager
from gemrag.server.namespaces import NAMESPACE_PATTERN, Namespaces
from gemrag.server.serialize import answer_out, build_state_out, failures_since, hits_out, jsonable, with_evidence
from gemrag.server.streaming import SSE_RESPONSE, stream_answer
from gemrag.server.web import HTML_RESPONSE, install_web, memory_view
from gemrag.strategies import available

WRITE_WAIT = 5.0
"""Seconds an add, a delete or an index job waits for another writer of its namespace (then 409 / a failed
job)."""
MAX_UPLOAD_BYTES = 20_000_000
"""Largest uploaded file (bytes)."""

_bearer = HTTPBearer(auto_error=False, description="Authorization: Bearer <API key>")
_header = APIKeyHeader(name="X-API-Key", auto_error=False, description="X-API-Key: <API key>")

Namespace = Annotated[
    str, PathParam(pattern=NAMESPACE_PATTERN, max_length=64, description="Namespace: one memory per name.")
]


Files = Annotated[list[UploadFile], File(min_length=1, description=".txt/.md files")]


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    return {code: {"model": m.ErrorOut} for code in codes}


def _json_errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """Error responses documented as JSON on a route whose own responses are not (``_errors`` would document them
    in the route's media type)."""
    ref = {"$ref": "#/components/schemas/ErrorOut"}
    return {code: {"description": "An error", "content": {"application/json": {"schema": ref}}} for code in codes}


def create_app(
    root: str | Path,
    config: Config,
    *,
    keys: KeyRing | None = None,
    embedder: Embedder | None = None,
    llm: LLM | None = None,
) -> FastAPI:
    """The HTTP API over the memories under ``root`` (one directory per namespace).

    Args:
        root: directory of the namespaces' memories (created when missing).
        config: the configuration each memory is opened with (strategy, models, parameters).
        keys: API keys and their namespaces; None serves every namespace to everyone.
        embedder, llm: backends shared by all namespaces instead of building them from ``config``.

    Returns:
        The app; ``app.state.namespaces`` (:class:`~gemrag.server.namespaces.Namespaces`) and ``app.state.jobs``
        (:class:`~gemrag.server.jobs.JobManager`) hold its state.
    """
    spaces = Namespaces(root, config, embedder=embedder, llm=llm)
    jobs = JobManager()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        spaces.close()

    app = FastAPI(
        lifespan=lifespan,
        title="gemrag",
        version=__version__,
        description="Long-term graph memory for LLMs over HTTP: one memory per namespace.",
        responses=_errors(400, 401, 403),
    )
    app.state.namespaces, app.state.jobs = spaces, jobs
    install_handlers(app)
    install_web(app)
    trace_context.install(app)  # each request a span continuing the caller's traceparent

    def caller(
        bearer: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
        header: Annotated[str | None, Security(_header)],
    ) -> frozenset[str] | None:
        """The namespaces the request's key may use (None: no keys configured, everything allowed)."""
        if keys is None:
            return None
        given = header or (bearer.credentials if bearer else None)
        allowed = keys.namespaces_of(given)
        if allowed is None:
            raise AuthError("missing or unknown API key (send Authorization: Bearer KEY or X-API-Key: KEY)")
        return allowed

    Caller = Annotated[frozenset[str] | None, Depends(caller)]

    def namespace(ns: Namespace, allowed: Caller) -> str:
        """The request's namespace, once its key may use it."""
        if allowed is not None and not KeyRing.allows(allowed, ns):
            raise ForbiddenError(f"this API key may not use namespace {ns!r}")
        return ns

    NS = Annotated[str, Depends(namespace)]

    def strategy_of(name: str | None) -> str | None:
        if name is not None and name not in available():
            raise InputError(f"unknown strategy {name!r}; available: {', '.join(available())}")
        return name

    @app.get("/v1/health", response_model=m.Health, tags=["server"])
    def health() -> m.Health:
        """The server is up (no key needed)."""
        return m.Health(version=__version__)

    @app.get("/v1/namespaces", response_model=m.NamespaceList, tags=["server"])
    def list_namespaces(allowed: Caller) -> m.NamespaceList:
        """The namespaces holding a memory that the caller's key may use."""
        names = spaces.names()
        if allowed is not None:
            names = [n for n in names if KeyRing.allows(allowed, n)]
        return m.NamespaceList(namespaces=names)

    @app.post(
        "/v1/namespaces/{ns}/documents",
        response_model=m.AddedDocuments,
        status_code=201,
        responses=_errors(409),
        tags=["documents"],
    )
    def add_documents(ns: NS, body: m.AddDocuments) -> m.AddedDocuments:
        """Add documents given as text (creates the namespace). Each is checked first, so a bad one adds none.
        A document is identified by its ``id``, else by its ``source`` when one is given: re-adding a source with
        another text replaces it (in one step, with everything derived from its old chunks alone), with the same
        text changes nothing. They are chunked and indexed by the next index job."""
        docs = [
            Source(
                Document(d.source, d.title, decode_text(d.text.encode("utf-8"), d.source)),
                d.id or (d.source if d.source != m.DEFAULT_SOURCE else None),
            )
            for d in body.documents
        ]
        return _add(ns, docs)

    @app.post(
        "/v1/namespaces/{ns}/documents/upload",
        response_model=m.AddedDocuments,
        status_code=201,
        responses=_errors(409),
        tags=["documents"],
    )
    def upload_documents(
        ns: NS, files: Annotated[list[UploadFile], File(min_length=1, description=".txt/.md files")]
    ) -> Any:
        """Add uploaded ``.txt`` / ``.md`` files (UTF-8; the title is the file name without its suffix). Every
        file is checked first, so a bad one adds none. A file is identified by its name: uploading a new version
        of it replaces the old one."""
        docs = []
        for upload in files:
            name = Path(upload.filename or "upload.txt").name
            if Path(name).suffix.lower() not in SUPPORTED_SUFFIXES:
                raise InputError(f"{name}: unsupported file type; upload .txt or .md files")
            data = upload.file.read(MAX_UPLOAD_BYTES + 1)
            if len(data) > MAX_UPLOAD_BYTES:
                raise InputError(f"{name}: larger than {MAX_UPLOAD_BYTES} bytes")
            source = f"upload:{name}"
            docs.append(Source(Document(source, Path(name).stem or name, decode_text(data, name)), source))
        return _add(ns, docs)

    def _add(ns: str, docs: list[Source]) -> m.AddedDocuments:
        with spaces.writing(ns, wait=WRITE_WAIT) as memory:
            report = memory.put(docs)
        return m.AddedDocuments(
            documents=[
                m.Added(
                    doc_id=c.doc_id,
                    created=c.status in ("added", "updated"),
                    status=c.status,
                    version=c.version,
                )
                for c in report.changes
            ]
        )

    @app.get("/v1/namespaces/{ns}/documents", response_model=m.DocumentList, responses=_errors(404), tags=["documents"])
    def list_documents(ns: NS) -> m.DocumentList:
        """The namespace's documents (without their text)."""
        with spaces.reading(ns) as memory:
            return m.DocumentList(documents=memory.store.documents())

    @app.get(
        "/v1/namespaces/{ns}/documents/{document}/text",
        response_model=m.DocumentText,
        responses=_errors(404, 409),
        tags=["documents"],
    )
    def document_text(ns: NS, document: Annotated[str, PathParam(max_length=1000)]) -> m.DocumentText:
        """A document (by id, source or title) with its current text: the text the character spans of its passages
        (``passages[].start`` / ``end`` of a hit) point into."""
        with spaces.reading(ns) as memory:
            doc = _one_document(memory, ns, document)
            return m.DocumentText(**doc, text=memory.store.document_text(int(doc["id"])))

    @app.get("/v1/namespaces/{ns}/build-state", response_model=m.BuildStateOut, responses=_errors(404), tags=["index"])
    def build_state(ns: NS) -> m.BuildStateOut:
        """Each strategy's build state (built, stale, never built) and, per document, its chunk count and whether
        each strategy's published build covers it."""
        with spaces.reading(ns) as memory:
            return build_state_out(memory)

    @app.delete(
        "/v1/namespaces/{ns}/documents/{document}",
        response_model=m.DeleteOut,
        responses=_errors(404, 409),
        tags=["documents"],
    )
    def delete_document(
        ns: NS,
        document: Annotated[str, PathParam(max_length=1000)],
        purge: Annotated[bool, Query(description="Also erase every copy of its text (caches, versions, files).")] = (
            False
        ),
        rebuild: Annotated[bool, Query(description="Rebuild the strategies it changed now.")] = False,
    ) -> m.DeleteOut:
        """Delete a document (by id, source or title) with its chunks and every derived node resting on them;
        strategies are then stale until the next index job, or rebuilt at once with ``rebuild=true``. With
        ``purge=true`` an erase follows (as ``POST .../erase``): every copy of text no current document states goes,
        the LLM and embedding cache entries that held it, kept versions' text and the bytes left in the database
        (``purge`` in the answer says what). The chat exchanges whose replies recalled one of its chunks are withdrawn
        with it (``dependents``). A source of a document other sources hold too (the same text added under two
        sources) is deleted alone: the document stays."""
        spaces.require(ns)
        with spaces.writing(ns, wait=WRITE_WAIT) as memory:
            _one_document(memory, ns, document)
            report = memory.delete(document, purge=purge, rebuild=rebuild)
        return m.DeleteOut(**asdict(report))

    @app.post("/v1/namespaces/{ns}/erase", response_model=m.PurgeOut, responses=_errors(404, 409), tags=["documents"])
    def erase(ns: NS) -> m.PurgeOut:
        """Erase every byte of text no current document states (``gemrag erase``): what deletes, edits and syncs
        removed since the last erase, from the LLM and embedding caches, kept versions, failure messages and the
        database's free pages, log and dead rows. No LLM call; safe to repeat. ``erasure.complete`` false: another
        process still reads old bytes (``erasure.detail`` says which file or tables); call it again later."""
        spaces.require(ns)
        with spaces.writing(ns, wait=WRITE_WAIT) as memory:
            report = memory.erase()
        return m.PurgeOut(**asdict(report))

    @app.post(
        "/v1/namespaces/{ns}/index",
        response_model=m.JobOut,
        status_code=202,
        responses=_errors(404, 409),
        tags=["index"],
    )
    def start_index(ns: NS, body: m.IndexRequest | None = None) -> Any:
        """Start an index job (chunk new documents, build the strategy, publish a new generation) and return it
        at once; poll ``GET .../jobs/{id}``. Retrieval keeps answering from the previous generation meanwhile."""
        strategy = strategy_of(body.strategy if body else None)
        spaces.require(ns)

        def run(progress: Any) -> Any:
            with spaces.writing(ns, progress=progress, wait=WRITE_WAIT) as memory:
                progress.plan(memory.plan_index(strategy).model_dump(mode="json"))  # before any LLM call of the build
                since = time.time()
                try:
                    return memory.index(strategy)
                finally:  # in words, whatever ended the build; never hiding why it ended
                    with suppress(Exception):
                        progress.failures(failures_since(memory, since))

        return jobs.start(ns, strategy, run)

    @app.post("/v1/namespaces/{ns}/index/plan", response_model=IndexPlan, responses=_errors(404), tags=["index"])
    def plan_index(ns: NS, body: m.PlanRequest | None = None) -> Any:
        """What an index job would cost now, without starting one: the chunks it processes and, per LLM pass, its
        calls, prompt and completion tokens and minutes (the plan an index job records before its first LLM call;
        see ``gemrag index --plan``). Writes nothing."""
        strategy = strategy_of(body.strategy if body else None)
        with spaces.reading(ns) as memory:
            return memory.plan_index(strategy, calibrate=bool(body and body.calibrate))

    @app.get("/v1/namespaces/{ns}/jobs", response_model=m.JobList, tags=["index"])
    def list_jobs(ns: NS) -> Any:
        """The namespace's index jobs still kept, oldest first."""
        return {"jobs": jobs.jobs(ns)}

    @app.get("/v1/namespaces/{ns}/jobs/{job_id}", response_model=m.JobOut, responses=_errors(404), tags=["index"])
    def get_job(ns: NS, job_id: Annotated[str, PathParam(max_length=64)]) -> Any:
        """An index job: status, progress stages, and its report or error once finished."""
        return jobs.snapshot(ns, job_id)

    @app.post(
        "/v1/namespaces/{ns}/jobs/{job_id}/cancel", response_model=m.JobOut, responses=_errors(404), tags=["index"]
    )
    def cancel_job(ns: NS, job_id: Annotated[str, PathParam(max_length=64)]) -> Any:
        """Ask an index job to stop and return it (``cancel_requested`` true). It stops at its next progress event
        (between LLM calls or batches, never inside one) and ends ``cancelled``: what earlier builds published stays
        readable, the answers it cached are reused by the next job. A finished job is returned unchanged."""
        return jobs.cancel(ns, job_id)

    @app.post("/v1/namespaces/{ns}/retrieve", response_model=m.Hits, responses=_errors(404, 409, 503), tags=["query"])
    def retrieve(ns: NS, body: m.RetrieveRequest) -> m.Hits:
        """The context for a question: at most ``budget`` nodes with their scores, text, metadata and provenance
        (documents, and the chunks they were made from with their character spans)."""
        strategy = strategy_of(body.strategy)
        start = time.perf_counter()
        with spaces.reading(ns) as memory:
            found = memory.retrieve(body.question, body.budget, strategy)
            name = strategy or memory.strategy.name
        return m.Hits(hits=hits_out(found, name), seconds=time.perf_counter() - start)

    @app.post(
        "/v1/namespaces/{ns}/ask",
        response_model=m.AnswerOut,
        responses={**_errors(404, 409, 503), **SSE_RESPONSE},
        tags=["query"],
    )
    def ask(ns: NS, body: m.AskRequest, request: Request) -> Any:
        """Retrieve context and answer with the LLM (with ``choices``: pick exactly one of them), citing the context
        passages the answer rests on (``citations``) when the server's ``[answer] cite`` is on (the default). With
        ``"stream": true`` the answer comes as Server-Sent Events while the model writes it: ``token`` events (the
        model's raw text, ``[n]`` markers as written), then one ``answer`` event holding this route's JSON answer,
        citations and provenance included (:mod:`gemrag.server.streaming`); a client that disconnects stops the
        generation."""
        strategy = strategy_of(body.strategy)
        if body.stream:
            names: list[str] = []  # the strategy that answers, known once the stream's thread opened the memory
            scores: dict[int, float] = {}  # the citations' evidence, filled before the answer is handed over

            def start(memory: Memory) -> Generator[str | Answer, None, None]:
                names.append(strategy or memory.strategy.name)
                stream = memory.ask_stream(body.question, body.choices, body.budget, strategy)
                return with_evidence(memory, body.question, stream, scores)

            return stream_answer(spaces, ns, start, lambda answer: answer_out(answer, names[0], scores), request)
        with spaces.reading(ns) as memory:
            answer = memory.ask(body.question, body.choices, body.budget, strategy)
            name = strategy or memory.strategy.name
            scores = cited_evidence(body.question, answer, memory.embedder)
        return answer_out(answer, name, scores)

    install_chat(app, spaces, NS, strategy_of, WRITE_WAIT)

    @app.get("/v1/namespaces/{ns}/stats", response_model=dict[str, Any], responses=_errors(404), tags=["query"])
    def stats(ns: NS) -> Any:
        """Documents, nodes, models, parameters, usage per phase, failures and each strategy's state
        (:meth:`gemrag.memory.Memory.stats`)."""
        with spaces.reading(ns) as memory:
            return jsonable(memory.stats())

    @app.get(
        "/v1/namespaces/{ns}/view",
        response_class=HTMLResponse,
        responses={**_json_errors(400, 401, 403, 404, 409), **HTML_RESPONSE},
        tags=["query"],
    )
    def view(
        ns: NS,
        strategy: Annotated[str | None, Query(max_length=64, description="Strategy (default: the configured one).")] = (
            None
        ),
        question: Annotated[
            str | None, Query(min_length=1, max_length=10_000, description="Highlight this question's retrieval.")
        ] = None,
        budget: Annotated[int | None, Query(ge=1, le=1000, description="Nodes the retrieval returns.")] = None,
    ) -> HTMLResponse:
        """The memory view (``gemrag view``) of the strategy's published graph as one self-contained HTML page (no
        external reference), with the question's retrieval path when one is given (:mod:`gemrag.view`)."""
        name = strategy_of(strategy)
        with spaces.reading(ns) as memory:
            return HTMLResponse(memory_view(memory, ns, name, question, budget))

    return app


def _one_document(memory: Memory, ns: str, ref: str) -> dict[str, Any]:
    """The one document ``ref`` (id, source or title) names, as ``Store.find_documents`` gives it.

    Raises:
        NotFoundError: no document matches. ConflictError: several do.
    """
    matches = memory.store.find_documents(ref)
    if not matches:
        raise NotFoundError(f"no document {ref!r} in namespace {ns!r}")
    if len(matches) > 1:
        raise ConflictError(f"{ref!r} names {len(matches)} documents; give its id")
    return matches[0]
