"""``gemrag eval`` and chunk titles per method: every run's choice is explicit, recorded per run in ``titles.json``,
and a run whose records were made from the other input (an output directory from before titles were chosen per method,
when every strategy read them) is neither continued nor merged (issue 38)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from test_eval_runner import quality_file

from fakes import HashEmbedder, ScriptedLLM
from gemrag.config import Config, load_config
from gemrag.errors import ConfigError
from gemrag.eval.plan import plan_runs
from gemrag.eval.runner import run_eval
from gemrag.eval.titles import FILE, check_titles, pin_titles, run_titles, title_free_fingerprint
from gemrag.strategies.gem.settings import gem_config


def _config(config: Config, **sections: Any) -> Config:
    return load_config(None, {"memory": config.memory.model_dump(), "gem": gem_config(config).model_dump(), **sections})


def _records(directory: Path, *runs: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"question_id": "q1", "strategy": run, "group": "g"}) for run in runs]
    (directory / "records.jsonl").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return directory


def test_runs_read_as_their_papers_with_every_choice_pinned(config: Config) -> None:
    runs = pin_titles(plan_runs(["gem", "dense", "fused", "unweaver[read_titles=true]", "full"], None, config))
    assert {r.name: run_titles(r) for r in runs} == {
        "gem": {"gem": False},
        "dense": {"dense": True},
        "fused": {"dense": True, "bm25": True},  # a strategy over strategies: its parts
        "unweaver[read_titles=true]": {"unweaver": True},
        "full": {},  # reads no indexed text
    }
    plain = [r for r in runs if "[" not in r.name]
    assert len({r.config.model_dump_json() for r in plain}) == 1  # they still share one opened memory
    pinned = plain[0].config
    assert gem_config(pinned).read_titles is False and pinned.section("hlgraph")["read_titles"] is False
    assert pinned.section("remem")["read_titles"] is True and pinned.section("bm25")["read_titles"] is True


def test_a_memory_without_titles_pins_nothing(config: Config) -> None:
    off = load_config(
        None,
        {"memory": {**config.memory.model_dump(), "chunk_titles": False}, "gem": gem_config(config).model_dump()},
    )
    runs = pin_titles(plan_runs(["dense", "gem"], None, off))
    assert [run_titles(r) for r in runs] == [{"dense": False}, {"gem": False}]
    assert all(r.config == off for r in runs)


def test_the_fingerprint_leaves_read_titles_to_the_run_by_run_file(config: Config) -> None:
    chosen = _config(
        config, gem={**gem_config(config).model_dump(), "read_titles": True}, unweaver={"read_titles": True}
    )
    assert title_free_fingerprint(chosen) == title_free_fingerprint(config)
    assert "sections" not in title_free_fingerprint(chosen)  # a section with read_titles only is no section
    other = _config(config, unweaver={"read_titles": True, "rule": "av"})
    assert title_free_fingerprint(other)["sections"] == {"unweaver": {"rule": "av"}}


def test_an_older_directory_continues_only_the_runs_that_read_as_before(tmp_path: Path, config: Config) -> None:
    out = _records(tmp_path / "out", "gem", "dense")  # written before titles.json: every run read titles
    with pytest.raises(ConfigError, match=r"'gem' read chunks as gem title \+ text.*--set gem.read_titles=true"):
        check_titles(out, pin_titles(plan_runs(["gem", "dense"], None, config)))
    assert not (out / FILE).exists()
    check_titles(out, pin_titles(plan_runs(["dense", "bm25"], None, config)))  # unchanged for these
    recorded = json.loads((out / FILE).read_text())
    assert recorded == {"bm25": {"bm25": True}, "dense": {"dense": True}}  # gem's old reading is unknown
    (out / FILE).unlink()
    as_before = load_config(
        None, {"memory": config.memory.model_dump(), "gem": {**gem_config(config).model_dump(), "read_titles": True}}
    )
    check_titles(out, pin_titles(plan_runs(["gem", "dense"], None, as_before)))  # the fix the message names
    assert json.loads((out / FILE).read_text())["gem"] == {"gem": True}
    with pytest.raises(ConfigError, match="'gem' read chunks as gem title"):
        check_titles(out, pin_titles(plan_runs(["gem"], None, config)))  # recorded now, and still refused


def test_a_merge_source_of_the_other_input_is_refused(tmp_path: Path, config: Config) -> None:
    runs, dense = (pin_titles(plan_runs([name], None, config)) for name in ("gem", "dense"))
    for name, plan in (("a", runs), ("c", dense), ("b", [])):
        (tmp_path / name).mkdir()
        check_titles(tmp_path / name, plan)  # a new output directory: its runs' reading recorded
    _records(tmp_path / "a", "gem")  # gem from the chunk text alone
    _records(tmp_path / "c", "dense")
    other = load_config(
        None, {"memory": config.memory.model_dump(), "gem": {**gem_config(config).model_dump(), "read_titles": True}}
    )
    with pytest.raises(ConfigError, match=re.escape(str(tmp_path / "a"))):
        check_titles(tmp_path / "b", pin_titles(plan_runs(["gem"], None, other)), [tmp_path / "a"])
    check_titles(tmp_path / "b", runs, [tmp_path / "a", tmp_path / "c"])  # the sources' runs carried over
    assert json.loads((tmp_path / "b" / FILE).read_text()) == {"dense": {"dense": True}, "gem": {"gem": False}}


def test_run_eval_builds_and_records_what_each_run_read(tmp_path: Path, config: Config) -> None:
    out, llm = tmp_path / "out", ScriptedLLM()
    kwargs: dict[str, Any] = {"config": config, "budget": 2, "out_dir": out, "embedder": HashEmbedder()}
    run_eval("quality", quality_file(tmp_path), ["gem", "dense"], llm=llm, plots=False, **kwargs)
    assert json.loads((out / FILE).read_text()) == {"dense": {"dense": True}, "gem": {"gem": False}}
    titles = ("The Keeper\n", "The Greenhouse\n")  # the stories' titles: no GEM prompt holds one
    assert llm.prompts and not any(t in p for p in llm.prompts for t in titles)
    (out / FILE).unlink()  # as an output directory of an older gemrag
    with pytest.raises(ConfigError, match="--set gem.read_titles=true"):
        run_eval("quality", quality_file(tmp_path), ["gem"], llm=ScriptedLLM(), plots=False, **kwargs)


def test_the_fingerprint_keeps_the_shape_earlier_releases_wrote(config: Config) -> None:
    """An evaluation directory begun by an earlier release is continued only if its ``run.json`` matches: the memory's
    ``chunk_tokens`` and GEM's settings stay under ``gem`` (where they were before ``[memory]`` existed), however
    generic code now names that entry (``memory_settings.EARLIER_METHOD``)."""
    fingerprint = title_free_fingerprint(config)
    gem = {k: v for k, v in gem_config(config).model_dump(mode="json").items() if k != "read_titles"}
    assert fingerprint == {"gem": {"chunk_tokens": config.memory.chunk_tokens, **gem, "chunk_titles": True}}
