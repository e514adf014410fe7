"""Persistence: one memory = one directory holding ``memory.sqlite`` plus generation-named ``.npy`` arrays.

:class:`Store` (``sqlite.py``) is the database; ``publish.py`` publishes a strategy's build atomically as a
numbered generation; ``lock.py`` is the exclusive build lock; ``migrations.py`` upgrades older memories;
``connection.py`` opens the database (read-write or read-only) and names SQLite's errors; ``caches.py`` holds
the LLM and embedding caches; ``arrays.py`` writes and checks array files (``.npy``, scipy.sparse ``.npz``);
``derived.py`` holds strategies' own nodes, edges, sources and build states; ``artifacts.py`` their per-node
LLM artefacts.
"""

from gemrag.store.connection import memory_writable
from gemrag.store.derived import BuildState
from gemrag.store.lock import BuildLock
from gemrag.store.publish import KEEP_COVERS, ArrayEntry, Manifest, Publication, Published
from gemrag.store.sqlite import NodeRecord, Store

__all__ = [
    "KEEP_COVERS",
    "ArrayEntry",
    "BuildLock",
    "BuildState",
    "Manifest",
    "NodeRecord",
    "Publication",
    "Published",
    "Store",
    "memory_writable",
]
