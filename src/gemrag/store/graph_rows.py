"""A strategy's own nodes and edges, where they came from, each build's state, and deleting a document.

* **Nodes** a strategy derives (summaries, entities, facts, events, ...) are rows of ``nodes`` with the
  strategy's name in ``nodes.strategy``, a kind the strategy chooses (any name but ``chunk``: the namespace is
  the pair (strategy, kind)), and the build generation that made them (:meth:`GraphRows.add_node`).
  ``sources`` records the chunks a node was made from (``node_sources``): removing a chunk removes every derived
  node with that chunk among its sources, except the kinds a strategy declares as stated by each source alone
  (``kept_kinds``: an entity's name, a triple), which stay while another source remains
  (:func:`gemrag.strategies.platform.forgetting.forgotten_nodes`).
* **Edges** of a strategy have a kind and a generation (:meth:`GraphRows.add_edges`, or ``edges=`` of
  :meth:`~gemrag.store.publish.Generations.publish`); readers see the published generation's.
* **Build state** (:meth:`GraphRows.build_state`): built, stale (chunks added or deleted since the
  published build, from ``build_chunks``) or never built.

Nothing here knows a strategy by name.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from gemrag.store.documents import DOCUMENT_COLUMNS, document_dict, like_suffix
from gemrag.store.parts import Connection, Rows
from gemrag.store.records import BuildState, State
from gemrag.store.sql_part import SqlPart

CHUNK = "chunk"
"""The kind of the memory's chunks (shared by every strategy; a strategy's own nodes use other kinds)."""

INPUTS = "inputs"
"""The key of a derived node's meta that records how many source chunks it was made from (:meth:`add_node`)."""

_BATCH = 500


def _batches(ids: Sequence[int]) -> Iterable[list[int]]:
    for i in range(0, len(ids), _BATCH):
        yield [int(x) for x in ids[i : i + _BATCH]]


