"""The PostgreSQL backend: one memory = one schema of a PostgreSQL database (``postgresql://...?schema=NAME``).

``store.py`` is the database part :class:`~gemrag.store.postgres.store.PgDatabase` (a connection pool, transactions,
snapshots) and :func:`~gemrag.store.postgres.store.pg_parts`, which builds the memory's parts; ``reads.py`` answers a
retrieval's reads from batched statements (its rows and caches parts);
``connect.py`` parses memory URLs and connects; ``schema.py`` holds the tables and their upgrades; ``dialect.py``
translates the shared SQLite-dialect SQL; ``generations.py`` keeps build arrays as rows; ``vectors.py`` is the
pgvector search; ``lock.py`` the advisory build lock. Nothing here imports :mod:`gemrag.store.sqlite`.
"""
