"""Tests of gemrag.graph.laplacian and gemrag.graph.spectrum (paper III.B.1, Remarks 1-3)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg

from gemrag.graph import (
    SpectrumReport,
    adjacency_matrix,
    eigenpairs,
    estimate_num_themes,
    normalized_laplacian,
    spectral_energy,
    spectrum_report,
    symmetrize,
    theme_members,
)
from gemrag.graph.spectrum import _fix_signs

R2 = 1 / np.sqrt(2.0)


def _random_similarity(rng: np.random.Generator, n: int) -> np.ndarray:
    """Random symmetric non-negative S with unit diagonal (so diag(S - I) = 0)."""
    x = rng.uniform(0.0, 1.0, size=(n, n))
    s = (x + x.T) / 2
    np.fill_diagonal(s, 1.0)
    return s


def _block_similarity(rng: np.random.Generator, sizes: list[int], inside: float, across: float) -> np.ndarray:
    """Remark 1's modular S: strong diagonal blocks, weak off-diagonal blocks, unit diagonal."""
    labels = np.repeat(np.arange(len(sizes)), sizes)
    same = labels[:, None] == labels[None, :]
    noise = rng.uniform(0.0, 0.1, size=same.shape)
    s = np.where(same, inside - noise, across * noise * 10)
    s = (s + s.T) / 2
    np.fill_diagonal(s, 1.0)
    return s


# ---------------------------------------------------------------- laplacian


def test_symmetrize_dense_and_sparse() -> None:
    S = np.array([[1.0, 2.0], [0.0, 1.0]])
    np.testing.assert_allclose(symmetrize(S), [[1.0, 1.0], [1.0, 1.0]])
    out = symmetrize(sp.csr_matrix(S))
    assert sp.issparse(out)
    np.testing.assert_allclose(out.toarray(), [[1.0, 1.0], [1.0, 1.0]])


def test_laplacian_triangle_equal_weights() -> None:
    w = 0.4
    S = np.full((3, 3), w)
    np.fill_diagonal(S, 1.0)
    L = normalized_laplacian(S)
    # A = w (J - I), degree 2w, so L = (J - I) / 2
    np.testing.assert_allclose(L, (np.ones((3, 3)) - np.eye(3)) / 2, atol=1e-15)
    values, _ = eigenpairs(L)
    np.testing.assert_allclose(values, [1.0, -0.5, -0.5], atol=1e-12)


def test_laplacian_path_graph_entries_and_spectrum() -> None:
    # A = path 0-1-2 with unit weights: degrees (1, 2, 1), L_01 = L_12 = 1/sqrt(2)
    S = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0], [0.0, 1.0, 1.0]])
    L = normalized_laplacian(S)
    np.testing.assert_allclose(L, [[0, R2, 0], [R2, 0, R2], [0, R2, 0]], atol=1e-15)
    values, vectors = eigenpairs(L)
    # |1| = |-1|: the positive one first, then 0
    np.testing.assert_allclose(values, [1.0, -1.0, 0.0], atol=1e-12)
    # lambda_1's eigenvector is D^{1/2} 1 normalized: (1, sqrt2, 1) / 2
    np.testing.assert_allclose(vectors[:, 0], [0.5, R2, 0.5], atol=1e-12)
    # lambda = -1: (1, -sqrt2, 1)/2 up to sign; sign convention makes the largest-|x| entry positive
    np.testing.assert_allclose(vectors[:, 1], [-0.5, R2, -0.5], atol=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_laplacian_spectral_properties_random(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 40))
    S = _random_similarity(rng, n)
    L = normalized_laplacian(S)
    np.testing.assert_allclose(L, L.T, atol=1e-15)
    values, vectors = eigenpairs(L)
    assert np.all(values <= 1 + 1e-9) and np.all(values >= -1 - 1e-9)
    assert values[0] == pytest.approx(1.0, abs=1e-9)
    assert np.sum(values) == pytest.approx(0.0, abs=1e-9)  # paper property (1): trace 0
    assert np.trace(L) == pytest.approx(0.0, abs=1e-12)
    degree = (S - np.eye(n)).sum(axis=1)
    perron = np.sqrt(degree) / np.linalg.norm(np.sqrt(degree))
    np.testing.assert_allclose(vectors[:, 0], perron, atol=1e-9)
    np.testing.assert_allclose(L @ vectors, vectors * values, atol=1e-9)


