"""The rows every memory store holds, whatever its database: meta, documents, chunks and other nodes, utility
questions (with the graph's rows of :mod:`gemrag.store.graph_rows`, the store's rows part :class:`SqlRows`).

The SQL is written once, in SQLite's dialect with ``?`` parameters; the PostgreSQL store runs it through
:func:`gemrag.store.postgres.dialect.to_postgres`.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from typing import Any

from gemrag.store.documents import DOCUMENT_COLUMNS, document_dict
from gemrag.store.graph_rows import GraphRows, _batches
from gemrag.store.records import NodeRecord
from gemrag.store.schema import visible_node
from gemrag.types import DocumentRef, Passage

_NODE_COLUMNS = (
    "n.id, n.kind, n.doc_id, n.ord, n.text, n.n_tokens, n.questions_done, n.meta, n.strategy, n.generation,"
    " n.span_start, n.span_end"
)


def sha256_text(text: str) -> str:
    """Hex sha256 of a UTF-8 string (64 characters)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _node(r: Sequence[Any]) -> NodeRecord:
    return NodeRecord(r[0], r[1], r[2], r[3], r[4], r[5], r[6], json.loads(r[7]), r[8], r[9], r[10], r[11])


class SqlRows(GraphRows):
    """The rows part of a store (:class:`gemrag.store.parts.Rows`): meta, documents and their chunks, nodes and
    utility questions here, derived nodes, edges and build states in :class:`~gemrag.store.graph_rows.GraphRows`
    (arguments: those of :class:`~gemrag.store.sql_part.SqlPart`)."""

    # -- meta -------------------------------------------------------------------------------------
    def get_meta(self, key: str, default: Any = None) -> Any:
        rows = self._query("SELECT value FROM meta WHERE key = ?", (key,))
        return json.loads(rows[0][0]) if rows else default

    def set_meta(self, key: str, value: Any) -> None:
        with self._db.transaction() as c:
            c.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, json.dumps(value)))

    # -- documents --------------------------------------------------------------------------------
    def add_document(self, source: str, title: str, text: str) -> tuple[int, bool]:
        digest = sha256_text(text)
        with self._db.transaction() as c:
            row = c.execute("SELECT id FROM documents WHERE sha256 = ? ORDER BY id LIMIT 1", (digest,)).fetchone()
            if row:
                return int(row[0]), False
            return self._parts.documents.insert_document(c, source, title, text, digest), True

    def documents(self) -> list[dict[str, Any]]:
        return [document_dict(r) for r in self._query(f"SELECT {DOCUMENT_COLUMNS} FROM documents ORDER BY id")]

    def document_text(self, doc_id: int) -> str:
        return str(self._query("SELECT text FROM documents WHERE id = ?", (doc_id,))[0][0])

    def unchunked_documents(self) -> list[tuple[int, str]]:
        return [(int(r[0]), str(r[1])) for r in self._query("SELECT id, text FROM documents WHERE chunked = 0")]

    def add_chunks(
        self, doc_id: int, chunks: Sequence[tuple[str, int]], spans: Sequence[tuple[int, int] | None] | None = None
    ) -> None:
        given = list(spans) if spans is not None else [None] * len(chunks)
        if len(given) != len(chunks):
            raise ValueError(f"{len(chunks)} chunks but {len(given)} spans")
        rows = [
            (doc_id, i, t, n, s[0] if s else None, s[1] if s else None)
            for i, ((t, n), s) in enumerate(zip(chunks, given, strict=True))
        ]
        with self._db.transaction() as c:
            c.executemany(
                "INSERT INTO nodes(kind, doc_id, ord, text, n_tokens, span_start, span_end)"
                " VALUES ('chunk', ?, ?, ?, ?, ?, ?)",
                rows,
            )
            c.execute("UPDATE documents SET chunked = 1 WHERE id = ?", (doc_id,))

    # -- nodes ------------------------------------------------------------------------------------
    def nodes(
        self, kind: str | None = None, *, strategy: str | None = None, build: tuple[str, int] | None = None
    ) -> list[NodeRecord]:
        predicate, args = visible_node("n", build)
        sql = f"SELECT {_NODE_COLUMNS} FROM nodes n WHERE {predicate}"
        if kind:
            sql, args = sql + " AND n.kind = ?", (*args, kind)
        if strategy is not None:
            sql, args = sql + " AND n.strategy = ?", (*args, strategy)
        return [_node(r) for r in self._query(sql + " ORDER BY n.id", args)]

    def node(self, node_id: int) -> NodeRecord:
        rows = self._query(f"SELECT {_NODE_COLUMNS} FROM nodes n WHERE n.id = ?", (node_id,))
        if not rows:
            raise KeyError(node_id)
        return _node(rows[0])

    def nodes_by_id(self, node_ids: Sequence[int]) -> dict[int, NodeRecord]:
        wanted = list(dict.fromkeys(int(i) for i in node_ids))
        found: dict[int, NodeRecord] = {}
        for part in _batches(wanted):
            marks = ",".join("?" * len(part))
            for row in self._query(f"SELECT {_NODE_COLUMNS} FROM nodes n WHERE n.id IN ({marks})", part):
                found[int(row[0])] = _node(row)
        missing = [i for i in wanted if i not in found]
        if missing:
            raise KeyError(missing[0])
        return found

    def passages(self, chunk_ids: Sequence[int]) -> dict[int, Passage]:
        wanted = list(dict.fromkeys(int(i) for i in chunk_ids))
        found: dict[int, Passage] = {}
        for part in _batches(wanted):
            marks = ",".join("?" * len(part))
            for row in self._query(
                "SELECT n.id, n.ord, n.span_start, n.span_end, d.id, d.title, d.source, d.version"
                f" FROM nodes n JOIN documents d ON d.id = n.doc_id WHERE n.kind = 'chunk' AND n.id IN ({marks})",
                part,
            ):
                document = DocumentRef(int(row[4]), str(row[5]), str(row[6]), int(row[7]))
                start, end = (int(row[2]), int(row[3])) if row[2] is not None and row[3] is not None else (None, None)
                found[int(row[0])] = Passage(int(row[0]), document, int(row[1]), start, end)
        return found

    def add_summary_node(
        self,
        ord_: int,
        text: str,
        n_tokens: int,
        meta: dict[str, Any],
        *,
        strategy: str,
        generation: int,
        sources: Sequence[int] = (),
    ) -> int:
        return self.add_node(
            strategy, generation, "summary", text, n_tokens=n_tokens, meta=meta, ord_=ord_, sources=sources
        )

    # -- utility questions ------------------------------------------------------------------------
    def set_questions(self, node_id: int, questions: Sequence[str]) -> None:
        with self._db.transaction() as c:
            c.execute("DELETE FROM questions WHERE node_id = ?", (node_id,))
            c.executemany(
                "INSERT INTO questions(node_id, ord, text) VALUES (?, ?, ?)",
                [(node_id, i, q) for i, q in enumerate(questions)],
            )
            c.execute("UPDATE nodes SET questions_done = 1 WHERE id = ?", (node_id,))

    def fail_questions(self, node_id: int, phase: str, message: str) -> None:
        with self._db.transaction() as c:
            c.execute("DELETE FROM questions WHERE node_id = ?", (node_id,))
            c.execute(
                "INSERT INTO failures(at, phase, node_id, message) VALUES (?,?,?,?)",
                (time.time(), phase, node_id, message[:2000]),
            )
            c.execute("UPDATE nodes SET questions_done = -1 WHERE id = ?", (node_id,))

    def reset_questions(self) -> None:
        with self._db.transaction() as c:
            c.execute("DELETE FROM questions")
            c.execute("UPDATE nodes SET questions_done = 0")

    def questions(self, *, build: tuple[str, int] | None = None) -> list[tuple[int, int, str]]:
        predicate, args = visible_node("n", build)
        rows = self._query(
            f"SELECT q.id, q.node_id, q.text FROM questions q JOIN nodes n ON n.id = q.node_id WHERE {predicate}"
            " ORDER BY q.node_id, q.ord",
            args,
        )
        return [(int(a), int(b), str(c)) for a, b, c in rows]
