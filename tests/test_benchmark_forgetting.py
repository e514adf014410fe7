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
from typing import Any

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
    canary = [c for c in forgetting.SCENARIOS if c not in forgetting.DERIVED_SCENARIOS]
    argv = ["--fake", "--strategies", "dense,bm25,gem", "--backends", "sqlite", "--workdir", str(tmp_path / "w"),
            "--out", str(out), "--no-progress", "--scenarios", ",".join(canary)]  # fmt: skip
    assert forgetting.main(argv) == 0
    results = json.loads(out.read_text(encoding="utf-8"))
    rows = {(r["strategy"], r["scenario"]): r for r in results["rows"]}
    assert set(rows) == {(s, c) for s in ("dense", "bm25", "gem") for c in canary}
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

    # a rerun with the same --out keeps its rows and runs none again; with --redo it runs them again, reusing the
    # base memories and the full-build counts of the workdir
    assert forgetting.main(argv) == 0
    kept = json.loads(out.read_text(encoding="utf-8"))
    assert kept["rows"] == results["rows"] and len(kept["runs"]) == 1  # no row ran: no run listed
    assert forgetting.main([*argv[:-2], "--scenarios", "delete", "--redo"]) == 0
    redone = json.loads(out.read_text(encoding="utf-8"))
    again = {(r["strategy"], r["scenario"]): r for r in redone["rows"]}
    assert again.keys() == rows.keys() and all(again[k]["full_build"] == rows[k]["full_build"] for k in rows)
    # the rows run again are dropped from the kept ones and appended as they finish, and the run lists them (not
    # their seconds: a row run again can take the same hundredths of a second)
    assert [(r["strategy"], r["scenario"]) for r in redone["rows"][-3:]] == [
        (s, "delete") for s in ("dense", "bm25", "gem")
    ]
    assert len(redone["runs"]) == 2 and redone["runs"][-1]["rows"] == 3


