"""The SQLite backend: one memory = one directory holding ``memory.sqlite`` (:class:`~gemrag.store.sqlite.store.Store`)
plus its build arrays as files.

``store.py`` is the database part (connection, transactions, snapshots) and :func:`~gemrag.store.sqlite.store.
sqlite_parts`, which builds the memory's parts; ``connection.py`` opens the database and
names SQLite's errors; ``migrations.py`` and ``migrate_v3..5.py`` upgrade older memory directories.
"""
