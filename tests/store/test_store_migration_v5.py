"""Upgrading a schema-4 memory (each source its own document) to schema 5 (``document_sources``: one document per
content) and on to 6 (chunk spans), on both store backends: the rows stay as they were, retrieval answers as before
with no rebuild, a new source of a stored text then joins its document, and every chunk has its span."""

from __future__ import annotations

from backends import MemoryAt
from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.config import Config
from gemrag.store import MemoryStore
from gemrag.store.migrate_v6 import SPAN_COLUMNS
from gemrag.store.rows import sha256_text
from gemrag.store.schema import SCHEMA_VERSION
from test_memory import DOC_A, DOC_B

QUESTION = "Who gave Amos a silver medal for his courage?"


def has_sources_table(store: MemoryStore) -> bool:
    """Whether the memory's database holds ``document_sources``."""
    if hasattr(store.database, "conn"):  # SQLite
        return bool(store.database._query("SELECT 1 FROM sqlite_master WHERE name = 'document_sources'"))
    where = "table_name = 'document_sources' AND table_schema = current_schema()"
    return bool(store.database._query(f"SELECT 1 FROM information_schema.tables WHERE {where}"))


def test_a_schema_4_memory_upgrades_to_schema_5_and_6(backend: str, memory_at: MemoryAt, config: Config) -> None:
    """Through schema 5 (``document_sources``) and 6 (chunk spans, found again from the stored texts)."""
    location = memory_at("m")
    with Memory.open(location, config, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
        store = mem.store
        with store.transaction() as c:  # schema 4 stored the same text under two identities as two documents
            for key, text in (("/lighthouse.txt", DOC_A), ("/greenhouse.txt", DOC_B), ("/copy.txt", DOC_B)):
                store.insert_document(c, key, key[1:-4], text, sha256_text(text), key=key)
        mem.index("dense")
        before = [h.text for h in mem.retrieve(QUESTION, 3, strategy="dense")]
        documents = store.documents()
        with store.transaction() as c:  # the schema-4 tables: no document_sources, no chunk spans
            c.execute("DROP TABLE document_sources")
            for column in SPAN_COLUMNS:
                c.execute(f"ALTER TABLE nodes DROP COLUMN {column}")
            c.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
        assert store.get_meta("schema_version") == 4 and not has_sources_table(store)
    with Memory.open(location, config, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
        store = mem.store
        assert store.get_meta("schema_version") == SCHEMA_VERSION == 8 and has_sources_table(store)
        assert store.documents() == documents and store.build_state("dense").state == "built"
        assert [h.text for h in mem.retrieve(QUESTION, 3, strategy="dense")] == before
        assert mem.add_text(DOC_B, "another copy", id="/again.txt") == (2, False)  # joins the first holder
        assert [h["key"] for h in store.holders(2)] == ["/greenhouse.txt", "/again.txt"]
        assert [h["key"] for h in store.holders(3)] == ["/copy.txt"] and len(store.documents()) == 3
        for chunk in store.nodes("chunk"):  # schema 6: each chunk's span slices its document's text to the chunk
            text = store.document_text(chunk.doc_id)  # type: ignore[arg-type]
            assert chunk.start is not None and " ".join(text[chunk.start : chunk.end].split()) == chunk.text
