"""Tests of gemrag.graph.similarity: v_ij averaging, the similarity matrix S, and kNN sparsification."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from gemrag.graph import (
    knn_similarity_matrix,
    knn_sparsify,
    similarity_matrix,
    utility_question_vectors,
)

SQRT2 = np.sqrt(2.0)


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _naive_similarity(nodes: np.ndarray, questions: np.ndarray, owner: np.ndarray) -> np.ndarray:
    """Reference: the paper's double loop, s_tv = sum_{i: owner=t} cos(v_ti, v_v)."""
    n = nodes.shape[0]
    out = np.zeros((n, n))
    for t in range(n):
        mine = [questions[j] for j in range(len(owner)) if owner[j] == t] or [nodes[t]]
        for v in range(n):
            out[t, v] = sum(_cos(q, nodes[v]) for q in mine)
    return out


# ---------------------------------------------------------------- utility_question_vectors


def test_utility_question_vectors_average_question_and_owner_chunk() -> None:
    questions = np.array([[1, 2], [3, 4], [5, 6]], dtype=np.float32)
    chunks = np.array([[1, 0], [0, 1]], dtype=np.float32)
    out = utility_question_vectors(questions, chunks, np.array([0, 1, 1]))
    # v_ij = (E(q_ij) + v_i) / 2: (1+1, 2+0)/2, (3+0, 4+1)/2, (5+0, 6+1)/2
    np.testing.assert_allclose(out, [[1.0, 1.0], [1.5, 2.5], [2.5, 3.5]])
    assert out.dtype == np.float32
    assert out.shape == (3, 2)


def test_utility_question_vectors_float64_when_inputs_mixed() -> None:
    out = utility_question_vectors(np.ones((1, 2), dtype=np.float32), np.zeros((1, 2)), np.array([0]))
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, [[0.5, 0.5]])


@pytest.mark.parametrize(
    ("questions", "owner"),
    [
        (np.ones((2, 3)), np.array([0, 1])),  # wrong d
        (np.ones((2, 2)), np.array([0, 2])),  # owner out of range
        (np.ones((2, 2)), np.array([0, -1])),  # negative owner
        (np.ones((2, 2)), np.array([0.0, 1.0])),  # float owner
        (np.ones((2, 2)), np.array([0])),  # wrong owner length
    ],
)
def test_utility_question_vectors_rejects_bad_input(questions: np.ndarray, owner: np.ndarray) -> None:
    with pytest.raises(ValueError):
        utility_question_vectors(questions, np.ones((2, 2)), owner)


# ---------------------------------------------------------------- similarity_matrix


def test_similarity_matrix_hand_computed() -> None:
    # Non-unit vectors on purpose: the cosine must normalize them.
    nodes = np.array([[2.0, 0.0], [0.0, -3.0], [1.0, 1.0]])  # unit: (1,0), (0,-1), (1,1)/sqrt2
    questions = np.array(
        [
            [5.0, 0.0],  # node 0, unit (1, 0)
            [0.0, 2.0],  # node 0, unit (0, 1)
            [3.0, 4.0],  # node 1, unit (0.6, 0.8)
        ]
    )
    owner = np.array([0, 0, 1], dtype=np.int64)
    # node 2 has no questions: its own vector (1,1)/sqrt2 is its only question vector.
    expected = np.array(
        [
            # row 0: (1,0)+(0,1) against each node
            [1.0 + 0.0, 0.0 + -1.0, 1 / SQRT2 + 1 / SQRT2],
            # row 1: (0.6, 0.8) against each node
            [0.6, -0.8, (0.6 + 0.8) / SQRT2],
            # row 2: (1,1)/sqrt2 against each node
            [1 / SQRT2, -1 / SQRT2, 1.0],
        ]
    )
    S = similarity_matrix(nodes, questions, owner)
    assert S.dtype == np.float64
    assert S.shape == (3, 3)
    np.testing.assert_allclose(S, expected, atol=1e-12)
    # the paper's S is not symmetric: t's questions vs v's text differ from v's questions vs t's text
    assert S[0, 1] != pytest.approx(S[1, 0])


def test_similarity_matrix_is_scale_invariant_and_accepts_float32() -> None:
    rng = np.random.default_rng(1)
    nodes = rng.normal(size=(5, 4))
    questions = rng.normal(size=(9, 4))
    owner = rng.integers(0, 5, size=9)
    base = similarity_matrix(nodes, questions, owner)
    scaled = similarity_matrix(
        nodes * rng.uniform(0.1, 10, size=(5, 1)),
        (questions * rng.uniform(0.1, 10, size=(9, 1))).astype(np.float32),
        owner,
    )
    np.testing.assert_allclose(scaled, base, atol=1e-6)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_similarity_matrix_matches_naive_double_loop(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, m_total, d = 7, 12, 5
    nodes = rng.normal(size=(n, d))
    owner = rng.integers(0, n - 2, size=m_total)  # nodes n-2, n-1 (and maybe others) have no questions
    questions = utility_question_vectors(rng.normal(size=(m_total, d)), nodes, owner)
    np.testing.assert_allclose(
        similarity_matrix(nodes, questions, owner), _naive_similarity(nodes, questions, owner), atol=1e-12
    )


def test_similarity_matrix_zero_utility_questions_is_cosine_matrix() -> None:
    # The paper's "0 utility questions" ablation: compare chunk embeddings directly.
    nodes = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, -2.0]])
    S = similarity_matrix(nodes, np.zeros((0, 2)), np.zeros(0, dtype=np.int64))
    unit = nodes / np.linalg.norm(nodes, axis=1, keepdims=True)
    np.testing.assert_allclose(S, unit @ unit.T, atol=1e-12)
    np.testing.assert_allclose(np.diag(S), 1.0)


