"""benchmarks/index_plan.py in ``--fake`` mode: it plans, builds and compares each run, its calls ratio is 1 with the
test doubles, and a second run of the same command resumes from its results instead of building again."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from paths import load_script

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "index_plan.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_script(SCRIPT, "benchmark_index_plan")


def test_estimate_against_actual(bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    story = tmp_path / "story.txt"
    story.write_text(bench.STORY.read_text(encoding="utf-8")[:5000], encoding="utf-8")
    args = ["--fake", "--corpus", str(story), "--strategy", "hlgraph,dense", "--out", str(tmp_path / "out")]
    assert bench.main(args) == 0
    lines = (tmp_path / "out" / "results.jsonl").read_text(encoding="utf-8").splitlines()
    results = {r["strategy"]: r for r in map(json.loads, lines)}
    hlgraph = results["hlgraph"]
    assert hlgraph["estimate"]["calls"] == hlgraph["actual"]["calls"] > 0 and hlgraph["ratio"]["calls"] == 1.0
    assert results["dense"]["actual"]["calls"] == 0 and results["dense"]["estimate"]["calls"] == 0
    assert (tmp_path / "out" / "story.txt-hlgraph-fake" / "plan.json").exists()
    shown = capsys.readouterr().out
    assert "estimate" in shown and "ratio" in shown and "plan hlgraph" in shown
    assert bench.main(args) == 0  # resumed: the finished runs are read back, not built again
    assert len((tmp_path / "out" / "results.jsonl").read_text(encoding="utf-8").splitlines()) == 2
    assert "plan hlgraph" not in capsys.readouterr().out