def test_laplacian_zero_degree_node() -> None:
    # node 2 has no similarity to anyone: zero row/column, no NaN, lambda_1 still 1
    S = np.array([[1.0, 0.5, 0.0], [0.5, 1.0, 0.0], [0.0, 0.0, 1.0]])
    L = normalized_laplacian(S)
    assert np.all(np.isfinite(L))
    np.testing.assert_allclose(L, [[0, 1, 0], [1, 0, 0], [0, 0, 0]], atol=1e-15)
    values, _ = eigenpairs(L)
    np.testing.assert_allclose(values, [1.0, -1.0, 0.0], atol=1e-12)
    # an entirely edgeless graph gives the zero matrix
    np.testing.assert_array_equal(normalized_laplacian(np.eye(3)), np.zeros((3, 3)))


def test_laplacian_clips_negative_similarities() -> None:
    S = np.array([[1.0, 0.5, -0.3], [0.5, 1.0, 0.2], [-0.3, 0.2, 1.0]])
    A = adjacency_matrix(S)
    np.testing.assert_allclose(A, [[0, 0.5, 0], [0.5, 0, 0.2], [0, 0.2, 0]])
    L = normalized_laplacian(S)
    d = np.array([0.5, 0.7, 0.2])
    np.testing.assert_allclose(L, A / np.sqrt(np.outer(d, d)), atol=1e-15)
    with pytest.raises(ValueError, match="negative degree"):
        normalized_laplacian(np.array([[1.0, -0.5], [-0.5, 1.0]]), clip_negative=False)


def test_laplacian_rejects_asymmetric() -> None:
    with pytest.raises(ValueError, match="symmetric"):
        normalized_laplacian(np.array([[1.0, 0.9], [0.1, 1.0]]))
    normalized_laplacian(np.array([[1.0, 0.9], [0.1, 1.0]]), check_symmetric=False)


def test_laplacian_diagonal_modes() -> None:
    # S as built from 3 questions per node has diag ~3, not 1: S - I keeps self-loops of weight 2
    S = np.array([[3.0, 1.0], [1.0, 3.0]])
    literal = normalized_laplacian(S)
    np.testing.assert_allclose(literal, [[2 / 3, 1 / 3], [1 / 3, 2 / 3]])
    assert np.trace(literal) == pytest.approx(4 / 3)
    zero = normalized_laplacian(S, diagonal="zero")
    np.testing.assert_allclose(zero, [[0.0, 1.0], [1.0, 0.0]])
    with pytest.raises(ValueError):
        adjacency_matrix(S, diagonal="bogus")  # type: ignore[arg-type]


@pytest.mark.parametrize("diagonal", ["subtract_identity", "zero"])
def test_laplacian_sparse_matches_dense(diagonal: str) -> None:
    rng = np.random.default_rng(7)
    S = _random_similarity(rng, 15) - 0.3  # some negative entries to clip
    dense = normalized_laplacian(S, diagonal=diagonal)  # type: ignore[arg-type]
    sparse = normalized_laplacian(sp.csr_matrix(S), diagonal=diagonal)  # type: ignore[arg-type]
    assert sp.issparse(sparse)
    np.testing.assert_allclose(sparse.toarray(), dense, atol=1e-15)


# ---------------------------------------------------------------- eigenpairs


def test_eigenpairs_order_by_magnitude_negative_first_when_larger() -> None:
    rng = np.random.default_rng(3)
    q, _ = np.linalg.qr(rng.normal(size=(4, 4)))
    M = q @ np.diag([0.3, -0.8, 1.0, 0.05]) @ q.T
    M = (M + M.T) / 2
    values, vectors = eigenpairs(M)
    np.testing.assert_allclose(values, [1.0, -0.8, 0.3, 0.05], atol=1e-12)
    np.testing.assert_allclose(M @ vectors, vectors * values, atol=1e-12)
    top2, vecs2 = eigenpairs(M, 2)
    np.testing.assert_allclose(top2, [1.0, -0.8], atol=1e-12)
    assert vecs2.shape == (4, 2)