def test_derived_scenarios_on_sqlite(
    forgetting: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """chat, merged_relation and edge_only with the stand-ins: the removed note or document was found before; after
    the removal and after the rebuild no hit, node, answer or exchange holds its strings; the memory equals a build
    without it (structures and hits); a later erase leaves no row and no byte."""
    for var in list(os.environ):
        if var.startswith("GEMRAG_"):
            monkeypatch.delenv(var, raising=False)
    out = tmp_path / "derived.json"
    argv = ["--fake", "--strategies", "dense,hlgraph,remem", "--scenarios", ",".join(forgetting.DERIVED_SCENARIOS),
            "--backends", "sqlite", "--workdir", str(tmp_path / "w"), "--out", str(out), "--no-progress"]  # fmt: skip
    assert forgetting.main(argv) == 0
    results = json.loads(out.read_text(encoding="utf-8"))
    rows = {(r["strategy"], r["scenario"]): r for r in results["rows"]}
    assert set(rows) == {(s, c) for s in ("dense", "hlgraph", "remem") for c in forgetting.DERIVED_SCENARIOS}
    for (strategy, scenario), row in rows.items():
        f = row["figures"]
        assert row["base"]["before"]["hits"]["leaking_questions"] >= 1, (strategy, scenario)  # found before
        for point in ("after_removal", "after_rebuild"):
            m = f[point]
            assert m["hits"]["leaking_questions"] == 0 and m["nodes"]["total"] == 0, (strategy, scenario, point)
            assert m["leaking_answers"] == 0 and m["answers_asked"] > 0
        assert f["erase"]["erase"]["complete"] and sum(f["rows_closed"].values()) == 0, (strategy, scenario)
        assert sum(f["files_closed"].values()) == 0 and sum(f["files_open"].values()) > 0  # erased, not absent
        if scenario == "chat":
            assert f["checks"]["reply_holds_the_code"] and f["checks"]["recalled_the_note"]
            assert f["removal"]["withdrawn"] == ["chat:Ava#1"]
            assert row["base"]["before"]["chat"]["total"] > 0
            assert f["after_removal"]["chat"]["total"] == f["after_rebuild"]["chat"]["total"] == 0
        else:
            equal = f["equal_without"]
            assert equal["b_changed_the_build"] and equal["after_rebuild"]["equal"], equal
            assert equal["at_removal"]["equal"], equal
    paid = rows[("hlgraph", "merged_relation")]["figures"]["checks"]["paid_nodes"]
    assert "Kestrel" in paid["with_b"][0][2]["passive"] and paid["at_removal"] == paid["without_b"] != paid["with_b"]
    edges = rows[("remem", "edge_only")]["figures"]["checks"]["fact_edges"]
    assert edges["with_b"]["ilse varga -> valdora"] > 0 and edges["at_removal"] == edges["without_b"]
    assert edges["without_b"]["ilse varga -> valdora"] == 0 < edges["without_b"]["ilse varga -> mayor holt"]
    assert "| sqlite | remem | edge_only | 3/3 | 0/3 | 0 |" in capsys.readouterr().out

    assert forgetting.main([*argv, "--no-run", "--redo"]) == 0  # runs nothing, keeps everything
    assert json.loads(out.read_text(encoding="utf-8"))["rows"] == results["rows"]
    report = importlib.import_module("forgetting_report")
    record = json.loads(report.publish(results, "forgetting-test", argv, root=tmp_path).read_text(encoding="utf-8"))
    totals = record["totals"]
    assert totals["errors"] == totals["leaks_after_rebuild"] == totals["chat_after_removal"] == 0
    assert totals["not_equal_to_a_build_without"] == 0 and totals["rows_at_end_after_erase"] == 0
    assert [r["strategy"] for r in record["rows"]] == ["dense"] * 3 + ["hlgraph"] * 3 + ["remem"] * 3
    assert record["not_run"]["rows"]["dense"] == [f"postgres:{c}" for c in forgetting.DERIVED_SCENARIOS]


def test_resume_keeps_finished_rows_and_runs_the_rest(corpus: ModuleType, tmp_path: Path) -> None:
    report = importlib.import_module("forgetting_report")
    out = tmp_path / "out.json"
    done = {"backend": "sqlite", "strategy": "dense", "scenario": "delete", "figures": {}}
    failed = {"backend": "sqlite", "strategy": "gem", "scenario": "delete", "error": "boom"}
    base = {"backend": "-", "strategy": "raptor", "scenario": "base", "error": "no base"}
    earlier = {"model": "fake", "fake": True, "strategies": ["dense", "gem"], "scenarios": ["delete"],
               "backends": ["sqlite"], "rows": [done, failed, base], "runs": [{"command": "first"}],
               "wall_seconds": 12.5}  # fmt: skip
    out.write_text(json.dumps(earlier), encoding="utf-8")

    def new_run(model: str = "fake") -> dict[str, Any]:
        return {"model": model, "fake": model == "fake", "strategies": ["bm25"], "scenarios": ["delete", "sync"],
                "backends": ["postgres"], "rows": [], "runs": [{"command": "second"}]}  # fmt: skip

    asked = {("sqlite", "dense", "delete"), ("sqlite", "gem", "delete")}
    results = new_run()
    assert report.resume(results, out, asked, redo=False) == {("sqlite", "dense", "delete")}
    assert results["rows"] == [done] and results["wall_seconds_before"] == 12.5
    assert [r["command"] for r in results["runs"]] == ["first", "second"]
    assert results["strategies"] == ["dense", "gem", "bm25"] and results["backends"] == ["sqlite", "postgres"]
    results = new_run()
    assert report.resume(results, out, asked, redo=True) == set() and results["rows"] == []
    assert report.resume(new_run(), tmp_path / "none.json", asked, redo=False) == set()
    with pytest.raises(ValueError, match="qwen"):
        report.resume(new_run("qwen2.5-coder-0.5b"), out, asked, redo=False)
    missing = report.not_run([done, failed], ["dense", "gem"], ["delete"])
    assert missing == {"dense": ["postgres:delete"], "gem": ["sqlite:delete", "postgres:delete"]}


def test_the_summary_counts_a_chats_leaks_only_where_the_scenario_counts_a_chat(corpus: ModuleType) -> None:
    report = importlib.import_module("forgetting_report")

    def row(scenario: str, strategy: str, chat: tuple[int, int] | None) -> dict[str, Any]:
        point = {"hits": 0, "questions": 3, "nodes": 0, "answers": 0}
        removal, rebuild = dict(point), dict(point)
        if chat is not None:
            removal["chat"], rebuild["chat"] = chat
        return {"scenario": scenario, "backend": "sqlite", "strategy": strategy, "after_removal": removal,
                "after_rebuild": rebuild, "rows_at_end": 0, "files_at_end": 0}  # fmt: skip

    record = {"rows": [row("chat", "dense", (2, 1)), row("chat", "gem", (1, 0)), row("delete", "dense", None)]}
    lines = report.summary_table(record).splitlines()
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    cells = {line.split("|")[1].strip(): [c.strip() for c in line.strip("|").split("|")] for line in lines[2:]}
    column = header.index("chat after removal · rebuild")
    assert cells["chat"][column] == "3 · 1" and cells["delete"][column] == "–"
