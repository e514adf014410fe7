"""Bootstrap statistics tests (gemrag.eval.stats) on cases with known answers."""

from __future__ import annotations

import numpy as np
import pytest

from gemrag.eval.stats import bootstrap_ci, paired_bootstrap_diff


def test_bootstrap_constant_values_give_degenerate_interval() -> None:
    assert bootstrap_ci([0.5] * 10) == (0.5, 0.5, 0.5)
    assert bootstrap_ci([1.0]) == (1.0, 1.0, 1.0)


def test_bootstrap_mean_and_ordering() -> None:
    values = [1, 0, 1, 1, 0, 1, 1, 1, 0, 1]
    mean, low, high = bootstrap_ci(values, n_resamples=2000)
    assert mean == pytest.approx(0.7)
    assert 0.0 <= low < mean < high <= 1.0


def test_bootstrap_seed_reproducibility() -> None:
    values = np.random.default_rng(1).random(50)
    assert bootstrap_ci(values, seed=3) == bootstrap_ci(values, seed=3)
    assert bootstrap_ci(values, seed=3) != bootstrap_ci(values, seed=4)


def test_bootstrap_matches_explicit_resampling() -> None:
    values = np.array([0.0, 1.0, 1.0, 0.5, 0.25])
    rng = np.random.default_rng(7)
    means = values[rng.integers(0, 5, size=(500, 5))].mean(axis=1)
    expected = np.quantile(means, [0.05, 0.95])
    _, low, high = bootstrap_ci(values, n_resamples=500, confidence=0.9, seed=7)
    assert (low, high) == pytest.approx(tuple(expected))


def test_bootstrap_agrees_with_scipy_percentile() -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    values = np.random.default_rng(0).binomial(1, 0.6, size=300).astype(float)
    _, low, high = bootstrap_ci(values, n_resamples=10000, seed=0)
    ref = scipy_stats.bootstrap(
        (values,), np.mean, n_resamples=10000, confidence_level=0.95, method="percentile", random_state=0
    ).confidence_interval
    assert low == pytest.approx(ref.low, abs=0.01)
    assert high == pytest.approx(ref.high, abs=0.01)
    # and with the normal approximation: half-width ~ 1.96 * sd / sqrt(n)
    half = 1.96 * values.std(ddof=1) / np.sqrt(values.size)
    assert (high - low) / 2 == pytest.approx(half, rel=0.1)


def test_bootstrap_large_input_uses_blocks() -> None:
    values = np.random.default_rng(2).random(5000)
    mean, low, high = bootstrap_ci(values, n_resamples=1500)
    assert low < mean < high
    assert high - low < 0.05


def test_paired_identical_arrays() -> None:
    a = [1.0, 0.0, 1.0, 0.5]
    assert paired_bootstrap_diff(a, a) == (0.0, 0.0, 0.0, 1.0)


def test_paired_constant_shift() -> None:
    b = np.random.default_rng(3).random(20)
    diff, low, high, p = paired_bootstrap_diff(b + 0.25, b)
    assert diff == pytest.approx(0.25)
    assert low == pytest.approx(0.25) and high == pytest.approx(0.25)
    assert p == 0.0


def test_paired_strictly_better_everywhere_excludes_zero() -> None:
    rng = np.random.default_rng(4)
    b = rng.random(40)
    a = b + rng.uniform(0.01, 0.2, size=40)
    diff, low, high, p = paired_bootstrap_diff(a, b)
    assert 0 < low < diff < high
    assert p == 0.0
    diff_r, low_r, high_r, p_r = paired_bootstrap_diff(b, a)  # symmetric
    assert diff_r == pytest.approx(-diff) and high_r < 0 and p_r == 0.0


def test_paired_p_value_definition() -> None:
    a = np.array([1.0, 0.0, 1.0, 1.0, 0.0, 1.0])
    b = np.array([0.0, 0.0, 1.0, 0.0, 1.0, 1.0])
    rng = np.random.default_rng(11)
    means = (a - b)[rng.integers(0, 6, size=(800, 6))].mean(axis=1)
    expected_p = min(1.0, 2 * min(np.sum(means <= 0), np.sum(means >= 0)) / 800)
    diff, low, high, p = paired_bootstrap_diff(a, b, n_resamples=800, seed=11)
    assert diff == pytest.approx(1 / 6)
    assert p == pytest.approx(expected_p)
    assert (low, high) == pytest.approx(tuple(np.quantile(means, [0.025, 0.975])))
    assert 0.0 < p <= 1.0 and low < 0 < high  # a noisy difference: not significant


def test_paired_seed_reproducibility() -> None:
    rng = np.random.default_rng(5)
    a, b = rng.random(30), rng.random(30)
    assert paired_bootstrap_diff(a, b, seed=9) == paired_bootstrap_diff(a, b, seed=9)


@pytest.mark.parametrize(
    "call",
    [
        lambda: bootstrap_ci([]),
        lambda: bootstrap_ci([[1.0, 2.0]]),
        lambda: bootstrap_ci([1.0, float("nan")]),
        lambda: bootstrap_ci([1.0], n_resamples=0),
        lambda: bootstrap_ci([1.0], confidence=1.0),
        lambda: paired_bootstrap_diff([1.0, 2.0], [1.0]),
        lambda: paired_bootstrap_diff([], []),
    ],
)
def test_invalid_inputs(call: object) -> None:
    with pytest.raises(ValueError):
        call()  # type: ignore[operator]