def test_eigenpairs_path4_negative_before_smaller_positive() -> None:
    # path 0-1-2-3: random-walk spectrum cos(pi j / 3) = 1, 1/2, -1/2, -1
    A = np.diag([1.0, 1.0, 1.0], 1)
    S = A + A.T + np.eye(4)
    values, _ = eigenpairs(normalized_laplacian(S))
    np.testing.assert_allclose(values, [1.0, -1.0, 0.5, -0.5], atol=1e-12)


def test_eigenpairs_sign_convention() -> None:
    # two nodes, one edge: lambda=-1 has |x| tie (1,-1)/sqrt2, the lowest index is made positive
    values, vectors = eigenpairs(np.array([[0.0, 1.0], [1.0, 0.0]]))
    np.testing.assert_allclose(values, [1.0, -1.0])
    np.testing.assert_allclose(vectors, [[R2, R2], [R2, -R2]], atol=1e-12)
    # on a random matrix: each column's largest-|x| entry is positive, and repeated calls agree
    L = normalized_laplacian(_random_similarity(np.random.default_rng(11), 20))
    _, v1 = eigenpairs(L)
    np.testing.assert_array_equal(eigenpairs(L.copy())[1], v1)
    # the convention is a property of the vector, not of the solver's run: relabelling the nodes
    # permutes the components of every eigenvector without flipping any sign
    perm = np.random.default_rng(12).permutation(20)
    _, v_perm = eigenpairs(L[np.ix_(perm, perm)])
    np.testing.assert_allclose(v_perm, v1[perm], atol=1e-10)
    peak = v1[np.argmax(np.abs(v1), axis=0), np.arange(v1.shape[1])]
    assert np.all(peak > 0)


def test_sign_convention_near_ties_use_lowest_index() -> None:
    # |x_0| and |x_1| differ only by rounding noise: x_0 decides, so the vector is flipped
    x = np.array([[-0.7071067811865475], [0.7071067811865476], [0.0]])
    np.testing.assert_array_equal(_fix_signs(x), -x)


def test_eigenpairs_dense_and_sparse_paths_agree_on_200_nodes() -> None:
    rng = np.random.default_rng(42)
    n = 200
    labels = np.repeat(np.arange(4), 50)
    prob = np.where(labels[:, None] == labels[None, :], 0.3, 0.02)
    x = np.triu((rng.uniform(size=(n, n)) < prob) * rng.uniform(0.5, 1.0, size=(n, n)), 1)
    S = x + x.T + np.eye(n)
    L = normalized_laplacian(S)
    dense_vals, dense_vecs = eigenpairs(L, method="dense")
    L_sparse = normalized_laplacian(sp.csr_matrix(S))
    sparse_vals, sparse_vecs = eigenpairs(L_sparse, 6)  # auto -> eigsh for sparse input
    forced_vals, _ = eigenpairs(L, 6, method="sparse")
    np.testing.assert_allclose(sparse_vals, dense_vals[:6], atol=1e-8)
    np.testing.assert_allclose(forced_vals, dense_vals[:6], atol=1e-8)
    # lambda_1 is simple: identical vectors thanks to the sign convention
    np.testing.assert_allclose(sparse_vecs[:, 0], dense_vecs[:, 0], atol=1e-8)
    # the 4 planted themes: same invariant subspace (projectors agree)
    p_dense = dense_vecs[:, :4] @ dense_vecs[:, :4].T
    p_sparse = sparse_vecs[:, :4] @ sparse_vecs[:, :4].T
    np.testing.assert_allclose(p_sparse, p_dense, atol=1e-6)
    assert estimate_num_themes(dense_vals) == 4


