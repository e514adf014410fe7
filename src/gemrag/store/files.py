"""Build arrays on the file system: the storage part of build generations (:mod:`gemrag.store.publish`) that keeps a
build's arrays and artefacts as files in one directory, :attr:`FileArrays.arrays_directory`.

The SQLite store keeps them in the memory directory beside ``memory.sqlite``; a store assembled from other parts may
keep them elsewhere (``examples/custom_store.py``). Files are named ``<strategy>.g<generation>.<name>.npy`` (a sparse
matrix: ``.npz``), written durably (temporary file, fsync, rename, fsync of the directory; :mod:`gemrag.store.arrays`)
before the manifest that names them is committed, and removed once no published manifest names them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from gemrag.errors import DamagedMemoryError, GemragError, StaleGenerationError
from gemrag.store.arrays import ArrayEntry, Matrix, check_axes, fsync_directory, load_matrix, remove_path, save_matrix
from gemrag.store.parts import Connection, StoreParts
from gemrag.store.publish import Generations, _check_name, _step
from gemrag.store.publish_rows import publish_rows, withdraw_rows
from gemrag.store.publish_types import Publication, Published

GENERATION_FILE = re.compile(r"^(?P<strategy>[A-Za-z0-9_-]+)\.g(?P<generation>\d+)\.(?P<name>[A-Za-z0-9_.-]+)$")
LEGACY_FILES = frozenset(
    [f"gem_{n}.npy" for n in ("node_ids", "node_vectors", "question_vectors", "question_owner", "question_ids")]
    + ["gem_weights.npy", "dense_node_ids.npy", "dense_vectors.npy", "raptor_vectors.npy", "bm25"]
)
"""Unversioned artefacts of schema 1 (see :mod:`gemrag.store.sqlite.migrations`); removed by the first builder."""


class FileArrays(Generations):
    """The build-arrays part of a store keeping arrays and artefacts as files in :attr:`arrays_directory` (the SQLite
    store's, or any store's whose database part gives the transactions: ``examples/custom_store.py``).

    Args:
        parts: the store's parts (see :class:`~gemrag.store.sql_part.SqlPart`).
        arrays_directory: where the files live; created when missing unless the store is read-only.

    Attributes:
        arrays_directory: where the files live (an existing, writable directory unless the store is read-only).
    """

    def __init__(self, parts: StoreParts, arrays_directory: str | Path) -> None:
        super().__init__(parts)
        self.arrays_directory = Path(arrays_directory)
        if not self._db.readonly:
            self.arrays_directory.mkdir(parents=True, exist_ok=True)

    def load_published(self, strategy: str, *, mmap: bool = True) -> Published | None:
        m = self.manifest(strategy)
        if m is None:
            return None

        def array(e: ArrayEntry) -> Matrix:
            try:
                return load_matrix(self.arrays_directory / e.file, e, mmap=mmap)
            except FileNotFoundError:
                raise self._missing(strategy, m.generation, e.file) from None

        def path(name: str) -> Path:
            found = self.arrays_directory / f"{strategy}.g{m.generation}.{name}"
            if not found.exists():
                raise self._missing(strategy, m.generation, found.name)
            return found

        return self._read_published(m, array, path)

    def _missing(self, strategy: str, generation: int, file: str) -> GemragError:
        if not self._db.in_snapshot and self.published_generation(strategy) == generation:
            return DamagedMemoryError(self._damaged(strategy, generation, f"{file} is missing"))
        return StaleGenerationError(
            f"generation {generation} of {strategy!r} was replaced while it was read", strategy, generation
        )

    def _where(self) -> str:
        return str(self.arrays_directory)

    def write_array(
        self, strategy: str, generation: int, name: str, array: Matrix, axes: Sequence[str] | None = None
    ) -> ArrayEntry:
        _check_name("strategy", strategy)
        _check_name("array", name)
        entry = save_matrix(
            self.arrays_directory, f"{strategy}.g{generation}.{name}", name, array, axes, lambda: _step(f"write:{name}")
        )
        _step(f"written:{name}")
        return entry

    def artifact_path(self, strategy: str, generation: int, name: str) -> Path:
        _check_name("strategy", strategy)
        _check_name("artefact", name)
        return self.arrays_directory / f"{strategy}.g{generation}.{name}"

    def sync_path(self, path: Path) -> None:
        targets = [path] if path.is_file() else [*sorted(p for p in path.rglob("*")), path]
        for p in targets:
            fd = os.open(p, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_directory(self.arrays_directory)

    def publish_many(
        self,
        publications: Sequence[Publication],
        *,
        before: Callable[[Connection], None] | None = None,
        withdraw: Sequence[str] = (),
    ) -> None:
        for p in publications:
            check_axes(p.arrays)
            for e in p.arrays:
                if not (self.arrays_directory / e.file).is_file():
                    raise ValueError(f"array file {e.file} is missing")
            for name in p.paths:
                if not self.artifact_path(p.strategy, p.generation, name).exists():
                    raise ValueError(f"artefact {name!r} of {p.strategy} generation {p.generation} is missing")
        with self._durable(), self._db.transaction() as c:  # the manifest commit is durable before old files go
            if before is not None:
                before(c)
            for strategy in withdraw:
                withdraw_rows(c, strategy)
            for p in publications:
                publish_rows(c, p)
            _step("publish:before_commit")
        _step("publish:committed")
        for strategy in {p.strategy for p in publications} | set(withdraw):
            self.remove_stale_files(strategy)
        _step("publish:cleaned")

    def withdraw(self, strategy: str) -> None:
        with self._db.transaction() as c:
            withdraw_rows(c, strategy)
        self.remove_stale_files(strategy)

    # -- cleaning ---------------------------------------------------------------------------------
    def stale_files(self, strategy: str | None = None) -> Iterator[Path]:
        # Here: other generations' files, ``*.tmp`` files and (strategy None) schema-1 leftovers.
        published = self.published_generations()
        for entry in os.scandir(self.arrays_directory):
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
        if self._db.readonly:
            return 0
        removed = 0
        for path in list(self.stale_files(strategy)):
            remove_path(path)
            removed += 1
        if removed:
            fsync_directory(self.arrays_directory)
        return removed
