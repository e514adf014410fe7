"""Traces (issue 41 item 2, :mod:`gemrag.tracing`): the span tree of one ``gemrag index`` and one ``gemrag ask`` with
the GenAI token attributes, read from OpenTelemetry's in-memory exporter; the exporters the ``OTEL_*`` variables
name; and gemrag without OpenTelemetry (its import made to fail) working as before with no span."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fakes import HashEmbedder, ScriptedLLM
from gemrag import cli, tracing
from gemrag.config import Config
from gemrag.memory import Memory
from paths import REPO
from spans import ancestors, by_name, memory_exporter, one

STORY = REPO / "examples" / "quality" / "lost_in_translation.txt"
LLM_ID = "fake:scripted-llm"


@pytest.fixture
def story(tmp_path: Path) -> Path:
    """The first part of the shipped story (about 50 chunks of 30 tokens)."""
    path = tmp_path / "story.txt"
    path.write_text(STORY.read_text(encoding="utf-8")[:6000], encoding="utf-8")
    return path


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's memories get the test doubles instead of the configured models."""
    monkeypatch.setattr("gemrag.memory.facade.build_embedder", lambda settings: HashEmbedder(model_id="onnx:test"))
    monkeypatch.setattr("gemrag.memory.facade.build_llm", lambda settings, cache_dir=None: ScriptedLLM())


def test_index_and_ask_span_trees_with_token_attributes(
    tmp_path: Path, story: Path, config: Config, fakes: None
) -> None:
    exporter = memory_exporter()
    memory = str(tmp_path / "mem")
    (tmp_path / "gemrag.toml").write_text("[gem]\nchunk_tokens = 30\nquestions = 2\n")  # the config fixture's cwd
    runner = CliRunner()
    index = ["index", str(story), "--memory", memory, "--strategy", "gem"]
    result = runner.invoke(cli.app, [*index, "-q"])
    assert result.exit_code == 0, result.output
    spans = exporter.get_finished_spans()
    command = one(spans, "gemrag index")
    assert command.parent is None and command.attributes["gemrag.command"] == "index"
    run = one(spans, "gemrag.index")
    assert ancestors(spans, run) == ["gemrag index"]
    assert run.attributes["gemrag.strategy"] == "gem" and run.attributes["gemrag.memory"].endswith("mem")
    assert run.attributes["gemrag.chunks"] == run.attributes["gemrag.chunks.new"] > 10
    assert run.attributes["gemrag.summary_nodes"] > 0 and run.attributes["gen_ai.usage.input_tokens"] > 0
    for phase in ("gemrag.index.chunk", "gemrag.build gem", "gemrag.index.publish"):
        assert ancestors(spans, one(spans, phase)) == ["gemrag.index", "gemrag index"]
    assert one(spans, "gemrag.index.chunk").attributes["gemrag.chunks.made"] == run.attributes["gemrag.chunks"]
    passes = by_name(spans, "gemrag.pass utility questions")  # the chunks', then the summary nodes'
    assert [ancestors(spans, p)[:2] for p in passes] == [["gemrag.build gem", "gemrag.index"]] * 2
    chunks, summaries = sorted(passes, key=lambda p: p.start_time)
    assert chunks.attributes["gemrag.items"] == chunks.attributes["gemrag.saved"] == run.attributes["gemrag.chunks"]
    assert summaries.attributes["gemrag.items"] == run.attributes["gemrag.summary_nodes"]
    assert one(spans, "gemrag.pass eigentheme summaries").attributes["gemrag.failed"] == 0
    calls = by_name(spans, f"chat {LLM_ID}")
    in_pass = [c for c in calls if ancestors(spans, c)[0] == "gemrag.pass utility questions"]
    assert in_pass, "the utility questions' LLM batch is a child of the pass"
    batch = in_pass[0]
    assert batch.attributes["gen_ai.operation.name"] == "chat" and batch.attributes["gen_ai.system"] == "fake"
    assert batch.attributes["gen_ai.request.model"] == LLM_ID
    assert batch.attributes["gen_ai.usage.input_tokens"] > 0
    assert batch.attributes["gen_ai.usage.output_tokens"] == 5 * batch.attributes["gemrag.batch.answered"]
    embeds = by_name(spans, "embeddings onnx:test")
    assert any("gemrag.build gem" in ancestors(spans, e) for e in embeds)
    assert all(e.attributes["gen_ai.operation.name"] == "embeddings" for e in embeds)
    assert (
        sum(e.attributes["gen_ai.usage.input_tokens"] for e in embeds)
        == run.attributes["gemrag.usage.embedding_tokens"]
    )
    assert {s.context.trace_id for s in spans} == {command.context.trace_id}  # one trace

    exporter.clear()
    ask = ["ask", "Why was Korvin in a cell?", "--memory", memory, "--strategy", "gem", "--json"]
    result = runner.invoke(cli.app, ask)
    assert result.exit_code == 0, result.output
    spans = exporter.get_finished_spans()
    assert one(spans, "gemrag ask").parent is None
    asked = one(spans, "gemrag.ask")
    retrieve, answer = one(spans, "gemrag.retrieve"), one(spans, "gemrag.answer")
    assert ancestors(spans, retrieve) == ancestors(spans, answer) == ["gemrag.ask", "gemrag ask"]
    assert retrieve.attributes["gemrag.strategy"] == "gem" and retrieve.attributes["gemrag.hits"] > 0
    assert any(ancestors(spans, e)[0] == "gemrag.retrieve" for e in by_name(spans, "embeddings onnx:test"))
    chat = one(spans, f"chat {LLM_ID}")
    assert ancestors(spans, chat)[0] == "gemrag.answer"
    assert chat.attributes["gemrag.cache_hit"] is False and chat.attributes["gen_ai.usage.output_tokens"] == 5
    assert chat.attributes["gen_ai.usage.input_tokens"] > 20 and chat.attributes["gen_ai.request.max_tokens"] == 256
    assert asked.attributes["gemrag.usage.prompt_tokens"] == chat.attributes["gen_ai.usage.input_tokens"]

    exporter.clear()  # the same question again: the answer is a cache hit, with the original call's tokens
    assert runner.invoke(cli.app, ask).exit_code == 0
    again = one(exporter.get_finished_spans(), f"chat {LLM_ID}")
    assert again.attributes["gemrag.cache_hit"] is True
    assert again.attributes["gen_ai.usage.input_tokens"] == chat.attributes["gen_ai.usage.input_tokens"]


