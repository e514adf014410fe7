"""What only the PostgreSQL store has: memory URLs, the SQL dialect, one schema per memory, schema versions,
read-only opening, the advisory build lock across processes, a reader's snapshot during a publish, the pool.

Everything both backends share (rows, generations, kill -9, strategies, lifecycle) runs on both through the
``memory_at`` fixture; these tests need the session's PostgreSQL server (``postgres_url``)."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from backends import drop_schemas, new_schema, schema_url
from gemrag.errors import GemragError, MemoryBusyError, ReadOnlyMemoryError
from gemrag.store import Store, import_caches, open_store
from gemrag.store.postgres.backend import PostgresStore
from gemrag.store.postgres.connect import MAX_IDENTIFIER, PgLocation, child_schema, is_postgres_url
from gemrag.store.postgres.dialect import returns_id, to_postgres
from gemrag.store.schema import SCHEMA_VERSION


def test_urls_name_a_schema_and_hide_the_password() -> None:
    loc = PgLocation.parse("postgresql://ann:secret@db.example:5433/mem?schema=team_a&sslmode=require")
    assert loc.schema == "team_a"
    assert loc.conninfo == "postgresql://ann:secret@db.example:5433/mem?sslmode=require"
    assert "secret" not in loc.display and "team_a" in loc.display
    assert PgLocation.parse("postgres://localhost/mem").schema == "gemrag"
    with pytest.raises(GemragError, match="lower-case SQL identifier"):
        PgLocation.parse("postgresql://localhost/mem?schema=Drop;Table")
    assert is_postgres_url("postgresql://x/y") and not is_postgres_url("mem/") and not is_postgres_url(None)


def test_child_schemas_are_identifiers_of_at_most_63_characters() -> None:
    """``PREFIX_<name>`` for serve's namespaces and eval's memories; long names, and with ``distinct`` any name the
    cleaning changed, end in a hash of the name, so distinct names stay distinct."""
    assert child_schema("srv", "Docs") == child_schema("srv", "docs") == "srv_docs"  # serve: one namespace
    assert child_schema("srv", "a-b") == "srv_a_b"
    dotted, dashed = child_schema("ev", "doc.1", distinct=True), child_schema("ev", "doc-1", distinct=True)
    assert dotted != dashed and dotted.startswith("ev_doc_1_") and len(dotted) == len("ev_doc_1_") + 8
    assert child_schema("ev", "doc_1", distinct=True) == "ev_doc_1"  # nothing cleaned: no hash
    long_a, long_b = child_schema("ev", "x" * 80 + "a"), child_schema("ev", "x" * 80 + "b")
    assert long_a != long_b and len(long_a) == len(long_b) == MAX_IDENTIFIER
    assert all(c.isascii() and (c.isalnum() or c == "_") for c in child_schema("ev", "Ünïcode film", distinct=True))
    loc = PgLocation.parse("postgresql://ann:secret@db:5432/mem?schema=ev&ef_search=50")
    assert PgLocation.parse(loc.child("Doc-1", distinct=True)).schema == child_schema("ev", "Doc-1", distinct=True)
    assert "secret" in loc.child("m")  # the password is kept for connecting
    with pytest.raises(ValueError, match="prefix"):
        child_schema("e" * 45, "m")


def test_the_dialect_translates_the_stores_statements() -> None:
    assert to_postgres("SELECT a FROM t WHERE b = ? AND c LIKE ?") == "SELECT a FROM t WHERE b = %s AND c LIKE %s"
    assert to_postgres("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)") == (
        "INSERT INTO meta(key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"
    )
    assert to_postgres("INSERT OR IGNORE INTO build_chunks(strategy, chunk_id) VALUES (?, ?)").endswith(
        "ON CONFLICT DO NOTHING"
    )
    assert "IS DISTINCT FROM %s" in to_postgres("SELECT 1 WHERE s IS NOT ? AND g IS NOT NULL")
    assert "IS NOT NULL" in to_postgres("SELECT 1 WHERE s IS NOT ? AND g IS NOT NULL")
    assert to_postgres("SELECT '%' || ?") == "SELECT '%%' || %s"
    with pytest.raises(ValueError, match="no known primary key"):
        to_postgres("INSERT OR REPLACE INTO unknown(a) VALUES (?)")
    assert returns_id("INSERT INTO nodes(kind) VALUES (?)") and not returns_id("INSERT INTO edges(a) VALUES (?)")


@pytest.fixture
def url(postgres_url: str) -> Iterator[str]:
    schema = new_schema("pg")
    yield schema_url(postgres_url, schema)
    drop_schemas(postgres_url, [schema])


def test_one_schema_per_memory_and_schema_versions(url: str, postgres_url: str) -> None:
    other_schema = new_schema("other")
    try:
        a = open_store(url)
        b = open_store(schema_url(postgres_url, other_schema))
        a.add_document("a.txt", "a", "only in a")
        assert [d["title"] for d in a.documents()] == ["a"] and b.documents() == []
        assert a.get_meta("schema_version") == SCHEMA_VERSION
        a.set_meta("schema_version", SCHEMA_VERSION + 1)
        a.close()
        b.close()
        with pytest.raises(GemragError, match="newer gemrag"):
            open_store(url)
    finally:
        drop_schemas(postgres_url, [other_schema])


def test_a_schema_3_memory_upgrades_to_schema_4(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """PG_UPGRADES[4] on a memory written at schema 3: its documents keep their ids and become anonymous version 1;
    the same text may then be stored under two identities, and replaced versions go to ``document_versions``."""
    with monkeypatch.context() as patch:
        patch.setattr("gemrag.store.postgres.schema.SCHEMA_VERSION", 3)
        patch.setattr("gemrag.store.postgres.store.SCHEMA_VERSION", 3)
        old = open_store(url)
        with old.transaction() as c:  # a row as gemrag wrote it at schema 3
            doc_id = c.execute(
                "INSERT INTO documents(source, sha256, title, text, n_chars, added_at) VALUES (?,?,?,?,?,?)",
                ("a.txt", "0" * 64, "a", "the old text", 12, 1.0),
            ).lastrowid
        assert old.get_meta("schema_version") == 3
        assert "source_key" not in {r[0] for r in old.database._query(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'documents'")}  # fmt: skip
        old.close()
    store = open_store(url)
    try:
        assert store.get_meta("schema_version") == SCHEMA_VERSION == 8
        [doc] = store.documents()
        assert (doc["id"], doc["key"], doc["version"]) == (doc_id, None, 1)
        with store.transaction() as c:  # the same text under an identity: sha256 is no longer UNIQUE
            twin = store.insert_document(c, "b.txt", "b", "the old text", doc["sha256"], key="/b.txt")
            store.record_version(c, doc, "replaced", keep_text=True)
        assert twin > doc_id and [d["key"] for d in store.documents()] == [None, "/b.txt"]
        [past] = [v for v in store.document_history("a.txt") if not v["current"]]
        assert (past["reason"], past["text"]) == ("replaced", "the old text")
    finally:
        store.close()


def test_read_only_opening(url: str) -> None:
    with pytest.raises(GemragError, match="holds no gemrag memory"):
        PostgresStore(url, readonly=True)
    writer = open_store(url)
    writer.add_document("a.txt", "a", "text")
    reader = open_store(url, readonly=True)
    assert reader.readonly and [d["title"] for d in reader.documents()] == ["a"]
    with pytest.raises(ReadOnlyMemoryError):
        reader.add_document("b.txt", "b", "more")
    reader.put_llm("k", "m", {"x": 1})  # a cache write is skipped, not an error
    assert writer.llm_cache_counts() == (0, 0)
    reader.close()
    writer.close()


HOLD = r"""
import sys, time
from gemrag.store import open_store
store = open_store(sys.argv[1])
lock = store.build_lock()
lock.acquire()
print("held", flush=True)
time.sleep(60)
"""


def test_the_build_lock_names_its_holder_and_dies_with_it(url: str) -> None:
    store = open_store(url)
    child = subprocess.Popen([sys.executable, "-c", HOLD, url], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        with pytest.raises(MemoryBusyError, match=rf"another process \(pid {child.pid}\) is building"):
            store.build_lock().acquire()
        child.kill()  # kill -9: the server ends the session, and the lock with it
        child.wait(10)
        lock = store.build_lock()
        lock.acquire(wait=10)
        assert lock.held
        lock.release()
    finally:
        child.kill()
        store.close()


def test_a_snapshot_reads_one_generation_while_another_connection_publishes(url: str) -> None:
    writer, reader = open_store(url), open_store(url)
    g = writer.begin_build("x")
    writer.publish("x", g, [writer.write_array("x", g, "v", np.arange(3))])
    with reader.snapshot():
        first = reader.load_published("x")
        g2 = writer.begin_build("x")
        writer.publish("x", g2, [writer.write_array("x", g2, "v", np.arange(5))])  # deletes generation 1's rows
        again = reader.load_published("x")  # the snapshot still reads generation 1, whole
    assert first is not None and again is not None and again.generation == 1 and len(again.arrays["v"]) == 3
    latest = reader.load_published("x")
    assert latest is not None and latest.generation == 2 and len(latest.arrays["v"]) == 5
    writer.close()
    reader.close()


def test_the_pool_serves_threads_at_once(url: str) -> None:
    store = open_store(url, pool_size=4)
    doc, _ = store.add_document("a.txt", "a", "alpha. beta.")
    store.add_chunks(doc, [("alpha.", 1), ("beta.", 1)])
    seen: list[int] = []
    errors: list[BaseException] = []

    def read() -> None:
        try:
            for _ in range(20):
                with store.snapshot():
                    seen.append(len(store.nodes("chunk")))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=read) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    store.close()
    assert not errors and seen == [2] * 80


def test_caches_are_imported_from_a_directory_memory(url: str, tmp_path: Path) -> None:
    source = Store(tmp_path / "src")
    source.put_llm("k", "model", {"text": "cached"})
    source.put_embeddings("emb", [("e", np.arange(3, dtype=np.float32))])
    source.close()
    store = open_store(url)
    assert import_caches(store, tmp_path / "src") == (1, 1)
    assert import_caches(store, tmp_path / "src") == (0, 0)  # entries already here are kept
    assert store.get_llm("k") == {"text": "cached"}
    np.testing.assert_array_equal(store.get_embeddings("emb", ["e"])["e"], np.arange(3, dtype=np.float32))
    store.close()
