"""RAPTOR's clustering math (GMM + BIC, soft assignment, global/local, re-clustering) and k-means members.

No UMAP here: the reducer is injected (the identity), so these tests stay fast; the UMAP path is covered by
the integration test in test_strategy_raptor.py.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from gemrag.strategies.platform.clustering import (
    gmm_soft_clusters,
    kmeans_members,
    optimal_cluster_count,
    raptor_clusters,
)


def identity(X: np.ndarray, n_components: int, n_neighbors: int) -> np.ndarray:
    return X


def blobs(centers: list[list[float]], n: int = 20, scale: float = 0.05, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.concatenate([np.asarray(c) + rng.normal(scale=scale, size=(n, len(c))) for c in centers])


def test_bic_picks_three_clusters_on_three_blobs() -> None:
    X = blobs([[0, 0], [1, 0], [0, 1]])
    assert optimal_cluster_count(X, max_clusters=8) == 3
    assert optimal_cluster_count(X[:20], max_clusters=8) == 1  # one blob: one component
    assert optimal_cluster_count(X[:2]) == 1  # too few points to try more


def test_soft_assignment_puts_a_point_between_two_blobs_in_both() -> None:
    rng = np.random.default_rng(0)
    left = rng.normal(scale=0.2, size=(30, 2)) - [0.5, 0.0]
    X = np.concatenate([left, left * [-1, 1], [[0.0, 0.0]]])  # mirror-image blobs, point 60 in the middle
    low = gmm_soft_clusters(X, 0.1, max_clusters=6)
    assert len(low) == 2
    assert all(60 in c for c in low)
    assert sorted(set(c.tolist()) - {60} for c in low) == sorted([set(range(30)), set(range(30, 60))])
    high = gmm_soft_clusters(X, 0.6, max_clusters=6)  # above 1/k: every point in its best cluster only
    assert sum(60 in c for c in high) == 1
    assert sorted(len(c) for c in high) == [30, 31]
    assert all(c.dtype == np.int64 for c in low)


def test_two_stage_clustering_finds_the_blobs() -> None:
    X = blobs([[0, 0], [1, 0], [0, 1]])
    clusters = raptor_clusters(X, dim=2, reducer=identity, max_clusters=8)
    # global GMM: 3 blobs; local GMM inside each blob (20 > dim + 1 points): one component each
    assert sorted(c.tolist() for c in clusters) == [list(range(0, 20)), list(range(20, 40)), list(range(40, 60))]


def test_small_inputs_are_one_cluster_without_reduction() -> None:
    def must_not_run(X: np.ndarray, k: int, nn: int) -> np.ndarray:
        raise AssertionError("no reduction for so few points")

    X = np.random.default_rng(1).normal(size=(5, 384))
    assert [c.tolist() for c in raptor_clusters(X, dim=10, reducer=must_not_run)] == [[0, 1, 2, 3, 4]]
    assert [c.tolist() for c in raptor_clusters(X[:1], reducer=must_not_run)] == [[0]]


def test_oversized_clusters_are_reclustered_until_they_fit() -> None:
    X = blobs([[0, 0], [1, 0], [0, 1]])
    lengths = np.full(60, 10)
    # a blob holds 200 tokens; allow 120: each blob must be split again (recursively, then in order)
    clusters = raptor_clusters(X, lengths, 120, dim=2, reducer=identity, max_clusters=4)
    assert all(len(c) == 1 or lengths[c].sum() <= 120 for c in clusters)
    assert set(np.concatenate(clusters).tolist()) == set(range(60))
    # no mixing of blobs: re-clustering only splits a cluster
    assert all(len({int(i) // 20 for i in c}) == 1 for c in clusters)
    # without a limit the blobs stay whole
    assert len(raptor_clusters(X, lengths, 10_000, dim=2, reducer=identity, max_clusters=8)) == 3


def test_a_cluster_that_cannot_split_is_cut_in_order() -> None:
    X = np.zeros((4, 3))  # identical points: clustering cannot separate them
    clusters = raptor_clusters(X, [5, 5, 5, 5], 10, dim=10, reducer=identity)
    assert [c.tolist() for c in clusters] == [[0, 1], [2, 3]]


def test_kmeans_members_are_nearest_each_centroid() -> None:
    rng = np.random.default_rng(2)
    big = np.array([5.0, 0.0]) + rng.normal(scale=0.3, size=(7, 2))
    small = np.array([0.0, 5.0]) + rng.normal(scale=0.3, size=(4, 2))
    X = np.concatenate([small, big])  # small group first: themes are ordered by cluster size anyway
    members = kmeans_members(X, 2, 3)
    # by hand: with two well-separated groups the k-means centroids are the group means
    for got, rows in zip(members, (np.arange(4, 11), np.arange(0, 4)), strict=True):
        dist = np.linalg.norm(X[rows] - X[rows].mean(axis=0), axis=1)
        assert got.tolist() == rows[np.argsort(dist, kind="stable")[:3]].tolist()
    assert [len(m) for m in kmeans_members(X, 2, 50)] == [11, 11]


def test_invalid_arguments() -> None:
    X = blobs([[0, 0]], n=5)
    with pytest.raises(ValueError, match="threshold"):
        gmm_soft_clusters(X, 1.0)
    with pytest.raises(ValueError, match="k must be"):
        kmeans_members(X, 6, 2)
    with pytest.raises(ValueError, match="top_e"):
        kmeans_members(X, 2, 0)
    with pytest.raises(ValueError, match="lengths"):
        raptor_clusters(X, [1, 2], 10, reducer=identity)
    with pytest.raises(ValueError, match="max_length"):
        raptor_clusters(X, [1] * 5, None, reducer=identity)
    with pytest.raises(ValueError, match="no rows"):
        optimal_cluster_count(np.zeros((0, 2)))


def test_heavy_libraries_are_imported_lazily() -> None:
    code = (
        "import sys, gemrag.strategies.platform.clustering, gemrag.strategies.raptor.strategy, "
        "gemrag.strategies.baselines.bm25;"
        "print(sorted(m for m in ('umap', 'sklearn', 'bm25s', 'numba') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
