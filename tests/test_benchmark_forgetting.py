"""benchmarks/forgetting.py in ``--fake`` mode on SQLite: the canary harness runs its scenarios for three strategies,
sees the canary before the removal, finds none of it in the contexts of the chunk strategies after it, counts the
rebuild's LLM calls against a full build, and prints both Markdown tables."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
from pathlib import Path
from types import ModuleType

import pytest

from paths import load_script

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "forgetting.py"


@pytest.fixture(scope="module")
def forgetting() -> ModuleType:
    return load_script(SCRIPT, "benchmark_forgetting")


@pytest.fixture(scope="module")
def corpus(forgetting: ModuleType) -> ModuleType:
    """benchmarks/forgetting_corpus.py, as the script imported it (it put benchmarks/ on ``sys.path``)."""
    return importlib.import_module("forgetting_corpus")


def test_abstention_and_canary_matching(corpus: ModuleType) -> None:
    assert corpus.abstains("The context does not mention the keeper.")
    assert corpus.abstains("Not mentioned.")
    assert corpus.abstains("")
    assert not corpus.abstains("The keeper is Ilse Varga [1].")
    assert corpus.found("Code magenta-4471, said VARGA") == ["varga", "magenta-4471"]
    assert not corpus.found(corpus.EDITED)
    assert not any(corpus.found(q) for q in corpus.QUESTIONS)
    assert all(corpus.found(corpus.CANARY, [n]) for n in corpus.NEEDLES if n != "magenta 4471")


def test_fake_run_on_sqlite(
    forgetting: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for var in list(os.environ):
        if var.startswith("GEMRAG_"):
            monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "forgetting.json"
    argv = ["--fake", "--strategies", "dense,bm25,gem", "--backends", "sqlite", "--workdir", str(tmp_path / "w"),
            "--out", str(out), "--no-progress"]  # fmt: skip
    assert forgetting.main(argv) == 0
    results = json.loads(out.read_text(encoding="utf-8"))
    rows = {(r["strategy"], r["scenario"]): r for r in results["rows"]}
    assert set(rows) == {(s, c) for s in ("dense", "bm25", "gem") for c in forgetting.SCENARIOS}
    for (strategy, scenario), row in rows.items():
        assert "error" not in row, row.get("error")
        assert row["base"]["before"]["hits"]["leaking_questions"] >= 3, strategy  # the canary was retrievable
        figures = row["figures"]
        if "skipped" in figures:
            assert scenario == "purge" and not results["purge_supported"]
            continue
        after, rebuilt = figures["after_removal"], figures["after_rebuild"]
        refused = after["hits"]["error"] is not None  # a strategy may refuse to retrieve until it is rebuilt
        assert after["answers_asked"] == (0 if refused else 2 * len(forgetting.QUESTIONS))  # 1 reader, 2 prompts
        assert rebuilt["hits"]["error"] is None and rebuilt["answers_asked"] == 2 * len(forgetting.QUESTIONS)
        if strategy in ("dense", "bm25"):  # chunks only: nothing of the canary is left to retrieve
            assert after["hits"]["leaking_questions"] == 0 and rebuilt["hits"]["leaking_questions"] == 0
            assert after["nodes"]["total"] == 0 and rebuilt["nodes"]["total"] == 0
        if scenario in ("replace", "edit_erase"):
            assert rebuilt["hits"]["edited_questions"] >= 3, strategy  # the new version is found
        if scenario in forgetting.ERASE_SCENARIOS:  # a later erase leaves no row and no byte of the canary
            erase = figures["erase"]
            assert erase["erase"]["complete"] and erase["erase"]["marks"] >= 0, (strategy, scenario)
            assert sum(figures["rows_closed"].values()) == sum(figures["files_closed"].values()) == 0, figures
            if scenario == "erase_reader":  # the reader kept it from finishing; it said which file
                assert not erase["first"]["complete"] and "memory.sqlite" in erase["first"]["detail"]
            if scenario == "erase_interrupt":  # SIGINT inside the transaction kept everything; after it, no rewrite
                assert erase["first"] == {"interrupted": True, "quarantine_kept": True, "cache_kept": True}
                assert erase["second"] == {"interrupted": True, "quarantine_left": 0}
        if scenario == "delete_indexing":  # busy while the other process built; then the delete ran
            removal = figures["removal"]
            assert removal["busy"] and removal["canary_kept_while_busy"] and removal["other_exit_code"] == 0
            assert removal["chunks"] > 0
        assert figures["rebuild"]["llm_calls"] <= row["full_build"]["llm_calls"]
    gem = rows[("gem", "delete")]
    assert gem["full_build"]["llm_calls"] > 0 and gem["base"]["build_llm_calls"] > gem["full_build"]["llm_calls"]
    # the embeddings of the canary's texts are tracked, and a delete without purge keeps them in the cache
    assert rows[("dense", "delete")]["figures"]["after_removal"]["caches"]["embeddings"] > 0
    printed = capsys.readouterr().out
    assert "| store | strategy | scenario | found before |" in printed
    assert "| strategy | reader | prompt | after removal: abstained / answered / leaked |" in printed

    # the record (results/NAME.json): the published runs' header, one entry per scenario, no leak after an erase
    report = importlib.import_module("forgetting_report")
    record = json.loads(report.publish(results, "forgetting-test", argv, root=tmp_path).read_text(encoding="utf-8"))
    assert record["kind"] == "forgetting" and record["machine"]["cpus"] >= 1 and record["code"]["commit"]
    assert len(record["rows"]) == len(rows) and record["totals"]["errors"] == 0
    assert record["totals"]["rows_at_end_after_erase"] == record["totals"]["files_at_end_after_erase"] == 0
    indexing = next(r for r in record["rows"] if r["scenario"] == "delete_indexing")
    assert indexing["delete"]["busy"] and indexing["erase"]["final"]["complete"]

    # a rerun with the same workdir reuses the base memories and the full-build counts
    assert forgetting.main(argv) == 0
    again = json.loads(out.read_text(encoding="utf-8"))
    assert [r["full_build"] for r in again["rows"]] == [r["full_build"] for r in results["rows"]]
