"""The PostgreSQL backend: one memory = one schema of a PostgreSQL database (``postgresql://...?schema=NAME``).

``store.py`` is :class:`~gemrag.store.postgres.store.PostgresStore` (a connection pool, transactions, snapshots);
``connect.py`` parses memory URLs and connects; ``schema.py`` holds the tables and their upgrades; ``dialect.py``
translates the shared SQLite-dialect SQL; ``generations.py`` keeps build arrays as rows; ``vectors.py`` is the
pgvector search; ``lock.py`` the advisory build lock. Nothing here imports :mod:`gemrag.store.sqlite`.
"""
