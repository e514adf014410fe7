"""benchmarks/abstention.py: the precision and recall of abstaining below a threshold, and the ROC AUC of the
evidence score as a detector of unanswerable questions, on hand-computed cases."""

from __future__ import annotations

import math
from pathlib import Path
from types import ModuleType

import pytest

from paths import load_script

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "abstention.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_script(SCRIPT, "benchmark_abstention")


SCORES = [
    {"score": 0.1, "unanswerable": True},
    {"score": 0.2, "unanswerable": False},
    {"score": 0.3, "unanswerable": True},
    {"score": 0.6, "unanswerable": False},
]


def test_sweep_counts_precision_and_recall(bench: ModuleType) -> None:
    low, mid, high = bench.sweep(SCORES, [0.15, 0.35, 0.05])
    assert (low["abstained"], low["precision"], low["recall"], low["answerable_lost"]) == (1, 100.0, 50.0, 0)
    assert (mid["abstained"], mid["precision"], mid["recall"], mid["answerable_lost"]) == (3, 200 / 3, 100.0, 1)
    assert high["abstained"] == 0 and math.isnan(high["precision"]) and high["recall"] == 0.0


def test_auc_of_a_low_score(bench: ModuleType) -> None:
    # pairs (unanswerable, answerable) with the unanswerable lower: (0.1, 0.2), (0.1, 0.6), (0.3, 0.6) of 4
    assert bench.auc(SCORES) == pytest.approx(0.75)
    assert bench.auc([{"score": 0.5, "unanswerable": True}, {"score": 0.5, "unanswerable": False}]) == 0.5
    assert math.isnan(bench.auc(SCORES[:1]))
