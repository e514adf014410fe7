"""Aggregates, paired comparisons, markdown, JSON and plots of an evaluation, on hand-made records."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gemrag.config import load_config
from gemrag.errors import ConfigError
from gemrag.eval.aggregates import summarize
from gemrag.eval.plots import write_plots
from gemrag.eval.report import markdown_report, write_results
from gemrag.eval.run_files import JsonlAppender, check_fingerprint, read_jsonl, redact_config
from gemrag.eval.runner import EvalResults
from gemrag.eval.stats import bootstrap_ci, paired_bootstrap_diff


def record(qid: str, strategy: str, **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "question_id": qid,
        "strategy": strategy,
        "setting": {},
        "difficult": None,
        "correct": None,
        "em": None,
        "f1": None,
        "recall@2": None,
        "recall@5": None,
        "retrieval_seconds": 0.1,
        "answer_seconds": 0.5,
        "tokens": {"prompt_tokens": 0, "completion_tokens": 0, "embedding_tokens": 0},
        "summary_hits": 0,
        "context_hits": 4,
        "error": None,
    }
    return base | fields


def summarized(
    tmp_path: Path,
    records: list[dict[str, Any]],
    runs: list[str],
    *,
    kind: str = "quality",
    answer: bool = True,
    ablation: dict[str, list[Any]] | None = None,
    n_resamples: int = 500,
) -> EvalResults:
    """A one-memory toy run of ``records`` over ``runs``, configured with ``gem`` (a bare ablation key such as
    ``questions`` is GEM's), its summary computed (no index builds)."""
    questions = len({r["question_id"] for r in records})
    res = EvalResults(
        out_dir=tmp_path,
        dataset={"name": "toy", "kind": kind, "path": "x", "questions": questions, "groups": 1, "documents": 1},
        config={"strategy": "gem"},
        models={"embedder": "e", "llm": "l"},
        budget=4,
        answer=answer,
        runs=runs,
        ablation=ablation or {},
        records=records,
        index=[],
    )
    res.summary = summarize(res, n_resamples=n_resamples)
    return res


def tokens(p: int, c: int, e: int) -> dict[str, int]:
    return {"prompt_tokens": p, "completion_tokens": c, "embedding_tokens": e}


def multiple_choice_results(tmp_path: Path) -> EvalResults:
    gem_correct, dense_correct = [True, True, False, True], [False, True, False, False]
    difficult = [True, False, True, None]
    records = [
        record(
            f"q{i}",
            "gem",
            correct=c,
            difficult=d,
            retrieval_seconds=0.1 * (i + 1),
            tokens=tokens(10 * (i + 1), 1, 5),
            summary_hits=[1, 0, 2, 1][i],
            answer_seconds=[0.5, 0.7, 0.0, 0.9][i],
            llm_cached=[0, 0, 1, 0][i],  # a cached answer's ~0 s is not an answer time
        )
        for i, (c, d) in enumerate(zip(gem_correct, difficult, strict=True))
    ] + [record(f"q{i}", "dense", correct=c, difficult=difficult[i]) for i, c in enumerate(dense_correct)]
    index = [
        {"group": "a", "strategy": "gem", "seconds": 1.5, **tokens(100, 10, 1000), "chunks": 5, "summary_nodes": 2},
        {"group": "b", "strategy": "gem", "seconds": 2.5, **tokens(200, 20, 2000), "chunks": 7, "summary_nodes": 2},
        {"group": "a", "strategy": "dense", "seconds": 0.5, **tokens(0, 0, 900), "chunks": 5, "summary_nodes": 0},
    ]
    res = EvalResults(
        out_dir=tmp_path,
        dataset={"name": "toy", "kind": "quality", "path": "toy.jsonl", "questions": 4, "groups": 2, "documents": 2},
        config={},
        models={"embedder": "onnx:minilm", "llm": "llama_cpp:qwen"},
        budget=4,
        answer=True,
        runs=["gem", "dense"],
        ablation={},
        records=records,
        index=index,
    )
    res.summary = summarize(res, n_resamples=2000)
    return res


def test_aggregates_match_hand_computed_values(tmp_path: Path) -> None:
    res = multiple_choice_results(tmp_path)
    gem = res.summary.aggregates["gem"]
    assert gem["n"] == 4 and gem["errors"] == 0
    assert gem["accuracy"]["mean"] == 0.75 and gem["accuracy"]["n"] == 4
    assert (gem["accuracy"]["low"], gem["accuracy"]["high"]) == bootstrap_ci([1, 1, 0, 1], n_resamples=2000)[1:]
    assert gem["hard_accuracy"]["mean"] == 0.5 and gem["hard_accuracy"]["n"] == 2  # q0 right, q2 wrong
    assert gem["f1"] is None and gem["recall@5"] is None
    assert gem["latency"]["p50"] == pytest.approx(0.25) and gem["latency"]["p95"] == pytest.approx(0.385)
    assert gem["query_tokens"] == {"prompt_tokens": 25.0, "completion_tokens": 1.0, "embedding_tokens": 5.0}
    assert gem["summary_share"] == pytest.approx(4 / 16)
    assert gem["index"]["seconds"] == 4.0 and gem["index"]["prompt_tokens"] == 300
    assert gem["index"]["embedding_tokens"] == 3000 and gem["index"]["memories"] == 2
    assert gem["answer_seconds"] == pytest.approx(0.7)
    dense = res.summary.aggregates["dense"]
    assert dense["accuracy"]["mean"] == 0.25 and dense["hard_accuracy"]["mean"] == 0.0
    assert dense["index"]["embedding_tokens"] == 900 and dense["summary_share"] == 0.0


def test_paired_bootstrap_against_gem(tmp_path: Path) -> None:
    res = multiple_choice_results(tmp_path)
    assert res.summary.reference == "gem" and res.summary.metric == "accuracy"
    (cmp,) = res.summary.comparisons
    expected = paired_bootstrap_diff([0, 1, 0, 0], [1, 1, 0, 1], n_resamples=2000)
    assert cmp["strategy"] == "dense" and cmp["n"] == 4 and cmp["diff"] == -0.5
    assert (cmp["diff"], cmp["low"], cmp["high"], cmp["p"]) == expected


def test_the_reference_is_the_first_run_unless_chosen(tmp_path: Path) -> None:
    """No strategy is the reference by name: without --reference it is the first run given, whichever that is, and
    the plots colour it (and its variants ``NAME[...]``) apart from the others."""
    from matplotlib.colors import to_hex
    from matplotlib.figure import Figure

    from gemrag.eval.plots import _bar_plot

    res = multiple_choice_results(tmp_path)
    res.runs = ["dense", "gem"]
    res.summary = summarize(res, n_resamples=200)
    assert res.summary.reference == "dense" and [c["strategy"] for c in res.summary.comparisons] == ["gem"]
    res.reference = "gem"
    assert summarize(res, n_resamples=200).reference == "gem"
    ax = Figure().subplots()
    names = ["dense", "dense[k1=1.2]", "gem", "densest"]
    ci = {"mean": 0.5, "low": 0.4, "high": 0.6, "n": 4}
    _bar_plot(ax, names, [ci] * 4, "Accuracy (%)", "dense")
    colors = [to_hex(bar.get_facecolor()) for bar in ax.patches]
    assert colors == ["#1f77b4", "#1f77b4", "#8c8c8c", "#8c8c8c"]


def test_markdown_table_rows_and_columns(tmp_path: Path) -> None:
    res = multiple_choice_results(tmp_path)
    md = markdown_report(res)
    header = next(line for line in md.splitlines() if line.startswith("| Embedding"))
    columns = [c.strip() for c in header.strip("|").split("|")]
    assert columns == [
        "Embedding",
        "LLM",
        "RAG",
        "Acc (95% CI)",
        "HARD Acc",
        "index tokens p / c / e",
        "query tokens / q p / c / e",
        "index s",
        "latency p50 / p95 ms",
        "answer s / q",
        "% summary",
    ]
    gem_row = next(line for line in md.splitlines() if line.startswith("| onnx:minilm | llama_cpp:qwen | gem |"))
    acc = res.summary.aggregates["gem"]["accuracy"]
    assert f"| 75.0 ({100 * acc['low']:.1f}–{100 * acc['high']:.1f}) | 50.0 |" in gem_row
    assert "| 300 / 30 / 3,000 | 25.0 / 1.0 / 5.0 | 4.0 | 250.0 / 385.0 | 0.7 | 25.0 |" in gem_row
    assert "| dense | -50.0 |" in md
    assert "## Paired bootstrap vs gem (Acc)" in md and "Ablation" not in md


def test_free_form_and_retrieval_only_columns(tmp_path: Path) -> None:
    records = [
        record("a", "bm25", f1=0.5, em=0.0, **{"recall@2": 0.5, "recall@5": 1.0}),
        record("b", "bm25", f1=1.0, em=1.0, **{"recall@2": 1.0, "recall@5": 1.0}),
    ]
    res = summarized(tmp_path, records, ["bm25"], kind="musique", answer=False)
    agg = res.summary.aggregates["bm25"]
    assert agg["f1"]["mean"] == 0.75 and agg["em"]["mean"] == 0.5 and agg["recall@2"]["mean"] == 0.75
    assert res.summary.reference == "bm25" and res.summary.metric == "f1" and res.summary.comparisons == []
    md = markdown_report(res)
    assert "F1 (95% CI)" in md and "| EM |" in md and "R@2" in md and "Acc (95% CI)" not in md
    assert "| e | — | bm25 |" in md  # no LLM in a retrieval-only run


def test_sweep_results_json_and_plots(tmp_path: Path) -> None:
    records = []
    for value, right in ((0, 1), (2, 2), (4, 3)):
        name = f"gem[questions={value}]"
        for i in range(4):
            records.append(
                record(f"q{i}", name, setting={"questions": value}, correct=i < right, summary_hits=value // 2)
            )
    runs = ["gem[questions=0]", "gem[questions=2]", "gem[questions=4]"]
    res = summarized(tmp_path, records, runs, ablation={"questions": [0, 2, 4]})
    sweep = res.summary.sweeps["questions"]
    assert [(r["value"], r["metric"]["mean"], r["summary_share"]) for r in sweep] == [
        (0, 0.25, 0.0),
        (2, 0.5, 0.25),
        (4, 0.75, 0.5),
    ]
    json_path, md_path = write_results(res)
    payload = json.loads(json_path.read_text(), parse_constant=lambda c: pytest.fail(f"{c} in results.json"))
    assert len(payload["records"]) == 12 and payload["summary"]["sweeps"]["questions"][2]["n"] == 4
    assert "| 4 | 75.0 (" in md_path.read_text()
    paths = write_plots(res)
    assert {p.name for p in paths} == {"accuracy.png", "ablation_questions.png"}
    assert all(p.stat().st_size > 1000 for p in paths)


def test_plots_without_matplotlib_warn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    res = multiple_choice_results(tmp_path)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.warns(UserWarning, match="matplotlib"):
        assert write_plots(res) == []


def test_jsonl_files_survive_torn_lines_and_nan(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    path.write_text('{"a": 1}\n{"a": 2, "tru', encoding="utf-8")  # interrupted mid-write
    writer = JsonlAppender(path)
    writer.write({"a": 3, "x": float("nan"), "v": np.float64(0.5).item()})
    writer.close()
    assert read_jsonl(path) == [{"a": 1}, {"a": 3, "x": None, "v": 0.5}]
    assert read_jsonl(tmp_path / "missing.jsonl") == []


def test_fingerprint_and_redaction(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    check_fingerprint(tmp_path, {"budget": 4, "llm": "a"})
    check_fingerprint(tmp_path, {"budget": 4, "llm": "a"})  # same configuration: fine
    with pytest.raises(ConfigError, match="differs in budget"):
        check_fingerprint(tmp_path, {"budget": 6, "llm": "a"})
    monkeypatch.chdir(tmp_path)
    cfg = load_config(None, {"llm": {"provider": "openai", "api_key": "sk-secret", "model": "m"}})
    assert "sk-secret" not in json.dumps(redact_config(cfg))


def test_answer_seconds_count_an_answer_whose_retrieval_came_from_the_cache(tmp_path: Path) -> None:
    """A variant that shares another run's steps has every retrieval call cached; its answers were still generated."""
    retrieval = {"llm_calls": 2, "llm_cached": 2, "prompt_tokens": 0, "completion_tokens": 0}
    records = [
        # retrieval cached (2 of 3 calls), answer generated: counted
        record("q0", "steps", correct=True, answer_seconds=8.0, llm_cached=2, retrieval_llm=retrieval),
        # the answer cached too (3 of 3): left out
        record("q1", "steps", correct=True, answer_seconds=0.01, llm_cached=3, retrieval_llm=retrieval),
        # an older record without retrieval_llm: any cached call is the answer's
        record("q2", "steps", correct=False, answer_seconds=0.02, llm_cached=1),
        record("q3", "steps", correct=False, answer_seconds=10.0),
    ]
    res = summarized(tmp_path, records, ["steps"], n_resamples=200)
    assert res.summary.aggregates["steps"]["answer_seconds"] == pytest.approx(9.0)


def test_results_without_a_recorded_strategy_were_gems(tmp_path: Path) -> None:
    """Bare ablation keys of early results (no ``config.strategy``) stay GEM's whatever today's default is; a recorded
    strategy is taken as written."""
    from gemrag.eval.aggregates import LEGACY_STRATEGY, configured_strategy

    res = multiple_choice_results(tmp_path)
    assert configured_strategy(res) == LEGACY_STRATEGY == "gem"
    res.config = {"strategy": "dense"}
    assert configured_strategy(res) == "dense"
