"""Measuring a strategy that reasons at query time: ``gemrag eval`` records each question's retrieval LLM calls, tokens
and trace, and ``benchmarks/decomposition_agreement.py`` compares the traces with MuSiQue's gold decompositions."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from steps_llm import StepLLM
from test_eval_runner import multihop_file

from fakes import HashEmbedder
from gemrag.config import Config, load_config
from gemrag.eval.runner import run_eval
from gemrag.strategies.gem.settings import gem_config
from paths import REPO


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "decomposition_agreement", REPO / "benchmarks" / "decomposition_agreement.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_records_carry_the_retrievals_llm_cost_and_trace(tmp_path: Path, config: Config) -> None:
    llm = StepLLM(
        next_query=[
            {"thought": "Alpha has a bridge.", "enough": False, "query": "Which town has an abbey?"},
            {"thought": "", "enough": True, "query": ""},
        ]
    )
    cfg = load_config(
        None,
        {
            "memory": config.memory.model_dump(),
            "gem": gem_config(config).model_dump(),
            "iterative": {"mode": "ircot", "max_steps": 2},
        },
    )
    res = run_eval(
        "musique",
        multihop_file(tmp_path),
        ["dense", "iterative"],
        config=cfg,
        budget=2,
        out_dir=tmp_path / "out",
        answer=False,
        llm=llm,
        embedder=HashEmbedder(),
    )
    by = {(r["strategy"], r["question_id"]): r for r in res.records}
    dense, first = by[("dense", "2hop__0")], by[("iterative", "2hop__0")]
    assert dense["retrieval_llm"] == {"llm_calls": 0, "llm_cached": 0, "prompt_tokens": 0, "completion_tokens": 0}
    assert "trace" not in dense
    # the warm-up (untimed, once per memory) spends no LLM call: every model call is a question's own, measured
    assert "What is this text about?" not in "".join(prompt for _, prompt in llm.calls)
    calls = [r["retrieval_llm"]["llm_calls"] for r in res.records if r["strategy"] == "iterative"]
    assert len(llm.calls) == sum(calls)  # the deeper ranking for Recall@5 reads the same passages: cache hits
    assert first["trace"]["steps"][1]["query"] == "Which town has an abbey?"  # the first scripted reply, not spent
    spent = first["retrieval_llm"]
    assert spent["llm_calls"] == first["trace"]["calls"] >= 1 and spent["prompt_tokens"] > 0
    assert spent["completion_tokens"] == 7 * spent["llm_calls"]  # StepLLM's 7 tokens per completion
    assert first["llm_calls"] == spent["llm_calls"]  # retrieval only: the question's whole cost is the retrieval's
    assert first["trace"]["steps"][0]["query"] == "Which town has a stone bridge and an abbey?"
    agg = res.summary.aggregates["iterative"]["retrieval_llm"]
    assert agg["llm_calls"] == pytest.approx(sum(calls) / len(calls))
    assert res.summary.aggregates["dense"]["retrieval_llm"]["llm_calls"] == 0
    md = (tmp_path / "out" / "results.md").read_text()
    assert "retrieval LLM calls / q" in md
    assert json.loads(json.dumps(first["trace"])) == first["trace"]  # stored as JSON, read back the same


def test_answer_from_steps_reads_the_sub_answers_in_the_eval(tmp_path: Path, config: Config) -> None:
    """``gemrag eval`` answers from the retrieval's hits: with ``answer_from = "steps"`` the short-answer prompt
    shows the decomposition's follow-ups before the passages; with the default it is every strategy's prompt."""
    subs = ["Which town has a stone bridge?", "Does #1 have an abbey?"]
    prompts: dict[str, list[str]] = {}
    data = multihop_file(tmp_path)
    for answer_from in ("passages", "steps"):
        llm = StepLLM(decompose=[{"subquestions": subs}], sub_answer=[{"answer": "Alpha"}], answer=["Alpha"])
        cfg = load_config(
            None,
            {
                "memory": config.memory.model_dump(),
                "gem": gem_config(config).model_dump(),
                "iterative": {"mode": "decompose", "answer_from": answer_from},
            },
        )
        res = run_eval(
            "musique",
            data,
            ["iterative"],
            config=cfg,
            budget=2,
            out_dir=tmp_path / answer_from / "out",
            llm=llm,
            embedder=HashEmbedder(),
        )
        first = next(r for r in res.records if r["question_id"] == "2hop__0")
        assert first["answer"] == "Alpha" and first["em"] == 1.0
        prompts[answer_from] = [prompt for name, prompt in llm.calls if name == "answer"]
    assert all(p.startswith("Context:\n[1] ") for p in prompts["passages"])
    shown = prompts["steps"][0]
    assert shown.startswith(
        "Follow-up questions asked while searching:\nFollow up: Which town has a stone bridge?\n"
        "Intermediate answer: Alpha\nFollow up: Does Alpha have an abbey?\n\nContext:\n[1] "
    )
    assert shown.split("Context:\n", 1)[1] == prompts["passages"][0].split("Context:\n", 1)[1]  # same passages


def _musique(path: Path) -> Path:
    records = [
        {
            "id": "2hop__1",
            "question": "Where was the director of Blue River born?",
            "question_decomposition": [
                {"id": 1, "question": "Who directed Blue River?", "answer": "Jane Roe", "paragraph_support_idx": 0},
                {"id": 2, "question": "Where was #1 born?", "answer": "Tromsø", "paragraph_support_idx": 1},
            ],
        },
        {
            "id": "3hop__2",
            "question": "Who led the country of the birthplace of Karl Berg?",
            "question_decomposition": [
                {"id": 3, "question": "Where was Karl Berg born?", "answer": "Graz", "paragraph_support_idx": 0},
                {"id": 4, "question": "#1 >> country", "answer": "Austria", "paragraph_support_idx": 1},
                {"id": 5, "question": "Who led #2?", "answer": "Karl Renner", "paragraph_support_idx": 2},
            ],
        },
    ]
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def _record(qid: str, trace: dict[str, Any], strategy: str = "iterative") -> dict[str, Any]:
    return {"question_id": qid, "strategy": strategy, "trace": trace}


def test_decomposition_agreement_against_gold(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    module = _script()
    data = _musique(tmp_path / "musique.json")
    decomposed = {
        "mode": "decompose",
        "subquestions": ["Who directed Blue River?", "Where was #1 born?"],
        "answers": {"1": "Jane Roe"},
        "failures": [],
        "steps": [{"query": "q"}, {"query": "Who directed Blue River?"}, {"query": "Where was Jane Roe born?"}],
    }
    short = {  # one step for a three-hop question, and a failed pass
        "mode": "ircot",
        "failures": [{"pass": "next_query", "step": 3, "error": "bad"}],
        "steps": [{"query": "q"}, {"query": "Where was Karl Berg born?"}],
    }
    result = module.agreement(
        [_record("2hop__1", decomposed), _record("3hop__2", short)], module.gold_decompositions(data)
    )
    assert result["questions"] == 2 and result["same_hops"] == 1 and result["failures"] == 1
    hop1, hop2, hop3 = (result["by_hop"][i] for i in (1, 2, 3))
    assert hop1["n"] == 2 and hop1["reached"] == 2 and hop1["query_f1"] == 1.0  # both first hops exact
    # hop 2: "where was jane roe born" against the gold filled "where was jane roe born": 1.0; not reached: 0.0
    assert hop2["reached"] == 1 and hop2["query_f1"] == 0.5
    assert hop1["written_f1"] == 1.0 and hop2["written_f1"] == 1.0  # only the decomposed record has sub-questions
    assert hop1["answered"] == 1 and hop1["answer_f1"] == 1.0 and hop1["answer_em"] == 1.0
    assert hop2["answered"] == 0 and hop2["answer_f1"] is None
    assert hop3 == {
        "n": 1, "reached": 0, "query_f1": 0.0, "written_f1": None, "answered": 0, "answer_f1": None, "answer_em": None
    }  # fmt: skip
    run = tmp_path / "run"
    run.mkdir()
    lines = [_record("2hop__1", decomposed), {"question_id": "2hop__1", "strategy": "dense"}]
    (run / "records.jsonl").write_text("\n".join(json.dumps(r) for r in lines) + "\n")
    (run / "results.json").write_text(json.dumps({"dataset": {"path": str(data)}}))
    assert module.main([str(run)]) == 0  # the data path read from results.json
    out = capsys.readouterr().out
    assert out.startswith("### iterative: 1 questions, 1 with as many steps as gold hops")
    assert "| 2 | 1 | 1 | 100.0 | 100.0 | 0 | — | — |" in out
    assert module.main([str(run), "--strategy", "dense"]) == 1
    assert module.main([str(tmp_path / "missing")]) == 2
