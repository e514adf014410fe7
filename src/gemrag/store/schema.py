"""The SQL schema of a memory's ``memory.sqlite`` (version :data:`SCHEMA_VERSION`).

The version is recorded in the ``meta`` table under ``schema_version``; :mod:`gemrag.store.sqlite.migrations`
upgrades older databases step by step. Version history:

1. the first release: ``meta``, ``documents``, ``nodes``, ``questions``, ``embeddings``, ``edges``,
   ``llm_cache``, ``usage``, ``failures``; strategies' arrays were unversioned ``<prefix>_<name>.npy`` files.
2. build generations: ``builds`` (one published manifest per strategy: its generation, array files with
   shape/dtype/size and axis names, metadata); ``nodes.strategy`` / ``nodes.generation`` mark the nodes a
   strategy derived in one build (NULL for chunks); ``edges`` are namespaced by strategy; ``llm_cache.writes``
   counts how many backend calls stored each key (more than 1 = a repeated LLM call).
3. strategies' own data: node ids are never reused (``AUTOINCREMENT``); ``nodes.kind`` is free (a strategy's
   nodes are namespaced by ``nodes.strategy``; only chunks have kind ``chunk`` and no strategy);
   ``node_sources`` (the chunks a derived node was made from, for deleting documents); ``edges`` gain a
   ``kind`` and a ``generation`` (readers see the published ones);
   ``artifacts`` (per-node LLM artefacts of a strategy: JSON keyed by (strategy, kind, node) with a prompt
   version); ``builds`` gain ``params`` and ``models``, and ``build_chunks`` lists the chunks each published
   build covers (what ``gemrag info`` compares with the memory's chunks to call a strategy stale).
4. documents identified by their source: ``documents.source_key`` (UNIQUE, NULL for anonymous documents: a file's
   resolved path, or an id given by the user or a client) and ``documents.version`` (1, 2, ... each time the
   source's text was replaced); ``documents.sha256`` is no longer UNIQUE (two sources may hold the same text; an
   anonymous document is still deduplicated by it, through the index ``documents_sha256``);
   ``document_versions`` records every version that left the memory (replaced by a newer text, removed by
   ``--sync``, deleted): its source, title, sha256, length, when it was added and when it left, why, and its
   text only when the user asked to keep versions.
5. one document per content: ``document_sources`` holds the *further* sources of a document (its identity
   ``source_key``, its ``source`` path and ``title``, when it was added): a source whose text is byte-identical
   (same ``sha256``) to a live document's is recorded there instead of becoming a second document.
   ``documents.source_key`` stays the document's first (primary) source; a key names at most one document, in one
   of the two tables. Existing memories gain the empty table (:mod:`gemrag.store.sqlite.migrate_v5`).
6. chunk spans: ``nodes.span_start`` / ``nodes.span_end``, a chunk's character span ``[start, end)`` in its
   document's current text (NULL for derived nodes, and for a chunk the upgrade could not find in its text), the
   position a hit's provenance gives (:mod:`gemrag.store.migrate_v6`).
"""

from __future__ import annotations

SCHEMA_VERSION = 6

SCHEMA = """
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

VISIBLE_NODE = (
    "({n}.generation IS NULL"
    " OR ({n}.strategy = ? AND {n}.generation = ?)"
    " OR ({n}.strategy IS NOT ?"
    " AND {n}.generation = (SELECT b.generation FROM builds b WHERE b.strategy = {n}.strategy)))"
)
"""SQL predicate: node ``{n}`` belongs to the view of a reader (parameters ``None, None, None``: chunks plus every
strategy's published generation) or of a builder of ``(strategy, generation)`` (parameters ``s, g, s``: chunks,
the build's own new nodes, other strategies' published nodes)."""


def visible_node(alias: str, build: tuple[str, int] | None) -> tuple[str, tuple[object, ...]]:
    """The :data:`VISIBLE_NODE` predicate for table alias ``alias`` and its three parameters.

    Args:
        alias: the nodes table's name or alias in the query.
        build: ``(strategy, generation)`` of a build in progress, or None for the published view.
    """
    s, g = build if build is not None else (None, None)
    return VISIBLE_NODE.format(n=alias), (s, g, s)
