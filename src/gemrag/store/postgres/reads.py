"""A retrieval's reads on a PostgreSQL memory in as few round trips as the data allow.

On SQLite a read is a function call into the file; on PostgreSQL it is a round trip to the server, and a
retrieval made of a dozen small reads (the published generations, the chunk signature, the node rows, their
sources, their passages) paid a dozen of them. Inside one :meth:`~gemrag.store.postgres.PostgresStore.snapshot`
(a ``REPEATABLE READ`` transaction, where nothing read can change), this mixin answers them from two batched
statements whose results it keeps until the snapshot ends:

* :data:`STATE_SQL`: every strategy's published generation and the chunk signature (what
  :func:`gemrag.lifecycle.check_ready` and the strategies' generation checks ask), sent in the same round trip as
  the snapshot's ``BEGIN`` and, in a retrieval, the embedding cache's row of the question (:data:`EMBEDDINGS_SQL`);
* :data:`ROWS_SQL`: the hits' node rows, the chunks each was made from (``node_sources``) and the passages of
  all of them (:meth:`nodes_by_id`), so :func:`gemrag.provenance.with_provenance` that follows reads nothing.
  Inside :meth:`~gemrag.store.postgres.PostgresStore.retrieval` it is a retrieval's last read and carries the
  transaction's ``COMMIT`` in its round trip; a read after it (a strategy asked again for a larger budget) runs in
  a new transaction, and a node it misses there was removed by a newer build:
  :class:`~gemrag.errors.StaleGenerationError`, on which the retrieval is read again from a fresh state.

Outside a snapshot every method reads as on SQLite (the shared SQL of :mod:`gemrag.store.rows` and
:mod:`gemrag.store.derived`). Both statements have a constant text (ids travel as one ``bigint[]``), so psycopg
prepares them on the server (``prepare=True``).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from gemrag.errors import StaleGenerationError
from gemrag.store.rows import NodeRecord, _node
from gemrag.types import DocumentRef, Passage

STATE_SQL = (
    "SELECT (SELECT COALESCE(json_object_agg(strategy, generation), '{}') FROM builds),"
    " (SELECT COUNT(*) FROM nodes WHERE kind = 'chunk'), (SELECT COALESCE(MAX(id), 0) FROM nodes WHERE kind = 'chunk'),"
    " (SELECT COUNT(*) FROM documents), (SELECT COALESCE(MAX(id), 0) FROM documents)"
)
"""One row: ``{strategy: published generation}`` (JSON) and the four numbers of
:meth:`~gemrag.store.derived.GraphRowsMixin.chunk_signature`."""

EMBEDDINGS_SQL = "SELECT key, dim, vector FROM embeddings WHERE model = %s AND key = ANY(%s)"
"""The embedding cache's rows of some keys (the question's, read with the state: :meth:`PgReadsMixin._prefetch`)."""

ROWS_SQL = """
WITH sources AS (SELECT node_id, chunk_id FROM node_sources WHERE node_id = ANY(%(ids)s::bigint[]))
SELECT
 (SELECT COALESCE(json_agg(json_build_array(n.id, n.kind, n.doc_id, n.ord, n.text, n.n_tokens, n.questions_done,
   n.meta, n.strategy, n.generation, n.span_start, n.span_end)), '[]')
   FROM nodes n WHERE n.id = ANY(%(ids)s::bigint[])),
 (SELECT COALESCE(json_agg(json_build_array(node_id, chunk_id) ORDER BY node_id, chunk_id), '[]') FROM sources),
 (SELECT COALESCE(json_agg(json_build_array(n.id, n.ord, n.span_start, n.span_end, d.id, d.title, d.source,
   d.version)), '[]') FROM nodes n JOIN documents d ON d.id = n.doc_id
   WHERE n.kind = 'chunk' AND n.id = ANY(%(ids)s::bigint[] || ARRAY(SELECT chunk_id FROM sources)))
