"""Build generations: a strategy's build is published atomically, and readers see the old build or the new one.

Protocol (by a builder, normally holding the memory's :class:`~gemrag.store.lock.BuildLock`):

1. ``g = store.begin_build(strategy)``: the published generation + 1 (1 for a first build); rows and files left
   by an earlier unpublished build of the strategy are removed first.
2. The builder inserts the nodes it derives, marked ``(strategy, g)`` (:meth:`Store.add_summary_node`): readers
   do not see them (:data:`gemrag.store.schema.VISIBLE_NODE`). It writes each array with :meth:`write_array`
   as ``<strategy>.g<g>.<name>.npy`` (temporary file, fsync, rename, fsync of the directory), and any other
   artefact under :meth:`artifact_path` (then :meth:`sync_path`).
3. :meth:`publish` commits, in ONE transaction, the manifest (the generation, every array's file, shape,
   dtype, byte size and axis names, named paths, metadata, parameters, model ids, and the chunks the build
   covers), the deletion of the strategy's nodes and edges of older generations (their questions, artefacts and
   sources go by cascade) and the new edges. Only then are files of other generations of the strategy and stale
   ``*.tmp`` files removed. :meth:`publish_many` publishes several strategies' generations in one transaction
   together with other row changes (deleting a document does this), and ``carry=True`` keeps the previous
   generation's nodes and edges in the new one (a build that changes only some of them).

A kill anywhere before the commit leaves the previous manifest and everything it names; a kill after it leaves
the new one (leftover files are removed by the next builder). Readers call :meth:`load_published`, which opens
only the files the committed manifest names and checks them against it (file size, shape, dtype, and that
arrays sharing an axis name agree on its length, e.g. node ids and the rows of the weight matrix).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Literal

from gemrag.errors import DamagedMemoryError, GemragError, StaleGenerationError
from gemrag.store.arrays import (
    NAME_PATTERN,
    ArrayEntry,
    Matrix,
    check_axes,
    fsync_directory,
    load_matrix,
    remove_path,
    save_matrix,
)
from gemrag.store.publish_rows import publish_rows, withdraw_rows
from gemrag.store.publish_types import KEEP_COVERS, Edges, Manifest, Publication, Published

__all__ = [
    "KEEP_COVERS",
    "ArrayEntry",
    "GenerationsMixin",
    "Manifest",
    "Publication",
    "Published",
    "check_axes",
    "fsync_directory",
    "remove_path",
]

NAME = re.compile(NAME_PATTERN)
GENERATION_FILE = re.compile(r"^(?P<strategy>[A-Za-z0-9_-]+)\.g(?P<generation>\d+)\.(?P<name>[A-Za-z0-9_.-]+)$")
LEGACY_FILES = frozenset(
    [f"gem_{n}.npy" for n in ("node_ids", "node_vectors", "question_vectors", "question_owner", "question_ids")]
    + ["gem_weights.npy", "dense_node_ids.npy", "dense_vectors.npy", "raptor_vectors.npy", "bm25"]
)
"""Unversioned artefacts of schema 1 (see :mod:`gemrag.store.sqlite.migrations`); removed by the first builder."""

crash_hook: Callable[[str], None] | None = None
"""Tests only: called with the name of each step of writing and publishing (``write:<name>``,
``written:<name>``, ``publish:before_commit``, ``publish:committed``, ``publish:cleaned``), to simulate a kill
there (raise, or ``os._exit``)."""


def _step(name: str) -> None:
    if crash_hook is not None:
        crash_hook(name)


def _check_name(kind: str, name: str) -> None:
    if not NAME.match(name):
        raise ValueError(f"{kind} name {name!r} must match {NAME.pattern}")


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
            "SELECT generation, arrays, paths, meta, published_at, params, models FROM builds WHERE strategy = ?",
            (strategy,),
        )
        if not rows:
            return None
        generation, arrays_json, paths_json, meta_json, published_at, params, models = rows[0]
        entries = {d["name"]: ArrayEntry.from_dict(d) for d in json.loads(arrays_json)}
        paths = tuple(json.loads(paths_json))
        return Manifest(
            strategy,
            int(generation),
            entries,
            paths,
            json.loads(meta_json),
            float(published_at),
            json.loads(params),
            json.loads(models),
        )

    def load_published(self, strategy: str, *, mmap: bool = True) -> Published | None:
        """The strategy's published build, checked against its manifest; None when it was never built.

        Args:
            strategy: the strategy's name.
            mmap: memory-map the dense arrays read-only (else read them into memory; sparse matrices are read).

        Raises:
            StaleGenerationError: a file of the generation is gone because a newer generation was published
                meanwhile (inside :meth:`snapshot` this is assumed; the caller should retry outside it).
            DamagedMemoryError: a file is missing or does not match the manifest, and no newer generation exists.
        """
        m = self.manifest(strategy)
        if m is None:
            return None
        arrays: dict[str, Matrix] = {}
        for e in m.arrays.values():
            try:
                arrays[e.name] = load_matrix(self.directory / e.file, e, mmap=mmap)
            except FileNotFoundError:
                raise self._missing(strategy, m.generation, e.file) from None
            except ValueError as exc:
                raise DamagedMemoryError(self._damaged(strategy, m.generation, str(exc))) from exc
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
        return Published(strategy, m.generation, arrays, paths, m.meta, m.published_at, m.params, m.models)

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
            c.execute("DELETE FROM edges WHERE strategy = ? AND generation != ?", (strategy, current))
        self.remove_stale_files(strategy)
        return current + 1

    def write_array(
        self, strategy: str, generation: int, name: str, array: Matrix, axes: Sequence[str] | None = None
    ) -> ArrayEntry:
        """Write one array of a build durably: a dense array as ``<strategy>.g<generation>.<name>.npy``, a
        scipy.sparse matrix as CSR in ``<strategy>.g<generation>.<name>.npz`` (:func:`scipy.sparse.save_npz`).

        Args:
            strategy, generation: the build (from :meth:`begin_build`).
            name: the array's name (``[A-Za-z0-9_-]+``).
            array: any numpy array (no object dtype) or scipy.sparse matrix (2-D; read back as CSR).
            axes: optional axis names, one per dimension (see :func:`check_axes`).

        Returns:
            The manifest entry to pass to :meth:`publish`.

        Raises:
            ValueError: a bad name, an object dtype, or ``axes`` does not match the array's dimensions.
        """
        _check_name("strategy", strategy)
        _check_name("array", name)
        entry = save_matrix(
            self.directory, f"{strategy}.g{generation}.{name}", name, array, axes, lambda: _step(f"write:{name}")
        )
        _step(f"written:{name}")
        return entry

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
        edges: Edges | Mapping[str, Edges] | None = None,
        covers: Sequence[int] | Literal["keep"] | None = None,
        params: dict[str, Any] | None = None,
        models: dict[str, Any] | None = None,
        carry: bool = False,
        retire: Sequence[int] = (),
    ) -> None:
        """Publish a build in one transaction, then remove the strategy's older files (the arguments are
        those of :class:`Publication`).

        Raises:
            ValueError: arrays disagree on a named axis, or a file or path is missing.
            GemragError: a generation as new or newer was published meanwhile (two builders without the lock).
        """
        self.publish_many(
            [Publication(strategy, generation, arrays, meta, paths, edges, covers, params, models, carry, retire)]
        )

    def publish_many(
        self,
        publications: Sequence[Publication],
        *,
        before: Callable[[sqlite3.Connection], None] | None = None,
        withdraw: Sequence[str] = (),
    ) -> None:
        """Publish several strategies' generations in ONE transaction (``synchronous=FULL``), then remove the
        files no published build names.

        Args:
            publications: the generations to publish.
            before: run first inside the transaction (e.g. deleting a document's rows), so readers see those
                changes and the new generations together.
            withdraw: strategies whose published build is removed in the same transaction (they become
                "never built"; see :meth:`withdraw`).

        Raises:
            ValueError: arrays disagree on a named axis, or a file or path is missing.
            GemragError: a generation as new or newer was published meanwhile (two builders without the lock).
        """
        for p in publications:
            check_axes(p.arrays)
            for e in p.arrays:
                if not (self.directory / e.file).is_file():
                    raise ValueError(f"array file {e.file} is missing")
            for name in p.paths:
                if not self.artifact_path(p.strategy, p.generation, name).exists():
                    raise ValueError(f"artefact {name!r} of {p.strategy} generation {p.generation} is missing")
        with self._lock:
            self.conn.execute("PRAGMA synchronous=FULL")  # the manifest commit is durable before old files go
            try:
                with self.transaction() as c:
                    if before is not None:
                        before(c)
                    for strategy in withdraw:
                        withdraw_rows(c, strategy)
                    for p in publications:
                        publish_rows(c, p)
                    _step("publish:before_commit")
            finally:
                self.conn.execute("PRAGMA synchronous=NORMAL")
        _step("publish:committed")
        for strategy in {p.strategy for p in publications} | set(withdraw):
            self.remove_stale_files(strategy)
        _step("publish:cleaned")

    def withdraw(self, strategy: str) -> None:
        """Remove a strategy's published build: its manifest, nodes, edges and chunk list (one transaction), then
        its files. Its per-chunk artefacts stay (rebuilding reuses them)."""
        with self.transaction() as c:
            withdraw_rows(c, strategy)
        self.remove_stale_files(strategy)

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
            c.execute(
                "DELETE FROM edges WHERE generation IS NOT"
                " (SELECT b.generation FROM builds b WHERE b.strategy = edges.strategy)"
            )
        self.remove_stale_files()
        return int(deleted)
