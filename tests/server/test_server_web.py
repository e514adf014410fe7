"""The routes the web page needs (issue 56), through FastAPI's TestClient with test doubles (HashEmbedder,
ScriptedLLM): the page and its assets at ``/``; a document's text (the text provenance spans point into); the
build state per strategy and per document; cancelling an index job (cooperatively, at its next progress event);
the memory view as HTML with a question's retrieval path."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from fakes import HashEmbedder, ScriptedLLM
from gemrag.config import Config, load_config
from gemrag.server import create_app
from gemrag.server.jobs import JobManager
from serverhelp import job_ended

CAT = (
    "The lighthouse keeper lived alone on the island with a grey cat.\n\n"
    "The keeper's cat is named Pilot, and Pilot sleeps on the warm floor of the lamp room every night."
)
GARDEN = "Marta grows tomatoes in the garden. She released ladybirds to eat the aphids on her roses in June."


class GatedLLM(ScriptedLLM):
    """A ScriptedLLM whose calls wait until ``go`` is set (``entered`` is set by the first call)."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.go = threading.Event()

    def complete(self, messages: Any, **kwargs: Any) -> Any:
        self.entered.set()
        assert self.go.wait(30), "the test never released the LLM"
        return super().complete(messages, **kwargs)


def web_config() -> Config:
    """``dense`` by default, small chunks (the ``config`` fixture must be active: it isolates the environment)."""
    return load_config(None, {"strategy": "dense", "memory": {"chunk_tokens": 30}, "gem": {"questions": 2}})


@pytest.fixture
def client(tmp_path: Path, config: Config) -> Iterator[TestClient]:
    app = create_app(tmp_path / "root", web_config(), embedder=HashEmbedder(), llm=ScriptedLLM())
    with TestClient(app) as c:
        yield c
        app.state.jobs.wait(30)


def add(client: TestClient, ns: str, text: str, title: str) -> int:
    r = client.post(f"/v1/namespaces/{ns}/documents", json={"documents": [{"text": text, "title": title}]})
    assert r.status_code == 201, r.text
    return int(r.json()["documents"][0]["doc_id"])


def index(client: TestClient, ns: str, strategy: str = "dense") -> dict[str, Any]:
    r = client.post(f"/v1/namespaces/{ns}/index", json={"strategy": strategy})
    assert r.status_code == 202, r.text
    job_ended(client.app.state.jobs, ns, r.json()["id"])  # type: ignore[attr-defined]
    return client.get(f"/v1/namespaces/{ns}/jobs/{r.json()['id']}").json()


