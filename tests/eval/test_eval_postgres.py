"""``gemrag eval --memory postgresql://...?schema=PREFIX`` on a real PostgreSQL server (the session's ``pgserver``):
every evaluation memory is a schema ``PREFIX_<name>``, the records are those of the SQLite run, ablation memories
are seeded from their base memory's caches, an interrupted build costs what an uninterrupted one does, and a rerun
makes no model call. Test doubles stand in for the models, as in ``test_eval_runner.py``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_eval_runner import quality_file, read_records
from typer.testing import CliRunner

from backends import drop_schemas, new_schema, schema_url
from fakes import HashEmbedder, ScriptedLLM
from gemrag.config import Config
from gemrag.eval.memories import EvalMemories
from gemrag.eval.runner import run_eval
from gemrag.store.postgres.connect import PgLocation, child_schema

UTILITY = "questions that this passage answers"
"""A phrase of gem's utility-question prompt."""
TIMINGS = ("retrieval_seconds", "answer_seconds", "reply_seconds")


def _schemas(url: str, prefix: str) -> list[str]:
    """The schemas of the server holding a gemrag memory (a ``meta`` table) whose name starts with ``prefix_``."""
    import psycopg

    with psycopg.connect(PgLocation.parse(url).conninfo, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT table_schema FROM information_schema.tables WHERE table_name = 'meta' AND table_schema LIKE %s",
            (prefix.replace("_", "\\_") + "\\_%",),
        ).fetchall()
    return sorted(str(r[0]) for r in rows)


@pytest.fixture
def root(postgres_url: str) -> Iterator[str]:
    """A ``postgresql://...?schema=PREFIX`` URL of a fresh prefix; its memories' schemas are dropped after."""
    prefix = new_schema("ev")
    yield schema_url(postgres_url, prefix)
    drop_schemas(postgres_url, _schemas(postgres_url, prefix))


def _without_timings(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k not in TIMINGS} for r in records]


def test_eval_on_postgres_gives_the_sqlite_records_and_resumes(tmp_path: Path, config: Config, root: str) -> None:
    path = quality_file(tmp_path)
    common: dict[str, Any] = {"config": config, "budget": 2, "plots": False}
    runs = ["gem", "firstchunks"]
    sqlite = run_eval(
        "quality", path, runs, out_dir=tmp_path / "a", llm=ScriptedLLM(), embedder=HashEmbedder(), **common
    )
    pg_llm = ScriptedLLM()
    out = tmp_path / "b"
    pg = run_eval("quality", path, runs, out_dir=out, llm=pg_llm, embedder=HashEmbedder(), memory_root=root, **common)
    # the memories are schemas PREFIX_<name> (hashed: the names hold '-'); nothing of them under --out
    prefix = PgLocation.parse(root).schema
    names = ["quality_tiny-garden", "quality_tiny-light"]
    assert _schemas(root, prefix) == sorted(child_schema(prefix, n, distinct=True) for n in names)
    assert not (out / "memories").exists()
    assert _without_timings(read_records(out)) == _without_timings(read_records(tmp_path / "a"))
    assert len(pg.records) == 8
    for key in ("prompt_tokens", "completion_tokens", "embedding_tokens", "llm_calls"):
        assert [e[key] for e in pg.index] == [e[key] for e in sqlite.index]
    assert {e["memory"] for e in pg.index} == set(names)  # index.jsonl names memories as on SQLite
    assert pg.summary.aggregates["gem"]["accuracy"] == sqlite.summary.aggregates["gem"]["accuracy"]
    assert pg_llm.calls > 0
    again = ScriptedLLM()  # a rerun finds every record and makes no model call
    run_eval("quality", path, runs, out_dir=out, llm=again, embedder=HashEmbedder(), memory_root=root, **common)
    assert again.calls == 0 and len(read_records(out)) == 8


def test_ablation_memories_on_postgres_reuse_the_base_memory_cache(tmp_path: Path, config: Config, root: str) -> None:
    """``_seed_caches`` on schemas: the eigen ablation's memory asks the model no utility question again."""
    path, out, llm = quality_file(tmp_path), tmp_path / "out", ScriptedLLM()
    common: dict[str, Any] = dict(config=config, budget=2, out_dir=out, llm=llm, embedder=HashEmbedder())
    run_eval("quality", path, ["gem"], memory_root=root, plots=False, **common)
    base_calls = len(llm.prompts)
    assert sum(UTILITY in p for p in llm.prompts) > 0
    res = run_eval("quality", path, ["gem"], ablation={"eigen": ["1"]}, memory_root=root, plots=False, **common)
    assert not any(UTILITY in p for p in llm.prompts[base_calls:])
    memories = EvalMemories(out, root)
    assert memories.exists("quality_tiny-light-eigen-1") and memories.exists("quality_tiny-garden-eigen-1")
    index = {(e["group"], e["strategy"]): e for e in res.index}
    assert index[("light", "gem[eigen=1]")]["prompt_tokens"] > 0  # the full cost, cache hits included
    assert len(_schemas(root, PgLocation.parse(root).schema)) == 4  # two stories x (base, eigen=1)


