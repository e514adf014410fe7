"""A finished ``gemrag eval --out`` directory published afterwards (``python -m gemrag.eval.publish``), and paired
comparisons of two published runs kept as data (:mod:`gemrag.eval.paired`) and shown by ``result-pair`` marks."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_eval_runner import multihop_file

from fakes import HashEmbedder
from gemrag.config import Config
from gemrag.errors import InputError
from gemrag.eval.paired import answers_changed, load_paired, pair_published, write_paired
from gemrag.eval.publish import main as publish_main
from gemrag.eval.publish import publish_run
from gemrag.eval.publish_docs import render
from gemrag.eval.published import load_published, load_records
from gemrag.eval.runner import run_eval
from gemrag.eval.stats import paired_bootstrap_diff
from paths import load_script


def _run(tmp_path: Path, config: Config, name: str = "out") -> Path:
    out = tmp_path / name
    run_eval(
        "musique", multihop_file(tmp_path), ["dense", "bm25"], config=config, budget=1, out_dir=out, answer=False,
        plots=False, embedder=HashEmbedder(), reference="dense",
    )  # fmt: skip
    return out


def test_a_finished_run_is_published_afterwards_with_its_memories_elsewhere(
    tmp_path: Path, config: Config, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _run(tmp_path, config)
    moved = tmp_path / "mems"
    shutil.move(out / "memories", moved)  # a run made with --memory keeps its memories outside --out
    root = tmp_path / "results"
    args = [str(out), "mh", "--results-dir", str(root)]
    assert publish_main(args) == 2  # its memories are not under --out: one error line, nothing written
    assert capsys.readouterr().err.startswith("error: ") and not root.exists()
    stated = ["--setting", "answer.shape=true", "--setting", "answer.reading=plain", "--code-commit", "abc123"]
    given = ["--memory", str(moved), "--documents", "a,b", "--command", "gemrag eval x"]
    assert publish_main([*args, *given, *stated]) == 0
    run = load_published("mh", root)
    assert run.non_default["answer.shape"] is True  # stated, and not the default: marked
    assert "answer.reading" not in run.non_default  # stated, but the default: not marked
    assert run.code["commit"] == "abc123" and run.command == "gemrag eval x"
    assert run.dataset.options["documents"] == ["a", "b"]
    same = publish_run(out, "direct", root, command="gemrag eval x", memory_root=moved)
    assert same.strategies == run.strategies  # the same figures as publishing it from the library
    for bad in (["--setting", "shape"], ["--setting", "answer=1"]):
        assert publish_main([*args, "--memory", str(moved), *bad]) == 2
        assert "error: " in capsys.readouterr().err


def test_two_published_runs_are_paired_as_data_and_shown_by_marks(
    tmp_path: Path, config: Config, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "results"
    publish_run(_run(tmp_path, config), "mh", root, command="x")
    paired = pair_published("bm25-vs-dense", "mh", "mh", root, strategies=["dense", "bm25"], metrics=["recall@5"])
    records = load_records(load_published("mh", root), root)
    score = {(r["strategy"], r["question_id"]): r["scores"]["recall@5"] for r in records}
    qids = sorted({q for _, q in score})
    diff, low, high, p = paired_bootstrap_diff([score["bm25", q] for q in qids], [score["dense", q] for q in qids])
    c = paired.metric("recall@5").comparison
    assert (c.diff, c.low, c.high, c.p, c.n) == (diff, low, high, p, len(qids))
    assert paired.metric("recall@5").before == sum(score["dense", q] for q in qids) / len(qids)
    assert (c.strategy, c.reference) == ("mh", "mh") and paired.strategies == ["dense", "bm25"]
    up = sum(score["bm25", q] > score["dense", q] for q in qids)
    down = sum(score["bm25", q] < score["dense", q] for q in qids)
    assert (paired.metric("recall@5").higher, paired.metric("recall@5").lower) == (up, down)
    assert paired.answers_changed is None  # a retrieval-only run has no answers to compare
    write_paired(paired, root)
    assert load_paired("bm25-vs-dense", root) == paired
    done = render(
        "<!-- result-pair: bm25-vs-dense recall@5 before -->?<!-- /result --> -> "
        "<!-- result-pair: bm25-vs-dense recall@5 -->?<!-- /result -->",
        root,
    )
    before = f"{100 * paired.metric('recall@5').before:.1f}"
    counts = "<!-- result-pair: bm25-vs-dense recall@5 higher -->?<!-- /result -->"
    assert render(counts, root) == counts.replace("?", str(up))
    assert done.startswith(f"<!-- result-pair: bm25-vs-dense recall@5 before -->{before}<")
    assert f"{100 * diff:+.1f}".replace("-", "−").lstrip("−+") in done
    for bad, message in (
        ("<!-- result-pair: bm25-vs-dense f1 -->?<!-- /result -->", "no 'f1'"),
        ("<!-- result-pair: gone recall@5 -->?<!-- /result -->", "no paired comparison named 'gone'"),
        ("<!-- result-pair: bm25-vs-dense answers changed -->?<!-- /result -->", "no such count; pair it again"),
        ("<!-- result-pair: bm25-vs-dense answers -->?<!-- /result -->", "the answers' figure is 'changed'"),
    ):
        with pytest.raises(InputError, match=message):
            render(bad, root)
    with pytest.raises(InputError, match="no strategy 'nope'"):
        pair_published("x", "mh", "mh", root, strategies=["dense", "nope"])
    # the benchmark script pairs published records and keeps the pairing, the same figures
    script = load_script(Path(__file__).resolve().parents[2] / "benchmarks" / "paired_runs.py", "paired_runs")
    argv = ["paired_runs.py", "mh", "mh", "--published", "--results", str(root), "--pair", "dense", "bm25"]
    monkeypatch.setattr("sys.argv", [*argv, "--metric", "recall@5", "--write", "again"])
    assert script.main() == 0 and load_paired("again", root).metrics == paired.metrics
    monkeypatch.setattr("sys.argv", [*argv[:4], "--results", str(root), "--metric", "f9"])
    assert script.main() == 2 and capsys.readouterr().err.startswith("error: ")


def test_answers_changed_counts_questions_answered_otherwise_case_aside() -> None:
    before = [{"question_id": q, "answer": a} for q, a in (("1", "Latin"), ("2", "Edison"), ("3", "x"), ("4", "y"))]
    after = [{"question_id": q, "answer": a} for q, a in (("1", "latin "), ("2", "New York City"), ("3", "x"))]
    assert answers_changed(before, after) == 1  # "Latin" -> "latin " is the same answer; question 4 is not paired
    assert answers_changed(before, [{"question_id": "1", "answer": None}]) is None  # no answers on one side
