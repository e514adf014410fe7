"""A build's array files: dense numpy arrays (``.npy``) and scipy.sparse matrices (``.npz``), written durably
and checked against their manifest entries when read.

Both kinds are written to a temporary file, fsynced, renamed to ``<strategy>.g<generation>.<name>.<ext>`` and
the directory fsynced (:func:`write_file`), so a kill leaves either no file or a whole one; the manifest that
names them is committed afterwards by :meth:`gemrag.store.publish.Generations.publish`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeAlias

import numpy as np
import scipy.sparse as sp

NAME_PATTERN = r"^[A-Za-z0-9_-]+$"

Matrix: TypeAlias = np.ndarray | sp.sparray | sp.spmatrix
"""What a build may store as one array: a dense numpy array or a scipy.sparse matrix (stored as CSR)."""


@dataclass(frozen=True)
class ArrayEntry:
    """One array of a build as recorded in its manifest.

    Attributes:
        name: the array's name within the build (e.g. ``"weights"``).
        file: the file name in the memory directory (``<strategy>.g<generation>.<name>.npy``, or ``.npz`` for a
            sparse matrix).
        shape: the array's shape. dtype: numpy dtype string (e.g. ``"<f4"``). size: the file's bytes.
        axes: optional axis names, one per dimension; arrays of one build sharing a name must agree on it.
        sparse: True for a scipy.sparse CSR matrix saved with :func:`scipy.sparse.save_npz`.
        nnz: stored entries of a sparse matrix (None for a dense array).
    """

    name: str
    file: str
    shape: tuple[int, ...]
    dtype: str
    size: int
    axes: tuple[str, ...] | None = None
    sparse: bool = False
    nnz: int | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-serializable form."""
        d: dict[str, Any] = {
            "name": self.name,
            "file": self.file,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "size": self.size,
            "axes": None if self.axes is None else list(self.axes),
        }
        if self.sparse:
            d |= {"sparse": True, "nnz": self.nnz}
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ArrayEntry:
        """Inverse of :meth:`as_dict`."""
        axes = d.get("axes")
        return cls(
            d["name"],
            d["file"],
            tuple(d["shape"]),
            d["dtype"],
            int(d["size"]),
            None if axes is None else tuple(axes),
            bool(d.get("sparse", False)),
            d.get("nnz"),
        )


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


def write_file(final: Path, write: Callable[[IO[bytes]], None], step: Callable[[], None] | None = None) -> None:
    """Write ``final`` durably: ``write(fh)`` into a temporary file, fsync, rename, fsync of the directory.

    Args:
        final: the file's final path.
        write: writes the content to the open binary file.
        step: called after the fsync and before the rename (tests simulate a kill there).
    """
    tmp = final.parent / f".{final.name}.{os.getpid()}.tmp"
    try:
        with open(tmp, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        if step is not None:
            step()
        os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_directory(final.parent)


def save_matrix(
    directory: Path, stem: str, name: str, array: Matrix, axes: Sequence[str] | None, step: Callable[[], None] | None
) -> ArrayEntry:
    """Save a dense array as ``<stem>.npy`` or a scipy.sparse matrix as CSR in ``<stem>.npz`` (uncompressed).

    Raises:
        ValueError: ``axes`` does not match the number of dimensions, or an object dtype.
    """
    if sp.issparse(array):
        csr = sp.csr_matrix(array)
        csr.sort_indices()
        if axes is not None and len(axes) != 2:
            raise ValueError(f"sparse matrix {name!r} has 2 dimensions but {len(axes)} axis names")
        final = directory / f"{stem}.npz"
        write_file(final, lambda fh: sp.save_npz(fh, csr, compressed=False), step)
        shape, dtype, nnz, sparse = tuple(int(x) for x in csr.shape), csr.dtype.str, int(csr.nnz), True
    else:
        dense: np.ndarray = np.asarray(array)
        if dense.dtype == object:
            raise ValueError(f"array {name!r} has an object dtype")
        if axes is not None and len(axes) != dense.ndim:
            raise ValueError(f"array {name!r} has {dense.ndim} dimensions but {len(axes)} axis names")
        final = directory / f"{stem}.npy"
        write_file(final, lambda fh: np.save(fh, dense, allow_pickle=False), step)
        shape, dtype, nnz, sparse = tuple(dense.shape), dense.dtype.str, None, False
    return ArrayEntry(
        name, final.name, shape, dtype, final.stat().st_size, None if axes is None else tuple(axes), sparse, nnz
    )


def load_matrix(path: Path, entry: ArrayEntry, *, mmap: bool) -> Matrix:
    """Load one array file and check it against its manifest entry.

    Returns:
        The dense array (memory-mapped read-only with ``mmap``) or a ``scipy.sparse.csr_matrix``.

    Raises:
        FileNotFoundError: the file is missing.
        ValueError: the file is unreadable or does not match ``entry`` (size, shape, dtype, nnz).
    """
    size = path.stat().st_size
    if entry.sparse:
        try:
            csr = sp.csr_matrix(sp.load_npz(path))
        except (OSError, ValueError, KeyError) as exc:
            raise ValueError(f"{entry.file}: {exc}") from exc
        array: Matrix = csr
        nnz: int | None = int(csr.nnz)
    else:
        try:
            array = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
        except OSError as exc:
            raise ValueError(f"{entry.file}: {exc}") from exc
        nnz = None
    if size != entry.size or tuple(array.shape) != entry.shape or array.dtype.str != entry.dtype or nnz != entry.nnz:
        found = f"{size} bytes, shape {tuple(array.shape)}, dtype {array.dtype.str}"
        expected = f"{entry.size} bytes, shape {entry.shape}, dtype {entry.dtype}"
        raise ValueError(f"{entry.file} has {found}, not {expected}")
    return array