def test_an_interrupted_build_on_postgres_costs_the_whole_build(tmp_path: Path, config: Config, root: str) -> None:
    """attempts.jsonl on schemas: the calls of the interrupted attempt stay in the resumed build's cost."""
    path = quality_file(tmp_path)
    kwargs: dict[str, Any] = {"config": config, "budget": 2, "plots": False, "answer": False}
    whole = run_eval(
        "quality", path, ["gem"], llm=ScriptedLLM(), embedder=HashEmbedder(), out_dir=tmp_path / "a", **kwargs
    )
    out = tmp_path / "b"
    with pytest.raises(KeyboardInterrupt):
        run_eval(
            "quality",
            path,
            ["gem"],
            llm=ScriptedLLM(interrupt_after=2),
            embedder=HashEmbedder(),
            out_dir=out,
            memory_root=root,
            **kwargs,
        )
    resumed_llm = ScriptedLLM()
    resumed = run_eval(
        "quality", path, ["gem"], llm=resumed_llm, embedder=HashEmbedder(), out_dir=out, memory_root=root, **kwargs
    )
    keys = ("prompt_tokens", "completion_tokens", "embedding_tokens", "llm_calls")
    assert resumed_llm.calls < sum(e["llm_calls"] for e in whole.index)
    assert {e["group"]: {k: e[k] for k in keys} for e in resumed.index} == {
        e["group"]: {k: e[k] for k in keys} for e in whole.index
    }
    attempts = [json.loads(line) for line in (out / "attempts.jsonl").read_text().splitlines()]
    first, again, second = (a["memory"] for a in attempts)  # interrupted, resumed, the other memory
    assert first == again and {first, second} == {"quality_tiny-garden", "quality_tiny-light"}


def test_the_eval_command_takes_memory(
    tmp_path: Path, config: Config, root: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``gemrag eval ... --memory URL`` passes the URL on (the models are the doubles)."""
    from gemrag import cli
    from gemrag.eval import runner as runner_module

    monkeypatch.setattr(runner_module, "build_embedder", lambda settings: HashEmbedder())
    monkeypatch.setattr(runner_module, "build_llm", lambda settings, cache_dir=None: ScriptedLLM())
    out = tmp_path / "out"
    args = ["eval", "quality", str(quality_file(tmp_path)), "--strategies", "firstchunks", "--no-plots", "-q"]
    result = CliRunner().invoke(cli.app, [*args, "--budget", "2", "--out", str(out), "--memory", root])
    assert result.exit_code == 0, result.output
    assert len(read_records(out)) == 4 and not (out / "memories").exists()
    assert len(_schemas(root, PgLocation.parse(root).schema)) == 2


def test_an_unreachable_server_is_one_error_before_anything_is_written(tmp_path: Path, config: Config) -> None:
    from gemrag.errors import GemragError

    out = tmp_path / "out"
    with pytest.raises(GemragError, match="cannot connect"):
        run_eval(
            "quality",
            quality_file(tmp_path),
            ["firstchunks"],
            config=config,
            out_dir=out,
            llm=ScriptedLLM(),
            embedder=HashEmbedder(),
            memory_root="postgresql://nobody@127.0.0.1:9/none?schema=ev&connect_timeout=2",
        )
    assert not out.exists()


def test_cmu_dog_on_postgres_gives_the_sqlite_records_and_resumes(tmp_path: Path, config: Config, root: str) -> None:
    """The acceptance test's memory per movie (``cmu_dog-<movie>``) is a schema too."""
    from test_eval_acceptance import DogLLM, write_dog

    from gemrag.eval.acceptance.runner import AcceptanceSettings, run_acceptance

    dog = write_dog(tmp_path)
    common: dict[str, Any] = {"config": config, "embedder": HashEmbedder(), "settings": AcceptanceSettings(runs=1)}
    sqlite = run_acceptance(dog, ["dense"], out_dir=tmp_path / "a", llm=DogLLM(), **common)
    out = tmp_path / "b"
    pg = run_acceptance(dog, ["dense"], out_dir=out, llm=DogLLM(), memory_root=root, **common)
    assert not (out / "memories").exists() and EvalMemories(out, root).exists("cmu_dog-movie-4")
    assert len(_schemas(root, PgLocation.parse(root).schema)) == 1
    assert _without_timings(pg["records"]) == _without_timings(sqlite["records"]) and pg["records"]
    again = DogLLM()
    run_acceptance(dog, ["dense"], out_dir=out, llm=again, memory_root=root, **common)
    assert again.calls == 0
