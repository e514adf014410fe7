"""Shared input checks and small helpers for the :mod:`gemrag.graph` modules (private).

Every check raises :class:`ValueError` (a programming error: wrong shape, dtype or range), never a
:class:`gemrag.errors.GemragError`, because these functions receive arrays built by gemrag itself.
"""

from __future__ import annotations

from typing import TypeAlias

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

MatrixLike: TypeAlias = NDArray[np.floating] | sp.sparray | sp.spmatrix
"""A dense ndarray or any scipy.sparse matrix/array."""

_FINITE_ROWS = 1 << 16  # rows checked for NaN/inf per block in as_matrix


def as_matrix(x: ArrayLike, name: str, *, ncols: int | None = None, half: bool = False) -> NDArray[np.floating]:
    """Return ``x`` as a 2-D floating array (float32 kept, anything else converted to float64).

    Args:
        x: the array.
        name: its name in error messages.
        ncols: the number of columns it must have, if any.
        half: keep float16 too (for callers that convert one block of rows at a time: at 1M chunks a float64
            copy of 5M float16 question vectors would be 15 GB).

    The finiteness check runs one block of rows at a time (no boolean copy of a large array).

    Raises:
        ValueError: ``x`` is not 2-D, has the wrong number of columns, or contains NaN/inf.
    """
    arr = np.asarray(x)
    if arr.dtype != np.float32 and not (half and arr.dtype == np.float16):
        arr = arr.astype(np.float64, copy=False)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got shape {arr.shape}")
    if ncols is not None and arr.shape[1] != ncols:
        raise ValueError(f"{name} must have {ncols} columns, got shape {arr.shape}")
    for lo in range(0, arr.shape[0], _FINITE_ROWS):
        if not np.all(np.isfinite(arr[lo : lo + _FINITE_ROWS])):
            raise ValueError(f"{name} contains NaN or inf")
    return arr


def as_vector(x: ArrayLike, name: str, *, size: int | None = None) -> NDArray[np.float64]:
    """Return ``x`` as a finite 1-D float64 array, optionally of a given length.

    Raises:
        ValueError: ``x`` is not 1-D, has the wrong length, or contains NaN/inf.
    """
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if size is not None and arr.shape[0] != size:
        raise ValueError(f"{name} must have length {size}, got {arr.shape[0]}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or inf")
    return arr


def as_owner(owner: ArrayLike, m: int, n: int) -> NDArray[np.int64]:
    """Return ``owner`` as an int64 array of length ``m`` with every value in ``[0, n)``.

    An empty array of any dtype is accepted (no utility questions at all).

    Raises:
        ValueError: wrong shape, a non-integer dtype, or an out-of-range node index.
    """
    arr = np.asarray(owner)
    if arr.ndim != 1 or arr.shape[0] != m:
        raise ValueError(f"owner must have shape ({m},), got {arr.shape}")
    if m == 0:
        return np.zeros(0, dtype=np.int64)
    if not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"owner must have an integer dtype, got {arr.dtype}")
    arr = arr.astype(np.int64, copy=False)
    if arr.min() < 0 or arr.max() >= n:
        raise ValueError(f"owner values must lie in [0, {n}), got [{arr.min()}, {arr.max()}]")
    return arr


def unit_rows(x: NDArray[np.floating]) -> NDArray[np.float64]:
    """Rows of ``x`` scaled to unit L2 norm, in float64; all-zero rows stay zero (cosine 0 to all)."""
    out = np.asarray(x, dtype=np.float64)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    unit: NDArray[np.float64] = np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)
    return unit


def square_shape(m: MatrixLike, name: str) -> int:
    """Return ``n`` for an (n, n) dense or sparse matrix.

    Raises:
        ValueError: ``m`` is not a square 2-D matrix.
    """
    shape = m.shape
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError(f"{name} must be a square (n, n) matrix, got shape {shape}")
    return int(shape[0])


def as_square(m: MatrixLike, name: str) -> tuple[NDArray[np.float64] | sp.csr_matrix, int]:
    """Return ``m`` as a float64 dense ndarray or CSR matrix (same kind as given) and its size ``n``.

    Raises:
        ValueError: not square, or contains NaN/inf.
    """
    if sp.issparse(m):
        out: NDArray[np.float64] | sp.csr_matrix = sp.csr_matrix(m, dtype=np.float64)
        data = out.data
    else:
        out = np.asarray(m, dtype=np.float64)
        data = out
    n = square_shape(out, name)
    if not np.all(np.isfinite(data)):
        raise ValueError(f"{name} contains NaN or inf")
    return out, n


def max_asymmetry(m: NDArray[np.float64] | sp.csr_matrix) -> float:
    """Largest absolute entry of ``m - m.T`` (0.0 for an empty matrix)."""
    diff = m - m.T
    if sp.issparse(diff):
        return float(abs(diff).max()) if diff.nnz else 0.0
    return float(np.abs(diff).max()) if diff.size else 0.0


def top_indices(scores: NDArray[np.float64], k: int) -> NDArray[np.int64]:
    """Indices of the ``k`` largest scores, best first, ties broken by the lower index.

    ``k`` larger than ``len(scores)`` returns every index. O(n log n) (a stable sort).
    """
    k = max(0, min(int(k), scores.shape[0]))
    order = np.argsort(-scores, kind="stable")
    return order[:k].astype(np.int64, copy=False)
