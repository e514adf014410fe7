"""The server continues an incoming W3C trace context (issue 41 item 2, :mod:`gemrag.server.trace_context`): a request
with ``traceparent`` is one ``SERVER`` span under the caller's span, in the caller's trace, and the retrieval's, the
answer's and the model calls' spans are below it; a request without one starts a new trace. Both ways a request is
traced: FastAPI's native telemetry (recent FastAPI) and gemrag's middleware (older FastAPI)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from fakes import HashEmbedder, ScriptedLLM
from gemrag import tracing
from gemrag.config import Config
from gemrag.server import create_app, trace_context
from serverhelp import running, wait_job
from spans import ancestors, by_name, memory_exporter, one
from test_memory import DOC_A, DOC_B

TRACE_ID = 0x4BF92F3577B34DA6A3CE929D0E0E4736
PARENT_ID = 0x00F067AA0BA902B7
TRACEPARENT = f"00-{TRACE_ID:032x}-{PARENT_ID:016x}-01"
ASK, RETRIEVE = "POST /v1/namespaces/{ns}/ask", "POST /v1/namespaces/{ns}/retrieve"


def servers(spans: Any, name: str) -> list[Any]:
    return [s for s in by_name(spans, name) if s.kind.name == "SERVER"]


def test_requests_continue_the_callers_trace(tmp_path: Path, config: Config) -> None:
    exporter = memory_exporter()
    config.strategy = "dense"
    app = create_app(tmp_path / "root", config, embedder=HashEmbedder(), llm=ScriptedLLM())
    with running(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        texts = [{"text": DOC_A, "title": "lighthouse"}, {"text": DOC_B, "title": "garden"}]
        assert client.post("/v1/namespaces/notes/documents", json={"documents": texts}).status_code == 201
        job = client.post("/v1/namespaces/notes/index", json={"strategy": "dense"}).json()
        assert wait_job(client, "notes", job["id"])["status"] == "succeeded"
        exporter.clear()
        question = {"question": "What did Marta release to eat the aphids?", "budget": 2}
        r = client.post("/v1/namespaces/notes/ask", json=question, headers={"traceparent": TRACEPARENT})
        assert r.status_code == 200, r.text
        r = client.post("/v1/namespaces/notes/retrieve", json=question)
        assert r.status_code == 200, r.text
    spans = exporter.get_finished_spans()
    asked, retrieved = servers(spans, ASK), servers(spans, RETRIEVE)
    assert len(asked) == len(retrieved) == 1  # one server span per request (not FastAPI's and gemrag's both)
    server = asked[0]
    assert server.context.trace_id == TRACE_ID
    assert server.parent is not None and server.parent.span_id == PARENT_ID and server.parent.is_remote
    assert server.attributes["http.route"] == "/v1/namespaces/{ns}/ask"
    assert server.attributes["http.response.status_code"] == 200
    ask = one([s for s in spans if s.context.trace_id == TRACE_ID], "gemrag.ask")
    assert ancestors(spans, ask)[-1] == ASK
    chat = [s for s in by_name(spans, "chat fake:scripted-llm") if s.context.trace_id == TRACE_ID]
    assert len(chat) == 1 and ancestors(spans, chat[0])[:2] == ["gemrag.answer", "gemrag.ask"]
    assert chat[0].attributes["gen_ai.usage.output_tokens"] == 5
    # without traceparent: a new trace, not a child of anything the server has open
    fresh = retrieved[0]
    assert fresh.parent is None and fresh.context.trace_id != TRACE_ID
    inner = one([s for s in spans if s.context.trace_id == fresh.context.trace_id], "gemrag.retrieve")
    assert ancestors(spans, inner)[-1] == RETRIEVE


def test_the_middleware_of_an_older_fastapi_continues_the_trace(monkeypatch: pytest.MonkeyPatch) -> None:
    """gemrag's own middleware, as installed when FastAPI has no native telemetry (here: FastAPI's turned off)."""
    exporter = memory_exporter()
    monkeypatch.setattr(trace_context, "fastapi_traces_requests", lambda: False)
    try:
        app = FastAPI(telemetry={"tracing": False})  # type: ignore[call-arg]
    except TypeError:  # an older FastAPI: no native telemetry to turn off
        app = FastAPI()

    @app.get("/v1/things/{name}")
    def thing(name: str) -> dict[str, str]:
        with tracing.span("gemrag.retrieve"):
            return {"name": name}

    trace_context.install(app)
    with TestClient(app) as client:
        assert client.get("/v1/things/a", headers={"traceparent": TRACEPARENT}).status_code == 200
        assert client.get("/v1/things/b").status_code == 200
    spans = exporter.get_finished_spans()
    first, second = sorted(servers(spans, "GET /v1/things/{name}"), key=lambda s: s.start_time)
    assert first.context.trace_id == TRACE_ID and first.parent.span_id == PARENT_ID
    assert (
        first.attributes["http.route"] == "/v1/things/{name}" and first.attributes["http.response.status_code"] == 200
    )
    assert first.attributes["url.path"] == "/v1/things/a"
    assert second.parent is None and second.context.trace_id != TRACE_ID
    inner = [s for s in by_name(spans, "gemrag.retrieve")]
    assert sorted(ancestors(spans, s)[0] for s in inner) == ["GET /v1/things/{name}"] * 2
