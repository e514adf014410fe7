"""Utility-question vectors and the node similarity matrix S of the memory graph.

Paper: GEM-RAG (v2), section III.B.1 "Memory Graph Construction", paragraphs "Text Embeddings" and
"Building the Weighted Complete Graph".

Notation (as in the paper): ``n`` nodes (chunks) with base-text embeddings ``v_t = E(CHUNK_t)``;
``M`` utility questions in total, question ``j`` belonging to node ``owner[j]``; ``d`` is the
embedding dimension. All similarities are cosine similarities (dimensionless, in ``[-1, 1]``).

Everything here is matrix arithmetic (BLAS products and a sparse indicator matrix); there is no
Python loop over nodes or node pairs, except over row blocks of ``block_size`` nodes in
:func:`knn_similarity_matrix`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from gemrag.graph.ann import unit_rows32
from gemrag.graph.validate import as_matrix, as_owner, as_square, unit_rows

__all__ = [
    "extend_similarity",
    "knn_similarity_matrix",
    "knn_sparsify",
    "similarity_matrix",
    "utility_question_vectors",
]


def utility_question_vectors(question_emb: ArrayLike, chunk_emb: ArrayLike, owner: ArrayLike) -> NDArray[np.floating]:
    """Utility-question vectors ``v_ij = (E(q_ij) + v_i) / 2`` (paper III.B.1, "Text Embeddings").

    Each question embedding is averaged with the embedding of the chunk that owns it, so that the
    question vector also carries the chunk's content. The result is *not* re-normalized: cosine
    similarity (used everywhere downstream) is scale-invariant.

    Args:
        question_emb: ``(M, d)`` float (typically float32), raw embeddings ``E(q_ij)``.
        chunk_emb: ``(n, d)`` float, base-text embeddings ``v_i``.
        owner: ``(M,)`` integer, ``owner[j] = i`` is the node that question ``j`` belongs to.

    Returns:
        ``(M, d)`` array ``v_ij``; float32 when both inputs are float32, otherwise float64.

    Raises:
        ValueError: shapes disagree, NaN/inf values, a non-integer ``owner`` or one outside ``[0, n)``.
    """
    chunks = as_matrix(chunk_emb, "chunk_emb")
    n, d = chunks.shape
    questions = as_matrix(question_emb, "question_emb", ncols=d)
    own = as_owner(owner, questions.shape[0], n)
    dtype = np.result_type(questions.dtype, chunks.dtype)
    return ((questions.astype(dtype, copy=False) + chunks[own].astype(dtype, copy=False)) / 2).astype(dtype, copy=False)


def _prepare(
    node_vectors: ArrayLike, question_vectors: ArrayLike, owner: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Validate inputs; return unit-norm node rows ``Vn`` ``(n, d)`` and question sums ``Qs`` ``(n, d)``.

    ``Qs[t] = sum_{j: owner[j] = t} v_tj / ||v_tj||`` (the unit question vectors of node ``t`` added up), or
    ``Vn[t]`` for a node without questions. Because cosine similarity to a unit vector is a dot product,
    ``S = Qs @ Vn.T`` exactly: one ``(n, d) x (d, n)`` product instead of ``(M, d) x (d, n)`` (``m`` times
    fewer operations for ``m`` questions per node).
    """
    nodes = as_matrix(node_vectors, "node_vectors")
    n, d = nodes.shape
    questions = as_matrix(question_vectors, "question_vectors", ncols=d)
    own = as_owner(owner, questions.shape[0], n)
    vn = unit_rows(nodes)
    indicator = sp.csr_matrix(
        (np.ones(own.shape[0]), (own, np.arange(own.shape[0]))), shape=(n, own.shape[0])
    )  # "question j belongs to node t"
    qs = np.asarray(indicator @ unit_rows(questions), dtype=np.float64)
    missing = np.bincount(own, minlength=n) == 0
    qs[missing] = vn[missing]
    return vn, qs


