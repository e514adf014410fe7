"""Build generations: a strategy's build is published atomically, and readers see the old build or the new one.

Protocol (by a builder, normally holding the memory's :class:`~gemrag.store.lock.BuildLock`):

1. ``g = store.begin_build(strategy)``: the published generation + 1 (1 for a first build); rows and files left
   by an earlier unpublished build of the strategy are removed first.
2. The builder inserts the nodes it derives, marked ``(strategy, g)`` (the rows part's ``add_node``): readers
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

This module is the part every store shares (:class:`Generations`); where the arrays live is a storage part:
files in a directory (:mod:`gemrag.store.files`, the SQLite memory's) or rows of the database
(:mod:`gemrag.store.postgres.generations`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, Literal

from gemrag.errors import DamagedMemoryError
from gemrag.store.arrays import (
    NAME_PATTERN,
    ArrayEntry,
    Matrix,
    check_axes,
    fsync_directory,
    remove_path,
)
from gemrag.store.parts import BuildArrays
from gemrag.store.publish_types import KEEP_COVERS, Edges, Manifest, Publication, Published
from gemrag.store.sql_part import SqlPart

__all__ = [
    "KEEP_COVERS",
    "ArrayEntry",
    "Generations",
    "Manifest",
    "Publication",
    "Published",
    "check_axes",
    "fsync_directory",
    "remove_path",
]

NAME = re.compile(NAME_PATTERN)
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


class Generations(SqlPart, BuildArrays):
    """Build generations, the half of a build-arrays part every storage shares: manifests, starting and publishing a
    build, removing what killed builds left. Where the arrays live is the storage's, which completes the part
    (:class:`gemrag.store.parts.BuildArrays`): files (:class:`gemrag.store.files.FileArrays`) or database rows
    (:class:`gemrag.store.postgres.generations.PgArrays`); what this half calls of it goes through the store's parts
    (arguments: those of :class:`~gemrag.store.sql_part.SqlPart`)."""

    # -- reading ----------------------------------------------------------------------------------
    def published_generation(self, strategy: str) -> int | None:
        rows = self._query("SELECT generation FROM builds WHERE strategy = ?", (strategy,))
        return int(rows[0][0]) if rows else None

    def published_generations(self) -> dict[str, int]:
        return {str(s): int(g) for s, g in self._query("SELECT strategy, generation FROM builds")}

    def manifest(self, strategy: str) -> Manifest | None:
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

    # -- building ---------------------------------------------------------------------------------
    def begin_build(self, strategy: str) -> int:
        _check_name("strategy", strategy)
        with self._db.transaction() as c:
            row = c.execute("SELECT generation FROM builds WHERE strategy = ?", (strategy,)).fetchone()
            current = int(row[0]) if row else 0
            c.execute(
                "DELETE FROM nodes WHERE strategy = ? AND generation IS NOT NULL AND generation != ?",
                (strategy, current),
            )
            c.execute("DELETE FROM edges WHERE strategy = ? AND generation != ?", (strategy, current))
        self._parts.arrays.remove_stale_files(strategy)
        return current + 1

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
        self._parts.arrays.publish_many(
            [Publication(strategy, generation, arrays, meta, paths, edges, covers, params, models, carry, retire)]
        )

    def remove_unpublished(self) -> int:
        with self._db.transaction() as c:
            deleted = c.execute(
                "DELETE FROM nodes WHERE generation IS NOT NULL AND generation IS NOT"
                " (SELECT b.generation FROM builds b WHERE b.strategy = nodes.strategy)"
            ).rowcount
            c.execute(
                "DELETE FROM edges WHERE generation IS NOT"
                " (SELECT b.generation FROM builds b WHERE b.strategy = edges.strategy)"
            )
        self._parts.arrays.remove_stale_files()
        return int(deleted)

    def _read_published(
        self, m: Manifest, array: Callable[[ArrayEntry], Matrix], path: Callable[[str], Path]
    ) -> Published:
        """The build the manifest ``m`` names, read by the storage: ``array`` reads one entry's array, ``path`` gives
        one named artefact's path (each raises what its storage finds missing); the arrays are checked against their
        entries and each other's axes (:func:`check_axes`) before any path is asked for.

        Raises:
            DamagedMemoryError: an array does not match its entry, or arrays disagree on a named axis.
        """
        arrays: dict[str, Matrix] = {}
        for e in m.arrays.values():
            try:
                arrays[e.name] = array(e)
            except ValueError as exc:
                raise DamagedMemoryError(self._damaged(m.strategy, m.generation, str(exc))) from exc
        try:
            check_axes(list(m.arrays.values()))
        except ValueError as exc:
            raise DamagedMemoryError(self._damaged(m.strategy, m.generation, str(exc))) from exc
        paths = {name: path(name) for name in m.paths}
        return Published(m.strategy, m.generation, arrays, paths, m.meta, m.published_at, m.params, m.models)

    def _damaged(self, strategy: str, generation: int, detail: str) -> str:
        """The message of a damaged build: where the memory is (:meth:`_where`), the generation, what is wrong."""
        return (
            f"the memory {self._where()} is damaged: generation {generation} of {strategy!r}: {detail}; "
            f"run `gemrag index` again (strategy {strategy}) to rebuild it"
        )

    def _where(self) -> str:
        """Where the arrays live, for messages: the database's location (a storage elsewhere names its own)."""
        return self._db.location

    def _durable(self) -> AbstractContextManager[object]:
        """Around a publishing transaction: make its commit durable before older arrays are removed (the database
        part's ``durable()`` where it has one: SQLite switches to ``synchronous=FULL``); nothing otherwise."""
        durable = getattr(self._db, "durable", None)
        return durable() if durable is not None else nullcontext()
