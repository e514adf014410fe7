"""Index jobs of ``gemrag serve`` on a real server: progress while running, retrieval answered during a build,
one job per namespace, writers told the namespace is busy, a failed job's error, and the job-manager itself.

The LLM is a test double that can hold a build inside an LLM call (so "during a build" is certain, not a race);
the embedder is the real MiniLM."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from fakes import ScriptedLLM
from gemrag.config import Config
from gemrag.errors import ModelNotAvailableError
from gemrag.memory.indexing import IndexReport
from gemrag.models.base import Completion, Message, Usage
from gemrag.models.onnx_embedder import OnnxMiniLMEmbedder
from gemrag.server import app as app_module
from gemrag.server import create_app
from gemrag.server.jobs import JobConflictError, JobManager, UnknownJobError
from serverhelp import job_ended, running, wait_job
from test_memory import DOC_A, DOC_B


class HeldLLM(ScriptedLLM):
    """A scripted LLM whose ``hold_at``-th call waits until :attr:`release` is set (:attr:`holding` is set
    meanwhile); ``broken`` makes every call raise ModelNotAvailableError."""

    def __init__(self, hold_at: int) -> None:
        super().__init__()
        self.hold_at = hold_at
        self.holding, self.release = threading.Event(), threading.Event()
        self.broken = False

    def complete(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
        if self.broken:
            raise ModelNotAvailableError("the test LLM is switched off")
        if self.calls + 1 == self.hold_at:
            self.holding.set()
            assert self.release.wait(60), "the test never released the held LLM call"
        return super().complete(messages, **kwargs)


@pytest.fixture
def served(tmp_path: Path, config: Config, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[httpx.Client, HeldLLM]]:
    monkeypatch.setattr(app_module, "WRITE_WAIT", 0.2)
    llm = HeldLLM(hold_at=3)
    app = create_app(tmp_path / "root", config, embedder=OnnxMiniLMEmbedder(), llm=llm)
    with running(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        try:
            yield client, llm
        finally:
            llm.release.set()


def test_retrieve_answers_while_an_index_job_runs(served: tuple[httpx.Client, HeldLLM]) -> None:
    client, llm = served
    client.post("/v1/namespaces/ns/documents", json={"documents": [{"text": DOC_A, "title": "lighthouse"}]})
    first = client.post("/v1/namespaces/ns/index", json={"strategy": "dense"}).json()
    assert wait_job(client, "ns", first["id"])["status"] == "succeeded"
    client.post("/v1/namespaces/ns/documents", json={"documents": [{"text": DOC_B, "title": "garden"}]})

    job = client.post("/v1/namespaces/ns/index", json={"strategy": "gem"})  # utility questions: LLM calls
    assert job.status_code == 202, job.text
    assert llm.holding.wait(60)
    running_job = client.get(f"/v1/namespaces/ns/jobs/{job.json()['id']}").json()
    assert running_job["status"] == "running" and running_job["finished"] is None
    stage = running_job["stages"][0]
    assert stage["total"] >= 6 and stage["completed"] == 2  # two chunks' questions done, the third held

    r = client.post("/v1/namespaces/ns/retrieve", json={"question": "Who lit the lamp?", "strategy": "dense"})
    assert r.status_code == 200 and "Amos" in r.json()["hits"][0]["text"]  # the published generation answers
    again = client.post("/v1/namespaces/ns/index", json={"strategy": "dense"})
    assert again.status_code == 409 and job.json()["id"] in again.json()["detail"]
    busy = client.post("/v1/namespaces/ns/documents", json={"documents": [{"text": "one more note"}]})
    assert busy.status_code == 409 and busy.json()["error"] == "MemoryBusyError"
    assert client.delete("/v1/namespaces/ns/documents/lighthouse").status_code == 409

    llm.release.set()
    done = wait_job(client, "ns", job.json()["id"])
    assert done["status"] == "succeeded" and done["report"]["documents"] == 2
    assert done["stages"][0]["completed"] == done["stages"][0]["total"]
    assert done["report"]["llm_calls"] > 0
    jobs = client.get("/v1/namespaces/ns/jobs").json()["jobs"]
    assert [j["id"] for j in jobs] == [first["id"], job.json()["id"]]
    gem = client.post("/v1/namespaces/ns/retrieve", json={"question": "What ate the aphids?", "strategy": "gem"})
    assert gem.status_code == 200 and gem.json()["hits"]


def test_a_failed_job_reports_its_error(served: tuple[httpx.Client, HeldLLM]) -> None:
    client, llm = served
    llm.broken = True
    client.post("/v1/namespaces/ns/documents", json={"documents": [{"text": DOC_A, "title": "lighthouse"}]})
    job = client.post("/v1/namespaces/ns/index", json={"strategy": "gem"}).json()
    done = wait_job(client, "ns", job["id"])
    assert done["status"] == "failed" and done["report"] is None
    assert done["error"] == {"type": "ModelNotAvailableError", "message": "the test LLM is switched off"}
    r = client.post("/v1/namespaces/ns/ask", json={"question": "Who lit the lamp?", "strategy": "gem"})
    assert r.status_code == 409 and r.json()["error"] == "MemoryNotIndexedError"
    llm.broken = False
    again = client.post("/v1/namespaces/ns/index", json={"strategy": "dense"}).json()  # the namespace is free again
    assert wait_job(client, "ns", again["id"])["status"] == "succeeded"


def test_job_manager_unit() -> None:
    manager, gate = JobManager(), threading.Event()
    report = IndexReport(1, 2, 2, 0, 0.5, Usage(), 0, 0)

    def run(progress: Any) -> IndexReport:
        with progress("embedding", 4) as advance:
            advance(3, tokens=7)
            advance(1, note="last")
        assert gate.wait(60), "the test never opened the gate"
        return report

    job = manager.start("a", None, run)
    with pytest.raises(JobConflictError):
        manager.start("a", None, run)
    with pytest.raises(UnknownJobError):
        manager.snapshot("b", job["id"])  # another namespace's job is not visible
    gate.set()
    snap = job_ended(manager, "a", job["id"])
    assert snap["status"] == "succeeded" and snap["report"]["chunks"] == 2
    assert snap["stages"] == [{"description": "embedding", "total": 4, "completed": 4, "tokens": 7, "note": "last"}]

    def crash(progress: Any) -> IndexReport:
        raise RuntimeError("boom")

    failed = job_ended(manager, "a", manager.start("a", None, crash)["id"])
    assert failed["status"] == "failed"
    assert failed["error"] == {"type": "InternalError", "message": "RuntimeError: boom"}


def test_namespaces_unit(tmp_path: Path, config: Config) -> None:
    from fakes import HashEmbedder
    from gemrag.errors import ConfigError
    from gemrag.server.namespaces import Namespaces, UnknownNamespaceError, check_namespace

    assert check_namespace("a-b_9") == "a-b_9"
    for bad in ["", "..", "a/b", ".x", "_x", "x" * 65, "a b", "é"]:
        with pytest.raises(ValueError, match="invalid namespace name"):
            check_namespace(bad)
    spaces = Namespaces(tmp_path / "root", config, embedder=HashEmbedder(), pool=1)
    with pytest.raises(UnknownNamespaceError):
        spaces.open("a", readonly=True)
    assert not (tmp_path / "root" / "a").exists()  # a read never creates a namespace
    with spaces.writing("a") as memory:
        memory.add_text(DOC_A, "lighthouse")
    with spaces.reading("a") as one, spaces.reading("a") as two:
        assert one is not two and one.readonly and two.readonly
    with spaces.reading("a") as again:
        assert again in (one, two)  # reused from the pool
    assert len(spaces._idle["a"]) == 1  # the pool keeps one; the other was closed
    with pytest.raises(ValueError), spaces.reading("a") as memory:
        memory.retrieve("  ")
    assert spaces._idle["a"] == [memory]  # a refused request returns its memory to the pool
    spaces.close()
    (tmp_path / "file").write_text("x", encoding="utf-8")
    with pytest.raises(ConfigError, match="root of the namespaces"):
        Namespaces(tmp_path / "file", config)
