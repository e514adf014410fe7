"""benchmarks/rescore_recall.py: the Recall@k of an output directory's records re-scored with the rule of issue 38
from the records' rankings and the memories, without an LLM, on tiny run directories made here."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from test_eval_factual import covid_file
from test_eval_runner import two_chunk_alpha_file

from fakes import HashEmbedder
from gemrag.config import Config
from gemrag.eval.runner import run_eval
from paths import load_script

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "rescore_recall.py"


@pytest.fixture(scope="module")
def rescore() -> ModuleType:
    return load_script(SCRIPT, "rescore_recall")


def _rewrite(out: Path, old: dict[tuple[str, str], tuple[float, float]]) -> None:
    """Make the records look scored by the old rule: no ``recall_rule``, the given (R@2, R@5)."""
    lines = [json.loads(x) for x in (out / "records.jsonl").read_text().splitlines()]
    for rec in lines:
        rec.pop("recall_rule", None)
        rec["recall@2"], rec["recall@5"] = old[(rec["strategy"], rec["question_id"])]
    (out / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")


def test_old_records_are_rescored_from_their_rankings(
    tmp_path: Path, config: Config, rescore: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    kwargs: dict[str, Any] = {"config": config, "budget": 1, "out_dir": out, "answer": False, "plots": False}
    run_eval(
        "musique", two_chunk_alpha_file(tmp_path), ["firstchunks", "lastchunks"], embedder=HashEmbedder(), **kwargs
    )
    # what the old rule recorded: the first k distinct documents (firstchunks), a k-chunk election (lastchunks)
    old = {
        ("firstchunks", "2hop__0"): (1.0, 1.0),
        ("firstchunks", "2hop__1"): (0.0, 0.0),
        ("lastchunks", "2hop__0"): (0.0, 1.0),
        ("lastchunks", "2hop__1"): (1.0, 1.0),
    }
    _rewrite(out, old)
    rows = rescore.rescore_dir(out)
    assert rows["firstchunks"] == {"n": 2, "skipped": 0, "changed": 1, "old@2": 50.0, "new@2": 25.0,
                                   "old@5": 50.0, "new@5": 50.0}  # fmt: skip
    assert rows["lastchunks"] == {"n": 2, "skipped": 0, "changed": 2, "old@2": 50.0, "new@2": 50.0,
                                  "old@5": 100.0, "new@5": 100.0}  # fmt: skip
    assert rescore.main([str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| firstchunks | 2 | 50.0 | 25.0 | 50.0 | 50.0 | 1 | 0 |" in printed
    # resuming such a directory keeps its records, and the report says which rule they hold
    again = run_eval("musique", tmp_path / "mh.json", ["firstchunks", "lastchunks"], embedder=HashEmbedder(), **kwargs)
    assert "4 records hold Recall@k by the earlier rule" in (out / "results.md").read_text()
    assert again.summary.aggregates["firstchunks"]["recall@2"]["mean"] == 0.5  # the old values, as recorded


def test_records_of_the_new_rule_and_answer_recall(tmp_path: Path, config: Config, rescore: ModuleType) -> None:
    out = tmp_path / "covid"
    kwargs: dict[str, Any] = {"config": config, "budget": 1, "out_dir": out, "answer": False, "plots": False}
    res = run_eval("covid_qa", covid_file(tmp_path), ["dense"], embedder=HashEmbedder(), **kwargs)
    rows = rescore.rescore_dir(out)  # written by the new rule: old = new, nothing changed
    mean5 = 100 * sum(r["recall@5"] for r in res.records) / len(res.records)
    assert rows["dense"]["n"] == 3 and rows["dense"]["changed"] == 0 and rows["dense"]["new@5"] == mean5
    _rewrite(out, {("dense", r["question_id"]): (0.0, 0.0) for r in res.records})
    rows = rescore.rescore_dir(out)  # answer spans from the dataset file results.json names
    assert rows["dense"]["old@5"] == 0.0 and rows["dense"]["new@5"] == mean5 and rows["dense"]["skipped"] == 0
    moved = tmp_path / "moved.json"
    covid_file(tmp_path).rename(moved)
    assert rescore.rescore_dir(out)["dense"]["skipped"] == 3  # the dataset is gone: reported, not guessed
    assert rescore.rescore_dir(out, moved)["dense"]["n"] == 3


def test_a_directory_without_records_or_memory_is_refused(tmp_path: Path, rescore: ModuleType) -> None:
    with pytest.raises(FileNotFoundError, match="no records.jsonl"):
        rescore.rescore_dir(tmp_path)
    (tmp_path / "records.jsonl").write_text(json.dumps({"group": "g", "strategy": "dense"}) + "\n")
    (tmp_path / "index.jsonl").write_text(json.dumps({"group": "g", "strategy": "dense", "memory": "m"}) + "\n")
    with pytest.raises(FileNotFoundError, match="no such memory"):
        rescore.rescore_dir(tmp_path)