def _prepare32(
    node_vectors: ArrayLike, question_vectors: ArrayLike, owner: ArrayLike, block_rows: int = 65536
) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
    """:func:`_prepare` in float32 with bounded memory: ``(Vn, Qs)``, each ``(n, d)`` float32.

    The questions are normalized and summed per owner one block of ``block_rows`` at a time (questions sorted
    by owner, ``np.add.reduceat`` over each block), so no float64 or indicator-product copy of the ``(M, d)``
    question matrix is made: the large-graph path's memory is the inputs plus ``2 n d`` float32. Float16 inputs
    are kept as they are and converted one block at a time (the sums are float32 either way).
    """
    nodes = as_matrix(node_vectors, "node_vectors", half=True)
    n, d = nodes.shape
    questions = as_matrix(question_vectors, "question_vectors", ncols=d, half=True)
    own = as_owner(owner, questions.shape[0], n)
    vn = unit_rows32(nodes)
    qs = np.zeros((n, d), dtype=np.float32)
    order = np.argsort(own, kind="stable")
    for lo in range(0, order.shape[0], block_rows):
        idx = order[lo : lo + block_rows]
        unit = unit_rows32(questions[idx])
        who = own[idx]
        starts = np.flatnonzero(np.r_[True, who[1:] != who[:-1]])
        qs[who[starts]] += np.add.reduceat(unit, starts, axis=0)
    missing = np.bincount(own, minlength=n) == 0
    qs[missing] = vn[missing]
    return vn, qs


def _similarity_block(
    vn: NDArray[np.floating], qs: NDArray[np.floating], rows: NDArray[np.int64], cols: NDArray[np.int64]
) -> NDArray[np.float64]:
    """The sub-matrix ``S[rows][:, cols]`` of :func:`similarity_matrix`: ``Qs[rows] @ Vn[cols].T`` (see
    :func:`_prepare`), ``(len(rows), len(cols))`` float64."""
    return np.asarray(qs[rows] @ vn[cols].T, dtype=np.float64)


def similarity_matrix(node_vectors: ArrayLike, question_vectors: ArrayLike, owner: ArrayLike) -> NDArray[np.float64]:
    """Similarity matrix ``S`` of the weighted complete graph (paper III.B.1).

    ``s_tv = sum_{i: owner[i] = t} cos(v_ti, v_v)``: the sum, over node ``t``'s utility-question
    vectors, of their cosine similarity to node ``v``'s base-text vector ("Building the Weighted
    Complete Graph": edge weight ``sum_i SIM(v_ti, v_v)``; "Building the Summary Nodes": ``S``).

    * ``S`` is **not symmetric** in general (``t``'s questions against ``v``'s text differ from
      ``v``'s questions against ``t``'s text); use :func:`gemrag.graph.laplacian.symmetrize` before
      any eigen-analysis.
    * Entries scale with the number of questions per node (up to ``m`` for ``m`` questions), and the
      diagonal ``s_tt = sum_i cos(v_ti, v_t)`` is generally not 1.
    * A node that owns **no** questions (the paper's "0 utility questions" ablation, Fig. 2, or a node
      whose question generation failed) uses its own base-text vector as its only question vector:
      its row is ``cos(v_t, v_v)`` and its diagonal entry is exactly 1 (0 for an all-zero vector).
    * All-zero input vectors have cosine 0 with everything (no division by zero).

    Inputs need not be unit-norm: every row is L2-normalized here (cosine similarity).

    Args:
        node_vectors: ``(n, d)`` float, base-text embeddings ``v_v``.
        question_vectors: ``(M, d)`` float, utility-question vectors ``v_ti`` (usually the output of
            :func:`utility_question_vectors`); ``M`` may be 0.
        owner: ``(M,)`` integer (int64 recommended), the node index owning each question.

    Returns:
        ``(n, n)`` float64 array ``S`` (dimensionless; each entry in ``[-m_t, m_t]`` where ``m_t`` is
        the number of questions of row node ``t``, or ``[-1, 1]`` for question-less rows).

    Raises:
        ValueError: shapes disagree, NaN/inf values, a non-integer ``owner`` or one outside ``[0, n)``.
    """
    vn, qs = _prepare(node_vectors, question_vectors, owner)
    everyone = np.arange(vn.shape[0], dtype=np.int64)
    return _similarity_block(vn, qs, everyone, everyone)


def _row_topk(
    block: NDArray[np.float64], rows: NDArray[np.int64], k: int
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]:
    """(row, col, value) of the ``k`` largest off-diagonal entries of each row of ``block``.

    ``block`` holds full rows ``rows`` of an ``(n, n)`` matrix. It is modified in place (diagonal set
    to -inf).
    """
    b, n = block.shape
    k = min(k, n - 1)
    if k <= 0 or b == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0, dtype=np.float64)
    block[np.arange(b), rows] = -np.inf
    cols = np.argpartition(-block, k - 1, axis=1)[:, :k]
    vals = np.take_along_axis(block, cols, axis=1)
    return np.repeat(rows, k), cols.ravel().astype(np.int64), vals.ravel()


