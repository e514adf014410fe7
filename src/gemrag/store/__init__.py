"""Persistence: one memory = one directory holding ``memory.sqlite`` plus generation-named ``.npy`` arrays (SQLite,
the default), or one PostgreSQL schema (``postgresql://...?schema=NAME``).

A store is a facade (:class:`MemoryStore`, ``base.py``) over part objects, each behind a role protocol of
``parts.py`` (database, rows, documents, artefacts, build arrays, vector search, caches, build lock) that its callers
type against. Each backend is a folder that builds its parts: ``sqlite/`` (the arrays as files, :class:`FileArrays`;
vector search with HNSW artefacts, ``hnsw.py``) and ``postgres/`` (everything in the database, pgvector), which never
import each other. :func:`open_store` and the other functions of ``open.py`` are the one place that chooses a
backend by location (and swaps parts: ``parts=``); nothing outside this package names a backend's class.

Neutral code lives here, above the backends: ``schema.py`` (the schema version, the table lists, which nodes a reader
sees), ``sql_part.py`` (the base of the parts whose rows are in the database), ``rows.py``, ``graph_rows.py``,
``documents.py`` and ``artifacts.py`` (the rows, SQL written once in SQLite's dialect), ``caches.py`` (the LLM and
embedding caches, usage, failures, their purge), ``publish.py`` (build generations published atomically),
``files.py`` (build arrays as files), ``arrays.py`` (writing and checking ``.npy`` / ``.npz``), ``vectors.py`` (exact
nearest-neighbour search), ``hnsw.py`` (SQLite's vector search), ``lock.py`` (the file build lock), ``copy.py``
(copying memories and caches between locations and backends).
"""

import warnings
from typing import Any

from gemrag.store.base import MemoryStore
from gemrag.store.copy import copy_memory, import_caches
from gemrag.store.files import FileArrays
from gemrag.store.lock import BuildLock
from gemrag.store.open import (
    Location,
    MemoryRoot,
    as_location,
    describe_location,
    location_exists,
    location_name,
    location_problem,
    memory_exists,
    memory_root,
    open_store,
)
from gemrag.store.parts import StoreParts
from gemrag.store.publish import KEEP_COVERS, ArrayEntry, Manifest, Publication, Published
from gemrag.store.records import BuildState, NodeRecord
from gemrag.store.rows import sha256_text
from gemrag.store.sqlite.store import Store

__all__ = [
    "KEEP_COVERS",
    "ArrayEntry",
    "BuildLock",
    "BuildState",
    "FileArrays",
    "Location",
    "Manifest",
    "MemoryRoot",
    "MemoryStore",
    "NodeRecord",
    "Publication",
    "Published",
    "Store",
    "StoreParts",
    "as_location",
    "copy_memory",
    "describe_location",
    "import_caches",
    "location_exists",
    "location_name",
    "location_problem",
    "memory_exists",
    "memory_root",
    "open_store",
    "sha256_text",
]

_RENAMED = {"FileArraysMixin": "FileArrays", "SqliteRows": "SqliteDatabase"}
"""Names this package had before a store was composed of part objects, and their part classes now."""


def __getattr__(name: str) -> Any:
    """The deprecated names of :data:`_RENAMED` (a warning; they are part objects now, not mixins of a store).

    Raises:
        AttributeError: any other unknown name.
    """
    if name in _RENAMED:
        new = _RENAMED[name]
        warnings.warn(
            f"gemrag.store.{name} is deprecated: a store is a facade over part objects; use {new} as a part "
            "(open_store(..., parts=...), see examples/custom_store.py)",
            DeprecationWarning,
            stacklevel=2,
        )
        if new == "FileArrays":
            return FileArrays
        from gemrag.store.sqlite.store import SqliteDatabase

        return SqliteDatabase
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
