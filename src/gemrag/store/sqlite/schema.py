"""The SQL schema of a memory's ``memory.sqlite`` at version :data:`gemrag.store.schema.SCHEMA_VERSION` (the
version history is in :mod:`gemrag.store.schema`; :mod:`gemrag.store.sqlite.migrations` upgrades older databases).
"""

from __future__ import annotations

SCHEMA_7 = """
CREATE TABLE IF NOT EXISTS document_inputs (
    doc_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE, chunk_id INTEGER NOT NULL,
    PRIMARY KEY (doc_id, chunk_id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS document_inputs_chunk ON document_inputs(chunk_id);
CREATE TABLE IF NOT EXISTS forgotten (mark INTEGER PRIMARY KEY, at REAL NOT NULL);
"""
"""The tables schema 7 added (:mod:`gemrag.store.schema`) and schema 8 kept: a new memory creates them with
:data:`SCHEMA`, an older one gains them empty."""

SCHEMA_8 = """
DROP TABLE IF EXISTS llm_marks;
CREATE TABLE IF NOT EXISTS llm_entries (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS llm_marks (mark INTEGER NOT NULL, entry INTEGER NOT NULL, PRIMARY KEY (mark, entry))
    WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS llm_marks_entry ON llm_marks(entry);
"""
"""Schema 8's compact erase marks (:mod:`gemrag.store.schema`): schema 7's ``llm_marks`` (keyed by the cache key) is
dropped, ``llm_entries`` numbers the marked cache entries and ``llm_marks`` refers to them by number (an integer of
1 to 3 bytes instead of a 64-character key per mark); the first erase marks the entries again."""

SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    id INTEGER PRIMARY KEY, source TEXT NOT NULL, sha256 TEXT NOT NULL, title TEXT NOT NULL,
    text TEXT NOT NULL, n_chars INTEGER NOT NULL, added_at REAL NOT NULL, chunked INTEGER NOT NULL DEFAULT 0,
    source_key TEXT UNIQUE, version INTEGER NOT NULL DEFAULT 1);
CREATE INDEX IF NOT EXISTS documents_sha256 ON documents(sha256);
CREATE TABLE IF NOT EXISTS document_versions (
    id INTEGER PRIMARY KEY, doc_id INTEGER NOT NULL, source_key TEXT, source TEXT NOT NULL, title TEXT NOT NULL,
    version INTEGER NOT NULL, sha256 TEXT NOT NULL, n_chars INTEGER NOT NULL, added_at REAL NOT NULL,
    ended_at REAL NOT NULL, reason TEXT NOT NULL, text TEXT);
CREATE INDEX IF NOT EXISTS document_versions_key ON document_versions(source_key);
CREATE TABLE IF NOT EXISTS document_sources (
    source_key TEXT PRIMARY KEY, doc_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    source TEXT NOT NULL, title TEXT NOT NULL, added_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS document_sources_doc ON document_sources(doc_id);
CREATE TABLE IF NOT EXISTS nodes (
    id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL,
    doc_id INTEGER REFERENCES documents(id) ON DELETE CASCADE, ord INTEGER NOT NULL, text TEXT NOT NULL,
    n_tokens INTEGER NOT NULL, questions_done INTEGER NOT NULL DEFAULT 0, meta TEXT NOT NULL DEFAULT '{}',
    strategy TEXT, generation INTEGER, span_start INTEGER, span_end INTEGER);
CREATE INDEX IF NOT EXISTS nodes_kind ON nodes(kind);
CREATE INDEX IF NOT EXISTS nodes_build ON nodes(strategy, generation);
CREATE TABLE IF NOT EXISTS questions (
    id INTEGER PRIMARY KEY, node_id INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
    ord INTEGER NOT NULL, text TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS questions_node ON questions(node_id);
CREATE TABLE IF NOT EXISTS embeddings (
    key TEXT PRIMARY KEY, model TEXT NOT NULL, dim INTEGER NOT NULL, vector BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS edges (
    strategy TEXT NOT NULL, kind TEXT NOT NULL DEFAULT '', generation INTEGER NOT NULL DEFAULT 0,
    src INTEGER NOT NULL, dst INTEGER NOT NULL, weight REAL NOT NULL,
    PRIMARY KEY (strategy, generation, kind, src, dst));
CREATE INDEX IF NOT EXISTS edges_src ON edges(src);
CREATE INDEX IF NOT EXISTS edges_dst ON edges(dst);
CREATE TABLE IF NOT EXISTS node_sources (
    node_id INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
    chunk_id INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
    PRIMARY KEY (node_id, chunk_id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS node_sources_chunk ON node_sources(chunk_id);
CREATE TABLE IF NOT EXISTS artifacts (
    strategy TEXT NOT NULL, kind TEXT NOT NULL, node_id INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
    version TEXT NOT NULL, data TEXT NOT NULL, created REAL NOT NULL,
    PRIMARY KEY (strategy, kind, node_id));
CREATE INDEX IF NOT EXISTS artifacts_node ON artifacts(node_id);
CREATE TABLE IF NOT EXISTS build_chunks (
    strategy TEXT NOT NULL, chunk_id INTEGER NOT NULL, PRIMARY KEY (strategy, chunk_id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS llm_cache (
    key TEXT PRIMARY KEY, model TEXT NOT NULL, response TEXT NOT NULL, created REAL NOT NULL,
    writes INTEGER NOT NULL DEFAULT 1);
CREATE TABLE IF NOT EXISTS usage (
    id INTEGER PRIMARY KEY, at REAL NOT NULL, phase TEXT NOT NULL, kind TEXT NOT NULL, model TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, embedding_tokens INTEGER NOT NULL,
    seconds REAL NOT NULL, cached INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS failures (
    id INTEGER PRIMARY KEY, at REAL NOT NULL, phase TEXT NOT NULL, node_id INTEGER, message TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS builds (
    strategy TEXT PRIMARY KEY, generation INTEGER NOT NULL, published_at REAL NOT NULL,
    arrays TEXT NOT NULL, paths TEXT NOT NULL DEFAULT '[]', meta TEXT NOT NULL DEFAULT '{}',
    params TEXT NOT NULL DEFAULT '{}', models TEXT NOT NULL DEFAULT '{}');
"""
    + SCHEMA_7
    + SCHEMA_8
)
