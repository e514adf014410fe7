"""The two store backends in the tests: SQLite (a directory) and PostgreSQL (a schema on a real server).

The PostgreSQL server is the ``pgserver`` wheel's PostgreSQL 16 with pgvector, started once per test session in a
temporary directory (it runs as any user, root included, and needs no network), or the user's own server named by
``GEMRAG_TEST_POSTGRES_URL`` (a ``postgresql://`` URL of a database where the user may create schemas). Without
either, the PostgreSQL half of a parametrized test skips, and FAILS under ``CI=true`` (:mod:`realparts`).

Tests take the ``memory_at`` fixture (``conftest.py``): ``memory_at("m")`` is a memory location, ``tmp_path / "m"``
on SQLite and a fresh schema's URL on PostgreSQL (dropped after the test), so one test body runs on both.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from realparts import require_real

BACKENDS = ("sqlite", "postgres")
ENV_URL = "GEMRAG_TEST_POSTGRES_URL"

MemoryAt = Callable[..., "str | Path"]
"""``memory_at(name="m")``: a memory location of the test's backend."""

_counter = itertools.count(1)


def start_server() -> Iterator[str]:
    """Yield the URL of a PostgreSQL server (the user's, or pgserver's started in a new temporary directory, removed
    after), stopped after.

    The data directory is a fresh ``/tmp/gemrag-pg-*`` rather than under pytest's base temporary directory: run as
    root, pgserver runs PostgreSQL as an unprivileged user, which cannot enter pytest's private (0700) directories.
    Under ``CI=true`` a missing ``pgserver`` fails the calling test (else it skips).
    """
    url = os.environ.get(ENV_URL)
    if url:
        yield url
        return
    try:
        import pgserver
    except ImportError:
        require_real(f"PostgreSQL: pgserver is not installed (pip install -e '.[test]') and {ENV_URL} is not set")
        return
    directory = Path(tempfile.mkdtemp(prefix="gemrag-pg-"))
    server = pgserver.get_server(directory, cleanup_mode="stop")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()
        shutil.rmtree(directory, ignore_errors=True)


def schema_url(base: str, schema: str) -> str:
    """``base`` with ``schema=`` set (replacing one it had)."""
    base = re.sub(r"([?&])schema=[^&]*&?", r"\1", base).rstrip("?&")
    return f"{base}{'&' if '?' in base else '?'}schema={schema}"


def new_schema(name: str) -> str:
    """A schema name no other test of this session uses."""
    clean = re.sub(r"[^a-z0-9_]", "_", name.lower())[:30]
    return f"t{os.getpid()}_{next(_counter)}_{clean}"


def drop_schemas(base: str, schemas: list[str]) -> None:
    """Drop the test's schemas (their tables and rows) from the server."""
    if not schemas:
        return
    import psycopg

    from gemrag.store.postgres.connect import PgLocation

    with psycopg.connect(PgLocation.parse(base).conninfo, autocommit=True) as conn:
        for schema in schemas:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def overwrite_array(store: object, strategy: str, generation: int, name: str, array: object) -> None:
    """Replace a published array's stored bytes behind the store's back (a damaged memory): the file of a SQLite
    memory, the ``build_arrays`` row of a PostgreSQL one. The manifest keeps the old entry."""
    import numpy as np
    import scipy.sparse as sp

    from gemrag.store.postgres.generations import array_bytes

    manifest = store.manifest(strategy)  # type: ignore[attr-defined]
    assert manifest is not None and manifest.generation == generation
    entry = manifest.arrays[name]
    if hasattr(store.database, "directory"):
        path = store.database.directory / entry.file  # type: ignore[attr-defined]
        if sp.issparse(array):
            sp.save_npz(path, sp.csr_matrix(array), compressed=False)
        else:
            np.save(path, np.asarray(array), allow_pickle=False)
        return
    data, _ = array_bytes(name, array, None)  # type: ignore[arg-type]
    with store.transaction() as c:  # type: ignore[attr-defined]
        c.execute(
            "DELETE FROM build_arrays WHERE strategy = ? AND generation = ? AND name = ?", (strategy, generation, name)
        )
        c.execute(
            "INSERT INTO build_arrays(strategy, generation, name, part, data) VALUES (?,?,?,0,?)",
            (strategy, generation, name, data),
        )


def leftovers(store: object) -> list[object]:
    """What a killed or finished build left that no published build names: files of a SQLite memory, stored
    arrays of a PostgreSQL one."""
    if hasattr(store.parts.arrays, "stale_arrays"):
        return list(store.parts.arrays.stale_arrays())  # type: ignore[attr-defined]
    return list(store.stale_files())  # type: ignore[attr-defined]


def remove_array(store: object, strategy: str, name: str) -> None:
    """Delete a published array behind the store's back (its file, or its ``build_arrays`` rows)."""
    manifest = store.manifest(strategy)  # type: ignore[attr-defined]
    assert manifest is not None
    if hasattr(store.database, "directory"):
        (store.database.directory / manifest.arrays[name].file).unlink()  # type: ignore[attr-defined]
        return
    with store.transaction() as c:  # type: ignore[attr-defined]
        c.execute("DELETE FROM build_arrays WHERE strategy = ? AND name = ?", (strategy, name))