class GraphRows(SqlPart, Rows):
    """Derived nodes, edges, sources and build states: the graph's rows, half of the store's rows part
    (:class:`gemrag.store.rows.SqlRows`; the published generation comes from the build-arrays part)."""

    # -- nodes ------------------------------------------------------------------------------------
    def add_node(
        self,
        strategy: str,
        generation: int,
        kind: str,
        text: str,
        *,
        n_tokens: int = 0,
        meta: dict[str, Any] | None = None,
        ord_: int = 0,
        sources: Iterable[int] = (),
    ) -> int:
        # Publishing deletes the strategy's nodes of older generations (unless ``carry``) in the same transaction
        # (publish.py); the number of sources kept under INPUTS lets a retrieval tell a node that lost an input
        # (strategies.platform.forgetting.check_inputs).
        if not kind or kind == CHUNK:
            raise ValueError(f"a strategy's node kind must not be {kind!r}")
        sources = sorted({int(s) for s in sources})
        recorded = {**(meta or {}), INPUTS: len(sources)} if sources else dict(meta or {})
        with self._db.transaction() as c:
            cur = c.execute(
                "INSERT INTO nodes(kind, doc_id, ord, text, n_tokens, meta, strategy, generation)"
                " VALUES (?, NULL, ?, ?, ?, ?, ?, ?)",
                (kind, ord_, text, n_tokens, json.dumps(recorded), strategy, generation),
            )
            node_id = int(cur.lastrowid or 0)
            c.executemany(
                "INSERT OR IGNORE INTO node_sources(node_id, chunk_id) VALUES (?, ?)", ((node_id, s) for s in sources)
            )
        return node_id

    def node_sources(self, node_ids: Sequence[int]) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {int(i): [] for i in node_ids}
        for part in _batches(list(out)):
            marks = ",".join("?" * len(part))
            for node_id, chunk_id in self._query(
                f"SELECT node_id, chunk_id FROM node_sources WHERE node_id IN ({marks}) ORDER BY node_id, chunk_id",
                part,
            ):
                out[int(node_id)].append(int(chunk_id))
        return out

    def nodes_only_from(self, chunk_ids: Sequence[int]) -> list[int]:
        chunks = {int(i) for i in chunk_ids}
        touched: set[int] = set()
        for part in _batches(sorted(chunks)):
            marks = ",".join("?" * len(part))
            touched |= {
                int(r[0]) for r in self._query(f"SELECT node_id FROM node_sources WHERE chunk_id IN ({marks})", part)
            }
        sources = self.node_sources(sorted(touched))
        return [n for n in sorted(touched) if set(sources[n]) <= chunks]

    def nodes_citing(self, node_ids: Sequence[int]) -> dict[int, tuple[str, str]]:
        out: dict[int, tuple[str, str]] = {}
        for part in _batches(sorted({int(i) for i in node_ids})):
            marks = ",".join("?" * len(part))
            for node_id, strategy, kind in self._query(
                "SELECT DISTINCT n.id, n.strategy, n.kind FROM node_sources s JOIN nodes n ON n.id = s.node_id"
                f" WHERE s.chunk_id IN ({marks})",
                part,
            ):
                out[int(node_id)] = (str(strategy or ""), str(kind))
        return dict(sorted(out.items()))

    def texts_of(self, node_ids: Sequence[int]) -> list[str]:
        out: list[str] = []
        for part in _batches(sorted({int(i) for i in node_ids})):
            marks = ",".join("?" * len(part))
            for text, meta in self._query(f"SELECT text, meta FROM nodes WHERE id IN ({marks})", part):
                out += [str(text), str(meta)]
            out += [str(r[0]) for r in self._query(f"SELECT text FROM questions WHERE node_id IN ({marks})", part)]
            out += [str(r[0]) for r in self._query(f"SELECT data FROM artifacts WHERE node_id IN ({marks})", part)]
        return out

    # -- edges ------------------------------------------------------------------------------------
    def add_edges(
        self, strategy: str, generation: int, kind: str, src: np.ndarray, dst: np.ndarray, weight: np.ndarray
    ) -> None:
        with self._db.transaction() as c:
            c.executemany(
                "INSERT OR REPLACE INTO edges(strategy, kind, generation, src, dst, weight) VALUES (?,?,?,?,?,?)",
                (
                    (strategy, kind, generation, int(a), int(b), float(w))
                    for a, b, w in zip(
                        np.asarray(src).tolist(), np.asarray(dst).tolist(), np.asarray(weight).tolist(), strict=True
                    )
                ),
            )

    def edges(
        self, node_id: int, strategy: str, kind: str | None = None, *, build: tuple[str, int] | None = None
    ) -> list[tuple[int, float]]:
        generation = (
            build[1]
            if build is not None and build[0] == strategy
            else self._parts.arrays.published_generation(strategy)
        )
        sql = "SELECT dst, weight FROM edges WHERE strategy = ? AND generation = ? AND src = ?"
        args: list[Any] = [strategy, generation, node_id]
        if kind is not None:
            sql, args = sql + " AND kind = ?", [*args, kind]
        return [(int(a), float(b)) for a, b in self._query(sql + " ORDER BY weight DESC, dst", args)]

    def edge_list(
        self, strategy: str, kind: str | None = None, *, build: tuple[str, int] | None = None
    ) -> list[tuple[str, int, int, float]]:
        generation = (
            build[1]
            if build is not None and build[0] == strategy
            else self._parts.arrays.published_generation(strategy)
        )
        sql = "SELECT kind, src, dst, weight FROM edges WHERE strategy = ? AND generation = ?"
        args: list[Any] = [strategy, generation]
        if kind is not None:
            sql, args = sql + " AND kind = ?", [*args, kind]
        return [
            (str(k), int(a), int(b), float(w)) for k, a, b, w in self._query(sql + " ORDER BY kind, src, dst", args)
        ]

    # -- documents --------------------------------------------------------------------------------
    def find_documents(self, ref: str) -> list[dict[str, Any]]:
        cols = f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE "
        rows: list[Any] = []
        if ref.strip().isdigit():
            rows = self._query(cols + "id = ?", (int(ref),))
        further = " OR id IN (SELECT doc_id FROM document_sources WHERE {})"
        for where, args in (
            ("source_key = ?", (ref,)),
            ("source = ? OR title = ?", (ref, ref)),
            ("source LIKE ? ESCAPE '\\'", (like_suffix(ref),)),
        ):
            if not rows:
                rows = self._query(cols + f"({where})" + further.format(where) + " ORDER BY id", (*args, *args))
        return [document_dict(r) for r in rows]

    def document_chunk_ids(self, doc_id: int) -> list[int]:
        return [int(r[0]) for r in self._query("SELECT id FROM nodes WHERE doc_id = ? ORDER BY ord", (doc_id,))]

    def delete_rows(self, c: Connection, doc_id: int, nodes: Sequence[int]) -> None:
        self.delete_nodes(c, [*nodes, *self.document_chunk_ids(doc_id)])
        c.execute("DELETE FROM documents WHERE id = ?", (doc_id,))

    def delete_nodes(self, c: Connection, nodes: Sequence[int]) -> None:
        for part in _batches(list(nodes)):
            marks = ",".join("?" * len(part))
            c.execute(f"DELETE FROM edges WHERE src IN ({marks}) OR dst IN ({marks})", [*part, *part])
            c.execute(f"DELETE FROM failures WHERE node_id IN ({marks})", part)
            c.execute(f"DELETE FROM nodes WHERE id IN ({marks})", part)

    # -- build state ------------------------------------------------------------------------------
    def build_state(self, strategy: str) -> BuildState:
        rows = self._query(
            "SELECT generation, published_at, params, models FROM builds WHERE strategy = ?", (strategy,)
        )
        if not rows:
            return BuildState(strategy, "never built")

        generation, published_at, params, models = rows[0]
        new = self._query(
            "SELECT COUNT(*) FROM nodes n WHERE n.kind = 'chunk' AND NOT EXISTS"
            " (SELECT 1 FROM build_chunks b WHERE b.strategy = ? AND b.chunk_id = n.id)",
            (strategy,),
        )[0][0]
        deleted = self._query(
            "SELECT COUNT(*) FROM build_chunks b WHERE b.strategy = ? AND NOT EXISTS"
            " (SELECT 1 FROM nodes n WHERE n.id = b.chunk_id)",
            (strategy,),
        )[0][0]
        documents = self._query("SELECT COUNT(*) FROM documents WHERE chunked = 0")[0][0]
        state: State = "stale" if new or deleted or documents else "built"
        return BuildState(
            strategy,
            state,
            int(generation),
            int(new),
            int(deleted),
            float(published_at),
            json.loads(params),
            json.loads(models),
            int(documents),
        )

    def covered_chunks(self, strategy: str) -> set[int] | None:
        if not self._query("SELECT 1 FROM builds WHERE strategy = ?", (strategy,)):
            return None
        return {int(r[0]) for r in self._query("SELECT chunk_id FROM build_chunks WHERE strategy = ?", (strategy,))}

    def chunk_signature(self) -> tuple[int, int, int, int]:
        n, top = self._query("SELECT COUNT(*), COALESCE(MAX(id), 0) FROM nodes WHERE kind = 'chunk'")[0]
        d, dtop = self._query("SELECT COUNT(*), COALESCE(MAX(id), 0) FROM documents")[0]
        return int(n), int(top), int(d), int(dtop)
