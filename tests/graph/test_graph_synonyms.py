"""Synonym pairs (graph/synonyms.py): exact on hand-made vectors, HNSW recall against exact, errors."""

from __future__ import annotations

import numpy as np
import pytest

from gemrag.graph import synonym_pairs


def _unit(v: np.ndarray) -> np.ndarray:
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def _angles(degrees: list[float]) -> np.ndarray:
    """Unit vectors in the plane at the given angles: cos(a_i - a_j) is their similarity."""
    a = np.radians(np.asarray(degrees))
    return np.stack([np.cos(a), np.sin(a)], axis=1).astype(np.float32)


def _pairs(out: tuple[np.ndarray, np.ndarray, np.ndarray]) -> list[tuple[int, int]]:
    return list(zip(out[0].tolist(), out[1].tolist(), strict=True))


def test_exact_threshold_order_and_self_excluded() -> None:
    # angles 0, 10, 30, 90 degrees: cos 10 = 0.985, cos 20 = 0.940, cos 30 = 0.866, cos 60 = 0.5
    x = _angles([0, 10, 30, 90])
    src, dst, sim = synonym_pairs(x, threshold=0.8, top_k=10, method="exact")
    assert src.dtype == np.int64 and dst.dtype == np.int64 and sim.dtype == np.float32
    assert _pairs((src, dst, sim)) == [(0, 1), (0, 2), (1, 0), (1, 2), (2, 1), (2, 0)]
    np.testing.assert_allclose(sim, np.cos(np.radians([10, 30, 10, 20, 20, 30])), atol=1e-6)
    assert np.all(src != dst)


def test_exact_top_k_and_ties_and_duplicates() -> None:
    # rows 4 = row 0 and 3 = row 1 (bitwise duplicates, so their similarities tie exactly)
    x = _angles([0, 5, 10, 5, 0])
    src, dst, sim = synonym_pairs(x, threshold=0.9, top_k=2, method="exact")
    pairs = _pairs((src, dst, sim))
    row0 = [p for p in pairs if p[0] == 0]
    assert row0[0] == (0, 4) and row0[1] in {(0, 1), (0, 3)}  # the duplicate (cos 1) first; a tie at place k
    assert [p for p in pairs if p[0] == 2] == [(2, 1), (2, 3)]  # equal similarity: lower index first
    assert np.bincount(src, minlength=5).max() <= 2
    assert synonym_pairs(x, threshold=0.9, top_k=0, method="exact")[0].size == 0
    src, dst, _ = synonym_pairs(x, threshold=0.9, top_k=10, method="exact")
    assert _pairs((src, dst, _))[:4] == [(0, 4), (0, 1), (0, 3), (0, 2)]


def test_exact_eligible_mask_normalization_and_zero_rows() -> None:
    x = _angles([0, 10, 20, 30]) * np.array([[1.0], [3.0], [0.5], [2.0]], dtype=np.float32)  # not unit-norm
    x = np.vstack([x, np.zeros((1, 2), dtype=np.float32)])
    eligible = np.array([True, False, True, True, True])
    src, dst, sim = synonym_pairs(x, threshold=0.9, top_k=5, method="exact", eligible=eligible)
    assert 1 not in src and 1 not in dst  # ineligible
    assert 4 not in src and 4 not in dst  # all-zero row
    assert _pairs((src, dst, sim)) == [(0, 2), (2, 3), (2, 0), (3, 2)]
    np.testing.assert_allclose(sim, np.cos(np.radians([20, 10, 20, 10])), atol=1e-6)


