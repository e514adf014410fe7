"""Streamed answers (issue 41, points 1 and 4): ``Memory.ask_stream`` (pieces, then the Answer; a cached answer
streams at once; usage metered at the end; closing stops the generation) and ``gemrag ask``'s streaming (on a
terminal, ``--stream``, ``--no-stream``, ``--json``; after any progress bar has stopped)."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from fakes import FailingMidway, HashEmbedder, StreamingLLM
from gemrag.answers.answer import Answer
from gemrag.cli import app
from gemrag.cli import ask as cli  # the module: its helpers (streams) and globals (out) are patched
from gemrag.config import Config
from gemrag.errors import MemoryNotIndexedError
from gemrag.memory import Memory
from test_memory import DOC_A

runner = CliRunner()
REPLY = "The harbour master of Port Hollow gave Amos the medal."
QUESTION = "Who gave Amos a silver medal?"


@pytest.fixture
def memory_dir(tmp_path: Path, config: Config) -> Path:
    """A memory holding DOC_A, built with the ``dense`` strategy (no LLM call)."""
    with Memory.open(tmp_path / "m", config, llm=StreamingLLM(), embedder=HashEmbedder()) as mem:
        mem.add_text(DOC_A, "lighthouse")
        mem.index("dense")
    return tmp_path / "m"


def drain(stream: Iterator[Any]) -> tuple[list[str], Answer]:
    *texts, answer = list(stream)
    assert all(isinstance(t, str) and t for t in texts) and isinstance(answer, Answer)
    return texts, answer


def test_ask_stream_yields_the_pieces_then_the_answer(memory_dir: Path, config: Config) -> None:
    llm = StreamingLLM(reply=REPLY)
    with Memory.open(memory_dir, config, llm=llm, embedder=HashEmbedder()) as mem:
        texts, answer = drain(mem.ask_stream(QUESTION, strategy="dense"))
        assert "".join(texts) == REPLY == answer.text and len(texts) == len(REPLY.split())
        assert [h.node_id for h in answer.hits] == [h.node_id for h in mem.retrieve(QUESTION, strategy="dense")]
        # metered at the end: the question's embedding and the LLM call, then the check of the (uncited) answer
        # against its context ([answer] verify, by default "flag"), counted in the usage too
        own, check = answer.usage - answer.verification_usage, answer.verification_usage
        assert own.completion_tokens == 5 and own.prompt_tokens > 5 and own.calls == 2 and check.calls == 1
        assert answer.answer_seconds > 0 and mem.store.llm_cache_counts()[1] == 2
        texts, cached = drain(mem.ask_stream(QUESTION, strategy="dense"))
        assert texts == [REPLY] and cached.text == REPLY  # a cached answer streams at once
        assert cached.usage.calls == 0 and cached.usage.completion_tokens == 0 and cached.usage.cached == 3
        whole = mem.ask(QUESTION, strategy="dense")  # the streamed answer is the whole answer's cache entry
        assert whole.text == REPLY and whole.usage.calls == 0
    assert llm.streams == 1 and llm.finished == 1 and llm.calls == 2  # the answer and its check


def test_ask_stream_checks_before_it_streams(memory_dir: Path, config: Config) -> None:
    with Memory.open(memory_dir, config, llm=StreamingLLM(), embedder=HashEmbedder()) as mem:
        with pytest.raises(MemoryNotIndexedError):
            mem.ask_stream(QUESTION, strategy="bm25")  # raised by the call, not by the first next()
        with pytest.raises(ValueError, match="choices"):
            mem.ask_stream(QUESTION, ["only one"], strategy="dense")


def test_a_multiple_choice_answer_comes_whole(memory_dir: Path, config: Config) -> None:
    llm = StreamingLLM()
    options = ["the harbour master of Port Hollow", "a puffin"]
    with Memory.open(memory_dir, config, llm=llm, embedder=HashEmbedder()) as mem:
        texts, answer = drain(mem.ask_stream(QUESTION, options, strategy="dense"))
    assert texts == [options[0]] and answer.choice == 0 and llm.streams == 0


def test_closing_the_stream_stops_the_generation_and_records_nothing(memory_dir: Path, config: Config) -> None:
    llm = StreamingLLM(reply=REPLY)
    with Memory.open(memory_dir, config, llm=llm, embedder=HashEmbedder()) as mem:
        with contextlib.closing(mem.ask_stream(QUESTION, strategy="dense")) as stream:
            assert next(stream) == "The"
        assert llm.closed_early == 1 and llm.yielded == 1
        # an abandoned answer is neither metered nor cached
        assert mem.meter.total().completion_tokens == 0 and mem.store.llm_cache_counts()[1] == 0
        _, answer = drain(mem.ask_stream(QUESTION, strategy="dense"))
        own = answer.usage - answer.verification_usage
        assert own.completion_tokens == 5 and answer.text == REPLY and llm.finished == 1


@pytest.mark.parametrize(
    ("flag", "as_json", "terminal", "expected"),
    [
        (None, False, True, True),
        (None, False, False, False),
        (True, False, False, True),
        (False, False, True, False),
        (None, True, True, False),
    ],
)
def test_when_gemrag_ask_streams(flag: bool | None, as_json: bool, terminal: bool, expected: bool) -> None:
    assert cli.streams(flag, as_json, terminal) is expected


def open_with_fakes(monkeypatch: pytest.MonkeyPatch, llm: StreamingLLM) -> StreamingLLM:
    """Every ``Memory.open`` (the CLI's) gets ``llm`` and the hash embedder (the progress factory kept)."""
    opened = Memory.open.__func__  # type: ignore[attr-defined]

    def with_fakes(cls: type[Memory], directory: Any, config: Any = None, **kwargs: Any) -> Memory:
        return opened(cls, directory, config, **{"llm": llm, "embedder": HashEmbedder(), **kwargs})

    monkeypatch.setattr(Memory, "open", classmethod(with_fakes))
    return llm


@pytest.fixture
def fake_cli(monkeypatch: pytest.MonkeyPatch, memory_dir: Path) -> StreamingLLM:
    """``gemrag ask`` opening its memory with a StreamingLLM and the hash embedder (the progress factory kept)."""
    return open_with_fakes(monkeypatch, StreamingLLM(reply=REPLY))


SMALL_CHUNKS = ["--set", "memory.chunk_tokens=30"]  # the chunk size of the `config` fixture's memories


def plain(output: str) -> str:
    """Terminal output without its ANSI styles (bold...)."""
    return re.sub(r"\x1b\[[0-9;]*m", "", output)


def ask(memory_dir: Path, *flags: str) -> Any:
    argv = ["ask", QUESTION, "--memory", str(memory_dir), "--strategy", "dense", *SMALL_CHUNKS, *flags]
    return runner.invoke(app, argv)


def test_gemrag_ask_streams_on_a_terminal(
    fake_cli: StreamingLLM, memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli, "out", Console(force_terminal=True, no_color=True, width=200))
    result = ask(memory_dir)
    assert result.exit_code == 0, result.output
    assert f"answer: {REPLY}\n" in plain(result.output) and "context" in result.output
    assert fake_cli.streams == 1 and fake_cli.finished == 1


def test_gemrag_ask_stream_and_no_stream(fake_cli: StreamingLLM, memory_dir: Path) -> None:
    result = ask(memory_dir)  # not a terminal: the whole answer, as before
    assert result.exit_code == 0 and f"answer: {REPLY}" in result.output and fake_cli.streams == 0
    result = ask(memory_dir, "--stream")  # forced (the answer is cached by now: one piece)
    assert result.exit_code == 0 and result.output.count(f"answer: {REPLY}\n") == 1
    assert fake_cli.streams == 0 and fake_cli.calls == 2  # the answer and its check, each once (then cached)
    result = ask(memory_dir, "--no-stream")
    assert result.exit_code == 0 and f"answer: {REPLY}" in result.output


def test_gemrag_ask_streams_the_generation_when_forced(fake_cli: StreamingLLM, memory_dir: Path) -> None:
    result = ask(memory_dir, "--stream")
    assert result.exit_code == 0, result.output
    assert f"answer: {REPLY}\n" in result.output and fake_cli.streams == 1 and fake_cli.yielded == len(REPLY.split())


def test_gemrag_ask_json_never_streams(
    fake_cli: StreamingLLM, memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli, "out", Console(force_terminal=True, no_color=True, width=200))
    result = ask(memory_dir, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(plain(result.output))["answer"] == REPLY and fake_cli.streams == 0
    result = ask(memory_dir, "--json", "--stream")
    assert result.exit_code == 2 and "never streams" in result.output


def test_the_answer_streams_after_the_progress_bars_stopped(
    fake_cli: StreamingLLM, tmp_path: Path, config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Memory.open(tmp_path / "fresh", config, llm=fake_cli, embedder=HashEmbedder()) as mem:
        mem.add_text(DOC_A, "lighthouse")  # nothing built: --build-missing builds it, with progress bars
    events = fake_cli.events

    @contextlib.contextmanager
    def recording(description: str, total: int) -> Iterator[Any]:
        events.append("bar")
        yield lambda *args, **kwargs: None
        events.append("bar done")

    monkeypatch.setattr(cli, "rich_progress", lambda console=None: recording)
    argv = ["ask", QUESTION, "--memory", str(tmp_path / "fresh"), "-s", "gem", "--build-missing", "--stream"]
    result = runner.invoke(app, [*argv, *SMALL_CHUNKS])  # gem: its utility questions are written under a progress bar
    assert result.exit_code == 0, result.output
    assert "bar" in events and events.index("token") > max(i for i, e in enumerate(events) if e == "bar done")
    assert f"answer: {REPLY}\n" in result.output


def test_an_llm_failing_mid_answer_is_one_error_line(memory_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    llm = FailingMidway(reply=REPLY)
    opened = Memory.open.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(
        Memory,
        "open",
        classmethod(lambda cls, d, c=None, **kw: opened(cls, d, c, **{**kw, "llm": llm, "embedder": HashEmbedder()})),
    )
    result = ask(memory_dir, "--stream")
    assert result.exit_code == 2 and "answer: The\nerror: the stream broke" in result.output
    assert llm.closed_early == 1 and "Traceback" not in result.output
