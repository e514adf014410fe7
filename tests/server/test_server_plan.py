"""The cost plan on ``gemrag serve``: ``POST .../index/plan`` returns it and starts nothing, and an index job records
the same plan before its first LLM call; its calls are the build's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from fakes import HashEmbedder, ScriptedLLM
from gemrag.config import Config
from gemrag.server import create_app
from serverhelp import running, wait_job
from test_memory import DOC_A, DOC_B


@pytest.fixture
def served(tmp_path: Path, config: Config) -> Iterator[tuple[httpx.Client, ScriptedLLM]]:
    llm = ScriptedLLM()
    app = create_app(tmp_path / "root", config, embedder=HashEmbedder(), llm=llm)
    with running(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        yield client, llm


def test_plan_then_job(served: tuple[httpx.Client, ScriptedLLM]) -> None:
    client, llm = served
    assert client.post("/v1/namespaces/ns/index/plan", json={"strategy": "remem"}).status_code == 404  # no memory
    client.post("/v1/namespaces/ns/documents", json={"documents": [{"text": DOC_A, "title": "lighthouse"}]})
    r = client.post("/v1/namespaces/ns/index/plan", json={"strategy": "remem"})
    assert r.status_code == 200, r.text
    plan = r.json()
    assert plan["calls"] > 0 and plan["calls"] == 2 * plan["chunks"] and plan["strategies"][0]["strategy"] == "remem"
    assert [p["description"] for p in plan["strategies"][0]["passes"]] == ["OpenIE named entities", "OpenIE triples"]
    assert llm.calls == 0 and client.get("/v1/namespaces/ns/jobs").json()["jobs"] == []  # nothing started
    job = client.post("/v1/namespaces/ns/index", json={"strategy": "remem"}).json()
    done = wait_job(client, "ns", job["id"])
    assert done["status"] == "succeeded" and done["plan"]["calls"] == plan["calls"] == llm.calls
    assert done["report"]["llm_calls"] == plan["calls"]
    client.post("/v1/namespaces/ns/documents", json={"documents": [{"text": DOC_B, "title": "garden"}]})
    again = client.post("/v1/namespaces/ns/index/plan", json={"strategy": "remem"}).json()
    new = again["strategies"][0]["chunks"]
    assert 0 < new < again["chunks"] and again["calls"] == 2 * new  # only the new document's chunks
    bad = client.post("/v1/namespaces/ns/index/plan", json={"strategy": "nope"})
    assert bad.status_code in (400, 422)
