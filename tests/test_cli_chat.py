"""``gemrag chat`` through the CLI (typer's CliRunner) with test doubles: a conversation on standard input, /quit
and end of input, continuing in a second run, and one-line errors for a missing memory or an unknown strategy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from fakes import HashEmbedder, ScriptedLLM
from gemrag import cli
from gemrag.chat import exchange_source
from gemrag.memory import Memory

runner = CliRunner()


@pytest.fixture
def fake_models(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Any]:
    """Every Memory the CLI opens gets a scripted LLM (``llm_args`` passed to it) and the hash embedder."""
    original = Memory.open.__func__  # type: ignore[attr-defined]
    settings: dict[str, Any] = {"llm_args": {}}

    def open_with_fakes(cls: type[Memory], directory: Any, config: Any = None, **kwargs: Any) -> Memory:
        llm = ScriptedLLM(**settings["llm_args"])
        return original(cls, directory, config, llm=llm, embedder=HashEmbedder())

    monkeypatch.setattr(Memory, "open", classmethod(open_with_fakes))
    monkeypatch.chdir(tmp_path)
    return settings


def _chat(memory: Path, lines: str, *extra: str) -> Any:
    args = ["chat", "--memory", str(memory), "--persona", "Ava", "--strategy", "dense", *extra]
    return runner.invoke(cli.app, args, input=lines)


def test_a_conversation_is_stored_and_continued(tmp_path: Path, fake_models: dict[str, Any]) -> None:
    memory = tmp_path / "mem"
    result = _chat(memory, "My boat is called Petrel.\n\nNice day.\n/quit\nnever read\n", "--create")
    assert result.exit_code == 0, result.output
    assert result.output.count("Ava> ") == 2  # an empty line is skipped, nothing after /quit is read
    result = _chat(memory, "What is my boat called?\n", "--show-memories")  # ends at end of input
    assert result.exit_code == 0, result.output
    assert "turn 3" in result.output and "Ava> I remember: [turn 1," in result.output
    assert "Petrel" in result.output
    with Memory.open(memory) as mem:
        assert [d["source"] for d in mem.store.documents()] == [exchange_source("Ava", t) for t in (1, 2, 3)]
        assert mem.store.unchunked_documents() == []  # indexed as the chat went


def test_clear_errors(tmp_path: Path, fake_models: dict[str, Any]) -> None:
    result = _chat(tmp_path / "missing", "hello\n")
    assert result.exit_code == 2 and "not a gemrag memory" in result.output and "--create" in result.output
    assert not (tmp_path / "missing").exists()
    result = runner.invoke(cli.app, ["chat", "-m", str(tmp_path / "m"), "-p", "Ava", "-s", "nope", "--create"])
    assert result.exit_code == 2 and "unknown strategy 'nope'" in result.output
    result = _chat(tmp_path / "m", "hello\n", "--create", "--persona-file", str(tmp_path / "none.txt"))
    assert result.exit_code == 2 and "none.txt" in result.output and "Traceback" not in result.output


def test_ctrl_c_exits_130_and_keeps_what_was_said(tmp_path: Path, fake_models: dict[str, Any]) -> None:
    fake_models["llm_args"] = {"interrupt_after": 1}  # Ctrl-C while the second reply is generated
    result = _chat(tmp_path / "mem", "First message.\nSecond message.\nnever read\n", "--create")
    assert result.exit_code == 130 and "run `gemrag chat` again" in result.output
    fake_models["llm_args"] = {}
    with Memory.open(tmp_path / "mem") as mem:
        texts = [mem.store.document_text(int(d["id"])) for d in mem.store.documents()]
    assert len(texts) == 2 and "Ava:" in texts[0] and texts[1].strip().endswith("User: Second message.")
