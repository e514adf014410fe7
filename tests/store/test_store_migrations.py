"""Upgrading a memory written by gemrag with schema 1 (unversioned ``gem_*.npy`` arrays) to build generations.

The fixture is a schema-1 memory made the way schema-1 gemrag made it: the exact schema-1 DDL below (copied
from ``store/sqlite.py`` as released), rows of a real build, and ``gem_*.npy`` / ``dense_*.npy`` files.
Policy (see ``gemrag.store.sqlite.migrations``): arrays that pass the consistency checks are adopted as generation 1
and retrieval works at once; arrays that fail them are not trusted and retrieval asks for ``gemrag index``,
which rebuilds from the cached LLM answers (no LLM call).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

import gemrag.store.sqlite.migrations as migrations
from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.config import Config
from gemrag.errors import GemragError, MemoryNotIndexedError
from gemrag.store import Store
from gemrag.store.schema import SCHEMA_VERSION
from gemrag.types import Hit
from legacy_schemas import V1_SCHEMA
from test_memory import DOC_A

QUESTION = "Who gave Amos a silver medal for his courage?"


def seen(hits: list[Hit]) -> list[tuple[int, str, str, float]]:
    return [(h.node_id, h.kind, h.text, round(h.score, 9)) for h in hits]


def make_v1_memory(source: Path, target: Path) -> None:
    """A schema-1 memory in ``target`` holding what the (schema-2) memory ``source`` holds, without a title record
    (schema 1 predates chunk titles, issue 29)."""
    target.mkdir()
    conn = sqlite3.connect(target / "memory.sqlite")
    conn.executescript(V1_SCHEMA)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("ATTACH DATABASE ? AS src", (str(source / "memory.sqlite"),))
    conn.executescript(
        """
        INSERT INTO documents SELECT id, source, sha256, title, text, n_chars, added_at, chunked FROM src.documents;
        INSERT INTO nodes SELECT id, kind, doc_id, ord, text, n_tokens, questions_done, meta FROM src.nodes;
        INSERT INTO questions SELECT * FROM src.questions;
        INSERT INTO embeddings SELECT * FROM src.embeddings;
        INSERT INTO edges SELECT src, dst, weight FROM src.edges WHERE strategy = 'gem';
        INSERT INTO llm_cache SELECT key, model, response, created FROM src.llm_cache;
        INSERT INTO usage SELECT * FROM src.usage;
        INSERT INTO failures SELECT * FROM src.failures;
        INSERT INTO meta SELECT * FROM src.meta
        WHERE key NOT IN ('schema_version', 'chunk_titles', 'gem_questions_titles');
        """
    )
    spectrum = json.loads(conn.execute("SELECT meta FROM src.builds WHERE strategy = 'gem'").fetchone()[0])["spectrum"]
    conn.execute("INSERT INTO meta VALUES ('gem_spectrum', ?)", (json.dumps(spectrum),))
    conn.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    conn.commit()
    conn.execute("DETACH DATABASE src")
    conn.close()
    store = Store(source, readonly=True)
    for strategy in ("gem", "dense"):
        published = store.load_published(strategy, mmap=False)
        assert published is not None
        for name, array in published.arrays.items():
            np.save(target / f"{strategy}_{name}.npy", array)
    store.close()


@pytest.fixture
def v1(tmp_path: Path, config: Config) -> tuple[Path, list[Hit], list[Hit]]:
    """A schema-1 memory, and what its gem and dense retrievals answered."""
    with Memory.open(tmp_path / "v2", config, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
        mem.add_text(DOC_A, "lighthouse")
        mem.index()
        mem.index(strategy="dense")
        gem, dense = mem.retrieve(QUESTION, 3), mem.retrieve(QUESTION, 3, strategy="dense")
    make_v1_memory(tmp_path / "v2", tmp_path / "v1")
    return tmp_path / "v1", gem, dense


def test_v1_memory_opens_upgrades_and_retrieves(v1: tuple[Path, list[Hit], list[Hit]], config: Config) -> None:
    path, gem, dense = v1
    llm = ScriptedLLM()
    with Memory.open(path, config, llm=llm, embedder=HashEmbedder()) as mem:
        assert mem.store.get_meta("schema_version") == SCHEMA_VERSION == 8
        assert mem.store.published_generations() == {"gem": 1, "dense": 1}
        for chunk in mem.store.nodes("chunk"):  # schema 6: the spans found again in the stored text
            text = mem.store.document_text(chunk.doc_id)  # type: ignore[arg-type]
            assert chunk.start is not None and " ".join(text[chunk.start : chunk.end].split()) == chunk.text
        assert seen(mem.retrieve(QUESTION, 3)) == seen(gem)  # the adopted arrays, at once
        assert seen(mem.retrieve(QUESTION, 3, strategy="dense")) == seen(dense)
        assert mem.stats()["strategy_report"]["spectrum"]["n"] > 0
        assert len(mem.store.nodes("summary")) == 2 and mem.store.edges(mem.store.nodes("chunk")[0].id, "gem")
        assert (path / "gem_weights.npy").exists()  # schema-1 files stay until a builder removes them
        mem.index()  # generation 2, from the cache
        assert llm.calls == 0 and mem.store.published_generation("gem") == 2
        assert [h.text for h in mem.retrieve(QUESTION, 3)] == [h.text for h in gem]
        assert not (path / "gem_weights.npy").exists() and not list(path.glob("gem.g1.*"))
        keys, calls = mem.store.llm_cache_counts()
        assert keys == calls > 0


def test_untrusted_v1_arrays_ask_for_a_rebuild(v1: tuple[Path, list[Hit], list[Hit]], config: Config) -> None:
    path, gem, _ = v1
    ids = np.load(path / "gem_node_ids.npy")
    np.save(path / "gem_node_ids.npy", ids[:-1])  # an interrupted schema-1 save: arrays of two builds
    llm = ScriptedLLM()
    with Memory.open(path, config, llm=llm, embedder=HashEmbedder()) as mem:
        assert mem.store.published_generations() == {"dense": 1}
        with pytest.raises(MemoryNotIndexedError, match=r"older gemrag and could not be verified.*gemrag index"):
            mem.retrieve(QUESTION, 3)
        assert mem.store.nodes("summary") == []  # the old summary nodes belong to no published generation
        mem.index()
        assert llm.calls == 0  # every LLM answer came from the cache
        assert [h.text for h in mem.retrieve(QUESTION, 3)] == [h.text for h in gem]


def test_a_failed_upgrade_changes_nothing(
    v1: tuple[Path, list[Hit], list[Hit]], config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, gem, _ = v1

    def killed(conn: sqlite3.Connection, version: int) -> None:
        raise KeyboardInterrupt  # as if killed just before the commit

    monkeypatch.setattr(migrations, "_set_version", killed)
    with pytest.raises(KeyboardInterrupt):
        Store(path)
    monkeypatch.undo()
    conn = sqlite3.connect(path / "memory.sqlite")
    assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == "1"
    assert "strategy" not in [r[1] for r in conn.execute("PRAGMA table_info(nodes)")]
    conn.close()  # still schema 1 (the linked generation-1 files are orphans); the next open upgrades it
    with Memory.open(path, config, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
        assert seen(mem.retrieve(QUESTION, 3)) == seen(gem)


def test_read_only_v1_memory_says_how_to_upgrade(v1: tuple[Path, list[Hit], list[Hit]]) -> None:
    path, _, _ = v1
    with pytest.raises(GemragError, match=r"schema 1 of an older gemrag; open it once with write access"):
        Store(path, readonly=True)


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    Store(tmp_path).set_meta("schema_version", SCHEMA_VERSION + 1)
    with pytest.raises(GemragError, match="newer gemrag"):
        Store(tmp_path)


def test_v1_raptor_tree_is_withdrawn_by_schema_3(tmp_path: Path) -> None:
    """Schema 2 adopted a schema-1 RAPTOR tree; schema 3 keeps RAPTOR's tree as real nodes and edges, so the JSON
    tree is withdrawn and retrieval asks for a rebuild (from the LLM cache)."""
    conn = sqlite3.connect(tmp_path / "memory.sqlite")
    conn.executescript(V1_SCHEMA)
    vectors = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
    digest = hashlib.sha256(vectors.tobytes()).hexdigest()
    tree = {"node_ids": [1, 2, -1], "layers": [0, 0, 1], "n_tokens": [5, 5, 3], "summaries": [], "digest": digest}
    conn.execute("INSERT INTO meta VALUES ('raptor_tree', ?)", (json.dumps(tree),))
    conn.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    conn.commit()
    conn.close()
    np.save(tmp_path / "raptor_vectors.npy", vectors)
    store = Store(tmp_path)
    assert store.load_published("raptor") is None and store.get_meta("raptor_tree") is None
    assert "raptor" in store.get_meta(migrations.REBUILD_META)
    assert store.build_state("raptor").state == "never built"
