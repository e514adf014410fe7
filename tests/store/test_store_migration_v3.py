"""Upgrading a schema-2 memory (build generations, GEM-only node kinds, RAPTOR's tree as JSON) to schema 3.

The fixture is a schema-2 database made with the exact schema-2 DDL below (as released), holding the rows of a
real build and its generation files. After the upgrade GEM and dense retrieve exactly as before (no rebuild),
their edges have kinds, GEM's summary nodes have their members as sources, every build covers its chunks, node
kinds are free, and RAPTOR's JSON tree is withdrawn (retrieval asks for ``gemrag index``).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
from pathlib import Path

import pytest

from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.config import Config
from gemrag.errors import MemoryNotIndexedError
from gemrag.store.schema import SCHEMA_VERSION
from legacy_schemas import V2_SCHEMA
from test_memory import DOC_A, DOC_B

QUESTION = "Who gave Amos a silver medal for his courage?"


def make_v2_memory(source: Path, target: Path) -> None:
    """A schema-2 memory in ``target`` holding what the (schema-3) memory ``source`` holds for gem and dense,
    plus a schema-2 RAPTOR build (its tree in the manifest's metadata). Its meta holds no title record: schemas before
    4 predate chunk titles (issue 29), so an older memory reads none (and GEM's questions are of the chunk text)."""
    target.mkdir()
    for path in source.glob("*.g*.*.npy"):
        shutil.copy(path, target / path.name)
    conn = sqlite3.connect(target / "memory.sqlite")
    conn.executescript(V2_SCHEMA)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("ATTACH DATABASE ? AS src", (str(source / "memory.sqlite"),))
    conn.executescript(
        """
        INSERT INTO documents SELECT id, source, sha256, title, text, n_chars, added_at, chunked FROM src.documents;
        INSERT INTO nodes SELECT id, kind, doc_id, ord, text, n_tokens, questions_done, meta, strategy, generation
            FROM src.nodes;
        INSERT INTO questions SELECT * FROM src.questions;
        INSERT INTO embeddings SELECT * FROM src.embeddings;
        INSERT INTO edges SELECT strategy, src, dst, weight FROM src.edges;
        INSERT INTO llm_cache SELECT * FROM src.llm_cache;
        INSERT INTO usage SELECT * FROM src.usage;
        INSERT INTO failures SELECT * FROM src.failures;
        INSERT INTO builds SELECT strategy, generation, published_at, arrays, paths, meta FROM src.builds;
        INSERT INTO meta SELECT * FROM src.meta
            WHERE key NOT IN ('schema_version', 'chunk_titles', 'gem_questions_titles');
        """
    )
    tree = {"node_ids": [1, -1], "layers": [0, 1], "n_tokens": [5, 3], "summaries": [{"text": "s"}], "digest": "x"}
    conn.execute("INSERT INTO builds VALUES ('raptor', 1, ?, '[]', '[]', ?)", (time.time(), json.dumps(tree)))
    conn.execute("INSERT INTO meta VALUES ('schema_version', '2')")
    conn.commit()
    conn.execute("DETACH DATABASE src")
    conn.close()


def test_v2_memory_upgrades_in_place(tmp_path: Path, config: Config) -> None:
    with Memory.open(tmp_path / "v3", config, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
        mem.add_text(DOC_A, "lighthouse")
        mem.add_text(DOC_B, "greenhouse")
        mem.index()
        mem.index("dense")
        before = {s: mem.retrieve(QUESTION, 3, strategy=s) for s in ("gem", "dense")}
        summaries = {n.id: n.meta["members"] for n in mem.store.nodes("summary", strategy="gem")}
    make_v2_memory(tmp_path / "v3", tmp_path / "v2")
    llm = ScriptedLLM()
    with Memory.open(tmp_path / "v2", config, llm=llm, embedder=HashEmbedder()) as mem:
        store = mem.store
        assert store.get_meta("schema_version") == SCHEMA_VERSION == 8
        assert store.database.conn.execute("PRAGMA foreign_key_check").fetchall() == []
        for s in ("gem", "dense"):  # the published generations are used as they are: no rebuild
            assert mem.retrieve(QUESTION, 3, strategy=s) == before[s]
            assert store.build_state(s).state == "built"
        assert store.node_sources(list(summaries)) == {i: sorted(m) for i, m in summaries.items()}
        assert {k for k, *_ in store.edge_list("gem")} == {"similarity"}
        assert store.edges(store.nodes("chunk")[0].id, "gem")  # readers see them in the published generation
        with pytest.raises(MemoryNotIndexedError, match="older gemrag"):
            mem.retrieve(QUESTION, 3, strategy="raptor")
        assert store.build_state("raptor").state == "never built"
        g = store.begin_build("mine")  # node kinds are free now, and ids are never reused
        top = max(n.id for n in store.nodes())
        assert store.add_node("mine", g, "entity", "Amos") > top
        mem.index()  # a new GEM generation from the cache
        assert llm.calls == 0 and [h.text for h in mem.retrieve(QUESTION, 3)] == [h.text for h in before["gem"]]
        sources = store.node_sources([n.id for n in store.nodes("summary", strategy="gem")])
        assert all(sources.values())
