"""A retrieval's reads on a PostgreSQL memory in as few round trips as the data allow.

On SQLite a read is a function call into the file; on PostgreSQL it is a round trip to the server, and a
retrieval made of a dozen small reads (the published generations, the chunk signature, the node rows, their
sources, their passages) paid a dozen of them. Inside one :meth:`~gemrag.store.postgres.store.PgDatabase.snapshot`
(a ``REPEATABLE READ`` transaction, where nothing read can change), the database part (:class:`PgSnapshotReads`)
reads them and the rows and caches parts (:mod:`gemrag.store.postgres.reads`) answer from two batched statements
whose results it keeps until the snapshot ends:

* :data:`STATE_SQL`: every strategy's published generation and the chunk signature (what
  :func:`gemrag.memory.states.check_ready` and the strategies' generation checks ask), sent in the same round trip as
  the snapshot's ``BEGIN`` and, in a retrieval, the embedding cache's row of the question (:data:`EMBEDDINGS_SQL`);
* :data:`ROWS_SQL`: the hits' node rows, the chunks each was made from (``node_sources``) and the passages of
  all of them (:meth:`gemrag.store.postgres.reads.PgRows.nodes_by_id`), so
  :func:`gemrag.answers.provenance.with_provenance`
  that follows reads nothing.
  Inside :meth:`~gemrag.store.postgres.store.PgDatabase.retrieval` it is a retrieval's last read and carries the
  transaction's ``COMMIT`` in its round trip; a read after it (a strategy asked again for a larger budget) runs in
  a new transaction, and a node it misses there was removed by a newer build:
  :class:`~gemrag.errors.StaleGenerationError`, on which the retrieval is read again from a fresh state.

Outside a snapshot every method reads as on SQLite (the shared SQL of :mod:`gemrag.store.rows` and
:mod:`gemrag.store.graph_rows`). Both statements have a constant text (ids travel as one ``bigint[]``), so psycopg
prepares them on the server (``prepare=True``).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, Protocol

from gemrag.store.records import NodeRecord
from gemrag.types import Passage

STATE_SQL = (
    "SELECT (SELECT COALESCE(json_object_agg(strategy, generation), '{}') FROM builds),"
    " (SELECT COUNT(*) FROM nodes WHERE kind = 'chunk'), (SELECT COALESCE(MAX(id), 0) FROM nodes WHERE kind = 'chunk'),"
    " (SELECT COUNT(*) FROM documents), (SELECT COALESCE(MAX(id), 0) FROM documents)"
)
"""One row: ``{strategy: published generation}`` (JSON) and the four numbers of
:meth:`~gemrag.store.graph_rows.GraphRows.chunk_signature`."""

EMBEDDINGS_SQL = "SELECT key, dim, vector FROM embeddings WHERE model = %s AND key = ANY(%s)"
"""The embedding cache's rows of some keys (the question's, read with the state: :meth:`PgSnapshotReads._prefetch`)."""

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
among them and among their sources (those of :meth:`~gemrag.store.rows.SqlRows.passages`)."""


class SnapshotRows:
    """What one snapshot has read: the state row and the rows of the nodes :meth:`PgRows.nodes_by_id` asked
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


class PgSnapshotHost(Protocol):
    """What :class:`PgSnapshotReads` reads of the class it is mixed into
    (:class:`gemrag.store.postgres.store.PgDatabase`): its per-thread transaction state and its statements."""

    def _state(self) -> threading.local: ...

    def _run_together(self, statements: Sequence[tuple[str, Any]]) -> list[list[Any]]: ...

    def _query(self, sql: str, args: Any = (), *, raw: bool = False, last: bool = False) -> list[Any]: ...


def _snapshot_cache(state: threading.local) -> SnapshotRows | None:
    """The cache of the snapshot this thread's ``state`` is in (made on first use), or None outside a snapshot (and
    inside a write transaction)."""
    if not state.snapshot:
        return None
    if state.rows is None:
        state.rows = SnapshotRows()
    rows: SnapshotRows = state.rows
    return rows


class PgSnapshotReads:
    """The database side of the batched, snapshot-cached reads (on :class:`gemrag.store.postgres.store.PgDatabase`,
    whose members they use: :class:`PgSnapshotHost`; see the module docstring): the snapshot's cache and its state
    row, which the rows, caches and build-arrays parts of a PostgreSQL memory answer from (:class:`PgRows`,
    :class:`PgCaches`, :class:`gemrag.store.postgres.generations.PgArrays`)."""

    def _snapshot_rows(self: PgSnapshotHost) -> SnapshotRows | None:
        """The current snapshot's cache, or None outside a snapshot (and inside a write transaction)."""
        return _snapshot_cache(self._state())

    def _read_state(self: PgSnapshotHost) -> SnapshotRows | None:
        """The snapshot's cache with its state row read (one statement, in the round trip of ``BEGIN`` when it is
        the snapshot's first), or None outside a snapshot."""
        rows = _snapshot_cache(self._state())
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

    def _prefetch(self: PgSnapshotHost, embeddings: tuple[str, Sequence[str]] | None) -> None:
        """Read these embeddings' cache rows with the state (see :meth:`retrieval`)."""
        rows = _snapshot_cache(self._state())
        if rows is not None and embeddings is not None:
            rows.prefetch = (str(embeddings[0]), [str(k) for k in embeddings[1]])
