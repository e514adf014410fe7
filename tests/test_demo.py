"""``gemrag demo`` shows GEM-RAG whatever strategy the configuration makes the default."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory, cli
from gemrag.cli.demo import DEMO_STRATEGY


@pytest.mark.parametrize("how", ["env", "file"])
def test_the_demo_builds_and_asks_gem_when_another_strategy_is_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """With ``dense`` made the default by ``GEMRAG_STRATEGY`` or a ``gemrag.toml``, the demo still builds GEM-RAG's
    memory (utility questions and eigentheme summary nodes, so LLM calls at index time) and answers from it; dense
    is never built."""
    llm = ScriptedLLM()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("gemrag.memory.facade.build_embedder", lambda settings: HashEmbedder(model_id="onnx:test"))
    monkeypatch.setattr("gemrag.memory.facade.build_llm", lambda settings, cache_dir=None: llm)
    args = ["demo", "--memory", str(tmp_path / "demo"), "--limit", "2", "-q", "--set", "memory.chunk_tokens=100"]
    if how == "env":
        monkeypatch.setenv("GEMRAG_STRATEGY", "dense")
    else:
        (tmp_path / "gemrag.toml").write_text('strategy = "dense"\n', encoding="utf-8")
        args += ["--config", str(tmp_path / "gemrag.toml")]
    result = CliRunner().invoke(cli.app, args)
    assert result.exit_code == 0, result.output
    summary_nodes = re.search(r"index: \d+ chunks, (\d+) summary nodes", result.stdout)
    assert summary_nodes and int(summary_nodes.group(1)) > 0, result.stdout
    with Memory.open(tmp_path / "demo", embedder=HashEmbedder(model_id="onnx:test")) as mem:
        built = mem.stats()["strategies"]
    assert DEMO_STRATEGY == "gem" and built["gem"].startswith("built") and built["dense"] == "never built", built
