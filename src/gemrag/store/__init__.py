"""Persistence: one memory = one directory holding ``memory.sqlite`` plus generation-named ``.npy`` arrays.

:class:`Store` (``sqlite.py``) is the database; ``publish.py`` publishes a strategy's build atomically as a
numbered generation; ``lock.py`` is the exclusive build lock; ``migrations.py`` upgrades older memories;
``connection.py`` opens the database (read-write or read-only) and names SQLite's errors; ``caches.py`` holds
the LLM and embedding caches.
"""

from gemrag.store.lock import BuildLock
from gemrag.store.publish import ArrayEntry, Manifest, Published
from gemrag.store.sqlite import NodeRecord, Store

__all__ = ["ArrayEntry", "BuildLock", "Manifest", "NodeRecord", "Published", "Store"]
