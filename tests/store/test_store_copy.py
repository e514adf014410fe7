"""``gemrag copy``: a memory copied SQLite -> PostgreSQL and back keeps every row, every build and every answer."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from backends import drop_schemas, new_schema, schema_url
from fakes import ScriptedLLM
from gemrag.cli import app
from gemrag.config import Config
from gemrag.errors import GemragError
from gemrag.store.copy import copy_memory
from test_memory_lifecycle import QUESTIONS, documents, open_memory

STRATEGIES = ("gem", "dense", "bm25", "raptor")


def _retrieval(location: str | Path, config: Config) -> tuple[dict[str, list[list[tuple[int, str, float]]]], int]:
    llm = ScriptedLLM()
    with open_memory(location, config, llm) as mem:
        got = {
            s: [[(h.node_id, h.text, round(h.score, 9)) for h in mem.retrieve(q, 4, strategy=s)] for q in QUESTIONS]
            for s in STRATEGIES
        }
    return got, len(llm.prompts)


@pytest.mark.parametrize("direction", ["sqlite->postgres", "postgres->sqlite"])
def test_copy_keeps_counts_and_retrieval(direction: str, tmp_path: Path, postgres_url: str, config: Config) -> None:
    schemas = [new_schema("copy_a"), new_schema("copy_b")]
    pg_a, pg_b = schema_url(postgres_url, schemas[0]), schema_url(postgres_url, schemas[1])
    first, second, third = (tmp_path / "a", pg_a, tmp_path / "c") if direction.startswith("sqlite") else (
        pg_a, tmp_path / "b", pg_b)  # fmt: skip
    try:
        cfg = config.model_copy(update={"memory": config.memory.model_copy(update={"chunk_tokens": 40})})
        with open_memory(first, cfg, ScriptedLLM()) as mem:
            for i, d in enumerate(documents(4)):
                mem.add_text(d, f"part {i}")
            for s in STRATEGIES:
                mem.index(s)
        want, _ = _retrieval(first, cfg)
        before, after = copy_memory(first, second)
        assert before == after and after["nodes"] > 0 and after["builds"] == len(STRATEGIES)
        got, llm_calls = _retrieval(second, cfg)
        assert got == want and llm_calls == 0
        result = CliRunner().invoke(app, ["copy", str(second), str(third)])  # and back, by the command
        assert result.exit_code == 0, result.output
        assert "4 published builds" in result.output
        assert _retrieval(third, cfg)[0] == want
        with open_memory(third, cfg, ScriptedLLM()) as mem:  # the copy keeps growing: new ids after the copied ones
            doc_id, _ = mem.add_text(documents(5)[-1], "part 4")
            assert doc_id == 5
        with pytest.raises(GemragError, match="already holds a memory"):
            copy_memory(first, third)
    finally:
        drop_schemas(postgres_url, schemas)