def _assemble_knn(
    n: int,
    parts: list[tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]],
    diagonal: NDArray[np.float64] | None,
) -> sp.csr_matrix:
    """Union of the kept directed pairs and their transposes (values of a symmetric matrix), as CSR."""
    r = np.concatenate([p[0] for p in parts] + [np.zeros(0, dtype=np.int64)])
    c = np.concatenate([p[1] for p in parts] + [np.zeros(0, dtype=np.int64)])
    v = np.concatenate([p[2] for p in parts] + [np.zeros(0, dtype=np.float64)])
    rows, cols, vals = np.concatenate([r, c]), np.concatenate([c, r]), np.concatenate([v, v])
    if diagonal is not None:
        idx = np.arange(n, dtype=np.int64)
        rows, cols, vals = (
            np.concatenate([rows, idx]),
            np.concatenate([cols, idx]),
            np.concatenate([vals, diagonal]),
        )
    # A pair kept by both endpoints appears twice with the same value: keep one copy.
    _, first = np.unique(rows * n + cols, return_index=True)
    return sp.csr_matrix((vals[first], (rows[first], cols[first])), shape=(n, n))


def knn_sparsify(S: ArrayLike, k: int, *, keep_diagonal: bool = True) -> sp.csr_matrix:
    """Sparse k-nearest-neighbour version of a (dense) similarity matrix, symmetrized.

    DESIGN: "accept a dense or a sparse (k-nearest-neighbour) similarity matrix". The paper builds a
    complete graph (III.B.1) and notes the O(n^2) / O(n^3) cost ("Analysis of Graph Spectrum",
    III.C); this is our scalable approximation, not part of the paper.

    Steps: take the symmetric part ``(S + S^T) / 2``; for every row keep its ``k`` largest
    off-diagonal entries; return the **union** of the kept pairs, i.e. ``(t, v)`` is stored when
    ``v`` is among ``t``'s ``k`` nearest or ``t`` among ``v``'s, with value ``(s_tv + s_vt) / 2``. The
    result is symmetric and every row has at least ``min(k, n - 1)`` off-diagonal entries. Entries
    may be negative (cosines); :func:`gemrag.graph.laplacian.normalized_laplacian` clips them.
    Ties at the k-th value are broken by a deterministic but unspecified rule.

    Args:
        S: ``(n, n)`` float, dense similarity matrix (e.g. :func:`similarity_matrix`).
        k: neighbours per node, ``k >= 1`` (``k >= n - 1`` keeps every pair).
        keep_diagonal: also store the symmetric part's diagonal, so that the paper's ``S - I`` gives
            the same self-loop weights as on the dense matrix (default ``True``).

    Returns:
        ``(n, n)`` symmetric ``scipy.sparse.csr_matrix`` of float64.

    Raises:
        ValueError: ``S`` not square or not finite, or ``k < 1``.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    dense, n = as_square(np.asarray(S), "S")
    sym = (dense + dense.T) / 2
    diagonal = sym.diagonal().copy() if keep_diagonal else None
    part = _row_topk(sym, np.arange(n, dtype=np.int64), k)
    return _assemble_knn(n, [part], diagonal)


def knn_similarity_matrix(
    node_vectors: ArrayLike,
    question_vectors: ArrayLike,
    owner: ArrayLike,
    k: int,
    *,
    keep_diagonal: bool = True,
    block_size: int = 1024,
) -> sp.csr_matrix:
    """``knn_sparsify(similarity_matrix(...), k)`` without ever holding the dense ``(n, n)`` matrix.

    Works on pairs of node blocks ``(I, J)`` with ``J`` not before ``I`` (the upper block triangle): the
    symmetric part's block ``(S[I, J] + S[J, I]^T) / 2`` (two ``(block, d) x (d, block)`` products) updates
    the running ``k`` largest off-diagonal entries of the rows ``I`` and, transposed, of the rows ``J``, so
    every entry of ``S`` is computed once: ``n^2 d`` multiply-adds in all. Memory is
    ``O(block_size^2 + n k)``. Conventions (question-less nodes, normalization,
    union symmetrization, diagonal) are those of :func:`similarity_matrix` and :func:`knn_sparsify`.

    Args:
        node_vectors: ``(n, d)`` float, base-text embeddings.
        question_vectors: ``(M, d)`` float, utility-question vectors.
        owner: ``(M,)`` integer, owning node of each question.
        k: neighbours per node, ``k >= 1``.
        keep_diagonal: store the symmetric part's diagonal (see :func:`knn_sparsify`).
        block_size: nodes per block, ``>= 1``.

    Returns:
        ``(n, n)`` symmetric ``scipy.sparse.csr_matrix`` of float64.

    Raises:
        ValueError: invalid shapes/values (as :func:`similarity_matrix`), ``k < 1`` or ``block_size < 1``.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if block_size < 1:
        raise ValueError(f"block_size must be >= 1, got {block_size}")
    vn, qs = _prepare(node_vectors, question_vectors, owner)
    n = vn.shape[0]
    kk = min(k, n - 1)
    diagonal = np.zeros(n, dtype=np.float64)
    best_val = np.full((n, max(kk, 0)), -np.inf)
    best_col = np.zeros((n, max(kk, 0)), dtype=np.int64)
    starts = list(range(0, n, block_size))
    for i, a in enumerate(starts):
        rows = np.arange(a, min(a + block_size, n), dtype=np.int64)
        for b in starts[i:]:  # upper block triangle: the block (I, J) serves rows I and, transposed, rows J
            cols = np.arange(b, min(b + block_size, n), dtype=np.int64)
            sym = (_similarity_block(vn, qs, rows, cols) + _similarity_block(vn, qs, cols, rows).T) / 2
            if a == b:
                diagonal[rows] = np.diagonal(sym)
                np.fill_diagonal(sym, -np.inf)
            if kk > 0:
                _merge_topk(best_val, best_col, rows, sym, cols)
                if a != b:
                    _merge_topk(best_val, best_col, cols, sym.T, rows)
    part = (np.repeat(np.arange(n, dtype=np.int64), max(kk, 0)), best_col.ravel(), best_val.ravel())
    return _assemble_knn(n, [part], diagonal if keep_diagonal else None)


