"""The approximate (HNSW) kNN similarity graph against the exact one it replaces from ``gem.ann_above`` chunks on:
recall of the neighbour lists, equal values, the top eigenvectors of L up to sign, and the retrieval order."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from gemrag.graph.ann import hnsw_index, hnsw_search, unit_rows32
from gemrag.graph.knn_ann import approximate_knn_similarity_matrix
from gemrag.graph.laplacian import adjacency_matrix, normalized_laplacian
from gemrag.graph.similarity import extend_similarity, knn_similarity_matrix
from gemrag.graph.spectrum import eigenpairs
from gemrag.strategies.gem.search import PreparedGraph


def clustered(
    n: int, m: int, topics: int, seed: int = 0, d: int = 64, spread: float = 0.6
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n`` chunk vectors around ``topics`` centres (unit-normal centres, ``spread`` the chunks' noise), ``m``
    question vectors per chunk near their chunk (float32), the owners; topics of very different sizes."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((topics, d))
    sizes = rng.dirichlet(np.full(topics, 0.7))
    topic = rng.choice(topics, size=n, p=sizes)
    chunks = (centres[topic] + spread * rng.standard_normal((n, d))).astype(np.float32)
    questions = (np.repeat(chunks, m, axis=0) + 0.8 * rng.standard_normal((n * m, d))).astype(np.float32)
    return chunks, questions, np.repeat(np.arange(n, dtype=np.int64), m)


def top_lists(S: sp.csr_matrix, k: int) -> list[set[int]]:
    """Each row's ``k`` largest off-diagonal entries as column sets."""
    out = []
    for i in range(S.shape[0]):
        lo, hi = S.indptr[i], S.indptr[i + 1]
        cols, vals = S.indices[lo:hi], S.data[lo:hi]
        off = cols != i
        out.append(set(cols[off][np.argsort(-vals[off], kind="stable")[:k]].tolist()))
    return out


@pytest.fixture(scope="module")
def graphs() -> tuple[np.ndarray, np.ndarray, np.ndarray, sp.csr_matrix, sp.csr_matrix]:
    # diffuse, overlapping topics: one connected graph whose top eigenvalues are apart (1, 0.90, 0.88, 0.80), so
    # its top eigenvectors are defined; 12 tight topics would give 12 eigenvalues ~1 and an arbitrary basis
    chunks, questions, owner = clustered(3000, 5, topics=4, spread=2.5)
    exact = knn_similarity_matrix(chunks, questions, owner, 16)
    approx = approximate_knn_similarity_matrix(chunks, questions, owner, 16)
    return chunks, questions, owner, exact, approx


def test_neighbour_lists_recall_and_values(graphs: tuple) -> None:
    _, _, _, exact, approx = graphs
    assert (approx - approx.T).count_nonzero() == 0
    want, got = top_lists(exact, 16), top_lists(approx, 16)
    recall = np.mean([len(w & g) / len(w) for w, g in zip(want, got, strict=True)])
    assert recall >= 0.98, recall
    both = exact.multiply(approx != 0).tocsr()
    diff = abs(both - approx.multiply(exact != 0)).max()
    assert diff < 1e-5  # the pairs it keeps carry the exact values (float32 products)
    assert np.allclose(approx.diagonal(), exact.diagonal(), atol=1e-5)


def test_top_eigenvectors_equal_up_to_sign(graphs: tuple) -> None:
    _, _, _, exact, approx = graphs
    ve, xe = eigenpairs(normalized_laplacian(exact, diagonal="zero"), 4)
    va, xa = eigenpairs(normalized_laplacian(approx, diagonal="zero"), 4)
    assert np.min(np.abs(np.diff(ve))) > 0.01  # distinct eigenvalues: the vectors are defined up to sign
    assert np.allclose(va, ve, atol=0.02), (va, ve)  # measured: within 0.01 (1.3% of the pairs missed)
    cosines = np.abs(np.sum(xe * xa, axis=0))
    assert np.all(cosines > 0.995), cosines


def test_retrieval_order_identical_on_fixed_queries(graphs: tuple) -> None:
    chunks, questions, owner, exact, approx = graphs
    rng = np.random.default_rng(7)
    queries = chunks[rng.choice(chunks.shape[0], 30, replace=False)] + 0.5 * rng.standard_normal((30, 64))
    walk_e = PreparedGraph.prepare(questions, owner, chunks, adjacency_matrix(exact, diagonal="zero"))
    walk_a = PreparedGraph.prepare(questions, owner, chunks, adjacency_matrix(approx, diagonal="zero"))
    for q in queries:
        for budget in (4, 8):
            assert walk_a.search(q, budget)[0].tolist() == walk_e.search(q, budget)[0].tolist()


def test_extending_the_approximate_graph_keeps_its_pairs() -> None:
    chunks, questions, owner = clustered(400, 3, topics=4, seed=3)
    S = approximate_knn_similarity_matrix(chunks[:390], questions[: 390 * 3], owner[: 390 * 3], 8)
    big = extend_similarity(S, chunks, questions, owner, k=8, low_memory=True)
    assert abs(big - extend_similarity(S, chunks, questions, owner, k=8)).max() < 1e-5  # float32 = float64
    assert big.shape == (400, 400)
    old = big[:390, :390]
    assert abs(old.multiply(S != 0) - S).max() < 1e-9  # old pairs kept with their values
    assert all(big[i].nnz >= 8 for i in range(390, 400))  # each new node has its k links