def test_exact_blocks_agree_with_brute_force(monkeypatch: pytest.MonkeyPatch) -> None:
    import gemrag.graph.synonyms as syn

    rng = np.random.default_rng(0)
    x = _clustered(500, 32, rng)
    monkeypatch.setattr(syn, "_BLOCK_ROWS", 37)  # many blocks, and heavy rows (more than top_k hits)
    src, dst, sim = synonym_pairs(x, threshold=0.7, top_k=5, method="exact")
    full = x @ x.T
    np.fill_diagonal(full, -np.inf)
    for i in range(0, 500, 7):
        hits = np.flatnonzero(full[i] >= 0.7)
        mine = dst[src == i]
        assert len(mine) == min(5, len(hits))
        best = np.sort(full[i, hits])[::-1][: len(mine)]
        np.testing.assert_allclose(np.sort(sim[src == i])[::-1], best, atol=1e-6)
        assert np.all(np.diff(sim[src == i]) <= 0)


def _clustered(n: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """Unit vectors around n // 20 random centres; per-cluster noise sets the within-cluster cosine."""
    centres = rng.standard_normal((max(1, n // 20), d))
    label = rng.integers(0, centres.shape[0], n)
    sigma = rng.uniform(0.3, 0.8, centres.shape[0])[label, None]  # expected cos ~ 1 / (1 + sigma^2)
    return _unit(centres[label] + sigma * rng.standard_normal((n, d)))


def test_hnsw_recall_against_exact() -> None:
    rng = np.random.default_rng(1)
    x = _clustered(3000, 64, rng)
    exact = synonym_pairs(x, threshold=0.8, top_k=20, method="exact")
    approx = synonym_pairs(x, threshold=0.8, top_k=20, method="hnsw")
    assert len(exact[0]) > 3000  # the data do have pairs above the threshold
    e, a = set(_pairs(exact)), set(_pairs(approx))
    assert len(e & a) / len(e) >= 0.95
    src, dst, sim = approx
    recomputed = np.einsum("ij,ij->i", x[src], x[dst])
    np.testing.assert_allclose(sim, recomputed, atol=1e-5)
    assert sim.min() >= 0.8 and np.all(src != dst)
    assert np.all(np.diff(src) >= 0) and np.bincount(src).max() <= 20
    same_src = np.diff(src) == 0
    assert np.all(np.diff(sim)[same_src] <= 0)


def test_auto_and_hnsw_eligible() -> None:
    rng = np.random.default_rng(2)
    x = _clustered(400, 16, rng)
    eligible = rng.random(400) < 0.7
    auto_exact = synonym_pairs(x, 0.8, 10, eligible=eligible)  # 280 rows < exact_below
    exact = synonym_pairs(x, 0.8, 10, method="exact", eligible=eligible)
    for a, b in zip(auto_exact, exact, strict=True):
        np.testing.assert_array_equal(a, b)
    src, dst, _ = synonym_pairs(x, 0.8, 10, method="auto", exact_below=10, eligible=eligible)  # hnsw
    assert eligible[src].all() and eligible[dst].all()
    assert len(set(_pairs((src, dst, _))) & set(_pairs(exact))) / len(exact[0]) >= 0.95


def test_small_inputs() -> None:
    for x in (np.zeros((0, 4), dtype=np.float32), np.ones((1, 4), dtype=np.float32)):
        for method in ("exact", "hnsw"):
            src, dst, sim = synonym_pairs(x, method=method)
            assert src.shape == dst.shape == sim.shape == (0,)


def test_errors() -> None:
    x = _angles([0, 10, 20])
    with pytest.raises(ValueError, match="2-D"):
        synonym_pairs(np.ones(3))
    with pytest.raises(ValueError, match="NaN"):
        synonym_pairs(np.array([[np.nan, 1.0], [1.0, 0.0]]))
    with pytest.raises(ValueError, match="threshold"):
        synonym_pairs(x, threshold=1.5)
    with pytest.raises(ValueError, match="top_k"):
        synonym_pairs(x, top_k=-1)
    with pytest.raises(ValueError, match="method"):
        synonym_pairs(x, method="ivf")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="eligible"):
        synonym_pairs(x, eligible=np.ones(2, dtype=bool))
    with pytest.raises(ValueError, match="eligible"):
        synonym_pairs(x, eligible=np.ones(3))
