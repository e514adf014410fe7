"""What both backends share about a memory's tables: the schema version, the tables and their columns, which
nodes a reader sees, and how long a connection waits for another's locks.

The DDL is each backend's own (:mod:`gemrag.store.sqlite.schema`, :mod:`gemrag.store.postgres.schema`); the table
list here is checked against both by ``tests/store/test_store_tables.py``. The version is recorded in the ``meta``
table under ``schema_version``; :mod:`gemrag.store.sqlite.migrations` and
:data:`gemrag.store.postgres.schema.PG_UPGRADES` upgrade older memories step by step. Version history:

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
7. forgetting at the cost of the change (:mod:`gemrag.store.erase`): ``llm_marks`` (the content marks of every LLM
   cache entry's input and output, looked up by mark), ``forgotten`` (the marks of the text removals left for
   ``gemrag erase``: hashes, never text) and ``document_inputs`` (the chunks a derived document, a chat exchange,
   rests on: withdrawn with them). Existing memories gain the empty tables; the cache entries they hold are marked
   by the first erase.
8. compact erase marks: an LLM cache entry's marks refer to it by a small integer (``llm_entries``: one row per
   entry, its id and key) instead of repeating its 64-character key in every mark row (``llm_marks(mark, entry)``);
   the row of ``llm_entries`` is what says an entry is marked. The marks of schema 7 are dropped; the first erase
   marks the entries again.
"""

from __future__ import annotations

from dataclasses import dataclass

SCHEMA_VERSION = 8

REBUILD_META = "schema1_not_adopted"
"""``meta`` key: the strategies whose schema-1 arrays an upgrade did not adopt (they must be built again)."""

DEFAULT_BUSY_TIMEOUT = 5.0
"""Seconds a connection waits for another connection's write lock (SQLite) or rows (PostgreSQL) before
:class:`~gemrag.errors.DatabaseLockedError`."""


@dataclass(frozen=True)
class Table:
    """One table of every memory, on both backends.

    Attributes:
        name: the table's name. columns: its columns, in the order they are copied.
        key: its primary key (the conflict target of an ``INSERT OR REPLACE`` on PostgreSQL).
        generated_id: its ``id`` is generated by the database (SQLite's rowid; PostgreSQL's identity column).
        copied: ``gemrag copy`` copies its rows as they are (``meta`` and ``builds`` are written anew).
    """

    name: str
    columns: tuple[str, ...]
    key: tuple[str, ...]
    generated_id: bool = False
    copied: bool = True


TABLES: tuple[Table, ...] = (
    Table("meta", ("key", "value"), ("key",), copied=False),
    Table(
        "documents",
        ("id", "source", "sha256", "title", "text", "n_chars", "added_at", "chunked", "source_key", "version"),
        ("id",),
        generated_id=True,
    ),
    Table("document_sources", ("source_key", "doc_id", "source", "title", "added_at"), ("source_key",)),
    Table(
        "document_versions",
        ("id", "doc_id", "source_key", "source", "title", "version", "sha256", "n_chars", "added_at", "ended_at")
        + ("reason", "text"),
        ("id",),
        generated_id=True,
    ),
    Table(
        "nodes",
        ("id", "kind", "doc_id", "ord", "text", "n_tokens", "questions_done", "meta", "strategy", "generation")
        + ("span_start", "span_end"),
        ("id",),
        generated_id=True,
    ),
    Table("questions", ("id", "node_id", "ord", "text"), ("id",), generated_id=True),
    Table("document_inputs", ("doc_id", "chunk_id"), ("doc_id", "chunk_id")),
    Table("node_sources", ("node_id", "chunk_id"), ("node_id", "chunk_id")),
    Table(
        "edges",
        ("strategy", "kind", "generation", "src", "dst", "weight"),
        ("strategy", "generation", "kind", "src") + ("dst",),
    ),
    Table("artifacts", ("strategy", "kind", "node_id", "version", "data", "created"), ("strategy", "kind", "node_id")),
    Table("build_chunks", ("strategy", "chunk_id"), ("strategy", "chunk_id")),
    Table("embeddings", ("key", "model", "dim", "vector"), ("key",)),
    Table("llm_cache", ("key", "model", "response", "created", "writes"), ("key",)),
    Table("llm_entries", ("id", "key"), ("id",), generated_id=True),
    Table("llm_marks", ("mark", "entry"), ("mark", "entry")),
    Table("forgotten", ("mark", "at"), ("mark",)),
    Table(
        "usage",
        ("id", "at", "phase", "kind", "model", "prompt_tokens", "completion_tokens", "embedding_tokens", "seconds")
        + ("cached",),
        ("id",),
        generated_id=True,
    ),
    Table("failures", ("id", "at", "phase", "node_id", "message"), ("id",), generated_id=True),
    Table(
        "builds",
        ("strategy", "generation", "published_at", "arrays", "paths", "meta", "params", "models"),
        ("strategy",),
        copied=False,
    ),
)
"""Every table of a memory, in foreign-key order (a table after those it references), the same on both backends
(checked against both schemas by ``tests/store/test_store_tables.py``). A backend may add its own tables besides
(PostgreSQL: ``build_arrays``, ``build_vectors``)."""

TABLE: dict[str, Table] = {t.name: t for t in TABLES}
""":data:`TABLES` by name."""


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
