"""benchmarks/erase_cost.py: its bulk fill writes exactly the rows ``put_llm`` writes (the cache entries, their
numbers and their marks), and a small run finds and erases the removed passage's entries by their marks."""

from __future__ import annotations

import json
import random
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from gemrag.store import open_store
from gemrag.store.erase import response_marks
from paths import load_script

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "erase_cost.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_script(SCRIPT, "benchmark_erase_cost")


def _rows(directory: Path) -> dict[str, Any]:
    """What the marks' tables hold (the cache entries without their ``created`` time) and their schema."""
    store = open_store(directory)
    try:
        q = store.database._query
        return {
            "cache": q("SELECT key, model, response, writes FROM llm_cache ORDER BY key"),
            "entries": q("SELECT id, key FROM llm_entries ORDER BY id"),
            "marks": q("SELECT mark, entry FROM llm_marks ORDER BY mark, entry"),
            "schema": q("SELECT type, name, sql FROM sqlite_master WHERE tbl_name LIKE 'llm_%' ORDER BY name"),
        }
    finally:
        store.close()


def test_marks_equal_response_marks(bench: ModuleType) -> None:
    passages = bench._passages(5, random.Random(1))
    for passage in passages:
        assert bench._marks(passage) == sorted(response_marks(bench._entry(passage)))
    assert bench.passage_marks(passages, workers=2) == bench.passage_marks(passages, workers=1)


def test_fill_writes_what_put_llm_writes(bench: ModuleType, tmp_path: Path) -> None:
    n, passages = 14, bench._passages(4, random.Random(2))  # 14 entries: passages held 4, 4, 3 and 3 times
    bulk = open_store(tmp_path / "bulk")
    try:
        seconds, mark_rows = bench.fill(bulk, n, passages, workers=1)
        assert seconds > 0
        with pytest.raises(ValueError, match="empty"):
            bench.fill(bulk, 1, passages)
    finally:
        bulk.close()
    single = open_store(tmp_path / "single")
    try:
        for i in range(n):
            single.put_llm(f"{i:064x}", bench.MODEL, bench._entry(passages[i % len(passages)]))
    finally:
        single.close()
    filled, put = _rows(tmp_path / "bulk"), _rows(tmp_path / "single")
    assert filled == put
    assert len(filled["cache"]) == n and len(filled["marks"]) == mark_rows > 20 * n
    assert json.loads(filled["cache"][5][2]) == bench._entry(passages[1])


def test_small_run_erases_the_passage_by_its_marks(bench: ModuleType, tmp_path: Path) -> None:
    r = bench.measure(40, tmp_path, workers=1, scan_sample=20)
    assert r["erased_entries"] == 4  # the removed passage's holders, and nothing else
    assert r["scan_entries"] == 20 and r["scan_s"] == pytest.approx(r["scan_sample_s"] * 2, abs=2e-3)
    assert r["marks_bytes_per_entry"] > 0 and r["schema7_marks_bytes_per_entry"] > r["marks_bytes_per_entry"]
    assert r["vacuum_complete"] and not (tmp_path / "m40").exists()
    assert not (tmp_path / "scratch40.sqlite").exists()
