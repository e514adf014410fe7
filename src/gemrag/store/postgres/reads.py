"""The rows and caches parts of a PostgreSQL memory: the shared parts, answered from the batched reads of a snapshot
where they were made (:mod:`gemrag.store.postgres.snapshot`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

import numpy as np

from gemrag.errors import StaleGenerationError
from gemrag.store.caches import CacheRows
from gemrag.store.parts import StoreDatabase
from gemrag.store.postgres.snapshot import ROWS_SQL
from gemrag.store.records import NodeRecord
from gemrag.store.rows import SqlRows, _node
from gemrag.types import DocumentRef, Passage

if TYPE_CHECKING:
    from gemrag.store.postgres.store import PgDatabase


def snapshot_reads(db: StoreDatabase) -> PgDatabase:
    """The database part of a PostgreSQL memory's part, as the PostgreSQL database it is (its snapshot's cache)."""
    return cast("PgDatabase", db)


class PgRows(SqlRows):
    """The rows part of a PostgreSQL memory: the shared rows (:class:`gemrag.store.rows.SqlRows`), answered from the
    snapshot's batched reads where they were made (module docstring; arguments: those of
    :class:`~gemrag.store.sql_part.SqlPart`, whose database part is a :class:`~gemrag.store.postgres.store.PgDatabase`).
    """

    def chunk_signature(self) -> tuple[int, int, int, int]:
        """``(chunks, largest chunk id, documents, largest document id)`` (see
        :meth:`gemrag.store.graph_rows.GraphRows.chunk_signature`; inside a snapshot: from its state row)."""
        rows = snapshot_reads(self._db)._read_state()
        if rows is None or rows.signature is None:
            return super().chunk_signature()
        return rows.signature

    # -- the rows of a retrieval's hits -----------------------------------------------------------
    def nodes_by_id(self, node_ids: Sequence[int]) -> dict[int, NodeRecord]:
        """Several nodes by id: ``{id: NodeRecord}``; inside a snapshot in ONE statement (:data:`ROWS_SQL`) that
        also reads their sources and passages for :meth:`node_sources` and :meth:`passages` to answer from.

        Raises:
            KeyError: one of the ids names no node.
        """
        rows = snapshot_reads(self._db)._snapshot_rows()
        wanted = list(dict.fromkeys(int(i) for i in node_ids))
        if rows is None:
            return super().nodes_by_id(wanted)
        todo = [i for i in wanted if i not in rows.nodes]
        if todo:
            nodes, sources, passages = snapshot_reads(self._db)._query(ROWS_SQL, {"ids": todo}, raw=True, last=True)[0]
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
            snapshot_reads(self._db)._state().rows = None
            raise StaleGenerationError(f"node {missing[0]} was removed by a newer build while it was read")
        if missing:
            raise KeyError(missing[0])
        return {i: rows.nodes[i] for i in wanted}

    def node_sources(self, node_ids: Sequence[int]) -> dict[int, list[int]]:
        """The chunk ids each given node was made from (sorted; missing nodes map to []): from the snapshot's
        cache when :meth:`nodes_by_id` read them all."""
        rows = snapshot_reads(self._db)._snapshot_rows()
        ids = [int(i) for i in node_ids]
        if rows is not None and all(i in rows.sources for i in ids):
            return {i: list(rows.sources[i]) for i in ids}
        return super().node_sources(ids)

    def passages(self, chunk_ids: Sequence[int]) -> dict[int, Passage]:
        """The chunks ``chunk_ids`` with their documents and spans (see :meth:`gemrag.store.rows.SqlRows.passages`):
        from the snapshot's cache when :meth:`nodes_by_id` read them all."""
        rows = snapshot_reads(self._db)._snapshot_rows()
        ids = [int(i) for i in chunk_ids]
        if rows is not None and all(i in rows.passages_known for i in ids):
            return {i: rows.passages[i] for i in ids if i in rows.passages}
        return super().passages(ids)


class PgCaches(CacheRows):
    """The caches part of a PostgreSQL memory: the shared caches (:class:`gemrag.store.caches.CacheRows`), the
    question's embedding answered from the snapshot's batched reads (module docstring; arguments: those of
    :class:`~gemrag.store.sql_part.SqlPart`, whose database part is a :class:`~gemrag.store.postgres.store.PgDatabase`).
    """

    def get_embeddings(self, model: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """Cached vectors for the given text-hash keys (see :meth:`gemrag.store.caches.CacheRows.get_embeddings`):
        from the snapshot's cache when they were read with its state."""
        rows = snapshot_reads(self._db)._snapshot_rows()
        if rows is None or not keys or any((model, k) not in rows.embeddings for k in keys):
            return super().get_embeddings(model, keys)
        out = {}
        for k in keys:
            found = rows.embeddings[(model, k)]
            if found is not None:
                out[k] = np.frombuffer(found[1], dtype=np.float32, count=int(found[0])).copy()
        return out