def test_similarity_matrix_zero_vector_gives_zero_similarity() -> None:
    nodes = np.array([[1.0, 0.0], [0.0, 0.0]])
    S = similarity_matrix(nodes, np.array([[0.0, 0.0], [1.0, 1.0]]), np.array([0, 0]))
    assert np.all(np.isfinite(S))
    # row 0: zero question contributes 0; (1,1)/sqrt2 gives 1/sqrt2 against node 0, 0 against zero node 1
    np.testing.assert_allclose(S, [[1 / SQRT2, 0.0], [0.0, 0.0]], atol=1e-12)


def test_similarity_matrix_rejects_nan() -> None:
    with pytest.raises(ValueError):
        similarity_matrix(np.array([[np.nan, 1.0]]), np.ones((1, 2)), np.array([0]))


# ---------------------------------------------------------------- kNN sparsification


def test_knn_sparsify_hand_computed() -> None:
    S = np.array(
        [
            [1.0, 0.9, 0.1, 0.2],
            [0.7, 1.0, 0.3, 0.0],
            [0.1, 0.3, 1.0, 0.8],
            [0.4, 0.0, 0.6, 1.0],
        ]
    )
    # symmetric part: (0,1)=0.8 (0,2)=0.1 (0,3)=0.3 (1,2)=0.3 (1,3)=0.0 (2,3)=0.7
    # k=1 nearest: 0->1, 1->0, 2->3, 3->2 ; union = {01, 23}
    K = knn_sparsify(S, 1)
    assert sp.issparse(K)
    expected = np.array(
        [
            [1.0, 0.8, 0.0, 0.0],
            [0.8, 1.0, 0.0, 0.0],
            [0.0, 0.0, 1.0, 0.7],
            [0.0, 0.0, 0.7, 1.0],
        ]
    )
    np.testing.assert_allclose(K.toarray(), expected)
    # without the diagonal
    np.testing.assert_allclose(knn_sparsify(S, 1, keep_diagonal=False).toarray(), expected - np.eye(4))
    # k=2: 0->{1,3}, 1->{0,2}, 2->{3,1}, 3->{2,0}; union adds (0,3)=0.3 and (1,2)=0.3 but never (0,2),(1,3)
    K2 = knn_sparsify(S, 2).toarray()
    assert K2[0, 3] == pytest.approx(0.3) and K2[3, 0] == pytest.approx(0.3)
    assert K2[1, 2] == pytest.approx(0.3)
    assert K2[0, 2] == 0.0 and K2[1, 3] == 0.0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_knn_sparsify_properties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, k = 12, 3
    S = rng.uniform(-0.5, 1.0, size=(n, n))
    sym = (S + S.T) / 2
    K = knn_sparsify(S, k)
    dense = K.toarray()
    np.testing.assert_allclose(dense, dense.T)
    # kept entries carry the symmetric part's value; (t, v) kept iff v in knn(t) or t in knn(v)
    off = sym.copy()
    np.fill_diagonal(off, -np.inf)
    knn = np.argsort(-off, axis=1)[:, :k]
    member = np.zeros((n, n), dtype=bool)
    member[np.repeat(np.arange(n), k), knn.ravel()] = True
    member |= member.T
    np.fill_diagonal(member, True)
    pattern = np.zeros((n, n), dtype=bool)
    coo = K.tocoo()
    pattern[coo.row, coo.col] = True
    np.testing.assert_array_equal(pattern, member)
    np.testing.assert_allclose(dense[member], sym[member])
    # every row keeps at least k off-diagonal neighbours
    assert np.all((member.sum(axis=1) - 1) >= k)


def test_knn_sparsify_large_k_keeps_everything() -> None:
    rng = np.random.default_rng(5)
    S = rng.uniform(0.1, 1, size=(5, 5))
    np.testing.assert_allclose(knn_sparsify(S, 10).toarray(), (S + S.T) / 2)


def test_knn_sparsify_rejects_bad_k() -> None:
    with pytest.raises(ValueError):
        knn_sparsify(np.eye(3), 0)


@pytest.mark.parametrize(("seed", "block_size"), [(0, 1), (1, 3), (2, 100)])
def test_knn_similarity_matrix_matches_dense_path(seed: int, block_size: int) -> None:
    rng = np.random.default_rng(seed)
    n, d, k = 11, 6, 3
    nodes = rng.normal(size=(n, d))
    owner = rng.integers(0, n - 3, size=20)  # the last 3 nodes have no questions
    questions = utility_question_vectors(rng.normal(size=(20, d)), nodes, owner)
    expected = knn_sparsify(similarity_matrix(nodes, questions, owner), k).toarray()
    got = knn_similarity_matrix(nodes, questions, owner, k, block_size=block_size)
    np.testing.assert_allclose(got.toarray(), expected, atol=1e-12)
