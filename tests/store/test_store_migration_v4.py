"""Upgrading a schema-3 memory (documents deduplicated by text, no identities) to schema 4 (documents identified by
their source, a version history).

The fixture is a schema-3 database made with the exact schema-3 DDL (as released, ``legacy_schemas.V3_SCHEMA``)
holding the rows and generation files of a real build whose documents were indexed from files given by relative
paths, as schema-3 gemrag stored them. After the upgrade: the same rows and ids, retrieval as before with no
rebuild, no identities yet; the first ``index`` of the same files adopts their documents (no new document, no
model call), and an edited file then replaces its document with the history recorded.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

import gemrag.store.sqlite.migrations as migrations
from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.config import Config
from gemrag.store import Store
from gemrag.store.schema import SCHEMA_VERSION
from legacy_schemas import V3_SCHEMA
from test_memory import DOC_A, DOC_B

QUESTION = "Who gave Amos a silver medal for his courage?"
DOC_COLUMNS = "id, source, sha256, title, text, n_chars, added_at, chunked"


def make_v3_memory(source: Path, target: Path) -> None:
    """A schema-3 memory in ``target`` holding what the (schema-4) memory ``source`` holds, its documents
    anonymous with the relative paths schema-3 gemrag stored as their sources."""
    target.mkdir()
    for path in source.glob("*.g*.*.npy"):
        shutil.copy(path, target / path.name)
    conn = sqlite3.connect(target / "memory.sqlite")
    conn.executescript(V3_SCHEMA)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("ATTACH DATABASE ? AS src", (str(source / "memory.sqlite"),))
    tables = [
        "nodes",
        "questions",
        "embeddings",
        "edges",
        "node_sources",
        "artifacts",
        "build_chunks",
        "llm_cache",
        "usage",
        "failures",
        "builds",
    ]
    conn.execute(f"INSERT INTO documents SELECT {DOC_COLUMNS} FROM src.documents")
    conn.execute("UPDATE documents SET source = title || '.txt'")  # as given on the command line, relative
    for table in tables:  # the columns schema 3 has (a newer source has more, e.g. schema 6's chunk spans)
        columns = ", ".join(str(r[1]) for r in conn.execute(f"PRAGMA main.table_info({table})"))
        conn.execute(f"INSERT INTO {table}({columns}) SELECT {columns} FROM src.{table}")
    conn.execute("INSERT INTO meta SELECT * FROM src.meta WHERE key != 'schema_version'")
    conn.execute("INSERT INTO meta VALUES ('schema_version', '3')")
    conn.commit()
    conn.execute("DETACH DATABASE src")
    conn.close()


@pytest.fixture
def v3(tmp_path: Path, config: Config) -> tuple[Path, dict[str, list[str]]]:
    """A schema-3 memory of the files ``lighthouse.txt`` and ``greenhouse.txt`` (in the working directory, the
    config fixture's tmp_path), and what gem and dense retrieved from it."""
    for name, text in (("lighthouse", DOC_A), ("greenhouse", DOC_B)):
        Path(f"{name}.txt").write_text(text, encoding="utf-8")
    with Memory.open(tmp_path / "v4", config, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
        mem.add_text(DOC_A, "lighthouse")
        mem.add_text(DOC_B, "greenhouse")
        mem.index()
        mem.index("dense")
        before = {s: [h.text for h in mem.retrieve(QUESTION, 3, strategy=s)] for s in ("gem", "dense")}
    make_v3_memory(tmp_path / "v4", tmp_path / "v3")
    return tmp_path / "v3", before


def test_v3_memory_upgrades_in_place_and_adopts_its_files(
    v3: tuple[Path, dict[str, list[str]]], config: Config
) -> None:
    path, before = v3
    conn = sqlite3.connect(path / "memory.sqlite")
    old_rows = conn.execute(f"SELECT {DOC_COLUMNS} FROM documents ORDER BY id").fetchall()
    conn.close()
    llm = ScriptedLLM()
    with Memory.open(path, config, llm=llm, embedder=HashEmbedder()) as mem:
        store = mem.store
        assert store.get_meta("schema_version") == SCHEMA_VERSION == 8
        assert store.database.conn.execute("PRAGMA foreign_key_check").fetchall() == []
        assert store.database.conn.execute(f"SELECT {DOC_COLUMNS} FROM documents ORDER BY id").fetchall() == old_rows
        assert [(d["key"], d["version"]) for d in store.documents()] == [(None, 1), (None, 1)]
        assert store.database.conn.execute("SELECT COUNT(*) FROM document_versions").fetchone()[0] == 0
        for s in ("gem", "dense"):  # the published generations are used as they are: no rebuild
            assert [h.text for h in mem.retrieve(QUESTION, 3, strategy=s)] == before[s]
            assert store.build_state(s).state == "built"
        chunks = [n.id for n in store.nodes("chunk")]

        report = mem.add(["lighthouse.txt", "./greenhouse.txt"])  # the files schema-3 gemrag indexed: adopted
        assert [(c.status, c.doc_id) for c in report.changes] == [("unchanged", 1), ("unchanged", 2)]
        assert [d["key"] for d in store.documents()] == [
            str(Path(p).resolve()) for p in ("lighthouse.txt", "greenhouse.txt")
        ]
        assert [n.id for n in store.nodes("chunk")] == chunks and llm.calls == 0

        Path("lighthouse.txt").write_text(DOC_A.replace("Amos", "Ansel"), encoding="utf-8")
        report = mem.add(["lighthouse.txt"])
        assert [(c.status, c.doc_id, c.version) for c in report.changes] == [("updated", 1, 2)]
        history = store.document_history("lighthouse.txt")
        assert [(v["version"], v["reason"], v["current"]) for v in history] == [(1, "replaced", False), (2, None, True)]
        # the same text under another identity is another source of its document (schema 5)
        assert mem.add_text(DOC_B, "copy of greenhouse", id="copy") == (2, False)
        assert len(store.documents()) == 2 and [h["key"] for h in store.holders(2)][1:] == ["copy"]


def test_a_failed_v4_upgrade_changes_nothing(
    v3: tuple[Path, dict[str, list[str]]], config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, before = v3

    def killed(conn: sqlite3.Connection, version: int) -> None:
        raise KeyboardInterrupt  # as if killed just before the commit

    monkeypatch.setattr(migrations, "_set_version", killed)
    with pytest.raises(KeyboardInterrupt):
        Store(path)
    monkeypatch.undo()
    conn = sqlite3.connect(path / "memory.sqlite")
    assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == "3"
    assert "source_key" not in [r[1] for r in conn.execute("PRAGMA table_info(documents)")]
    assert not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'document_versions'").fetchone()
    conn.close()
    with Memory.open(path, config, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:  # the next open upgrades
        assert [h.text for h in mem.retrieve(QUESTION, 3)] == before["gem"]


def test_a_database_of_another_program_is_not_turned_into_a_memory(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "memory.sqlite")
    conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(migrations.GemragError, match="not a gemrag memory"):
        Store(tmp_path)
    conn = sqlite3.connect(tmp_path / "memory.sqlite")
    assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master")] == ["notes"]
    conn.close()