def test_eigenpairs_capped_lanczos_hands_over_to_lobpcg_with_a_warning() -> None:
    """With ``maxiter`` ARPACK stops after that many restarts; LOBPCG then refines the top eigenpairs (bounded
    time, GEM's large path) and says so. On a planted 4-block graph it still finds the dense solver's top 4."""
    rng = np.random.default_rng(7)
    n = 400
    labels = np.repeat(np.arange(4), 100)
    prob = np.where(labels[:, None] == labels[None, :], 0.1, 0.01)
    x = np.triu((rng.uniform(size=(n, n)) < prob) * rng.uniform(0.5, 1.0, size=(n, n)), 1)
    S = sp.csr_matrix(x + x.T)
    L = normalized_laplacian(S, diagonal="zero")
    dense_vals, dense_vecs = eigenpairs(L.toarray(), method="dense")
    with pytest.warns(RuntimeWarning, match="did not converge in 1 restarts"):
        vals, vecs = eigenpairs(L, 4, method="sparse", ncv=9, maxiter=1)
    np.testing.assert_allclose(vals, dense_vals[:4], atol=1e-4)
    np.testing.assert_allclose(vecs @ vecs.T, dense_vecs[:, :4] @ dense_vecs[:, :4].T, atol=1e-3)
    with pytest.raises(scipy.sparse.linalg.ArpackNoConvergence):  # the uncapped call still raises as ARPACK does
        scipy.sparse.linalg.eigsh(L, k=4, which="LM", ncv=9, maxiter=1)


def test_eigenpairs_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="symmetric"):
        eigenpairs(np.array([[0.0, 1.0], [0.0, 0.0]]))
    with pytest.raises(ValueError):
        eigenpairs(np.eye(3), 0)
    with pytest.raises(ValueError):
        eigenpairs(np.eye(3), method="magic")  # type: ignore[arg-type]


# ---------------------------------------------------------------- theme_members (Remark 1)


def test_theme_members_two_blocks() -> None:
    # blocks interleaved on purpose: A = {0, 2, 4, 6} (4 nodes), B = {1, 3, 5} (3 nodes)
    n = 7
    block = np.arange(n) % 2
    S = np.where(block[:, None] == block[None, :], 1.0, 0.05)
    np.fill_diagonal(S, 1.0)
    values, vectors = eigenpairs(normalized_laplacian(S), 2)
    # degrees: A: 3 + 3*0.05 = 3.15, B: 2 + 4*0.05 = 2.2; lambda_2 is the block-indicator mode
    assert values[1] > 0.8
    second = vectors[:, 1]
    assert np.all(second[block == 0] < 0) and np.all(second[block == 1] > 0)
    # the smaller block B carries the larger |x| (orthogonality to D^{1/2} 1), so it is the positive pole
    members = theme_members(vectors, 3)
    assert len(members) == 2
    assert set(members[1].tolist()) == {1, 3, 5}
    assert members[1].dtype == np.int64
    # "abs" ranking with e = 4 mixes the two poles: all of B plus one node of A
    mixed = set(theme_members(vectors, 4, by="abs")[1].tolist())
    assert {1, 3, 5} < mixed and len(mixed & {0, 2, 4, 6}) == 1
    # signed ranking with e = 4: B first, then A's best node (ties -> lowest index 0)
    np.testing.assert_array_equal(np.sort(theme_members(vectors, 4)[1][:3]), [1, 3, 5])


def test_theme_members_ties_and_large_e() -> None:
    x = np.array([[0.5, 0.1], [0.5, -0.9], [0.2, 0.3]])
    members = theme_members(x, 2)
    np.testing.assert_array_equal(members[0], [0, 1])  # tie 0.5/0.5 -> lower index first
    np.testing.assert_array_equal(members[1], [2, 0])
    np.testing.assert_array_equal(theme_members(x, 2, by="abs")[1], [1, 2])
    np.testing.assert_array_equal(theme_members(x, 10)[0], [0, 1, 2])
    with pytest.raises(ValueError):
        theme_members(x, 0)


# ---------------------------------------------------------------- Remark 2 and Remark 3


