"""Each backend's database part names its SQL dialect (``Database.dialect``: ``"sqlite"`` or ``"postgres"``), the
facade forwards it, and the code that writes SQL for one database chooses by it: an erase reads the unmarked cache
keys with its dialect's statement (``gemrag.store.caches.UNMARKED``), and a copy moves PostgreSQL's identity
sequences past the copied ids (SQLite needs nothing; its connection has no ``raw`` to do it with)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from backends import MemoryAt
from gemrag.store import open_store
from gemrag.store.caches import UNMARKED
from gemrag.store.copy import copy_memory
from gemrag.store.erase import marks_of

SECRET = "Captain Ilse Varga keeps the Zephyr code in a brass locket under the old pier."
OTHER = "The lighthouse keeper paints the railings every spring and oils the lamp in autumn."


def _response(passage: str) -> dict[str, Any]:
    return {"text": "Two questions.", "input": [{"role": "user", "content": f"Passage: {passage}"}]}


def test_each_backend_reports_its_dialect(memory_at: MemoryAt, backend: str) -> None:
    store = open_store(memory_at("m"))
    try:
        assert store.database.dialect == backend
        assert store.dialect == backend  # the facade's member, forwarded to the database part
    finally:
        store.close()


def test_an_erase_reads_the_unmarked_keys_in_its_databases_dialect(
    memory_at: MemoryAt, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store(memory_at("m"))
    try:
        store.put_llm("k-secret", "m", _response(SECRET))
        store.put_llm("k-other", "m", _response(OTHER))
        with store.transaction() as c:  # as a cache copied in or written before marks existed: no entry is marked
            c.execute("DELETE FROM llm_marks")
            c.execute("DELETE FROM llm_entries")
        statements: list[str] = []
        query = store.database._query

        def recording(sql: str, args: Any = ()) -> list[Any]:
            statements.append(sql)
            return query(sql, args)

        monkeypatch.setattr(store.database, "_query", recording)
        removed = marks_of(SECRET, every=True)

        purged = store.purge_caches(removed, handled=removed, input_key="input", keep_embeddings=None)

        other = "postgres" if backend == "sqlite" else "sqlite"
        assert set(UNMARKED[backend]) & set(statements), "the erase did not read the unmarked keys in its dialect"
        assert not set(UNMARKED[other]) & set(statements)  # type: ignore[index]
        assert (purged.llm_entries, purged.llm_kept) == (1, 1)  # the entries were marked, then the secret's erased
        assert store.get_llm("k-secret") is None and store.get_llm("k-other") is not None
    finally:
        store.close()


def test_a_copy_keeps_giving_new_ids_after_the_copied_ones(memory_at: MemoryAt, tmp_path: Path) -> None:
    source = open_store(tmp_path / "source")
    try:
        for text in (SECRET, OTHER):
            source.add_document("notes", "notes", text)
    finally:
        source.close()
    target = memory_at("copy")

    before, after = copy_memory(tmp_path / "source", target)

    assert before == after and after["documents"] == 2
    copy = open_store(target)
    try:
        doc_id, created = copy.add_document("more", "more", "A third note, added to the copy.")
        assert (doc_id, created) == (3, True)  # PostgreSQL's identity moved past the copied ids; SQLite's by itself
    finally:
        copy.close()
