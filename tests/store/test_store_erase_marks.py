"""The erase marks in their compact form (schema 8, :mod:`gemrag.store.erase`): an LLM cache entry is numbered once
(``llm_entries``) and its marks refer to that number (``llm_marks(mark, entry)``); an erase finds an entry by a mark
of the removed text, deletes it with its marks and its number and keeps every other entry's; a schema-7 memory's
key-per-mark table is replaced and its entries are marked again by the first erase."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from backends import MemoryAt
from gemrag.store import open_store
from gemrag.store.erase import marks_of, response_marks

SECRET = "Captain Ilse Varga keeps the Zephyr code in a brass locket under the old pier."
OTHER = "The lighthouse keeper paints the railings every spring and oils the lamp in autumn."


def _response(passage: str) -> dict[str, Any]:
    return {"text": "Two questions.", "input": [{"role": "user", "content": f"Passage: {passage}"}]}


def _rows(store: Any, sql: str) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in store.database._query(sql)]


def test_an_erase_deletes_the_entry_its_marks_and_its_number(memory_at: MemoryAt) -> None:
    store = open_store(memory_at("m"))
    try:
        store.put_llm("k-secret", "m", _response(SECRET))
        store.put_llm("k-other", "m", _response(OTHER))
        store.put_llm("k-other", "m", _response(OTHER))  # written again: one number, no repeated mark
        numbers = dict(_rows(store, "SELECT key, id FROM llm_entries"))
        assert set(numbers) == {"k-secret", "k-other"}
        marks = _rows(store, "SELECT mark, entry FROM llm_marks")
        assert len(marks) == len(set(marks))
        assert {m for m, e in marks if e == numbers["k-other"]} == response_marks(_response(OTHER))
        removed = marks_of(SECRET, every=True)
        assert removed & {m for m, e in marks if e == numbers["k-secret"]}

        purged = store.purge_caches(removed, handled=removed, input_key="input", keep_embeddings=None)

        assert (purged.llm_entries, purged.llm_kept) == (1, 1)
        assert store.get_llm("k-secret") is None and store.get_llm("k-other") is not None
        assert _rows(store, "SELECT key FROM llm_entries") == [("k-other",)]
        assert {e for _, e in _rows(store, "SELECT mark, entry FROM llm_marks")} == {numbers["k-other"]}
    finally:
        store.close()


def test_a_schema_7_memory_gets_the_compact_marks_and_its_first_erase_marks_the_entries(tmp_path: Path) -> None:
    store = open_store(tmp_path / "m")
    store.put_llm("k-secret", "m", _response(SECRET))
    store.put_llm("k-other", "m", _response(OTHER))
    store.close()
    conn = sqlite3.connect(tmp_path / "m" / "memory.sqlite")  # as schema 7 left it: a key in every mark row
    conn.executescript(
        "DROP TABLE llm_marks; DROP TABLE llm_entries;"
        "CREATE TABLE llm_marks (mark INTEGER NOT NULL, key TEXT NOT NULL, PRIMARY KEY (mark, key)) WITHOUT ROWID;"
        "INSERT INTO llm_marks VALUES (0, 'k-secret'), (0, 'k-other');"
        "UPDATE meta SET value = '7' WHERE key = 'schema_version';"
    )
    conn.commit()
    conn.close()
    store = open_store(tmp_path / "m")
    try:
        assert store.get_meta("schema_version") == 8
        assert _rows(store, "SELECT COUNT(*) FROM llm_entries") == [(0,)]  # not marked yet
        removed = marks_of(SECRET, every=True)
        purged = store.purge_caches(removed, handled=removed, input_key="input", keep_embeddings=None)
        assert (purged.llm_entries, purged.llm_kept, purged.llm_unverifiable) == (1, 1, 0)
        assert _rows(store, "SELECT key FROM llm_entries") == [("k-other",)]
    finally:
        store.close()


def test_an_erase_marks_every_unmarked_entry_across_pages_and_erases_exactly_those_holding_the_text(
    memory_at: MemoryAt,
) -> None:
    """Entries without marks (imported, or cached before marks) interleaved in key order with marked ones, more than
    one page of the unmarked-keys query (BATCH = 500): each is marked and checked, those holding the removed text are
    erased (marked or not), the one without a recorded input is deleted, every other stays and ends marked."""
    n = 1203
    store = open_store(memory_at("m"))
    try:
        for i in range(n):
            store.put_llm(f"k{i:05d}", "m", _response(SECRET if i % 3 == 0 else f"{OTHER} Entry number {i}."))
        with store.transaction() as c:  # every even entry (odd number) loses its marks: 602 unmarked among 1,203
            c.execute("DELETE FROM llm_marks WHERE entry % 2 = 1")
            c.execute("DELETE FROM llm_entries WHERE id % 2 = 1")
            c.execute(
                "INSERT INTO llm_cache(key, model, response, created) VALUES (?,?,?,?)",
                ("k00601x", "m", '{"text": "no recorded input"}', 0.0),
            )
        unmarked = _rows(store, "SELECT COUNT(*) FROM llm_cache c WHERE NOT EXISTS (SELECT 1 FROM llm_entries e"
                                " WHERE e.key = c.key)")  # fmt: skip
        assert unmarked == [((n + 1) // 2 + 1,)]
        removed = marks_of(SECRET, every=True)

        purged = store.purge_caches(removed, handled=removed, input_key="input", keep_embeddings=None)

        holders = {f"k{i:05d}" for i in range(0, n, 3)}
        assert (purged.llm_entries, purged.llm_unverifiable, purged.llm_kept) == (len(holders), 1, n - len(holders))
        left = {str(r[0]) for r in _rows(store, "SELECT key FROM llm_cache")}
        assert left == {f"k{i:05d}" for i in range(n)} - holders
        assert {str(r[0]) for r in _rows(store, "SELECT key FROM llm_entries")} == left  # every kept entry marked
        marked = {int(r[0]) for r in _rows(store, "SELECT DISTINCT entry FROM llm_marks")}
        assert marked == {int(r[0]) for r in _rows(store, "SELECT id FROM llm_entries")}
        again = store.purge_caches(removed, handled=removed, input_key="input", keep_embeddings=None)
        assert (again.llm_entries, again.llm_unverifiable, again.llm_kept) == (0, 0, len(left))
    finally:
        store.close()