def test_tiny_inputs_and_errors() -> None:
    chunks, questions, owner = clustered(3, 2, topics=1)
    S = approximate_knn_similarity_matrix(chunks, questions, owner, 5)
    assert S.shape == (3, 3) and (S != S.T).nnz == 0
    assert approximate_knn_similarity_matrix(chunks[:1], questions[:2], owner[:2], 5).nnz == 1  # the diagonal
    with pytest.raises(ValueError, match="k must be"):
        approximate_knn_similarity_matrix(chunks, questions, owner, 0)
    with pytest.raises(ValueError, match="candidates"):
        approximate_knn_similarity_matrix(chunks, questions, owner, 2, candidates=0)


def test_hnsw_search_finds_exact_nearest_on_easy_data() -> None:
    x = unit_rows32(clustered(2000, 1, topics=20, seed=5)[0])
    sims, labels = hnsw_search(hnsw_index(x), x[:200], 10)
    exact = np.argsort(-(x[:200] @ x.T), axis=1)[:, :10]
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(labels.tolist(), exact.tolist(), strict=True)])
    assert recall >= 0.95
    assert np.all(np.diff(sims, axis=1) <= 1e-6)  # best first
    assert unit_rows32(np.zeros((2, 3))).sum() == 0  # zero rows stay zero


def test_the_large_paths_looser_lanczos_gives_the_same_eigenpairs(graphs: tuple) -> None:
    L = normalized_laplacian(graphs[4], diagonal="zero")
    values, vectors = eigenpairs(L, 4, method="sparse")
    loose_values, loose_vectors = eigenpairs(L, 4, method="sparse", tol=1e-6, ncv=64)
    np.testing.assert_allclose(loose_values, values, atol=1e-6)
    assert np.all(np.abs(np.sum(vectors * loose_vectors, axis=0)) > 1 - 1e-6)


def test_searching_in_row_blocks_finds_the_same_candidate_pairs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The candidate pairs are searched and de-duplicated one block of rows at a time (bounded memory at 1M
    chunks); blocks that split the rows, including a pair found from both of its ends in different blocks, give
    the same graph as one block, and every pair is kept once with a < b."""
    import gemrag.graph.knn_ann as knn_ann

    V, Q, owner = clustered(600, 3, 6, seed=3)
    whole = approximate_knn_similarity_matrix(V, Q, owner, 8)
    vn, qs = unit_rows32(V), np.zeros_like(V)
    np.add.at(qs, owner, unit_rows32(Q))
    index = hnsw_index(vn)
    a1, b1 = knn_ann._search_candidate_pairs(index, qs, 24, block_rows=600)
    a2, b2 = knn_ann._search_candidate_pairs(index, qs, 24, block_rows=37)
    assert np.all(a1 < b1)
    assert len(set(zip(a1.tolist(), b1.tolist(), strict=True))) == a1.shape[0]
    assert np.array_equal(a1, a2) and np.array_equal(b1, b2)
    monkeypatch.setattr(knn_ann, "_SEARCH_BLOCK", 37)
    monkeypatch.setattr(knn_ann._search_candidate_pairs, "__defaults__", (37,))
    blocked = approximate_knn_similarity_matrix(V, Q, owner, 8)
    assert (whole != blocked).nnz == 0


def test_float16_questions_give_the_graph_of_their_float32_values() -> None:
    """Float16 question vectors (half the memory at 1M chunks) are read one block at a time into float32: the graph
    equals the one built from the same values cast to float32, and differs from the float32 originals' only by
    the cast's rounding (most rows keep the same neighbour set)."""
    V, Q, owner = clustered(800, 4, 6, seed=5)
    Q16 = Q.astype(np.float16)
    half = approximate_knn_similarity_matrix(V, Q16, owner, 8)
    cast = approximate_knn_similarity_matrix(V, Q16.astype(np.float32), owner, 8)
    assert (half != cast).nnz == 0
    full = approximate_knn_similarity_matrix(V, Q, owner, 8)
    h, f = half.toarray(), full.toarray()
    both = (h != 0) & (f != 0)
    assert np.abs(h - f)[both].max() < 1e-2  # the pairs both keep: values within the cast's rounding
    same = np.mean([set(half[i].indices) == set(full[i].indices) for i in range(800)])
    assert same > 0.9


def test_as_matrix_keeps_float16_only_when_asked_and_checks_every_block() -> None:
    from gemrag.graph import validate

    x = np.ones((5, 3), dtype=np.float16)
    assert validate.as_matrix(x, "x", half=True).dtype == np.float16
    assert validate.as_matrix(x, "x").dtype == np.float64
    big = np.zeros((validate._FINITE_ROWS + 3, 2), dtype=np.float32)
    big[-1, 1] = np.nan  # past the first block
    with pytest.raises(ValueError, match="NaN"):
        validate.as_matrix(big, "big")