def _merge_topk(
    best_val: NDArray[np.float64],
    best_col: NDArray[np.int64],
    rows: NDArray[np.int64],
    block: NDArray[np.float64],
    cols: NDArray[np.int64],
) -> None:
    """Merge ``block`` (values of ``rows`` x ``cols``) into the running top-``k`` (``best_val``, ``best_col``,
    ``(n, k)``) of each row, in place."""
    k = best_val.shape[1]
    if block.shape[1] > k:  # the block's own top k first, so the merge below is (rows, 2k), not (rows, block)
        top = np.argpartition(block, block.shape[1] - k, axis=1)[:, -k:]
        new_val, new_col = np.take_along_axis(block, top, axis=1), cols[top]
    else:
        new_val, new_col = block, np.broadcast_to(cols, block.shape)
    vals = np.concatenate([best_val[rows], new_val], axis=1)
    idx = np.concatenate([best_col[rows], new_col], axis=1)
    keep = np.argpartition(vals, vals.shape[1] - k, axis=1)[:, -k:]
    best_val[rows] = np.take_along_axis(vals, keep, axis=1)
    best_col[rows] = np.take_along_axis(idx, keep, axis=1)


def _kth_largest_offdiagonal(S: sp.csr_matrix, k: int) -> NDArray[np.float64]:
    """``(n,)`` float64: the ``k``-th largest stored off-diagonal value of each row (``-inf`` for rows with
    fewer than ``k`` such entries)."""
    coo = S.tocoo()
    rows, cols, vals = coo.row.astype(np.int64), coo.col.astype(np.int64), coo.data
    off = rows != cols
    rows, vals = rows[off], vals[off]
    order = np.lexsort((-vals, rows))
    rows, vals = rows[order], vals[order]
    rank = np.arange(rows.shape[0]) - np.searchsorted(rows, rows)
    out = np.full(S.shape[0], -np.inf)
    sel = rank == k - 1
    out[rows[sel]] = vals[sel]
    return out


