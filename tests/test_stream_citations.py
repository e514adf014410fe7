"""Streamed answers are cited as whole ones (issues 39 and 41): ``Memory.ask_stream``'s final Answer, the server's
SSE ``answer`` event and ``gemrag ask --stream`` carry the cited fields (``cited``, ``dropped_citations``,
``citations``) and the hits' provenance that ``ask`` gives; the streamed pieces are the model's raw text, markers
included, also one naming no passage (dropped and counted in the final answer)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from fakes import HashEmbedder, StreamingLLM
from gemrag import cli
from gemrag.config import Config
from gemrag.memory import Memory
from gemrag.server import create_app
from server.test_server_stream import events
from test_ask_stream import drain, open_with_fakes
from test_memory import DOC_A

QUESTION = "Who gave Amos a silver medal?"
REPLY = "The harbour master of Port Hollow gave Amos the medal [1] [7]."
"""The model's answer: one marker naming the first of the 3 context passages, one naming no passage."""
CLEAN = "The harbour master of Port Hollow gave Amos the medal [1]."


@pytest.fixture
def memory_dir(tmp_path: Path, config: Config) -> Path:
    """A memory holding DOC_A (source ``lighthouse.txt``), built with ``dense`` (no LLM call)."""
    with Memory.open(tmp_path / "root" / "ns", config, llm=StreamingLLM(), embedder=HashEmbedder()) as mem:
        mem.add_text(DOC_A, "lighthouse", source="lighthouse.txt")
        mem.index("dense")
    return tmp_path / "root" / "ns"


def test_ask_stream_answers_with_the_citations_and_provenance_of_ask(memory_dir: Path, config: Config) -> None:
    llm = StreamingLLM(reply=REPLY)
    with Memory.open(memory_dir, config, llm=llm, embedder=HashEmbedder()) as mem:
        texts, streamed = drain(mem.ask_stream(QUESTION, budget=3, strategy="dense"))
        whole = mem.ask(QUESTION, budget=3, strategy="dense")  # the streamed answer's cache entry
    assert "".join(texts) == REPLY and llm.streams == 1 and whole.usage.calls == 0  # raw markers, as written
    assert streamed.text == whole.text == CLEAN
    assert (streamed.cited, streamed.dropped_citations) == (whole.cited, whole.dropped_citations) == ([1], 1)
    assert [h.node_id for h in streamed.citations] == [whole.hits[0].node_id]
    assert [h.provenance for h in streamed.hits] == [h.provenance for h in whole.hits]
    [passage] = streamed.citations[0].provenance.passages  # type: ignore[union-attr]
    assert passage.document.source == "lighthouse.txt" and passage.start is not None


def test_the_sse_answer_event_carries_the_citations_of_the_whole_answer(memory_dir: Path, config: Config) -> None:
    ask: dict[str, Any] = {"question": QUESTION, "strategy": "dense", "budget": 3, "stream": True}
    llm = StreamingLLM(reply=REPLY)
    with TestClient(create_app(memory_dir.parent, config, embedder=HashEmbedder(), llm=llm)) as client:
        with client.stream("POST", "/v1/namespaces/ns/ask", json=ask) as r:
            got = list(events(r.iter_lines()))
        whole = client.post("/v1/namespaces/ns/ask", json={**ask, "stream": False}).json()
    assert "".join(data["text"] for name, data in got if name == "token") == REPLY
    name, answer = got[-1]
    assert name == "answer" and answer["text"] == whole["text"] == CLEAN
    for key in ("cited", "dropped_citations", "citations", "hits"):
        assert answer[key] == whole[key], key
    assert answer["cited"] == [1] and answer["dropped_citations"] == 1
    [cited] = answer["citations"]
    assert cited["marker"] == 1 and cited["node_id"] == answer["hits"][0]["node_id"]
    assert cited["passages"][0]["document"]["source"] == "lighthouse.txt" and cited["strategy"] == "dense"


def test_gemrag_ask_stream_prints_the_sources_under_the_streamed_text(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm = open_with_fakes(monkeypatch, StreamingLLM(reply=REPLY))
    argv = ["ask", QUESTION, "--memory", str(memory_dir), "--strategy", "dense", "--budget", "3"]
    streamed = CliRunner().invoke(cli.app, [*argv, "--set", "memory.chunk_tokens=30", "--stream"])
    whole = CliRunner().invoke(cli.app, [*argv, "--set", "memory.chunk_tokens=30", "--no-stream"])
    assert streamed.exit_code == 0 and whole.exit_code == 0, streamed.output + whole.output
    assert llm.streams == 1 and f"answer: {REPLY}\n" in streamed.output and f"answer: {CLEAN}\n" in whole.output

    def sources(output: str) -> str:  # from "sources:" to the context table's title
        return " ".join(output[output.index("\nsources:\n") : output.index("┏")].split()[:-1])

    assert sources(streamed.output) == sources(whole.output)
    assert sources(streamed.output).startswith("sources: [1] lighthouse.txt #")
    assert sources(streamed.output).endswith("(1 marker named no context passage and was dropped)")
