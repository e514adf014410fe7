"""``gemrag demo --memory postgresql://...`` answers as ``gemrag demo`` on SQLite (issue 27's "Done when").

With the unit-test doubles (HashEmbedder, ScriptedLLM), the demo runs on a fresh memory of each backend; every
prompt the model receives (utility questions, summaries, and each answer's prompt holding the retrieved context)
is recorded. The same prompts in the same order, and the same printed answers, mean the PostgreSQL memory built the
same graph and retrieved the same contexts: with greedy decoding a real model then gives the same answers (the
real-model run is recorded in docs/results.md).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from backends import drop_schemas, new_schema, schema_url
from fakes import HashEmbedder, ScriptedLLM
from gemrag import cli


def run_demo(location: str, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], list[str]]:
    """The demo's printed answer lines (each with the line of passages it rests on) and the prompts its model
    received."""
    llm = ScriptedLLM()  # keeps every prompt it was sent
    monkeypatch.setattr("gemrag.memory.facade.build_embedder", lambda settings: HashEmbedder(model_id="onnx:test"))
    monkeypatch.setattr("gemrag.memory.facade.build_llm", lambda settings, cache_dir=None: llm)
    result = CliRunner().invoke(
        cli.app, ["demo", "--memory", location, "--limit", "3", "-q", "--set", "memory.chunk_tokens=100"]
    )
    assert result.exit_code == 0, result.output
    answers = [
        line.strip() for line in result.stdout.splitlines() if re.match(r"\s*(answer [A-D-], gold|rests on:)", line)
    ]
    return answers, llm.prompts


def test_demo_on_postgresql_answers_as_on_sqlite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, postgres_url: str
) -> None:
    monkeypatch.chdir(tmp_path)
    sqlite_answers, sqlite_prompts = run_demo(str(tmp_path / "demo"), monkeypatch)
    schema = new_schema("demo")
    try:
        pg_answers, pg_prompts = run_demo(schema_url(postgres_url, schema), monkeypatch)
    finally:
        drop_schemas(postgres_url, [schema])
    assert len(sqlite_answers) == 6 and pg_answers == sqlite_answers
    # each answer with the passage it rests on (issue 39): a chunk of the story, its number and character span
    rests = sqlite_answers[1::2]
    assert all(re.match(r"rests on: \[\d\] lost_in_translation\.txt #\d+ \[\d+:\d+\)", line) for line in rests), rests
    assert len(sqlite_prompts) > 3 and pg_prompts == sqlite_prompts