"""
"""One row of three JSON arrays for the node ids ``%(ids)s``: their node rows (the columns of
:class:`~gemrag.store.rows.NodeRecord`), their ``(node_id, chunk_id)`` sources, and the passage rows of the chunks
among them and among their sources (those of :meth:`~gemrag.store.rows.RowsMixin.passages`)."""


class SnapshotRows:
    """What one snapshot has read: the state row and the rows of the nodes :meth:`PgReadsMixin.nodes_by_id` asked
    for, with the ids each answer is complete for (a cached answer is only given for ids asked before)."""

    def __init__(self) -> None:
        self.generations: dict[str, int] | None = None
        self.signature: tuple[int, int, int, int] | None = None
        self.nodes: dict[int, NodeRecord] = {}
        self.sources: dict[int, list[int]] = {}
        self.passages: dict[int, Passage] = {}
        self.passages_known: set[int] = set()
        self.committed = False  # the transaction that read the state has ended (a later read may see a newer one)
        self.prefetch: tuple[str, list[str]] | None = None  # embeddings to read with the state
        self.embeddings: dict[tuple[str, str], tuple[int, bytes] | None] = {}  # (model, key) -> (dim, vector)


class PgReadsMixin:
    """Batched, snapshot-cached reads (on :class:`gemrag.store.postgres.PostgresStore`; see the module
    docstring)."""

    def _state(self) -> threading.local: ...  # provided by PostgresStore
    def _run_together(self, statements: Sequence[tuple[str, Any]]) -> list[list[Any]]: ...  # by PostgresStore
    def _query(  # provided by PostgresStore
        self, sql: str, args: Any = (), *, raw: bool = False, last: bool = False
    ) -> list[Any]: ...

    def _snapshot_rows(self) -> SnapshotRows | None:
        """The current snapshot's cache, or None outside a snapshot (and inside a write transaction)."""
        state = self._state()
        if not state.snapshot:
            return None
        if state.rows is None:
            state.rows = SnapshotRows()
        rows: SnapshotRows = state.rows
        return rows

    def _read_state(self) -> SnapshotRows | None:
        """The snapshot's cache with its state row read (one statement, in the round trip of ``BEGIN`` when it is
        the snapshot's first), or None outside a snapshot."""
        rows = self._snapshot_rows()
        if rows is None or rows.generations is not None:
            return rows
        if rows.prefetch is not None:
            model, keys = rows.prefetch
            state_rows, found = self._run_together([(STATE_SQL, None), (EMBEDDINGS_SQL, (model, keys))])
            rows.embeddings |= {(model, k): None for k in keys} | {(model, k): (dim, v) for k, dim, v in found}
        else:
            state_rows = self._query(STATE_SQL, raw=True)
        generations, n, top, d, dtop = state_rows[0]
        rows.generations = {str(s): int(g) for s, g in dict(generations).items()}
        rows.signature = (int(n), int(top), int(d), int(dtop))
        return rows

    def _prefetch(self, embeddings: tuple[str, Sequence[str]] | None) -> None:
        """Read these embeddings' cache rows with the state (see :meth:`retrieval`)."""
        rows = self._snapshot_rows()
        if rows is not None and embeddings is not None:
            rows.prefetch = (str(embeddings[0]), [str(k) for k in embeddings[1]])

    def get_embeddings(self, model: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """Cached vectors for the given text-hash keys (see :meth:`gemrag.store.caches.CachesMixin.get_embeddings`):
        from the snapshot's cache when they were read with its state."""
        rows = self._snapshot_rows()
        if rows is None or not keys or any((model, k) not in rows.embeddings for k in keys):
            return super().get_embeddings(model, keys)  # type: ignore[misc, no-any-return]
        out = {}
        for k in keys:
            found = rows.embeddings[(model, k)]
            if found is not None:
                out[k] = np.frombuffer(found[1], dtype=np.float32, count=int(found[0])).copy()
        return out

    # -- the state of the memory ------------------------------------------------------------------
    def published_generation(self, strategy: str) -> int | None:
        """The strategy's published generation, or None when it was never built (inside a snapshot: from its
        state row)."""
        rows = self._read_state()
        if rows is None or rows.generations is None:
            return super().published_generation(strategy)  # type: ignore[misc, no-any-return]
        return rows.generations.get(strategy)

    def chunk_signature(self) -> tuple[int, int, int, int]:
        """``(chunks, largest chunk id, documents, largest document id)`` (see
        :meth:`gemrag.store.derived.GraphRowsMixin.chunk_signature`; inside a snapshot: from its state row)."""
        rows = self._read_state()
        if rows is None or rows.signature is None:
            return super().chunk_signature()  # type: ignore[misc, no-any-return]
        return rows.signature

    # -- the rows of a retrieval's hits -----------------------------------------------------------
    def nodes_by_id(self, node_ids: Sequence[int]) -> dict[int, NodeRecord]:
        """Several nodes by id: ``{id: NodeRecord}``; inside a snapshot in ONE statement (:data:`ROWS_SQL`) that
        also reads their sources and passages for :meth:`node_sources` and :meth:`passages` to answer from.

        Raises:
            KeyError: one of the ids names no node.
        """
        rows = self._snapshot_rows()
        wanted = list(dict.fromkeys(int(i) for i in node_ids))
        if rows is None:
            return super().nodes_by_id(wanted)  # type: ignore[misc, no-any-return]
        todo = [i for i in wanted if i not in rows.nodes]
        if todo:
            nodes, sources, passages = self._query(ROWS_SQL, {"ids": todo}, raw=True, last=True)[0]
            for r in nodes:
                rows.nodes[int(r[0])] = _node(r)
            for i in todo:
                rows.sources.setdefault(i, [])
            for node_id, chunk_id in sources:
                rows.sources[int(node_id)].append(int(chunk_id))
            for r in passages:
                start, end = (int(r[2]), int(r[3])) if r[2] is not None and r[3] is not None else (None, None)
                document = DocumentRef(int(r[4]), str(r[5]), str(r[6]), int(r[7]))
                rows.passages[int(r[0])] = Passage(int(r[0]), document, int(r[1]), start, end)
            rows.passages_known.update(todo)
            rows.passages_known.update(c for i in todo for c in rows.sources[i])
        missing = [i for i in wanted if i not in rows.nodes]
        if missing and rows.committed:  # read after the state's transaction: a newer build removed them
            self._state().rows = None
            raise StaleGenerationError(f"node {missing[0]} was removed by a newer build while it was read")
        if missing:
            raise KeyError(missing[0])
        return {i: rows.nodes[i] for i in wanted}

    def node_sources(self, node_ids: Sequence[int]) -> dict[int, list[int]]:
        """The chunk ids each given node was made from (sorted; missing nodes map to []): from the snapshot's
        cache when :meth:`nodes_by_id` read them all."""
        rows = self._snapshot_rows()
        ids = [int(i) for i in node_ids]
        if rows is not None and all(i in rows.sources for i in ids):
            return {i: list(rows.sources[i]) for i in ids}
        return super().node_sources(ids)  # type: ignore[misc, no-any-return]

    def passages(self, chunk_ids: Sequence[int]) -> dict[int, Passage]:
        """The chunks ``chunk_ids`` with their documents and spans (see :meth:`gemrag.store.rows.RowsMixin.passages`):
        from the snapshot's cache when :meth:`nodes_by_id` read them all."""
        rows = self._snapshot_rows()
        ids = [int(i) for i in chunk_ids]
        if rows is not None and all(i in rows.passages_known for i in ids):
            return {i: rows.passages[i] for i in ids if i in rows.passages}
        return super().passages(ids)  # type: ignore[misc, no-any-return]
