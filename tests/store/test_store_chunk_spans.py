"""Chunk spans (schema 6): every chunk records its character span ``[start, end)`` in its document's current text,
so ``" ".join(text[start:end].split()) == chunk.text``: as the chunker cut it, after a new version of the document
(kept chunks move, new ones are placed), and for the chunks of an older memory, found again at the upgrade from the
stored texts (no model call), on SQLite and PostgreSQL: a schema-4 memory goes through schema 5
(``document_sources``) to 6, a schema-5 memory to 6."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from backends import MemoryAt
from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.config import Config, load_config
from gemrag.ingest import chunk_text, minilm_tokenizer, normalize_chunk
from gemrag.store import Store, open_store
from gemrag.store.rows import NodeRecord
from gemrag.store.schema import SCHEMA_VERSION
from legacy_schemas import V4_SCHEMA, V5_SCHEMA

REFRAIN = "The bell in the  tower rang twice,\nand nobody\tanswered the door."
DOC = (
    f"Ansel Brandt kept the lighthouse on Gull Island for thirty years.\n\n{REFRAIN}\n\n"
    "The supply boat came from Port Hollow once a month with oil and bread.\n\n"
    f"{REFRAIN}\n\nIn spring the puffins returned to nest on the cliffs below the lighthouse.\n\n{REFRAIN}\n"
)


def small_chunks() -> Config:
    return load_config(None, {"gem": {"chunk_tokens": 16}})


def chunks_of(mem: Memory, doc_id: int) -> list[NodeRecord]:
    return sorted((n for n in mem.store.nodes("chunk") if n.doc_id == doc_id), key=lambda n: n.ord)


def assert_spans_slice_to_chunks(text: str, chunks: list[NodeRecord]) -> None:
    """Every chunk's span slices to its text, and the spans are in document order without overlap."""
    end = 0
    for n in chunks:
        assert n.start is not None and n.end is not None, n
        assert " ".join(text[n.start : n.end].split()) == n.text
        assert n.start >= end and n.end > n.start
        end = n.end


def test_chunks_store_the_chunkers_spans_and_repeated_paragraphs_get_their_own(
    memory_at: MemoryAt, config: Config
) -> None:
    with Memory.open(memory_at(), small_chunks(), llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
        doc_id, _ = mem.add_text(DOC, "lighthouse")
        mem.index("dense")
        chunks = chunks_of(mem, doc_id)
        cut = chunk_text(DOC, minilm_tokenizer(), 16)
        assert [(n.start, n.end) for n in chunks] == [(c.start, c.end) for c in cut]
        assert_spans_slice_to_chunks(DOC, chunks)
        refrains = [n for n in chunks if n.text == normalize_chunk(REFRAIN)]
        assert len(refrains) == 3 and len({n.start for n in refrains}) == 3  # the same text at three places
        assert [DOC[n.start : n.end] for n in refrains] == [REFRAIN] * 3  # whitespace as written


def test_a_new_version_moves_the_kept_chunks_and_places_the_new_ones(memory_at: MemoryAt) -> None:
    with Memory.open(memory_at(), small_chunks(), llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
        doc_id, _ = mem.add_text(DOC, "lighthouse", id="lighthouse")
        mem.index("dense")
        before = {n.id: n for n in chunks_of(mem, doc_id)}
        v2 = "A new first paragraph tells how the island got its name.\n\n" + DOC.replace("thirty", "forty")
        assert mem.add_text(v2, "lighthouse", id="lighthouse") == (doc_id, True)
        after = chunks_of(mem, doc_id)
        assert mem.store.document_text(doc_id) == v2
        assert_spans_slice_to_chunks(v2, after)
        kept = [n for n in after if n.id in before]
        assert kept and all(n.start > before[n.id].start for n in kept)  # moved down by the new paragraph
        assert any(n.id not in before for n in after)  # the changed stretch got new chunks, placed too


def has_table(store: Any, table: str) -> bool:
    """Whether the memory's database (SQLite or PostgreSQL) holds ``table``."""
    if hasattr(store.database, "conn"):
        return bool(store.database._query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)))
    where = "table_name = ? AND table_schema = current_schema()"
    return bool(store.database._query(f"SELECT 1 FROM information_schema.tables WHERE {where}", (table,)))