def test_estimate_num_themes_three_blocks() -> None:
    rng = np.random.default_rng(0)
    S = _block_similarity(rng, [4, 5, 6], inside=0.9, across=0.01)
    values, _ = eigenpairs(normalized_laplacian(S), 10)
    assert np.all(values[:3] > 0.9)
    assert estimate_num_themes(values) == 3
    # exact block-diagonal (complete blocks, no cross edges): 1, 1, 1, then -1/(m-1) values
    exact = np.kron(np.eye(3), np.ones((5, 5)))
    values, _ = eigenpairs(normalized_laplacian(exact))
    np.testing.assert_allclose(values[:3], 1.0)
    np.testing.assert_allclose(values[3:], -0.25, atol=1e-12)
    assert estimate_num_themes(values) == 3


@pytest.mark.parametrize(
    ("eigenvalues", "kwargs", "expected"),
    [
        ([1.0, 0.95, 0.9, 0.2, 0.1], {}, 3),  # gap after beta_3
        ([1.0, 0.3, 0.2, 0.1], {}, 1),  # beta_2 not close to 1: a single theme
        ([1.0, 0.9, 0.85, 0.8], {}, 4),  # truncated: beta_5 := 0, lower bound K
        ([1.0, 0.9, 0.75, 0.1], {"cutoff": 0.1}, 2),  # first gap 0.15 > 0.1
        ([1.0, 0.9, 0.75, 0.1], {"cutoff": 0.2}, 3),  # 0.15 no longer significant
        ([1.0, 0.6, 0.1], {"min_ratio": 0.5}, 2),
        ([1.0, 0.6, 0.1], {"min_ratio": 0.7}, 1),  # 0.6 not "close to 1" any more
        ([1.0, -0.9, 0.8, 0.1], {}, 3),  # literal magnitude order: -0.9 holds index 2
        ([0.2, 1.0, 0.1, 0.97], {}, 2),  # input order does not matter
        ([], {}, 0),
        ([0.0, 0.0], {}, 0),
        ([1.0], {}, 1),
    ],
)
def test_estimate_num_themes_rule(eigenvalues: list[float], kwargs: dict[str, float], expected: int) -> None:
    assert estimate_num_themes(eigenvalues, **kwargs) == expected


def test_spectral_energy() -> None:
    assert spectral_energy([1.0, -0.5, -0.5]) == pytest.approx(1.5)
    assert spectral_energy([]) == 0.0
    # well-separated blocks have a higher Lambda than a uniform graph (Remark 3)
    rng = np.random.default_rng(1)
    blocks = normalized_laplacian(_block_similarity(rng, [5, 5, 5], inside=0.9, across=0.01))
    uniform = np.full((15, 15), 0.5)
    np.fill_diagonal(uniform, 1.0)
    uniform = normalized_laplacian(uniform)  # eigenvalues 1 and -1/14 (x14): Lambda = 1 + 1/14
    assert spectral_energy(eigenpairs(uniform)[0]) == pytest.approx(1 + 1 / 14)
    assert spectral_energy(eigenpairs(blocks)[0]) > 2.5


def test_spectrum_report_triangle_and_sparse() -> None:
    S = np.full((3, 3), 0.4)
    np.fill_diagonal(S, 1.0)
    L = normalized_laplacian(S)
    report = spectrum_report(L)
    assert isinstance(report, SpectrumReport)
    assert report.n == 3
    np.testing.assert_allclose(report.top_eigenvalues, [1.0, -0.5, -0.5], atol=1e-12)
    assert report.estimated_themes == 1
    assert report.spectral_energy == pytest.approx(1.5)  # ||L||_F^2 = 6 * 0.25
    assert report.trace == pytest.approx(0.0)
    assert report.as_dict()["top_eigenvalues"] == pytest.approx([1.0, -0.5, -0.5])
    # sparse input, top smaller than n: Lambda still covers the full spectrum
    rng = np.random.default_rng(2)
    S = _block_similarity(rng, [6, 6, 6], inside=0.9, across=0.01)
    L = normalized_laplacian(S)
    sparse_report = spectrum_report(sp.csr_matrix(L), top=5)
    assert sparse_report.top_eigenvalues.shape == (5,)
    assert sparse_report.estimated_themes == 3
    assert sparse_report.spectral_energy == pytest.approx(spectral_energy(eigenpairs(L)[0]))
