"""SQLite store of one memory directory.

Tables: ``meta`` (models, parameters, build state), ``documents``, ``nodes`` (chunks and summary nodes),
``questions`` (utility questions), ``embeddings`` (float32 vectors, by text hash), ``edges`` (each node's
strongest edges), ``llm_cache``, ``usage`` and ``failures``. Dense matrices (the similarity matrix, vector
stacks) live beside it as ``.npy`` files (see :meth:`Store.save_array`).

Every write runs inside a transaction (``with store.transaction():``), so an interrupted build leaves the
store as it was after the last completed step; nothing is half-written.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gemrag.errors import GemragError

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    id INTEGER PRIMARY KEY, source TEXT NOT NULL, sha256 TEXT NOT NULL UNIQUE, title TEXT NOT NULL,
    text TEXT NOT NULL, n_chars INTEGER NOT NULL, added_at REAL NOT NULL, chunked INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS nodes (
    id INTEGER PRIMARY KEY, kind TEXT NOT NULL CHECK (kind IN ('chunk', 'summary')),
    doc_id INTEGER REFERENCES documents(id) ON DELETE CASCADE, ord INTEGER NOT NULL, text TEXT NOT NULL,
    n_tokens INTEGER NOT NULL, questions_done INTEGER NOT NULL DEFAULT 0, meta TEXT NOT NULL DEFAULT '{}');
CREATE INDEX IF NOT EXISTS nodes_kind ON nodes(kind);
CREATE TABLE IF NOT EXISTS questions (
    id INTEGER PRIMARY KEY, node_id INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
    ord INTEGER NOT NULL, text TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS questions_node ON questions(node_id);
CREATE TABLE IF NOT EXISTS embeddings (
    key TEXT PRIMARY KEY, model TEXT NOT NULL, dim INTEGER NOT NULL, vector BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS edges (
    src INTEGER NOT NULL, dst INTEGER NOT NULL, weight REAL NOT NULL, PRIMARY KEY (src, dst));
CREATE TABLE IF NOT EXISTS llm_cache (
    key TEXT PRIMARY KEY, model TEXT NOT NULL, response TEXT NOT NULL, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS usage (
    id INTEGER PRIMARY KEY, at REAL NOT NULL, phase TEXT NOT NULL, kind TEXT NOT NULL, model TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, embedding_tokens INTEGER NOT NULL,
    seconds REAL NOT NULL, cached INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS failures (
    id INTEGER PRIMARY KEY, at REAL NOT NULL, phase TEXT NOT NULL, node_id INTEGER, message TEXT NOT NULL);
"""