@pytest.mark.parametrize(("version", "ddl"), [(4, V4_SCHEMA), (5, V5_SCHEMA)])
def test_an_older_memory_gains_its_chunk_spans_at_the_upgrade(tmp_path: Path, version: int, ddl: str) -> None:
    """The chunks of a schema-4 or schema-5 memory (no spans) get the chunker's spans from the stored text (schema 4
    gains ``document_sources`` on the way); a chunk whose text is not in its document (another chunker's) keeps
    none."""
    path = tmp_path / f"v{version}"
    path.mkdir()
    cut = chunk_text(DOC, minilm_tokenizer(), 16)
    conn = sqlite3.connect(path / "memory.sqlite")
    conn.executescript(ddl)
    conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(version),))
    conn.execute(
        "INSERT INTO documents(id, source, sha256, title, text, n_chars, added_at, chunked) VALUES (1,?,?,?,?,?,0,1)",
        ("a.txt", "0" * 64, "a", DOC, len(DOC)),
    )
    rows: list[tuple[Any, ...]] = [(1, i, normalize_chunk(c.text), c.n_tokens) for i, c in enumerate(cut)]
    rows.append((1, len(cut), "A sentence no version of the document holds.", 9))
    conn.executemany("INSERT INTO nodes(kind, doc_id, ord, text, n_tokens) VALUES ('chunk', ?, ?, ?, ?)", rows)
    conn.commit()
    conn.close()
    store = Store(path)
    try:
        assert store.get_meta("schema_version") == SCHEMA_VERSION == 8 and has_table(store, "document_sources")
        chunks = store.nodes("chunk")
        assert [(n.start, n.end) for n in chunks[:-1]] == [(c.start, c.end) for c in cut]
        assert (chunks[-1].start, chunks[-1].end) == (None, None)
        passages = store.passages([n.id for n in chunks])
        assert passages[chunks[1].id].ordinal == 1 and passages[chunks[-1].id].start is None
    finally:
        store.close()


@pytest.mark.parametrize("version", [4, 5])
def test_an_older_postgres_memory_gains_its_chunk_spans_at_the_upgrade(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch, version: int
) -> None:
    """PG_UPGRADES[5] (from schema 4) and PG_UPGRADES[6] on a memory written at schema 4 or 5: ``document_sources``,
    then the span columns, filled from the stored texts."""
    from backends import drop_schemas, new_schema, schema_url

    schema = new_schema(f"spans{version}")
    url = schema_url(postgres_url, schema)
    cut = chunk_text(DOC, minilm_tokenizer(), 16)
    try:
        with monkeypatch.context() as patch:
            patch.setattr("gemrag.store.postgres.schema.SCHEMA_VERSION", version)
            patch.setattr("gemrag.store.postgres.store.SCHEMA_VERSION", version)
            old = open_store(url)
            with old.transaction() as c:  # rows as gemrag wrote them at schema 4 or 5
                doc_id = old.insert_document(c, "a.txt", "a", DOC, "0" * 64)
                c.executemany(
                    "INSERT INTO nodes(kind, doc_id, ord, text, n_tokens) VALUES ('chunk', ?, ?, ?, ?)",
                    [(doc_id, i, normalize_chunk(ch.text), ch.n_tokens) for i, ch in enumerate(cut)],
                )
            query = "SELECT column_name FROM information_schema.columns WHERE table_name = 'nodes'"
            columns = {r[0] for r in old.database._query(query)}
            assert "span_start" not in columns and old.get_meta("schema_version") == version
            assert has_table(old, "document_sources") == (version == 5)
            old.close()
        store = open_store(url)
        try:
            assert store.get_meta("schema_version") == SCHEMA_VERSION == 8 and has_table(store, "document_sources")
            assert [(n.start, n.end) for n in store.nodes("chunk")] == [(c.start, c.end) for c in cut]
        finally:
            store.close()
    finally:
        drop_schemas(postgres_url, [schema])