def extend_similarity(
    S_sym: ArrayLike | sp.spmatrix,
    node_vectors: ArrayLike,
    question_vectors: ArrayLike,
    owner: ArrayLike,
    *,
    k: int | None = None,
    low_memory: bool = False,
) -> NDArray[np.float64] | sp.csr_matrix:
    """Add nodes to the symmetric part of ``S`` without recomputing the block of the existing nodes.

    GEM-RAG (III.B.1) builds the chunk graph, derives summary nodes from its eigenvectors, then gives the
    summary nodes "utility questions, embeddings and edges like every other node": the graph over all nodes
    differs from the chunk graph only in the new rows and columns. This computes just those, ``S[new, :]``
    and ``S[:, new]``, so ``S`` is formed once per build.

    Precondition: the first ``n0`` nodes and their questions are those ``S_sym`` was built from
    (not checked).

    * Dense ``S_sym`` (``(S + S^T) / 2`` over the first ``n0`` nodes, e.g. ``symmetrize(similarity_matrix(...))``):
      returns the dense symmetric part over all ``N`` nodes, equal to ``symmetrize(similarity_matrix(...))``
      on all nodes.
    * Sparse ``S_sym`` (a :func:`knn_similarity_matrix` over the first ``n0`` nodes, with its diagonal):
      returns a kNN union graph over all ``N`` nodes: the old pairs, each new node's ``k`` largest
      off-diagonal entries, and ``(t, s)`` for an old node ``t`` and new node ``s`` whenever the value is at
      least ``t``'s current ``k``-th largest. This is a superset of ``knn_similarity_matrix`` over all nodes
      (an old pair that a new node would push out of a top-``k`` list is kept), with equal values.

    Args:
        S_sym: ``(n0, n0)`` float64 symmetric, dense ndarray or scipy.sparse.
        node_vectors: ``(N, d)`` float, ``N >= n0``, base-text embeddings, the old nodes first.
        question_vectors: ``(M, d)`` float, utility-question vectors of all ``N`` nodes.
        owner: ``(M,)`` integer owning node of each question.
        k: neighbours per node (required for sparse ``S_sym``, ``>= 1``; ignored for dense).
        low_memory: for sparse ``S_sym``, compute the new rows in float32 without a float64 copy of the
            question vectors (equal to the float64 path to ~1e-6 relative; GEM's large-graph path).

    Returns:
        ``(N, N)`` float64 symmetric: a dense ndarray or a CSR matrix, like ``S_sym``.

    Raises:
        ValueError: invalid shapes/values (as :func:`similarity_matrix`), ``N < n0``, or sparse ``S_sym``
            without ``k >= 1``.
    """
    # the large-graph path works in float32 with bounded memory; every other keeps float64
    prepare = _prepare32 if low_memory and sp.issparse(S_sym) else _prepare
    vn, qs = prepare(node_vectors, question_vectors, owner)
    big_n = vn.shape[0]
    old, n0 = as_square(S_sym, "S_sym")
    if big_n < n0:
        raise ValueError(f"node_vectors has {big_n} rows but S_sym covers {n0} nodes")
    new = np.arange(n0, big_n, dtype=np.int64)
    everyone = np.arange(big_n, dtype=np.int64)
    sym_new = (
        _similarity_block(vn, qs, new, everyone) + _similarity_block(vn, qs, everyone, new).T
    ) / 2  # (N - n0, N) rows of the sym. part
    if isinstance(old, np.ndarray):
        out = np.empty((big_n, big_n), dtype=np.float64)
        out[:n0, :n0] = old
        out[n0:, :] = sym_new
        out[:n0, n0:] = sym_new[:, :n0].T
        return out
    if k is None or k < 1:
        raise ValueError(f"a sparse S_sym needs k >= 1, got {k}")
    diagonal = np.concatenate([old.diagonal(), sym_new[np.arange(new.shape[0]), new]])
    coo = old.tocoo()
    offd = coo.row != coo.col
    kept = (coo.row[offd].astype(np.int64), coo.col[offd].astype(np.int64), coo.data[offd].astype(np.float64))
    to_old = sym_new[:, :n0]  # (N - n0, n0): value of (s, t) = (t, s)
    s_idx, t_idx = np.nonzero(to_old >= _kth_largest_offdiagonal(sp.csr_matrix(old), k)[None, :])
    joined = (t_idx.astype(np.int64), new[s_idx], to_old[s_idx, t_idx])
    own_top = _row_topk(sym_new.copy(), new, k)
    return _assemble_knn(big_n, [kept, joined, own_top], diagonal)
