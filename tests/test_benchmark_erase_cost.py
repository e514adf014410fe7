"""benchmarks/erase_cost.py: its bulk fill writes exactly the rows ``put_llm`` writes (the cache entries, their
numbers and their marks) on both stores (PostgreSQL: the session's real server; under CI=true its absence fails),
and a small run on each store finds and erases the removed passage's entries by their marks."""

from __future__ import annotations

import json
import random
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from backends import MemoryAt
from gemrag.store import open_store
from gemrag.store.erase import response_marks
from paths import load_script

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "erase_cost.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_script(SCRIPT, "benchmark_erase_cost")


def _rows(location: str | Path) -> dict[str, Any]:
    """What the marks' tables hold (the cache entries without their ``created`` time) and their schema (SQLite's
    tables and indexes, PostgreSQL's indexes)."""
    store = open_store(location)
    try:
        q = store.database._query
        if hasattr(store.database, "schema"):
            schema = q(
                "SELECT tablename, indexname, replace(indexdef, ?, '') FROM pg_indexes"
                " WHERE schemaname = ? AND tablename LIKE 'llm_%' ORDER BY indexname",
                (f"{store.database.schema}.", store.database.schema),
            )
        else:
            schema = q("SELECT type, name, sql FROM sqlite_master WHERE tbl_name LIKE 'llm_%' ORDER BY name")
        return {
            "cache": [tuple(r) for r in q("SELECT key, model, response, writes FROM llm_cache ORDER BY key")],
            "entries": [tuple(r) for r in q("SELECT id, key FROM llm_entries ORDER BY id")],
            "marks": [tuple(r) for r in q("SELECT mark, entry FROM llm_marks ORDER BY mark, entry")],
            "schema": [tuple(r) for r in schema],
        }
    finally:
        store.close()


def test_marks_equal_response_marks(bench: ModuleType) -> None:
    passages = bench._passages(5, random.Random(1))
    for passage in passages:
        assert bench._marks(passage) == sorted(response_marks(bench._entry(passage)))
    assert bench.passage_marks(passages, workers=2) == bench.passage_marks(passages, workers=1)


def test_fill_writes_what_put_llm_writes(bench: ModuleType, memory_at: MemoryAt) -> None:
    n, passages = 14, bench._passages(4, random.Random(2))  # 14 entries: passages held 4, 4, 3 and 3 times
    extra = bench._entry("One more passage, cached after the fill by put_llm itself, gets the next number.")
    bulk = open_store(memory_at("bulk"))
    try:
        seconds, mark_rows = bench.fill(bulk, n, passages, workers=1)
        assert seconds > 0
        with pytest.raises(ValueError, match="empty"):
            bench.fill(bulk, 1, passages)
        bulk.put_llm("f" * 64, bench.MODEL, extra)  # numbered n + 1: the fill left the numbering where puts leave it
    finally:
        bulk.close()
    single = open_store(memory_at("single"))
    try:
        for i in range(n):
            single.put_llm(f"{i:064x}", bench.MODEL, bench._entry(passages[i % len(passages)]))
        single.put_llm("f" * 64, bench.MODEL, extra)
    finally:
        single.close()
    filled, put = _rows(memory_at("bulk")), _rows(memory_at("single"))
    assert filled == put
    assert len(filled["cache"]) == n + 1 and filled["entries"][-1] == (n + 1, "f" * 64)
    assert len(filled["marks"]) - len(response_marks(extra)) == mark_rows > 20 * n
    assert json.loads(filled["cache"][5][2]) == bench._entry(passages[1])
    assert any("llm_marks_entry" in str(r) for r in filled["schema"])  # the index dropped for the load, made again


def test_small_run_erases_the_passage_by_its_marks(
    bench: ModuleType, tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    postgres = request.getfixturevalue("postgres_url") if backend == "postgres" else None
    r = bench.measure(40, tmp_path, workers=1, scan_sample=20, postgres=postgres)
    assert r["store"] == backend
    assert r["erased_entries"] == 4  # the removed passage's holders, and nothing else
    assert r["scan_entries"] == 20 and r["scan_s"] == pytest.approx(r["scan_sample_s"] * 2, abs=2e-3)
    assert r["marks_bytes_per_entry"] > 0 and r["vacuum_complete"]
    if postgres is None:
        assert r["schema7_marks_bytes_per_entry"] > r["marks_bytes_per_entry"]
        assert not (tmp_path / "m40").exists() and not (tmp_path / "scratch40.sqlite").exists()
    else:
        assert "schema7_marks_bytes_per_entry" not in r  # measured on SQLite only
        store = open_store(bench._schema_url(postgres, "erase_cost_40"))  # the schema was dropped: a new memory
        try:
            assert store.database._query("SELECT COUNT(*) FROM llm_cache") == [(0,)]
        finally:
            store.close()


def test_a_record_keeps_the_rows_this_run_did_not_measure(bench: ModuleType) -> None:
    previous = {
        "code": {"commit": "07aff96a88b4c419c25bd59e60896a170d987e92-dirty"},
        "date": "2026-12-02T08:52:18+00:00",
        "results": [{"entries": 10000, "erase_s": 0.2}, {"entries": 1000000, "erase_s": 8.9}],
    }
    new = [
        {"store": "postgres", "entries": 10000, "erase_s": 0.3, "code": "abc", "date": "2026-12-03"},
        {"store": "sqlite", "entries": 10000, "erase_s": 0.1, "code": "abc", "date": "2026-12-03"},
    ]
    rows = bench.merge_rows(previous, new)
    assert [(r["store"], r["entries"], r["erase_s"]) for r in rows] == [
        ("sqlite", 10000, 0.1),  # measured again: the new row
        ("sqlite", 1000000, 8.9),  # kept, named as the earlier run's
        ("postgres", 10000, 0.3),
    ]
    assert (rows[1]["code"], rows[1]["date"]) == ("07aff96a88b4", "2026-12-02")
    assert bench._schema_url("postgresql://u@h/db?host=%2Ftmp%2Fx&schema=old", "new").endswith("schema=new")
    assert "schema=old" not in bench._schema_url("postgresql://u@h/db?schema=old&sslmode=disable", "new")