def test_the_page_and_its_assets_are_served_outside_the_schema(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert page.headers["x-frame-options"] == "DENY"
    refs = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert "web/app.js" in refs and "web/app.css" in refs
    for ref in refs:
        if ref.startswith("web/"):
            assert client.get("/" + ref).status_code == 200, ref
    assert client.get("/web/app.js").headers["content-type"].split(";")[0] in {
        "text/javascript",
        "application/javascript",
    }
    assert client.get("/web/nothing.js").status_code == 404
    paths = client.get("/openapi.json").json()["paths"]
    assert "/" not in paths and not any(p.startswith("/web") for p in paths)


def test_document_text_holds_the_spans_of_its_passages(client: TestClient) -> None:
    doc = add(client, "n", CAT, "cat")
    assert index(client, "n")["status"] == "succeeded"
    r = client.get(f"/v1/namespaces/n/documents/{doc}/text")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["text"] == CAT and body["title"] == "cat" and body["version"] == 1 and body["id"] == doc
    assert client.get("/v1/namespaces/n/documents/cat/text").json()["id"] == doc  # by title too
    hits = client.post("/v1/namespaces/n/retrieve", json={"question": "What is the keeper's cat named?"}).json()["hits"]
    for hit in hits:
        [passage] = hit["passages"]
        assert " ".join(body["text"][passage["start"] : passage["end"]].split()) == hit["text"]
    assert client.get("/v1/namespaces/n/documents/nothing/text").status_code == 404
    assert client.get("/v1/namespaces/other/documents/1/text").status_code == 404


def test_build_state_per_strategy_and_per_document(client: TestClient) -> None:
    cat = add(client, "n", CAT, "cat")
    state = client.get("/v1/namespaces/n/build-state").json()
    [doc] = state["documents"]
    assert doc["id"] == cat and doc["chunks"] == 0 and not doc["chunked"]
    assert set(doc["strategies"].values()) == {"never built"}
    assert {"dense", "gem", "bm25"} <= {s["strategy"] for s in state["strategies"]}

    index(client, "n")
    state = client.get("/v1/namespaces/n/build-state").json()
    dense = next(s for s in state["strategies"] if s["strategy"] == "dense")
    assert dense["state"] == "built" and dense["generation"] == 1 and dense["describe"] == "built (generation 1)"
    [doc] = state["documents"]
    assert doc["chunks"] >= 2 and doc["strategies"]["dense"] == "built" and doc["strategies"]["gem"] == "never built"

    garden = add(client, "n", GARDEN, "garden")
    state = client.get("/v1/namespaces/n/build-state").json()
    by_id = {d["id"]: d for d in state["documents"]}
    assert by_id[cat]["strategies"]["dense"] == "built"  # its chunks are all in the build
    assert by_id[garden]["strategies"]["dense"] == "stale" and by_id[garden]["chunks"] == 0
    dense = next(s for s in state["strategies"] if s["strategy"] == "dense")
    assert dense["state"] == "stale" and dense["new_documents"] == 1

    index(client, "n")
    assert client.delete(f"/v1/namespaces/n/documents/{cat}").status_code == 200
    state = client.get("/v1/namespaces/n/build-state").json()
    assert [d["id"] for d in state["documents"]] == [garden]
    dense = next(s for s in state["strategies"] if s["strategy"] == "dense")
    assert dense["state"] == "stale" and dense["deleted_chunks"] >= 2
    assert client.get("/v1/namespaces/none/build-state").status_code == 404


def test_cancel_stops_a_build_at_its_next_progress_event(tmp_path: Path, config: Config) -> None:
    llm = GatedLLM()
    app = create_app(tmp_path / "root", web_config(), embedder=HashEmbedder(), llm=llm)
    with TestClient(app) as client:
        add(client, "n", CAT + "\n\n" + GARDEN, "two")
        job = client.post("/v1/namespaces/n/index", json={"strategy": "gem"}).json()
        assert llm.entered.wait(30)  # the build is inside its first LLM call
        r = client.post(f"/v1/namespaces/n/jobs/{job['id']}/cancel")
        assert r.status_code == 200 and r.json()["cancel_requested"] and r.json()["status"] == "running"
        llm.go.set()
        job_ended(app.state.jobs, "n", job["id"])
        done = client.get(f"/v1/namespaces/n/jobs/{job['id']}").json()
        assert done["status"] == "cancelled" and done["report"] is None and done["error"] is None
        assert done["finished"] >= done["started"]
        calls = llm.calls
        assert calls < 4  # it stopped after the call in flight (gem asks one call per chunk, then summaries)
        state = client.get("/v1/namespaces/n/build-state").json()
        assert next(s for s in state["strategies"] if s["strategy"] == "gem")["state"] == "never built"
        again = client.post(f"/v1/namespaces/n/jobs/{job['id']}/cancel").json()  # a finished job: unchanged
        assert again["status"] == "cancelled"
        assert client.post("/v1/namespaces/n/jobs/nope/cancel").status_code == 404

        # the lock was released and the cached answer is reused: the next job builds
        job = client.post("/v1/namespaces/n/index", json={"strategy": "gem"}).json()
        job_ended(app.state.jobs, "n", job["id"])
        assert client.get(f"/v1/namespaces/n/jobs/{job['id']}").json()["status"] == "succeeded"


def test_a_job_cancelled_at_once_stops_at_its_first_progress_event() -> None:
    manager = JobManager()
    started, go = threading.Event(), threading.Event()
    ran: list[str] = []

    def slow(progress: Any) -> Any:
        started.set()
        assert go.wait(60), "the test never released the job"
        with progress("first", 3) as advance:
            for _ in range(3):
                time.sleep(0.01)
                advance()
                ran.append("item")
        raise AssertionError("a cancelled job went on")

    job = manager.start("ns", None, slow)
    assert started.wait(60), "the job never started"  # cancelled once it runs (before it: stopped while queued)
    manager.cancel("ns", job["id"])
    go.set()
    snap = job_ended(manager, "ns", job["id"])
    assert snap["status"] == "cancelled" and snap["cancel_requested"], snap
    assert ran == [] and snap["stages"] == []  # the first progress event (the stage's start) saw the flag
    other = manager.start("ns", None, lambda progress: (_ for _ in ()).throw(ValueError("bad")))  # not blocked
    assert job_ended(manager, "ns", other["id"])["status"] == "failed"


def test_the_memory_view_with_a_retrieval_path(client: TestClient) -> None:
    add(client, "n", CAT, "cat")
    add(client, "n", GARDEN, "garden")
    index(client, "n")
    r = client.get("/v1/namespaces/n/view", params={"strategy": "dense", "question": "What is the cat named?"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    blob = re.search(r'<script type="application/json" id="gemrag-data">(.*?)</script>', r.text, re.S)
    assert blob is not None
    data = json.loads(blob.group(1))
    assert data["strategy"] == "dense" and data["path"]["question"] == "What is the cat named?"
    assert data["path"]["steps"] and {n["kind"] for n in data["nodes"]} == {"chunk"}
    plain = client.get("/v1/namespaces/n/view")
    assert plain.status_code == 200 and '"path": null' in plain.text
    assert client.get("/v1/namespaces/n/view", params={"strategy": "nope"}).status_code == 400
    unbuilt = client.get("/v1/namespaces/n/view", params={"strategy": "gem", "question": "cat?"})
    assert unbuilt.status_code == 409, unbuilt.text
    assert client.get("/v1/namespaces/none/view").status_code == 404


def test_a_job_logs_its_stages_and_names_its_failed_items(tmp_path: Path, config: Config) -> None:
    """The log says the plan, each stage's start and end, the outcome; an item whose model answer stayed invalid
    is named by document and passage (the failures of ``failures_since``), in the job and in its log."""
    llm = ScriptedLLM(fail=lambda i, prompt: "questions that this passage answers" in prompt and "Pilot" in prompt)
    app = create_app(tmp_path / "root", web_config(), embedder=HashEmbedder(), llm=llm)
    with TestClient(app) as client:
        add(client, "n", CAT, "cat")
        add(client, "n", GARDEN, "garden")
        job = index(client, "n", "gem")
    assert job["status"] == "succeeded", job
    lines = [line["text"] for line in job["log"]]
    assert lines[0].startswith("queued") and lines[-1] == "succeeded"
    assert any(line.startswith("plan: ") for line in lines)
    stage = job["stages"][0]
    assert f"{stage['description']}: {stage['total']} items" in lines
    assert f"{stage['description']}: {stage['completed']} of {stage['total']} done" in lines
    assert job["failures"], job  # the chunk naming Pilot never got valid questions
    named = [f for f in job["failures"] if f["document"] is not None]  # the others: summaries quoting it
    assert named and {f["document"] for f in named} == {"cat"}
    assert all(f["passage"] >= 1 and f["message"] for f in named)
    assert any(line.startswith("failed item ('cat', passage ") for line in lines)
    assert job["report"]["failures"] >= 1


def test_build_state_names_the_default_strategy(client: TestClient) -> None:
    add(client, "n", CAT, "cat")
    assert client.get("/v1/namespaces/n/build-state").json()["default"] == "dense"  # web_config's


def test_a_chat_turn_recalls_replies_and_is_remembered(client: TestClient) -> None:
    add(client, "n", CAT, "cat")
    index(client, "n")
    r = client.post("/v1/namespaces/n/chat", json={"message": "What is the cat named?", "persona": "Keeper"})
    assert r.status_code == 200, r.text
    turn = r.json()
    assert turn["turn"] == 1 and turn["reply"] and turn["strategy"] == "dense"
    assert any("Pilot" in h["text"] for h in turn["hits"]) and turn["hits"][0]["passages"]
    second = client.post("/v1/namespaces/n/chat", json={"message": "And where does it sleep?", "persona": "Keeper"})
    assert second.json()["turn"] == 2
    history = client.get("/v1/namespaces/n/chat/Keeper").json()
    assert [e["user"] for e in history["exchanges"]] == ["What is the cat named?", "And where does it sleep?"]
    assert all(e["reply"] for e in history["exchanges"])
    assert client.get("/v1/namespaces/n/chat/Nobody").json()["exchanges"] == []
    assert client.post("/v1/namespaces/n/chat", json={"message": "hi", "persona": "a:b"}).status_code == 400
    assert client.post("/v1/namespaces/n/chat", json={"message": ""}).status_code == 422
