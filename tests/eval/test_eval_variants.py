"""Strategy variants in ``gemrag eval`` (``remem[recognition_filter=false]``) and remem through the eval runner."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_eval_runner import multihop_file

from fakes import HashEmbedder, ScriptedLLM
from gemrag.config import Config
from gemrag.errors import ConfigError
from gemrag.eval.runner import plan_runs, run_eval
from gemrag.eval.variants import split_strategies, strategy_variant
from gemrag.strategies.gem.settings import gem_config


def test_split_keeps_commas_inside_brackets() -> None:
    assert split_strategies("dense, remem[a=1;b=2],gem[x=[1,2]],") == ["dense", "remem[a=1;b=2]", "gem[x=[1,2]]"]


def test_variant_changes_only_its_section(config: Config) -> None:
    shown, base, setting, cfg = strategy_variant("remem[recognition_filter=false; damping=0.3]", config)  # type: ignore[misc]
    assert (shown, base, setting) == (
        "remem[recognition_filter=false;damping=0.3]",
        "remem",
        {"recognition_filter": False, "damping": 0.3},
    )
    assert cfg.section("remem") == setting and config.section("remem") == {}
    assert gem_config(cfg) == gem_config(config)
    assert strategy_variant("remem", config) is None
    both = strategy_variant("iterative[base=fused;mode=ircot]", config)
    assert both is not None and both[2] == {"base": "fused", "mode": "ircot"}
    listed = strategy_variant('fused[parts=["dense", "bm25"]]', config)  # a comma inside a value is no pair
    assert listed is not None and listed[2] == {"parts": ["dense", "bm25"]}
    gem = strategy_variant("gem[search=rank]", config)
    assert gem is not None and gem_config(gem[3]).search == "rank"
    bad_cases = [
        ("remem[dampng=0.3]", "dampng"),
        ("remem[damping=2]", "damping"),
        ("remem[]", "nothing"),
        ("iterative[base=fused,mode=decompose]", "separate its settings with ';'"),
    ]
    for bad, message in bad_cases:
        with pytest.raises(ConfigError, match=message):
            strategy_variant(bad, config)


def test_plan_runs_and_an_eval_with_remem_and_its_variant(tmp_path: Path, config: Config) -> None:
    runs = plan_runs(["dense", "remem", "remem[recognition_filter=false]"], None, config)
    assert [(r.name, r.strategy, r.memory_suffix) for r in runs] == [
        ("dense", "dense", ""),
        ("remem", "remem", ""),
        ("remem[recognition_filter=false]", "remem", ""),
    ]
    llm = ScriptedLLM()
    res = run_eval(
        "musique",
        multihop_file(tmp_path),
        ["dense", "remem", "remem[recognition_filter=false]"],
        config=config,
        budget=2,
        out_dir=tmp_path / "out",
        llm=llm,
        embedder=HashEmbedder(),
        answer=False,
        reference="dense",
    )
    assert res.runs == ["dense", "remem", "remem[recognition_filter=false]"]
    by = {(r["question_id"], r["strategy"]): r for r in res.records}
    assert by[("2hop__1", "remem")]["recall@5"] == 1.0
    assert by[("2hop__1", "remem[recognition_filter=false]")]["setting"] == {"recognition_filter": False}
    openie = [p for p in llm.prompts if p.startswith('Passage:\n"""')]  # the OpenIE requests
    assert len(openie) == 10  # five paragraphs, two calls each, once for both remem runs
    assert len(list((tmp_path / "out" / "memories").iterdir())) == 1
    # paired bootstrap against dense, on Recall@5 and Recall@2
    assert res.summary.reference == "dense"
    assert [(c["metric"], c["strategy"]) for c in res.summary.comparisons] == [
        ("recall@5", "remem"),
        ("recall@5", "remem[recognition_filter=false]"),
        ("recall@2", "remem"),
        ("recall@2", "remem[recognition_filter=false]"),
    ]
    md = (tmp_path / "out" / "results.md").read_text()
    assert "## Paired bootstrap vs dense (R@5)" in md and "## Paired bootstrap vs dense (R@2)" in md
    with pytest.raises(ConfigError, match="reference"):
        run_eval(
            "musique",
            multihop_file(tmp_path),
            ["dense"],
            config=config,
            out_dir=tmp_path / "o2",
            embedder=HashEmbedder(),
            answer=False,
            reference="gem",
        )


def test_an_ablation_sweeps_any_strategys_setting(tmp_path: Path, config: Config) -> None:
    """``--ablation bm25.k1=0.5,2.0`` runs the variants ``bm25[k1=0.5]`` and ``bm25[k1=2.0]`` in memories of their own;
    a bare key is the configured strategy's (here remem's, not GEM's)."""
    runs = plan_runs(["bm25"], {"bm25.k1": ["0.5", "2.0"]}, config)
    assert [(r.name, r.strategy, r.setting, r.memory_suffix, r.sweep) for r in runs] == [
        ("bm25", "bm25", {}, "", ""),
        ("bm25[k1=0.5]", "bm25", {"k1": 0.5}, "-bm25-k1-0.5", "bm25.k1"),
        ("bm25[k1=2.0]", "bm25", {"k1": 2.0}, "-bm25-k1-2.0", "bm25.k1"),
    ]
    assert runs[1].config.section("bm25") == {"k1": 0.5} and config.section("bm25") == {}
    remem_default = config.model_copy(update={"strategy": "remem"})
    runs = plan_runs([], {"damping": ["0.3"], "budget": ["3"]}, remem_default)
    assert [(r.name, r.strategy, r.memory_suffix) for r in runs] == [
        ("remem[damping=0.3]", "remem", "-damping-0.3"),
        ("remem[budget=3]", "remem", ""),  # the memory's budget changes retrieval alone
    ]
    for bad, message in (
        ({"bm25.questions": ["1"]}, "unknown bm25 parameter 'questions'"),
        ({"bm25.chunk_tokens": ["50"]}, "unknown bm25 parameter 'chunk_tokens'"),
        ({"nope.k1": ["1"]}, "unknown strategy 'nope'"),
        ({"bm25.b": ["7"]}, r"invalid ablation value b='7'"),
    ):
        with pytest.raises(ConfigError, match=message):
            plan_runs([], bad, config)
    res = run_eval(
        "musique",
        multihop_file(tmp_path),
        ["bm25"],
        config=config,
        budget=2,
        out_dir=tmp_path / "out",
        embedder=HashEmbedder(),
        answer=False,
        ablation={"bm25.k1": ["0.5", "2.0"]},
    )
    assert res.runs == ["bm25", "bm25[k1=0.5]", "bm25[k1=2.0]"] and res.ablation == {"bm25.k1": [0.5, 2.0]}
    assert [row["strategy"] for row in res.summary.sweeps["bm25.k1"]] == ["bm25[k1=0.5]", "bm25[k1=2.0]"]
    assert "## Ablation: bm25 k1" in (tmp_path / "out" / "results.md").read_text()
    assert {r["setting"]["k1"] for r in res.records if r["strategy"] == "bm25[k1=2.0]"} == {2.0}