def sha256_text(text: str) -> str:
    """Hex sha256 of a UTF-8 string (64 characters)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class NodeRecord:
    """A node row: a chunk of a document or a summary node.

    Attributes:
        id: node id (int). kind: ``"chunk"`` or ``"summary"``. doc_id: document id (None for summaries).
        ord: position of the chunk in its document (or of the summary among summaries).
        text: the node's text. n_tokens: its length in embedder tokens (int).
        questions_done: 1 when utility questions were generated, 0 pending, -1 failed.
        meta: JSON-decoded extra fields (e.g. a summary's eigenvalue and member node ids).
    """

    id: int
    kind: str
    doc_id: int | None
    ord: int
    text: str
    n_tokens: int
    questions_done: int
    meta: dict[str, Any]


class Store:
    """A memory directory's SQLite database plus its ``.npy`` arrays.

    Args:
        directory: the memory directory; created when missing.

    Raises:
        GemragError: the directory exists but is not a gemrag memory (a file, or a newer schema).
    """

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        if self.directory.exists() and not self.directory.is_dir():
            raise GemragError(f"{self.directory} exists and is not a directory")
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / "memory.sqlite"
        self._lock = threading.RLock()
        self._depth = 0
        self.conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA foreign_keys=ON")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.executescript(_SCHEMA)
        version = self.get_meta("schema_version")
        if version is None:
            self.set_meta("schema_version", SCHEMA_VERSION)
        elif int(version) > SCHEMA_VERSION:
            raise GemragError(f"{self.path} was written by a newer gemrag (schema {version})")

    def close(self) -> None:
        """Close the database connection."""
        self.conn.close()

    # -- transactions -------------------------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A (nestable) write transaction: all or nothing, committed on exit, rolled back on error."""
        with self._lock:
            outer = self._depth == 0
            if outer:
                self.conn.execute("BEGIN IMMEDIATE")
            self._depth += 1
            try:
                yield self.conn
            except BaseException:
                self._depth -= 1
                if outer:
                    self.conn.execute("ROLLBACK")
                raise
            self._depth -= 1
            if outer:
                self.conn.execute("COMMIT")

    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[sqlite3.Row]:
        with self._lock:
            cur = self.conn.execute(sql, args)
            return cur.fetchall()

    # -- meta -------------------------------------------------------------------------------------
    def get_meta(self, key: str, default: Any = None) -> Any:
        """The JSON-decoded value stored under ``key``, or ``default``."""
        rows = self._query("SELECT value FROM meta WHERE key = ?", (key,))
        return json.loads(rows[0][0]) if rows else default

    def set_meta(self, key: str, value: Any) -> None:
        """Store a JSON-serializable value under ``key``."""
        with self.transaction() as c:
            c.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, json.dumps(value)))

    # -- documents --------------------------------------------------------------------------------
    def add_document(self, source: str, title: str, text: str) -> tuple[int, bool]:
        """Insert a document unless one with the same text exists.

        Returns:
            ``(doc_id, created)``: created is False when the same text was already stored.
        """
        digest = sha256_text(text)
        with self.transaction() as c:
            row = c.execute("SELECT id FROM documents WHERE sha256 = ?", (digest,)).fetchone()
            if row:
                return int(row[0]), False
            cur = c.execute(
                "INSERT INTO documents(source, sha256, title, text, n_chars, added_at) VALUES (?,?,?,?,?,?)",
                (source, digest, title, text, len(text), time.time()),
            )
            return int(cur.lastrowid or 0), True

    def documents(self) -> list[dict[str, Any]]:
        """All documents as dicts (id, source, title, n_chars, chunked), text excluded."""
        rows = self._query("SELECT id, source, title, n_chars, chunked FROM documents ORDER BY id")
        return [dict(zip(("id", "source", "title", "n_chars", "chunked"), r, strict=True)) for r in rows]

    def document_text(self, doc_id: int) -> str:
        """The full text of one document."""
        return str(self._query("SELECT text FROM documents WHERE id = ?", (doc_id,))[0][0])

    def unchunked_documents(self) -> list[tuple[int, str]]:
        """``(doc_id, text)`` of documents not yet split into chunks."""
        return [(int(r[0]), str(r[1])) for r in self._query("SELECT id, text FROM documents WHERE chunked = 0")]

    def add_chunks(self, doc_id: int, chunks: Sequence[tuple[str, int]]) -> None:
        """Store a document's chunks ``(text, n_tokens)`` and mark it chunked, in one transaction."""
        with self.transaction() as c:
            c.executemany(
                "INSERT INTO nodes(kind, doc_id, ord, text, n_tokens) VALUES ('chunk', ?, ?, ?, ?)",
                [(doc_id, i, t, n) for i, (t, n) in enumerate(chunks)],
            )
            c.execute("UPDATE documents SET chunked = 1 WHERE id = ?", (doc_id,))

    # -- nodes ------------------------------------------------------------------------------------
    def nodes(self, kind: str | None = None) -> list[NodeRecord]:
        """Nodes ordered by id, optionally of one kind."""
        sql = "SELECT id, kind, doc_id, ord, text, n_tokens, questions_done, meta FROM nodes"
        rows = self._query(sql + (" WHERE kind = ?" if kind else "") + " ORDER BY id", (kind,) if kind else ())
        return [NodeRecord(r[0], r[1], r[2], r[3], r[4], r[5], r[6], json.loads(r[7])) for r in rows]

    def node(self, node_id: int) -> NodeRecord:
        """One node by id.

        Raises:
            KeyError: no such node.
        """
        rows = self._query(
            "SELECT id, kind, doc_id, ord, text, n_tokens, questions_done, meta FROM nodes WHERE id = ?",
            (node_id,),
        )
        if not rows:
            raise KeyError(node_id)
        r = rows[0]
        return NodeRecord(r[0], r[1], r[2], r[3], r[4], r[5], r[6], json.loads(r[7]))

    def add_summary_node(self, ord_: int, text: str, n_tokens: int, meta: dict[str, Any]) -> int:
        """Insert a summary node and return its id."""
        with self.transaction() as c:
            cur = c.execute(
                "INSERT INTO nodes(kind, doc_id, ord, text, n_tokens, meta) VALUES ('summary', NULL, ?, ?, ?, ?)",
                (ord_, text, n_tokens, json.dumps(meta)),
            )
            return int(cur.lastrowid or 0)

    def delete_summary_nodes(self) -> int:
        """Delete every summary node (and, by cascade, its questions); returns how many."""
        with self.transaction() as c:
            return c.execute("DELETE FROM nodes WHERE kind = 'summary'").rowcount

    # -- utility questions ------------------------------------------------------------------------
    def set_questions(self, node_id: int, questions: Sequence[str]) -> None:
        """Replace a node's utility questions and mark them done, atomically."""
        with self.transaction() as c:
            c.execute("DELETE FROM questions WHERE node_id = ?", (node_id,))
            c.executemany(
                "INSERT INTO questions(node_id, ord, text) VALUES (?, ?, ?)",
                [(node_id, i, q) for i, q in enumerate(questions)],
            )
            c.execute("UPDATE nodes SET questions_done = 1 WHERE id = ?", (node_id,))

    def mark_questions(self, node_id: int, status: int) -> None:
        """Set a node's question status: 0 pending, 1 done, -1 failed (recorded in ``failures``)."""
        with self.transaction() as c:
            c.execute("UPDATE nodes SET questions_done = ? WHERE id = ?", (status, node_id))

    def reset_questions(self) -> None:
        """Forget every node's utility questions (used when the number per chunk changes)."""
        with self.transaction() as c:
            c.execute("DELETE FROM questions")
            c.execute("UPDATE nodes SET questions_done = 0")

    def questions(self) -> list[tuple[int, int, str]]:
        """All utility questions as ``(question_id, node_id, text)``, ordered by node then position."""
        rows = self._query("SELECT id, node_id, text FROM questions ORDER BY node_id, ord")
        return [(int(a), int(b), str(c)) for a, b, c in rows]

    # -- embeddings -------------------------------------------------------------------------------
    def get_embeddings(self, model: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """Cached vectors for the given text-hash keys (missing keys are absent from the result)."""
        out: dict[str, np.ndarray] = {}
        for start in range(0, len(keys), 500):
            part = list(keys[start : start + 500])
            marks = ",".join("?" * len(part))
            rows = self._query(
                f"SELECT key, dim, vector FROM embeddings WHERE model = ? AND key IN ({marks})",
                [model, *part],
            )
            for key, dim, blob in rows:
                out[key] = np.frombuffer(blob, dtype=np.float32, count=dim).copy()
        return out

    def put_embeddings(self, model: str, items: Iterable[tuple[str, np.ndarray]]) -> None:
        """Store float32 vectors under text-hash keys."""
        rows = [(k, model, int(v.shape[0]), np.asarray(v, dtype=np.float32).tobytes()) for k, v in items]
        with self.transaction() as c:
            c.executemany("INSERT OR REPLACE INTO embeddings(key, model, dim, vector) VALUES (?,?,?,?)", rows)

    # -- llm cache --------------------------------------------------------------------------------
    def get_llm(self, key: str) -> dict[str, Any] | None:
        """A cached LLM response by key, or None."""
        rows = self._query("SELECT response FROM llm_cache WHERE key = ?", (key,))
        return json.loads(rows[0][0]) if rows else None

    def put_llm(self, key: str, model: str, response: dict[str, Any]) -> None:
        """Cache an LLM response."""
        with self.transaction() as c:
            c.execute(
                "INSERT OR REPLACE INTO llm_cache(key, model, response, created) VALUES (?,?,?,?)",
                (key, model, json.dumps(response), time.time()),
            )

    def import_caches(self, other: str | Path) -> tuple[int, int]:
        """Copy another memory's LLM responses and embeddings into this memory's caches.

        Entries already here are kept. Used by ``gemrag eval`` so that a gem ablation memory (same documents,
        another parameter) answers the model calls it shares with its base memory from the cache.

        Args:
            other: another memory directory (or its ``memory.sqlite``).

        Returns:
            ``(llm_rows, embedding_rows)`` inserted (ints).

        Raises:
            GemragError: ``other`` is not a gemrag memory.
        """
        path = Path(other)
        path = path / "memory.sqlite" if path.is_dir() else path
        if not path.is_file() or path.resolve() == self.path.resolve():
            raise GemragError(f"{other} is not another gemrag memory")
        with self._lock:
            try:
                self.conn.execute("ATTACH DATABASE ? AS other", (str(path),))
            except sqlite3.DatabaseError as exc:
                raise GemragError(f"cannot read the caches of {other}: {exc}") from exc
            try:
                with self.transaction() as c:
                    llm = c.execute("INSERT OR IGNORE INTO main.llm_cache SELECT * FROM other.llm_cache").rowcount
                    emb = c.execute("INSERT OR IGNORE INTO main.embeddings SELECT * FROM other.embeddings").rowcount
            except sqlite3.DatabaseError as exc:
                raise GemragError(f"cannot read the caches of {other}: {exc}") from exc
            finally:
                self.conn.execute("DETACH DATABASE other")
        return int(llm), int(emb)

    # -- edges ------------------------------------------------------------------------------------
    def replace_edges(self, src: np.ndarray, dst: np.ndarray, weight: np.ndarray) -> None:
        """Replace the stored edge list (node ids, float weights) in one transaction."""
        with self.transaction() as c:
            c.execute("DELETE FROM edges")
            c.executemany(
                "INSERT INTO edges(src, dst, weight) VALUES (?,?,?)",
                zip(src.tolist(), dst.tolist(), weight.tolist(), strict=True),
            )

    def edges(self, node_id: int) -> list[tuple[int, float]]:
        """The stored strongest edges of a node as ``(neighbour id, weight)``, strongest first."""
        rows = self._query("SELECT dst, weight FROM edges WHERE src = ? ORDER BY weight DESC", (node_id,))
        return [(int(a), float(b)) for a, b in rows]

    # -- usage and failures -----------------------------------------------------------------------
    def log_usage(self, rows: Sequence[tuple[str, str, str, int, int, int, float, int]]) -> None:
        """Append usage rows ``(phase, kind, model, prompt, completion, embedding tokens, seconds, cached)``."""
        now = time.time()
        with self.transaction() as c:
            c.executemany(
                "INSERT INTO usage(at, phase, kind, model, prompt_tokens, completion_tokens, embedding_tokens,"
                " seconds, cached) VALUES (?,?,?,?,?,?,?,?,?)",
                [(now, *r) for r in rows],
            )

    def usage_by_phase(self) -> dict[str, dict[str, float]]:
        """Totals per phase of what was actually spent: prompt/completion/embedding tokens and seconds of
        backend calls (cache hits excluded), the number of backend calls, and the number of cache hits."""
        rows = self._query(
            "SELECT phase, SUM(prompt_tokens * (1 - cached)), SUM(completion_tokens * (1 - cached)),"
            " SUM(embedding_tokens * (1 - cached)), SUM(seconds), SUM(1 - cached), SUM(cached)"
            " FROM usage GROUP BY phase ORDER BY phase"
        )
        keys = ("prompt_tokens", "completion_tokens", "embedding_tokens", "seconds", "calls", "cached")
        return {r[0]: dict(zip(keys, r[1:], strict=True)) for r in rows}

    def record_failure(self, phase: str, node_id: int | None, message: str) -> None:
        """Record a failure (e.g. malformed model output after all retries) for ``gemrag info``."""
        with self.transaction() as c:
            c.execute(
                "INSERT INTO failures(at, phase, node_id, message) VALUES (?,?,?,?)",
                (time.time(), phase, node_id, message[:2000]),
            )

    def failures(self) -> list[dict[str, Any]]:
        """Recorded failures, oldest first."""
        rows = self._query("SELECT at, phase, node_id, message FROM failures ORDER BY id")
        return [dict(zip(("at", "phase", "node_id", "message"), r, strict=True)) for r in rows]

    # -- arrays -----------------------------------------------------------------------------------
    def save_array(self, name: str, array: np.ndarray) -> None:
        """Write ``<dir>/<name>.npy`` atomically (temporary file, then rename)."""
        fd, tmp = tempfile.mkstemp(dir=self.directory, suffix=".npy.tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                np.save(fh, array)
            os.replace(tmp, self.directory / f"{name}.npy")
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def load_array(self, name: str, mmap: bool = False) -> np.ndarray | None:
        """Read ``<dir>/<name>.npy`` (memory-mapped read-only when ``mmap``), or None when absent."""
        path = self.directory / f"{name}.npy"
        if not path.exists():
            return None
        return np.load(path, mmap_mode="r" if mmap else None)
