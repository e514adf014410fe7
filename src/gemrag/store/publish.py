"""Build generations: a strategy's build is published atomically, and readers see the old build or the new one.

Protocol (by a builder, normally holding the memory's :class:`~gemrag.store.lock.BuildLock`):

1. ``g = store.begin_build(strategy)``: the published generation + 1 (1 for a first build); rows and files left
   by an earlier unpublished build of the strategy are removed first.
2. The builder inserts the nodes it derives, marked ``(strategy, g)`` (:meth:`Store.add_summary_node`): readers
   do not see them (:data:`gemrag.store.schema.VISIBLE_NODE`). It writes each array with :meth:`write_array`
   as ``<strategy>.g<g>.<name>.npy`` (temporary file, fsync, rename, fsync of the directory), and any other
   artefact under :meth:`artifact_path` (then :meth:`sync_path`).
3. :meth:`publish` commits, in ONE transaction, the manifest (the generation, every array's file, shape,
   dtype, byte size and axis names, named paths, metadata), the deletion of the strategy's nodes of older
   generations (their questions go by cascade) and the replacement of its edges. Only then are files of other
   generations of the strategy and stale ``*.tmp`` files removed.

A kill anywhere before the commit leaves the previous manifest and everything it names; a kill after it leaves
the new one (leftover files are removed by the next builder). Readers call :meth:`load_published`, which opens
only the files the committed manifest names and checks them against it (file size, shape, dtype, and that
arrays sharing an axis name agree on its length, e.g. node ids and the rows of the weight matrix).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gemrag.errors import DamagedMemoryError, GemragError, StaleGenerationError

NAME = re.compile(r"^[A-Za-z0-9_-]+$")
GENERATION_FILE = re.compile(r"^(?P<strategy>[A-Za-z0-9_-]+)\.g(?P<generation>\d+)\.(?P<name>[A-Za-z0-9_.-]+)$")
LEGACY_FILES = frozenset(
    [f"gem_{n}.npy" for n in ("node_ids", "node_vectors", "question_vectors", "question_owner", "question_ids")]
    + ["gem_weights.npy", "dense_node_ids.npy", "dense_vectors.npy", "raptor_vectors.npy", "bm25"]
)
"""Unversioned artefacts of schema 1 (see :mod:`gemrag.store.migrations`); removed by the first builder."""

crash_hook: Callable[[str], None] | None = None
"""Tests only: called with the name of each step of writing and publishing (``write:<name>``,
``written:<name>``, ``publish:before_commit``, ``publish:committed``, ``publish:cleaned``), to simulate a kill
there (raise, or ``os._exit``)."""


def _step(name: str) -> None:
    if crash_hook is not None:
        crash_hook(name)


@dataclass(frozen=True)
class ArrayEntry:
    """One array of a build as recorded in its manifest.

    Attributes:
        name: the array's name within the build (e.g. ``"weights"``).
        file: the file name in the memory directory (``<strategy>.g<generation>.<name>.npy``).
        shape: the array's shape. dtype: numpy dtype string (e.g. ``"<f4"``). size: the file's bytes.
        axes: optional axis names, one per dimension; arrays of one build sharing a name must agree on it.
    """

    name: str
    file: str
    shape: tuple[int, ...]
    dtype: str
    size: int
    axes: tuple[str, ...] | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-serializable form."""
        return {
            "name": self.name,
            "file": self.file,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "size": self.size,
            "axes": None if self.axes is None else list(self.axes),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ArrayEntry:
        """Inverse of :meth:`as_dict`."""
        axes = d.get("axes")
        return cls(
            d["name"], d["file"], tuple(d["shape"]), d["dtype"], int(d["size"]), None if axes is None else tuple(axes)
        )


@dataclass(frozen=True)
class Published:
    """A strategy's published build, as read by :meth:`GenerationsMixin.load_published`.

    Attributes:
        strategy: the strategy's name. generation: its build generation (int >= 1).
        arrays: name -> array (memory-mapped read-only when loaded with ``mmap=True``).
        paths: name -> path of each other published artefact (a file or directory).
        meta: the build's JSON metadata. published_at: UNIX time of the publishing commit.
    """

    strategy: str
    generation: int
    arrays: dict[str, np.ndarray]
    paths: dict[str, Path] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    published_at: float = 0.0


@dataclass(frozen=True)
class Manifest:
    """A strategy's committed manifest (:meth:`GenerationsMixin.manifest`): what :class:`Published` holds, with
    :class:`ArrayEntry` records instead of arrays and path names instead of paths."""

    strategy: str
    generation: int
    arrays: dict[str, ArrayEntry]
    paths: tuple[str, ...]
    meta: dict[str, Any]
    published_at: float


def check_axes(entries: Sequence[ArrayEntry]) -> dict[str, int]:
    """The length of every named axis.

    Raises:
        ValueError: an entry has a wrong number of axis names, or two arrays disagree on an axis.
    """
    sizes: dict[str, int] = {}
    for e in entries:
        if e.axes is None:
            continue
        if len(e.axes) != len(e.shape):
            raise ValueError(f"array {e.name!r} has shape {e.shape} but axes {e.axes}")
        for axis, n in zip(e.axes, e.shape, strict=True):
            if sizes.setdefault(axis, n) != n:
                raise ValueError(
                    f"axis {axis!r}: array {e.name!r} has {n}, another array of the build has {sizes[axis]}"
                )
    return sizes


def _check_name(kind: str, name: str) -> None:
    if not NAME.match(name):
        raise ValueError(f"{kind} name {name!r} must match {NAME.pattern}")


def fsync_directory(directory: Path) -> None:
    """fsync a directory so that renames and unlinks in it are durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def remove_path(path: Path) -> None:
    """Delete a file, symlink or directory tree; missing is fine."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


class GenerationsMixin:
    """Build generations on :class:`gemrag.store.Store` (needs its connection, transactions and directory)."""

    directory: Path
    readonly: bool
    conn: sqlite3.Connection
    _lock: threading.RLock

    def transaction(self) -> AbstractContextManager[sqlite3.Connection]: ...  # provided by Store
    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[sqlite3.Row]: ...  # provided by Store

    @property
    def in_snapshot(self) -> bool:  # provided by Store
        return False

    # -- reading ----------------------------------------------------------------------------------
    def published_generation(self, strategy: str) -> int | None:
        """The strategy's published generation, or None when it was never built."""
        rows = self._query("SELECT generation FROM builds WHERE strategy = ?", (strategy,))
        return int(rows[0][0]) if rows else None

    def published_generations(self) -> dict[str, int]:
        """Every strategy's published generation."""
        return {str(s): int(g) for s, g in self._query("SELECT strategy, generation FROM builds")}

    def manifest(self, strategy: str) -> Manifest | None:
        """The strategy's committed manifest (cheap: no file is opened), or None when it was never built."""
        rows = self._query(
            "SELECT generation, arrays, paths, meta, published_at FROM builds WHERE strategy = ?", (strategy,)
        )
        if not rows:
            return None
        generation, arrays_json, paths_json, meta_json, published_at = rows[0]
        entries = {d["name"]: ArrayEntry.from_dict(d) for d in json.loads(arrays_json)}
        paths = tuple(json.loads(paths_json))
        return Manifest(strategy, int(generation), entries, paths, json.loads(meta_json), float(published_at))

    def load_published(self, strategy: str, *, mmap: bool = True) -> Published | None:
        """The strategy's published build, checked against its manifest; None when it was never built.

        Args:
            strategy: the strategy's name.
            mmap: memory-map the arrays read-only (else read them into memory).

        Raises:
            StaleGenerationError: a file of the generation is gone because a newer generation was published
                meanwhile (inside :meth:`snapshot` this is assumed; the caller should retry outside it).
            DamagedMemoryError: a file is missing or does not match the manifest, and no newer generation exists.
        """
        m = self.manifest(strategy)
        if m is None:
            return None
        arrays: dict[str, np.ndarray] = {}
        for e in m.arrays.values():
            path = self.directory / e.file
            try:
                size = path.stat().st_size
                array = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
            except FileNotFoundError:
                raise self._missing(strategy, m.generation, e.file) from None
            except (OSError, ValueError) as exc:
                raise DamagedMemoryError(self._damaged(strategy, m.generation, f"{e.file}: {exc}")) from exc
            if size != e.size or tuple(array.shape) != e.shape or array.dtype.str != e.dtype:
                found = f"{size} bytes, shape {tuple(array.shape)}, dtype {array.dtype.str}"
                expected = f"{e.size} bytes, shape {e.shape}, dtype {e.dtype}"
                raise DamagedMemoryError(self._damaged(strategy, m.generation, f"{e.file} has {found}, not {expected}"))
            arrays[e.name] = array
        try:
            check_axes(list(m.arrays.values()))
        except ValueError as exc:
            raise DamagedMemoryError(self._damaged(strategy, m.generation, str(exc))) from exc
        paths = {}
        for name in m.paths:
            path = self.directory / f"{strategy}.g{m.generation}.{name}"
            if not path.exists():
                raise self._missing(strategy, m.generation, path.name)
            paths[name] = path
        return Published(strategy, m.generation, arrays, paths, m.meta, m.published_at)

    def _missing(self, strategy: str, generation: int, file: str) -> GemragError:
        if not self.in_snapshot and self.published_generation(strategy) == generation:
            return DamagedMemoryError(self._damaged(strategy, generation, f"{file} is missing"))
        return StaleGenerationError(
            f"generation {generation} of {strategy!r} was replaced while it was read", strategy, generation
        )

    def _damaged(self, strategy: str, generation: int, detail: str) -> str:
        return (
            f"the memory {self.directory} is damaged: generation {generation} of {strategy!r}: {detail}; "
            f"run `gemrag index` again (strategy {strategy}) to rebuild it"
        )

    # -- building ---------------------------------------------------------------------------------
    def begin_build(self, strategy: str) -> int:
        """Start a build: remove what an unpublished earlier build left, return the new generation.

        Returns:
            The generation to build: the published one + 1 (1 when never published).

        Raises:
            ValueError: the strategy name is not ``[A-Za-z0-9_-]+``.
            ReadOnlyMemoryError: the store is read-only.
        """
        _check_name("strategy", strategy)
        with self.transaction() as c:
            row = c.execute("SELECT generation FROM builds WHERE strategy = ?", (strategy,)).fetchone()
            current = int(row[0]) if row else 0
            c.execute(
                "DELETE FROM nodes WHERE strategy = ? AND generation IS NOT NULL AND generation != ?",
                (strategy, current),
            )
        self.remove_stale_files(strategy)
        return current + 1

    def write_array(
        self, strategy: str, generation: int, name: str, array: np.ndarray, axes: Sequence[str] | None = None
    ) -> ArrayEntry:
        """Write one array of a build durably as ``<strategy>.g<generation>.<name>.npy``.

        Args:
            strategy, generation: the build (from :meth:`begin_build`).
            name: the array's name (``[A-Za-z0-9_-]+``).
            array: any numpy array (no object dtype).
            axes: optional axis names, one per dimension (see :func:`check_axes`).

        Returns:
            The manifest entry to pass to :meth:`publish`.

        Raises:
            ValueError: a bad name, or ``axes`` does not match ``array.ndim``.
        """
        _check_name("strategy", strategy)
        _check_name("array", name)
        array = np.asarray(array)
        if axes is not None and len(axes) != array.ndim:
            raise ValueError(f"array {name!r} has {array.ndim} dimensions but {len(axes)} axis names")
        final = self.directory / f"{strategy}.g{generation}.{name}.npy"
        tmp = self.directory / f".{final.name}.{os.getpid()}.tmp"
        try:
            with open(tmp, "wb") as fh:
                np.save(fh, array, allow_pickle=False)
                fh.flush()
                os.fsync(fh.fileno())
            _step(f"write:{name}")
            os.replace(tmp, final)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        fsync_directory(self.directory)
        _step(f"written:{name}")
        return ArrayEntry(
            name,
            final.name,
            tuple(array.shape),
            array.dtype.str,
            final.stat().st_size,
            None if axes is None else tuple(axes),
        )

    def artifact_path(self, strategy: str, generation: int, name: str) -> Path:
        """Where a build keeps an artefact that is not an array (a file or a directory the builder creates);
        publish it with ``paths=[name]`` after :meth:`sync_path`."""
        _check_name("strategy", strategy)
        _check_name("artefact", name)
        return self.directory / f"{strategy}.g{generation}.{name}"

    def sync_path(self, path: Path) -> None:
        """fsync a file, or every file and directory under a directory, and the memory directory."""
        targets = [path] if path.is_file() else [*sorted(p for p in path.rglob("*")), path]
        for p in targets:
            fd = os.open(p, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_directory(self.directory)

    def publish(
        self,
        strategy: str,
        generation: int,
        arrays: Sequence[ArrayEntry],
        *,
        meta: dict[str, Any] | None = None,
        paths: Sequence[str] = (),
        edges: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    ) -> None:
        """Publish a build in one transaction, then remove the strategy's older files.

        Args:
            strategy, generation: the build (from :meth:`begin_build`).
            arrays: entries from :meth:`write_array`.
            meta: JSON-serializable build metadata returned by :meth:`load_published`.
            paths: names of other artefacts under :meth:`artifact_path`.
            edges: optional ``(src, dst, weight)`` node ids and float weights replacing the strategy's edges.

        Raises:
            ValueError: arrays disagree on a named axis, or a file or path is missing.
            GemragError: a generation as new or newer was published meanwhile (two builders without the lock).
        """
        check_axes(arrays)
        for e in arrays:
            if not (self.directory / e.file).is_file():
                raise ValueError(f"array file {e.file} is missing")
        for name in paths:
            if not self.artifact_path(strategy, generation, name).exists():
                raise ValueError(f"artefact {name!r} of {strategy} generation {generation} is missing")
        with self._lock:
            self.conn.execute("PRAGMA synchronous=FULL")  # the manifest commit is durable before old files go
            try:
                with self.transaction() as c:
                    row = c.execute("SELECT generation FROM builds WHERE strategy = ?", (strategy,)).fetchone()
                    if row and int(row[0]) >= generation:
                        raise GemragError(
                            f"generation {row[0]} of {strategy!r} was published while generation {generation} was built"
                        )
                    c.execute(
                        "INSERT OR REPLACE INTO builds(strategy, generation, published_at, arrays, paths, meta)"
                        " VALUES (?,?,?,?,?,?)",
                        (
                            strategy,
                            generation,
                            time.time(),
                            json.dumps([e.as_dict() for e in arrays]),
                            json.dumps(list(paths)),
                            json.dumps(meta or {}),
                        ),
                    )
                    c.execute(
                        "DELETE FROM nodes WHERE strategy = ? AND generation IS NOT NULL AND generation != ?",
                        (strategy, generation),
                    )
                    if edges is not None:
                        src, dst, weight = edges
                        c.execute("DELETE FROM edges WHERE strategy = ?", (strategy,))
                        c.executemany(
                            "INSERT INTO edges(strategy, src, dst, weight) VALUES (?,?,?,?)",
                            (
                                (strategy, a, b, w)
                                for a, b, w in zip(src.tolist(), dst.tolist(), weight.tolist(), strict=True)
                            ),
                        )
                    _step("publish:before_commit")
            finally:
                self.conn.execute("PRAGMA synchronous=NORMAL")
        _step("publish:committed")
        self.remove_stale_files(strategy)
        _step("publish:cleaned")

    # -- cleaning ---------------------------------------------------------------------------------
    def stale_files(self, strategy: str | None = None) -> Iterator[Path]:
        """Files no published build names: other generations (of ``strategy``, or of every strategy when None),
        ``*.tmp`` files, and (when ``strategy`` is None) schema-1 leftovers."""
        published = self.published_generations()
        for entry in os.scandir(self.directory):
            name = entry.name
            match = GENERATION_FILE.match(name)
            if name.endswith(".tmp") and name.startswith("."):
                yield Path(entry.path)
            elif match:
                s, g = match["strategy"], int(match["generation"])
                if (strategy is None or s == strategy) and published.get(s) != g:
                    yield Path(entry.path)
            elif strategy is None and (name in LEGACY_FILES or name.startswith(".bm25-") or name.endswith(".npy.tmp")):
                yield Path(entry.path)

    def remove_stale_files(self, strategy: str | None = None) -> int:
        """Delete :meth:`stale_files` (a builder's job: call it only while holding the build lock).

        Returns:
            How many entries were removed (0 on a read-only store, which is left untouched).
        """
        if self.readonly:
            return 0
        removed = 0
        for path in list(self.stale_files(strategy)):
            remove_path(path)
            removed += 1
        if removed:
            fsync_directory(self.directory)
        return removed

    def remove_unpublished(self) -> int:
        """Delete nodes of every strategy's unpublished generations (left by killed builds) and stale files.

        Returns:
            The number of node rows deleted.
        """
        with self.transaction() as c:
            deleted = c.execute(
                "DELETE FROM nodes WHERE generation IS NOT NULL AND generation IS NOT"
                " (SELECT b.generation FROM builds b WHERE b.strategy = nodes.strategy)"
            ).rowcount
        self.remove_stale_files()
        return int(deleted)
