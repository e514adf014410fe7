"""The PostgreSQL backend: one memory = one schema of a PostgreSQL database (``postgresql://...?schema=NAME``).

``backend.py`` builds the memory's parts (:func:`~gemrag.store.postgres.backend.pg_parts`); ``store.py`` is the
database part :class:`~gemrag.store.postgres.store.PgDatabase` (a connection pool, transactions, snapshots);
``snapshot.py`` reads a retrieval's rows in batched statements and ``reads.py`` is the rows and caches parts that
answer from them; ``generations.py`` is the build-arrays part (arrays as rows); ``vectors.py`` the vector-search part
(pgvector), ``extension.py`` its set-up; ``connect.py`` parses memory URLs and connects; ``schema.py`` holds the tables
and their upgrades; ``dialect.py`` translates the shared SQLite-dialect SQL; ``lock.py`` is the advisory build lock.
Nothing here imports :mod:`gemrag.store.sqlite`.
"""
