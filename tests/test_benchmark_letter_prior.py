"""benchmarks/letter_prior.py: PriDe's letter prior and the accuracies of one order, the orders averaged and the
debiased order, on records built from a known prior and known option probabilities."""

from __future__ import annotations

import math
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from paths import REPO, load_script

SCRIPT = REPO / "benchmarks" / "letter_prior.py"
PRIOR = [0.1, 0.1, 0.1, 0.7]  # a model that leans hard to D


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_script(SCRIPT, "benchmark_letter_prior")


def _record(qid: str, group: str, content: list[float]) -> dict[str, Any]:
    """A question whose letter distributions under the four cyclic orders are PRIOR times the options' content."""
    orders = []
    for i in range(4):
        raw = [math.log(PRIOR[d] * content[(d + i) % 4]) for d in range(4)]
        total = math.log(sum(math.exp(r) for r in raw))
        orders.append([r - total for r in raw])
    return {"question_id": qid, "group": group, "reading": {"order_letter_logprobs": orders}}


def test_the_prior_is_found_and_dividing_it_out_fixes_the_lean(bench: ModuleType) -> None:
    # the right option (0) is the most probable by content, but D's lean wins the original order
    records = [_record(f"{g}_{k}", g, [0.4, 0.2, 0.2, 0.2]) for g in ("s1", "s2") for k in range(3)]
    records.append({"question_id": "one", "group": "s1", "reading": {"order_letter_logprobs": [[0.0]]}})  # left out
    lines = bench.report(records, {r["question_id"]: 0 for r in records})
    assert lines[0] == "6 questions in 2 groups, 4 orders each"
    assert lines[1] == "letter prior (all questions): A 0.100, B 0.100, C 0.100, D 0.700"
    assert lines[2] == "most probable letter, original order: 0/6 = 0.0 %"
    assert lines[3] == "orders averaged: 6/6 = 100.0 %"  # every option held D once: the lean cancels
    assert lines[4] == "original order debiased, prior of the other groups: 6/6 = 100.0 %"
    assert "on the other 3: original 0/3 = 0.0 %, debiased 3/3 = 100.0 %" in lines[6]


def test_records_without_every_order_are_refused(bench: ModuleType, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="every cyclic order"):
        bench.report([{"question_id": "q", "group": "g", "reading": {"form": "plain"}}], {"q": 0})
    assert bench.main(["nothing-published", "--data", str(tmp_path / "none.jsonl"), "--results", str(tmp_path)]) == 1


def test_the_gold_options_come_from_the_records_or_the_file(bench: ModuleType, tmp_path: Path) -> None:
    kept = [dict(_record("q1", "g", [0.4, 0.2, 0.2, 0.2]), gold_index=2)]
    assert bench.gold_options(kept, None) == {"q1": 2}
    with pytest.raises(ValueError, match="give --data"):
        bench.gold_options([_record("q1", "g", [0.4, 0.2, 0.2, 0.2])], None)  # an older record: no gold_index
