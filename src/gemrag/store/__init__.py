"""Persistence: one memory = one directory holding ``memory.sqlite`` plus generation-named ``.npy`` arrays (SQLite,
the default), or one PostgreSQL schema (``postgresql://...?schema=NAME``).

:class:`MemoryStore` (``base.py``) is the interface both backends implement; :func:`open_store` (``open.py``) opens
either by location. :class:`Store` (``sqlite/``) is the SQLite database,
:class:`~gemrag.store.postgres.store.PostgresStore` (``postgres/``) the PostgreSQL one; ``rows.py`` holds the rows
both share; ``publish.py`` publishes a strategy's build atomically as a
numbered generation; ``lock.py`` is the exclusive build lock; ``caches.py`` holds
the LLM and embedding caches; ``arrays.py`` writes and checks array files (``.npy``, scipy.sparse ``.npz``);
``derived.py`` holds strategies' own nodes, edges, sources and build states; ``artifacts.py`` their per-node
LLM artefacts.
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
