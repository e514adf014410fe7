"""``POST .../ask`` with ``"stream": true`` (issue 41): Server-Sent Events — token events, then one answer event
with the hits and usage — through FastAPI's TestClient, a real uvicorn server (a client that disconnects stops the
generation) and an OpenAI-compatible backend (the stand-in server streaming its chunks)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from fakes import FailingMidway, HashEmbedder, StreamingLLM
from gemrag.config import Config
from gemrag.memory import Memory
from gemrag.models.openai.backend import OpenAILLM
from gemrag.server import create_app
from serverhelp import running
from standin_openai import USAGE, StandIn, serve
from test_memory import DOC_A

REPLY = "The harbour master of Port Hollow gave Amos the medal."
ASK = {"question": "Who gave Amos a silver medal?", "strategy": "dense", "budget": 3, "stream": True}


@pytest.fixture
def config(config: Config) -> Config:
    """The shared test configuration with answer verification off: these tests count the answer's own model calls
    and tokens (verification's extra calls are tested in tests/test_verification.py)."""
    return config.model_copy(update={"answer": config.answer.model_copy(update={"verify": "off"})})


@pytest.fixture
def root(tmp_path: Path, config: Config) -> Path:
    """A server root with namespace ``ns`` holding DOC_A, built with ``dense`` (hash embedder, no LLM call)."""
    with Memory.open(tmp_path / "root" / "ns", config, llm=StreamingLLM(), embedder=HashEmbedder()) as mem:
        mem.add_text(DOC_A, "lighthouse")
        mem.index("dense")
    return tmp_path / "root"


def events(lines: Iterator[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(event name, data)`` of each Server-Sent Event read from ``lines``."""
    name, data = None, None
    for line in lines:
        if line.startswith("event: "):
            name = line[len("event: ") :]
        elif line.startswith("data: "):
            data = json.loads(line[len("data: ") :])
        elif line == "" and name is not None:
            yield name, data  # type: ignore[misc]
            name, data = None, None


def test_tokens_then_one_answer_event(root: Path, config: Config) -> None:
    llm = StreamingLLM(reply=REPLY)
    with TestClient(create_app(root, config, embedder=HashEmbedder(), llm=llm)) as client:
        with client.stream("POST", "/v1/namespaces/ns/ask", json=ASK) as r:
            assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
            got = list(events(r.iter_lines()))
        plain = client.post("/v1/namespaces/ns/ask", json={**ASK, "stream": False}).json()
    names = [name for name, _ in got]
    assert names == ["token"] * len(REPLY.split()) + ["answer"]
    answer = got[-1][1]
    assert "".join(data["text"] for _, data in got[:-1]) == REPLY == answer["text"]
    assert answer["choice"] is None and len(answer["hits"]) == 3 and "silver medal" in answer["hits"][0]["text"]
    assert answer["usage"]["completion_tokens"] == 5 and answer["usage"]["prompt_tokens"] > 5
    assert plain["text"] == REPLY and plain["hits"] == answer["hits"]  # the same answer as without a stream
    # verification off: the two answers' calls only (the server's read-only memories keep no LLM cache)
    assert llm.streams == 1 and llm.calls == 2


def test_a_failure_before_the_first_token_is_an_error_response(root: Path, config: Config) -> None:
    with TestClient(create_app(root, config, embedder=HashEmbedder(), llm=StreamingLLM())) as client:
        r = client.post("/v1/namespaces/nobody/ask", json=ASK)
        assert r.status_code == 404 and r.json()["error"] == "UnknownNamespaceError"
        r = client.post("/v1/namespaces/ns/ask", json={**ASK, "strategy": "bm25"})
        assert r.status_code == 409 and r.json()["error"] == "MemoryNotIndexedError"


def test_a_multiple_choice_answer_streams_as_one_token(root: Path, config: Config) -> None:
    choices = ["the harbour master of Port Hollow", "a puffin"]
    app = create_app(root, config, embedder=HashEmbedder(), llm=StreamingLLM())
    body = {**ASK, "choices": choices}
    with TestClient(app) as client, client.stream("POST", "/v1/namespaces/ns/ask", json=body) as r:
        got = list(events(r.iter_lines()))
    assert got[0] == ("token", {"text": choices[0]}) and got[1][0] == "answer" and got[1][1]["choice"] == 0


def test_a_client_that_disconnects_stops_the_generation(root: Path, config: Config) -> None:
    # at least 100 s when read to its end (the words' delays; load only lengthens it), longer than the 60 s the test
    # waits for the stream to be closed: only a server that noticed the disconnect ends it in time
    words, bound = 5000, 60.0
    llm = StreamingLLM(reply=" ".join(f"w{i}" for i in range(words)), delay=0.02)
    app = create_app(root, config, embedder=HashEmbedder(), llm=llm)
    with running(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        with client.stream("POST", "/v1/namespaces/ns/ask", json=ASK) as r:
            assert r.status_code == 200
            name, data = next(events(r.iter_lines()))
            assert (name, data) == ("token", {"text": "w0"})
        deadline = time.monotonic() + bound
        while llm.closed_early == 0 and llm.finished == 0:
            assert time.monotonic() < deadline, f"the generation went on {bound} s after the client went away"
            time.sleep(0.02)
        assert llm.closed_early == 1 and llm.finished == 0 and llm.yielded < words
        # the model is free again (the server's lock released): the next question is answered
        llm.delay = 0.0
        r = client.post("/v1/namespaces/ns/ask", json={**ASK, "stream": False}, timeout=60)
        assert r.status_code == 200 and r.json()["usage"]["completion_tokens"] == 5 and llm.calls == 2


def test_streaming_from_an_openai_compatible_backend(root: Path, config: Config) -> None:
    state = StandIn(slots=1, latency=0.0)
    state.llm = StreamingLLM(reply=REPLY)
    server, url = serve(state)
    try:
        llm = OpenAILLM("standin", base_url=url, max_retries=0)
        app = create_app(root, config, embedder=HashEmbedder(), llm=llm)
        with TestClient(app) as client, client.stream("POST", "/v1/namespaces/ns/ask", json=ASK) as r:
            got = list(events(r.iter_lines()))
    finally:
        server.shutdown()
        server.server_close()
    assert [name for name, _ in got] == ["token"] * len(REPLY.split()) + ["answer"]
    answer = got[-1][1]
    assert "".join(data["text"] for _, data in got[:-1]) == REPLY == answer["text"]
    usage = answer["usage"]
    assert (usage["prompt_tokens"], usage["completion_tokens"]) == (USAGE["prompt_tokens"], USAGE["completion_tokens"])
    assert state.streams_ended() == (1, 0) and json.loads(next(iter(state.bodies)))["stream"] is True


def test_the_openapi_schema_documents_the_event_stream(root: Path, config: Config) -> None:
    with TestClient(create_app(root, config, embedder=HashEmbedder(), llm=StreamingLLM())) as client:
        spec = client.get("/openapi.json").json()
    content = spec["paths"]["/v1/namespaces/{ns}/ask"]["post"]["responses"]["200"]["content"]
    assert set(content) == {"application/json", "text/event-stream"}


def test_a_failure_after_the_first_token_is_an_error_event(root: Path, config: Config) -> None:
    llm = FailingMidway(reply=REPLY)
    app = create_app(root, config, embedder=HashEmbedder(), llm=llm)
    with TestClient(app) as client, client.stream("POST", "/v1/namespaces/ns/ask", json=ASK) as r:
        got = list(events(r.iter_lines()))
    assert got == [
        ("token", {"text": "The"}),
        ("error", {"error": "GemragError", "detail": "the stream broke", "status": 400}),
    ]
    assert llm.closed_early == 1
