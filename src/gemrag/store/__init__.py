"""Persistence: one memory = one directory holding ``memory.sqlite`` plus generation-named ``.npy`` arrays (SQLite,
the default), or one PostgreSQL schema (``postgresql://...?schema=NAME``).

A store is assembled from parts (``parts.py``: database, rows, build arrays, vector search, caches, build lock);
:class:`MemoryStore` (``base.py``) is their composition. Each backend is a folder: ``sqlite/`` (:class:`Store` =
:class:`SqliteRows` + :class:`FileArraysMixin`, the arrays as files) and ``postgres/`` (``PostgresStore``), which
never import each other. :func:`open_store` and the other functions of ``open.py`` are the one place that chooses a
backend by location; nothing outside this package asks which one a memory has.

Neutral code lives here, above the backends: ``schema.py`` (the schema version, the table list, which nodes a reader
sees), ``rows.py``, ``documents.py``, ``derived.py`` and ``artifacts.py`` (the rows, SQL written once in SQLite's
dialect), ``caches.py`` (the LLM and embedding caches), ``publish.py`` (build generations published atomically),
``files.py`` (build arrays as files), ``arrays.py`` (writing and checking ``.npy`` / ``.npz``), ``vectors.py`` (exact
nearest-neighbour search), ``lock.py`` (the file build lock), ``copy.py`` (copying memories and caches between
locations and backends).
"""

from gemrag.store.base import MemoryStore
from gemrag.store.copy import copy_memory, import_caches
from gemrag.store.derived import BuildState
from gemrag.store.files import FileArraysMixin
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
from gemrag.store.publish import KEEP_COVERS, ArrayEntry, Manifest, Publication, Published
from gemrag.store.sqlite.store import NodeRecord, SqliteRows, Store

__all__ = [
    "KEEP_COVERS",
    "ArrayEntry",
    "BuildLock",
    "BuildState",
    "FileArraysMixin",
    "Location",
    "Manifest",
    "MemoryRoot",
    "MemoryStore",
    "NodeRecord",
    "Publication",
    "Published",
    "SqliteRows",
    "Store",
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
]
