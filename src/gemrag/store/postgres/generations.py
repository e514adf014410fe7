"""Build generations of a PostgreSQL memory: a build's arrays are rows of ``build_arrays``, published by the
transaction that switches the manifest.

The protocol is that of :mod:`gemrag.store.publish`, with database rows where the SQLite memory has files:

1. ``begin_build`` removes the rows an unpublished build left (arrays and nodes) and returns generation g;
2. :meth:`PgArrays.write_array` stores an array's ``.npy`` bytes (a sparse matrix: ``.npz``) in
   ``build_arrays`` under (strategy, g, name), committed at once but named by no manifest yet, so readers cannot
   see it; an artefact directory (bm25s' index) is built in a local scratch directory
   (:meth:`~PgArrays.artifact_path`) and stored packed as a tar by
   :meth:`~PgArrays.sync_path`;
3. :meth:`~PgArrays.publish_many` commits in ONE transaction the manifest, the nodes, edges and chunk
   coverage (:func:`gemrag.store.publish_rows.publish_rows`) and the deletion of the strategy's other generations'
   arrays. A reader on another connection or machine sees the old manifest with the old arrays or the new one with
   the new arrays: readers load inside a ``REPEATABLE READ`` snapshot, so a publish that commits meanwhile never
   pulls rows from under them (no :class:`~gemrag.errors.StaleGenerationError` on this backend).

Loaded arrays are checked against the manifest (byte size, shape, dtype, nnz; named axes agree) and returned
read-only; artefact directories are unpacked into the store's scratch directory once per generation.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import tarfile
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from gemrag.errors import DamagedMemoryError
from gemrag.store import publish
from gemrag.store.arrays import ArrayEntry, Matrix, check_axes
from gemrag.store.parts import StoreParts
from gemrag.store.postgres.connect import require_psycopg
from gemrag.store.postgres.schema import ARRAY_PART_BYTES
from gemrag.store.publish import Generations, _check_name, _step
from gemrag.store.publish_rows import publish_rows, withdraw_rows
from gemrag.store.publish_types import Publication, Published

if TYPE_CHECKING:
    from gemrag.store.postgres.store import PgDatabase
    from gemrag.store.postgres.vectors import PgVectorSearch

PATH_PREFIX = "path/"
"""``build_arrays.name`` prefix of a packed artefact directory (array names cannot contain ``/``)."""

_SCRATCH_NAME = re.compile(r"^(?P<strategy>[A-Za-z0-9_-]+)\.g(?P<generation>\d+)\.(?P<name>[A-Za-z0-9_-]+)$")


def array_bytes(name: str, array: Matrix, axes: Sequence[str] | None) -> tuple[bytes, ArrayEntry]:
    """An array's stored bytes (``np.save``, or ``scipy.sparse.save_npz`` of its CSR form, uncompressed) and its
    manifest entry (``file`` is the name the SQLite memory would give it).

    Raises:
        ValueError: an object dtype, or ``axes`` does not match the dimensions.
    """
    buf = io.BytesIO()
    if sp.issparse(array):
        csr = sp.csr_matrix(array)
        csr.sort_indices()
        if axes is not None and len(axes) != 2:
            raise ValueError(f"sparse matrix {name!r} has 2 dimensions but {len(axes)} axis names")
        sp.save_npz(buf, csr, compressed=False)
        shape, dtype, nnz, sparse, ext = tuple(int(x) for x in csr.shape), csr.dtype.str, int(csr.nnz), True, "npz"
    else:
        dense = np.asarray(array)
        if dense.dtype == object:
            raise ValueError(f"array {name!r} has an object dtype")
        if axes is not None and len(axes) != dense.ndim:
            raise ValueError(f"array {name!r} has {dense.ndim} dimensions but {len(axes)} axis names")
        np.save(buf, dense, allow_pickle=False)
        shape, dtype, nnz, sparse, ext = tuple(dense.shape), dense.dtype.str, None, False, "npy"
    data = buf.getvalue()
    entry = ArrayEntry(
        name, f"{name}.{ext}", shape, dtype, len(data), None if axes is None else tuple(axes), sparse, nnz
    )
    return data, entry


def load_array_bytes(data: bytes, entry: ArrayEntry) -> Matrix:
    """An array from its stored bytes, checked against its manifest entry (read-only when dense).

    Raises:
        ValueError: unreadable bytes, or they do not match ``entry`` (size, shape, dtype, nnz).
    """
    try:
        if entry.sparse:
            csr = sp.csr_matrix(sp.load_npz(io.BytesIO(data)))
            array: Matrix = csr
            nnz: int | None = int(csr.nnz)
        else:
            array = np.load(io.BytesIO(data), allow_pickle=False)
            array.flags.writeable = False
            nnz = None
    except (OSError, ValueError, KeyError, EOFError) as exc:
        raise ValueError(f"{entry.name}: {exc}") from exc
    size = len(data)
    if size != entry.size or tuple(array.shape) != entry.shape or array.dtype.str != entry.dtype or nnz != entry.nnz:
        found = f"{size} bytes, shape {tuple(array.shape)}, dtype {array.dtype.str}"
        raise ValueError(f"{entry.name} has {found}, not {entry.size} bytes, shape {entry.shape}, dtype {entry.dtype}")
    return array


class PgArrays(Generations):
    """The build-arrays part of a PostgreSQL memory: build generations with arrays in ``build_arrays`` (module
    docstring).

    Args:
        parts: the store's parts (see :class:`~gemrag.store.sql_part.SqlPart`).
        db: the memory's database part (its connections, snapshot state and scratch directory).
        tables: the memory's vector tables (:class:`~gemrag.store.postgres.vectors.PgVectorSearch`), dropped with the
            generations they index.
    """

    def __init__(self, parts: StoreParts, db: PgDatabase, tables: PgVectorSearch) -> None:
        super().__init__(parts)
        self._pg, self._tables = db, tables
        self._unpack_lock = threading.Lock()

    def published_generation(self, strategy: str) -> int | None:
        # Inside a snapshot: from its state row (store/postgres/reads.py).
        rows = self._pg._read_state()
        if rows is None or rows.generations is None:
            return super().published_generation(strategy)
        return rows.generations.get(strategy)

    # -- writing ----------------------------------------------------------------------------------
    def _store_bytes(self, strategy: str, generation: int, name: str, data: bytes) -> None:
        parts = [data[i : i + ARRAY_PART_BYTES] for i in range(0, max(len(data), 1), ARRAY_PART_BYTES)]
        with self._db.transaction() as c:
            c.execute(
                "DELETE FROM build_arrays WHERE strategy = ? AND generation = ? AND name = ?",
                (strategy, generation, name),
            )
            for i, part in enumerate(parts):
                c.execute(
                    "INSERT INTO build_arrays(strategy, generation, name, part, data) VALUES (?,?,?,?,?)",
                    (strategy, generation, name, i, part),
                )

    def write_array(
        self, strategy: str, generation: int, name: str, array: Matrix, axes: Sequence[str] | None = None
    ) -> ArrayEntry:
        # Stored in build_arrays: committed, invisible until published.
        _check_name("strategy", strategy)
        _check_name("array", name)
        data, entry = array_bytes(name, array, axes)
        _step(f"write:{name}")
        self._store_bytes(strategy, generation, name, data)
        _step(f"written:{name}")
        return entry

    def artifact_path(self, strategy: str, generation: int, name: str) -> Path:
        # A local scratch path: sync_path stores what the builder made there in the database.
        _check_name("strategy", strategy)
        _check_name("artefact", name)
        build = self._pg.scratch / "build"
        build.mkdir(parents=True, exist_ok=True)
        path = build / f"{strategy}.g{generation}.{name}"
        publish.remove_path(path)
        return path

    def sync_path(self, path: Path) -> None:
        """Store an artefact made under :meth:`artifact_path` (a file or directory, packed as a tar) in the
        database.

        Raises:
            ValueError: ``path`` is not an artefact path of this store.
        """
        m = _SCRATCH_NAME.match(path.name)
        if m is None or path.parent != self._pg.scratch / "build":
            raise ValueError(f"{path} is not an artefact path of this memory (see artifact_path)")
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            tar.add(path, arcname=m["name"])
        self._store_bytes(m["strategy"], int(m["generation"]), PATH_PREFIX + m["name"], buf.getvalue())

    def publish_many(
        self,
        publications: Sequence[Publication],
        *,
        before: Callable[[Any], None] | None = None,
        withdraw: Sequence[str] = (),
    ) -> None:
        for p in publications:
            check_axes(p.arrays)
            stored = self._stored_names(p.strategy, p.generation)
            for e in p.arrays:
                if e.name not in stored:
                    raise ValueError(f"array {e.name!r} of {p.strategy} generation {p.generation} is missing")
            for name in p.paths:
                if PATH_PREFIX + name not in stored:
                    raise ValueError(f"artefact {name!r} of {p.strategy} generation {p.generation} is missing")
        with self._db.transaction() as c:
            if before is not None:
                before(c)
            for strategy in withdraw:
                withdraw_rows(c, strategy)
                c.execute("DELETE FROM build_arrays WHERE strategy = ?", (strategy,))
                self._tables.drop_vectors(c, "strategy = ?", (strategy,))
            for p in publications:
                publish_rows(c, p)
                c.execute("DELETE FROM build_arrays WHERE strategy = ? AND generation != ?", (p.strategy, p.generation))
                self._tables.drop_vectors(c, "strategy = ? AND generation != ?", (p.strategy, p.generation))
            _step("publish:before_commit")
        _step("publish:committed")
        for p in publications:
            for name in p.paths:
                publish.remove_path(self._pg.scratch / "build" / f"{p.strategy}.g{p.generation}.{name}")
        _step("publish:cleaned")
        self._refresh_statistics()

    def _refresh_statistics(self) -> None:
        """``VACUUM (ANALYZE)`` of the tables a retrieval reads (best effort, skipped inside a transaction): a
        build's rows get planner statistics and all-visible pages at once, not when autovacuum comes by, so the
        retrieval's state row counts chunks by an index-only scan and its rows read by index (at 10k chunks 0.8
        and 0.35 ms, against 2.0 and 2.2 ms before; the vacuum took 44 ms)."""
        psycopg = require_psycopg()
        if self._pg._state().depth or self._pg._state().snapshot:
            return
        with contextlib.suppress(psycopg.Error), self._pg._connection() as conn:
            conn.execute("VACUUM (ANALYZE) nodes, documents, node_sources, questions")

    def withdraw(self, strategy: str) -> None:
        with self._db.transaction() as c:
            withdraw_rows(c, strategy)
            c.execute("DELETE FROM build_arrays WHERE strategy = ?", (strategy,))
            self._tables.drop_vectors(c, "strategy = ?", (strategy,))

    def _stored_names(self, strategy: str, generation: int) -> set[str]:
        rows = self._query(
            "SELECT DISTINCT name FROM build_arrays WHERE strategy = ? AND generation = ?", (strategy, generation)
        )
        return {str(r[0]) for r in rows}

    # -- reading ----------------------------------------------------------------------------------
    def load_published(self, strategy: str, *, mmap: bool = True) -> Published | None:
        # ``mmap`` is ignored: the arrays come from the database, read-only.
        with self._db.snapshot():
            m = self.manifest(strategy)
            if m is None:
                return None
            rows = self._pg._fetch_binary(
                "SELECT name, data FROM build_arrays WHERE strategy = ? AND generation = ? ORDER BY name, part",
                (strategy, m.generation),
            )
        blobs: dict[str, list[bytes]] = {}
        for name, data in rows:
            blobs.setdefault(str(name), []).append(bytes(data))

        def array(e: ArrayEntry) -> Matrix:
            if e.name not in blobs:
                raise DamagedMemoryError(self._damaged(strategy, m.generation, f"array {e.name} is missing"))
            return load_array_bytes(b"".join(blobs[e.name]), e)

        def path(name: str) -> Path:
            packed = blobs.get(PATH_PREFIX + name)
            if packed is None:
                raise DamagedMemoryError(self._damaged(strategy, m.generation, f"artefact {name} is missing"))
            return self._unpack(strategy, m.generation, name, b"".join(packed))

        return self._read_published(m, array, path)

    def _unpack(self, strategy: str, generation: int, name: str, data: bytes) -> Path:
        """The artefact unpacked under the scratch directory (once per generation)."""
        target = self._pg.scratch / "published" / f"{strategy}.g{generation}.{name}"
        with self._unpack_lock:
            if target.exists():
                return target
            tmp = target.parent / f".{target.name}.{os.getpid()}.tmp"
            publish.remove_path(tmp)
            tmp.mkdir(parents=True)
            with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
                if hasattr(tarfile, "data_filter"):
                    tar.extractall(tmp, filter="data")
                else:  # Python < 3.10.12: members are checked by hand
                    for member in tar.getmembers():
                        if member.name.startswith(("/", "..")) or ".." in Path(member.name).parts:
                            raise DamagedMemoryError(f"artefact {name} of {strategy} has an unsafe member")
                    tar.extractall(tmp)
            os.replace(tmp / name, target)
            shutil.rmtree(tmp, ignore_errors=True)
        return target

    # -- cleaning ---------------------------------------------------------------------------------
    def stale_files(self, strategy: str | None = None) -> Iterator[Path]:
        """Nothing: a PostgreSQL memory keeps no files (see :meth:`stale_arrays`)."""
        return iter(())

    def stale_arrays(self, strategy: str | None = None) -> list[tuple[str, int, str]]:
        """``(strategy, generation, name)`` of stored arrays no published build names (of one strategy, or all)."""
        sql = (
            "SELECT DISTINCT a.strategy, a.generation, a.name FROM build_arrays a WHERE NOT EXISTS"
            " (SELECT 1 FROM builds b WHERE b.strategy = a.strategy AND b.generation = a.generation)"
        )
        args: tuple[Any, ...] = ()
        if strategy is not None:
            sql, args = sql + " AND a.strategy = ?", (strategy,)
        return [(str(s), int(g), str(n)) for s, g, n in self._query(sql + " ORDER BY 1, 2, 3", args)]

    def remove_stale_files(self, strategy: str | None = None) -> int:
        # The stored arrays no published build names, and this process's leftover scratch artefacts.
        if self._db.readonly:
            return 0
        stale = self.stale_arrays(strategy)
        with self._db.transaction() as c:
            self._tables.drop_vectors(
                c,
                "NOT EXISTS (SELECT 1 FROM builds b WHERE b.strategy = build_vectors.strategy AND b.generation ="
                " build_vectors.generation)" + (" AND strategy = ?" if strategy is not None else ""),
                (strategy,) if strategy is not None else (),
            )
            if stale:
                c.execute(
                    "DELETE FROM build_arrays a WHERE NOT EXISTS (SELECT 1 FROM builds b WHERE b.strategy = a.strategy"
                    " AND b.generation = a.generation)" + (" AND a.strategy = ?" if strategy is not None else ""),
                    (strategy,) if strategy is not None else (),
                )
        build = self._pg.scratch / "build" if self._pg.has_scratch else None
        if build is not None and build.exists():
            for entry in build.iterdir():
                m = _SCRATCH_NAME.match(entry.name)
                if m and (strategy is None or m["strategy"] == strategy):
                    publish.remove_path(entry)
        return len(stale)
