"""Published results (results/NAME.json + NAME.records.jsonl.gz): written from a run directory, figures equal to the
run's own report, every per-question score re-scored from the committed records alone, settings that differ from
the defaults found from the recorded configuration, and the documentation's marked figures generated from them."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from test_eval_factual import covid_file
from test_eval_locomo import locomo_file
from test_eval_runner import cli_app, multihop_file, quality_file
from typer.testing import CliRunner

import gemrag.eval.runner as runner_module
from fakes import HashEmbedder, ScriptedLLM
from gemrag.config import Config
from gemrag.errors import InputError
from gemrag.eval.publish import publish_run
from gemrag.eval.publish_docs import main as docs_main
from gemrag.eval.publish_docs import render
from gemrag.eval.publish_origin import published_command
from gemrag.eval.publish_settings import non_default_settings
from gemrag.eval.published import load_published, load_records, per_question, published_names, rescore_record
from gemrag.eval.runner import run_eval


def _multihop(tmp_path: Path, config: Config) -> tuple[Any, Path]:
    out = tmp_path / "out"
    res = run_eval(
        "musique", multihop_file(tmp_path), ["dense", "bm25"], config=config, budget=1, out_dir=out, answer=False,
        plots=False, embedder=HashEmbedder(), reference="dense",
    )  # fmt: skip
    return res, out


def test_a_published_run_holds_the_runs_figures_and_rescores_from_its_records(tmp_path: Path, config: Config) -> None:
    res, out = _multihop(tmp_path, config)
    root = tmp_path / "results"
    run = publish_run(out, "mh", root, command="gemrag eval musique mh.json", load=(1.5, 2.25))
    assert published_names(root) == ["mh"] and load_published("mh", root) == run
    for name in ("dense", "bm25"):
        for metric in ("recall@2", "recall@5"):
            mine, theirs = run.metric(name, metric), res.summary.aggregates[name][metric]
            assert (mine.mean, mine.low, mine.high, mine.n) == (
                theirs["mean"],
                theirs["low"],
                theirs["high"],
                theirs["n"],
            )
    report = next(c for c in res.summary.comparisons if c["metric"] == "recall@5")
    mine = run.comparison("bm25", "dense", "recall@5")
    assert (mine.diff, mine.low, mine.high, mine.p, mine.n) == tuple(
        report[k] for k in ("diff", "low", "high", "p", "n")
    )
    flipped = run.comparison("dense", "bm25", "recall@5")
    assert (flipped.diff, flipped.low, flipped.high) == (-mine.diff, -mine.high, -mine.low)
    assert run.machine.load == [1.5, 2.25] and run.dataset.sha256 and run.dataset.file == "mh.json"
    # the settings of the test configuration that are not the defaults are named, machine settings are not
    assert run.non_default["memory.chunk_tokens"] == 30 and run.non_default["gem.questions"] == 3
    assert "cache_dir" not in run.non_default and "memory.location" not in run.non_default
    records = load_records(run, root)
    assert len(records) == len(res.records) == 4
    for rec in records:  # every score recomputed from the ranking alone equals the run's
        assert rescore_record(rec) == {k: rec["scores"][k] for k in ("recall@2", "recall@5")}
        assert all(h["docs"] for h in rec["retrieved"])
    found = next(r for r in records if r["scores"]["recall@5"] > 0)
    assert rescore_record(dict(found, retrieved=[]))["recall@5"] == 0.0  # a ranking without its hits finds nothing
    raw = gzip.decompress((root / "mh.records.jsonl.gz").read_bytes())
    assert json.loads(raw.splitlines()[0])["question_id"] == records[0]["question_id"]
    costs = run.strategies["bm25"].costs  # written when published: retrieval only, so no answer costs
    assert costs is not None and costs.answers == 0 and costs.prompt_tokens is None and costs.retrieval_n == 2


def test_locomo_evidence_recall_rescores_from_the_turns_each_context_node_covers(
    tmp_path: Path, config: Config
) -> None:
    out = tmp_path / "loc"
    res = run_eval(
        "locomo", locomo_file(tmp_path), ["dense"], config=config, budget=1, out_dir=out, answer=False, plots=False,
        embedder=HashEmbedder(),
    )  # fmt: skip
    run = publish_run(out, "loc", tmp_path / "results", command="x")
    records = load_records(run, tmp_path / "results")
    by_id = {r["question_id"]: r for r in res.records}
    for rec in records:
        assert rescore_record(rec).get("evidence_recall") == by_id[rec["question_id"]]["evidence_recall"]
    assert run.metric("dense", "evidence_recall").n == 4  # D9:9 is no turn: that question has no evidence
    assert set(run.strategies["dense"].categories) == {"1", "2", "4", "5"}
    lost = next(r for r in records if r["gold_turns"] and any(r["context_turns"]))
    assert rescore_record(dict(lost, context_turns=[[]]))["evidence_recall"] == 0.0


def test_answer_span_recall_rescores_from_the_ranked_chunks_texts(tmp_path: Path, config: Config) -> None:
    out = tmp_path / "covid"
    res = run_eval(
        "covid_qa", covid_file(tmp_path), ["dense"], config=config, budget=1, out_dir=out, answer=False, plots=False,
        embedder=HashEmbedder(),
    )  # fmt: skip
    run = publish_run(out, "covid", tmp_path / "results", command="x")
    records = load_records(run, tmp_path / "results")
    by_id = {r["question_id"]: r for r in res.records}
    for rec in records:
        assert rec["gold_answers"] and all(h["text"] for h in rec["retrieved"])
        assert rescore_record(rec) == {k: by_id[rec["question_id"]][k] for k in ("recall@2", "recall@5")}
    found = next(r for r in records if r["scores"]["recall@5"] == 1.0)
    assert rescore_record(dict(found, gold_answers=["no such span anywhere"]))["recall@5"] == 0.0


def test_non_default_settings_from_the_recorded_configuration() -> None:
    assert non_default_settings(Config().model_dump(mode="json")) == {}
    data = Config().model_dump(mode="json") | {
        "fused": {"window": 99},
        "llm": Config().llm.model_dump() | {"n_threads": 2},
    }
    assert non_default_settings(data, {"budget": 4, "answer_form": "short"}) == {
        "answer_form": "short",
        "fused.window": 99,
    }
    assert non_default_settings(data | {"memory": {"chunk_tokens": 256}})["memory.chunk_tokens"] == 256


def test_the_command_names_the_data_directory_not_this_machines(tmp_path: Path) -> None:
    data = tmp_path / "data" / "locomo" / "dev.json"
    argv = ["/usr/bin/gemrag", "eval", "locomo", str(data), "--strategies", "dense,bm25"]
    assert published_command(argv, data) == "gemrag eval locomo $DATA/locomo/dev.json --strategies dense,bm25"


def test_cli_publish_writes_the_record(tmp_path: Path, config: Config, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner_module, "build_embedder", lambda settings: HashEmbedder())
    args = ["eval", "musique", str(multihop_file(tmp_path)), "--strategies", "dense,bm25", "--no-answer", "-q"]
    common = ["--out", str(tmp_path / "o"), "--no-plots", "--results-dir", str(tmp_path / "r")]
    monkeypatch.setattr("sys.argv", ["gemrag", *args, *common, "--budget", "2", "--publish", "tiny"])
    result = CliRunner().invoke(cli_app(), [*args, *common, "--budget", "2", "--publish", "tiny"])
    assert result.exit_code == 0, result.output
    run = load_published("tiny", tmp_path / "r")
    assert run.non_default["budget"] == 2 and "--publish tiny" in run.command and len(run.machine.load) == 2
    bad = CliRunner().invoke(cli_app(), [*args, *common, "--publish", "../x"])
    assert bad.exit_code == 2 and "--publish" in bad.output and not (tmp_path / "x.json").exists()


def test_marked_figures_are_generated_and_a_hand_edit_is_found(
    tmp_path: Path, config: Config, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out = _multihop(tmp_path, config)
    root = tmp_path / "results"
    run = publish_run(out, "mh", root, command="x")
    r5 = run.metric("bm25", "recall@5")
    text = (
        "bm25 <!-- result: mh bm25 recall@5 ci -->0<!-- /result --> vs dense "
        "<!-- result: mh bm25 recall@5 short vs=dense -->0<!-- /result -->\n"
        "<!-- result-table: mh recall@2,recall@5 -->\n<!-- /result -->\n"
    )
    done = render(text, root)
    assert f"{100 * r5.mean:.1f} ({100 * r5.low:.1f}–{100 * r5.high:.1f})" in done
    assert "| RAG | R@2 | R@5 |" in done and "| dense |" in done and "`results/mh.json`" in done
    assert render(done, root) == done  # generated text is stable
    edited = done.replace(f"{100 * r5.mean:.1f} (", "99.9 (", 1)
    assert render(edited, root) != edited
    for bad, message in (
        ("<!-- result: mh nope recall@5 -->1<!-- /result -->", "no strategy 'nope'"),
        ("<!-- result: gone dense recall@5 -->1<!-- /result -->", "no published result named 'gone'"),
        ("\n<!-- result: mh dense f1 -->1<!-- /result -->", "doc.md:2: mh: dense has no 'f1'"),
        ("<!-- result: mh dense recall@5 wide -->1<!-- /result -->", "format 'wide'"),
    ):
        with pytest.raises(InputError, match=message):
            render(bad, root, "doc.md")
    # the command: --check finds the hand edit, a rewrite fixes it
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text(edited, encoding="utf-8")
    assert docs_main(["--repo", str(tmp_path), "--check"]) == 1
    said = capsys.readouterr().out
    assert (
        "README.md:1: mh bm25 recall@5 ci: the document says '99.9 (" in said
        and f"gives '{100 * r5.mean:.1f} (" in said
    )
    assert docs_main(["--repo", str(tmp_path)]) == 0 and (tmp_path / "README.md").read_text() == done
    assert docs_main(["--repo", str(tmp_path), "--check"]) == 0


def test_an_answer_is_rescored_with_its_benchmarks_scorer() -> None:
    """F1 and EM come back from the answer and the gold answers alone: SQuAD's rules, and LoCoMo's per category
    (category 5 is right iff the answer declines)."""
    record = {"answer": "a grey cat", "gold_answers": ["the grey cat named Pilot"], "scores": {"f1": 0.0, "em": 0.0}}
    squad = rescore_record(record, "covid_qa")
    assert squad["em"] == 0.0 and 0.5 < squad["f1"] < 1.0
    exact = rescore_record({**record, "answer": "The grey cat named Pilot."}, "covid_qa")
    assert (exact["em"], exact["f1"]) == (1.0, 1.0)
    assert "f1" not in rescore_record(record)  # no kind: the answer is not scored
    trap = {
        "answer": "Not mentioned in the conversation",
        "gold_answers": ["Pilot"],
        "category": "5",
        "scores": {"f1": 0},
    }
    assert rescore_record(trap, "locomo")["f1"] == 1.0
    assert rescore_record({**trap, "answer": "Pilot"}, "locomo")["f1"] == 0.0


def test_multiple_choice_accuracy_is_read_from_the_published_scores() -> None:
    """A published multiple-choice record keeps ``scores = {"accuracy": bool}`` (how publishing slims it): the
    intervals and the pairings read it (they found no scored question before)."""
    records = [
        {"question_id": "q1", "scores": {"accuracy": True}},
        {"question_id": "q2", "scores": {"accuracy": False}},
        {"question_id": "q3", "scores": {"f1": 0.5}},
    ]
    assert per_question(records, "accuracy") == {"q1": 1.0, "q2": 0.0}
    assert per_question(records, "f1") == {"q3": 0.5}


def test_a_multiple_choice_answer_is_rescored_from_its_chosen_option() -> None:
    right = {"question_id": "q1", "answer": "a guard", "gold_answers": ["a guard"], "scores": {"accuracy": True}}
    wrong = dict(right, answer="a robot")
    assert rescore_record(right)["accuracy"] == 1.0 and rescore_record(wrong)["accuracy"] == 0.0


def test_a_multiple_choice_record_keeps_the_options_chosen_and_gold(tmp_path: Path, config: Config) -> None:
    """A published multiple-choice record keeps the index of the option chosen and of the gold one, so an analysis
    of option positions reads the record alone (no dataset file)."""
    out = tmp_path / "out"
    run_eval(
        "quality", quality_file(tmp_path), ["dense"], config=config, budget=2, out_dir=out, llm=ScriptedLLM(),
        embedder=HashEmbedder(), plots=False,
    )  # fmt: skip
    run = publish_run(out, "mc", tmp_path / "results", command="x")
    records = load_records(run, tmp_path / "results")
    gold = {"q1": 0, "q2": 1, "q3": 0, "q4": 0}  # quality_file's gold options
    assert {r["question_id"]: r["gold_index"] for r in records} == gold
    for r in records:
        assert r["scores"]["accuracy"] == (r["choice"] == r["gold_index"])  # the kept indexes agree with the score