def test_a_failing_command_records_its_exit_code(tmp_path: Path, config: Config) -> None:
    exporter = memory_exporter()
    result = CliRunner().invoke(cli.app, ["ask", "who?", "--memory", str(tmp_path / "none"), "--retrieve-only"])
    assert result.exit_code == 2
    span = one(exporter.get_finished_spans(), "gemrag ask")
    assert span.attributes["gemrag.exit_code"] == 2 and span.status.status_code.name == "ERROR"


def test_without_opentelemetry_nothing_breaks_and_nothing_is_traced(
    tmp_path: Path, config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    exporter = memory_exporter()
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # `import opentelemetry` raises ImportError
    monkeypatch.setattr(tracing, "_api", tracing._UNSET)
    config.strategy = "gem"
    with Memory.open(tmp_path / "m", config, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
        mem.add_text(STORY.read_text(encoding="utf-8")[:3000], "story")
        report = mem.index()
        answer = mem.ask("Why was Korvin in a cell?")
    assert report.summary_nodes > 0 and answer.text and answer.usage.prompt_tokens > 0
    assert tracing._api is None  # the import was tried once and failed
    with tracing.span("x", {"a": 1}) as span:
        span.set_attributes({"b": 2})
    assert span is tracing.NO_SPAN and tracing.start_span("y") is tracing.NO_SPAN
    assert tracing.configure_from_env({"OTEL_TRACES_EXPORTER": "console"}) is False
    assert exporter.get_finished_spans() == ()


def test_a_process_without_opentelemetry_imports_none_of_it(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['opentelemetry'] = None\n"
        "from gemrag import tracing\n"
        "from gemrag.models.cache import CachedLLM\n"
        "with tracing.span('x'):\n    pass\n"
        "print(tracing.configure_from_env({'OTEL_TRACES_EXPORTER': 'console'}))\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry.')))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["False", "[]"]


def test_exporters_come_from_the_otel_variables() -> None:
    names = tracing._exporter_names
    assert names({}) == [] and names({"OTEL_TRACES_EXPORTER": "none"}) == []
    assert names({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4317"}) == ["otlp_proto_grpc"]
    http = {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}
    assert names(http) == ["otlp_proto_http"]
    assert names({"OTEL_TRACES_EXPORTER": "console,otlp"}) == ["console", "otlp_proto_grpc"]
    with pytest.raises(ValueError, match="grpc or http/protobuf"):
        names({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "thrift"})


def test_the_console_exporter_named_by_otel_traces_exporter_prints_the_spans(tmp_path: Path) -> None:
    pytest.importorskip("opentelemetry.sdk.trace")
    code = (
        "from gemrag import tracing\n"
        "assert tracing.configure_from_env()\n"
        "with tracing.span('gemrag.test', {'gemrag.strategy': 'dense'}):\n    pass\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")} | {"OTEL_TRACES_EXPORTER": "console"}
    env["OTEL_SERVICE_NAME"] = "my-gemrag"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 0, run.stderr
    assert '"name": "gemrag.test"' in run.stdout and '"gemrag.strategy": "dense"' in run.stdout
    assert '"service.name": "my-gemrag"' in run.stdout


def test_an_unknown_exporter_is_a_one_line_warning_and_the_command_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("opentelemetry.sdk.trace")
    code = "from gemrag.cli import app\napp(['config', '--help'])\n"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")} | {"OTEL_TRACES_EXPORTER": "zipkin2"}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 0, run.stderr
    assert "warning: traces are off: OTEL_TRACES_EXPORTER names 'zipkin2'" in " ".join(run.stderr.split())


def test_a_streamed_answer_is_one_ask_span_with_its_model_call_and_leaks_no_context(
    tmp_path: Path, config: Config
) -> None:
    exporter = memory_exporter()
    config.strategy = "dense"
    with Memory.open(tmp_path / "m", config, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
        mem.add_text(STORY.read_text(encoding="utf-8")[:3000], "story")
        mem.index()
        exporter.clear()
        with tracing.span("consumer"):
            items = []
            for item in mem.ask_stream("Why was Korvin in a cell?"):
                with tracing.span("between"):  # the consumer's own work between two pieces
                    items.append(item)
    spans = exporter.get_finished_spans()
    ask = one(spans, "gemrag.ask")
    assert ask.attributes["gemrag.stream"] is True and ancestors(spans, ask) == ["consumer"]
    assert ancestors(spans, one(spans, "gemrag.retrieve")) == ["gemrag.ask", "consumer"]
    chat = one(spans, f"chat {LLM_ID}")
    assert ancestors(spans, chat) == ["gemrag.ask", "consumer"] and chat.attributes["gemrag.stream"] is True
    assert chat.attributes["gen_ai.usage.output_tokens"] == 5 and chat.attributes["gemrag.cache_hit"] is False
    assert ask.attributes["gemrag.usage.completion_tokens"] == 5 == items[-1].usage.completion_tokens
    assert {tuple(ancestors(spans, s)) for s in by_name(spans, "between")} == {("consumer",)}


def test_each_within_makes_the_span_current_per_step_and_ends_it_when_closed_early() -> None:
    """:func:`gemrag.tracing.each_within`: every step's spans are children of the span, none across a yield; closing
    the stream early closes the work it reads and ends the span (as ``ask_stream`` relies on)."""
    exporter = memory_exporter()
    closed: list[bool] = []

    def work() -> Iterator[int]:
        try:
            for i in range(5):
                with tracing.span(f"step {i}"):
                    pass
                yield i
        finally:
            closed.append(True)

    seen: list[int] = []
    outer = tracing.start_span("outer")
    stream = tracing.each_within(outer, work(), seen.append)
    assert next(stream) == 0 and next(stream) == 1
    with tracing.span("between"):  # the consumer's own work: not under the span
        pass
    stream.close()
    spans = exporter.get_finished_spans()
    assert closed == [True] and seen == [0, 1] and [s.name for s in by_name(spans, "outer")] == ["outer"]
    assert ancestors(spans, one(spans, "step 1")) == ["outer"] and ancestors(spans, one(spans, "between")) == []
