"""The parts of a PostgreSQL memory, built in one place: :func:`pg_parts` (what
:func:`gemrag.store.open.open_store` calls) and :class:`PostgresStore`, the facade over them."""

from __future__ import annotations

from gemrag.store.artifacts import ArtifactRows
from gemrag.store.base import MemoryStore
from gemrag.store.documents import DocumentRows
from gemrag.store.parts import StoreParts
from gemrag.store.postgres.generations import PgArrays
from gemrag.store.postgres.reads import PgCaches, PgRows
from gemrag.store.postgres.store import PgDatabase
from gemrag.store.postgres.vectors import PgVectorSearch
from gemrag.store.schema import DEFAULT_BUSY_TIMEOUT


def pg_parts(
    url: str, *, readonly: bool = False, busy_timeout: float = DEFAULT_BUSY_TIMEOUT, pool_size: int = 1
) -> StoreParts:
    """The parts of a PostgreSQL memory: its database (:class:`PgDatabase`, also the build lock), the rows,
    documents, artefacts and caches in it, the build arrays as rows (:class:`~gemrag.store.postgres.generations.
    PgArrays`) and the vector search in pgvector (:class:`~gemrag.store.postgres.vectors.PgVectorSearch`).

    Raises:
        GemragError: as :class:`PgDatabase`.
    """
    db = PgDatabase(url, readonly=readonly, busy_timeout=busy_timeout, pool_size=pool_size)
    parts = StoreParts(db)
    parts.rows, parts.documents = PgRows(parts), DocumentRows(parts)
    parts.artifacts, parts.caches = ArtifactRows(parts), PgCaches(parts)
    parts.vectors = PgVectorSearch(db)
    parts.arrays = PgArrays(parts, db, parts.vectors)
    return parts


class PostgresStore(MemoryStore):
    """A memory in a PostgreSQL schema (the parts of :func:`pg_parts`; arguments and errors: those of
    :class:`PgDatabase`)."""

    def __init__(
        self, url: str, *, readonly: bool = False, busy_timeout: float = DEFAULT_BUSY_TIMEOUT, pool_size: int = 1
    ) -> None:
        super().__init__(pg_parts(url, readonly=readonly, busy_timeout=busy_timeout, pool_size=pool_size))
