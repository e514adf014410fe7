"""The selection-bias section of a multiple-choice evaluation's report (:mod:`gemrag.eval.selection_bias`): each
letter's gold and chosen counts and recall, and Zheng et al.'s RStd, on hand-computed records; no section for a
free-form run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_eval_report import record, summarized

from gemrag.eval.report import markdown_report
from gemrag.eval.selection_bias import letter_table, selection_bias_markdown


def _mc(qid: str, run: str, gold: int, choice: int | None) -> dict[str, Any]:
    return record(qid, run, correct=choice == gold, gold_index=gold, choice=choice)


# gold letters A, A, B, B, C, D; a run that leans to D: right on A once, on D, and wrong elsewhere by answering D
LEANING = [(0, 0), (0, 3), (1, 3), (1, 1), (2, 3), (3, 3)]


def test_recalls_and_rstd_are_counted_per_letter() -> None:
    table = letter_table([_mc(f"q{i}", "x", g, c) for i, (g, c) in enumerate(LEANING)])
    assert table is not None
    assert table.n == 6 and table.gold == [2, 2, 1, 1] and table.chosen == [1, 1, 0, 4]
    assert table.recall == [0.5, 0.5, 0.0, 1.0]
    assert table.rstd == pytest.approx(0.353553, abs=1e-6)  # the population std of 0.5, 0.5, 0, 1
    no_choice = letter_table([_mc("a", "x", 0, None), _mc("b", "x", 1, 1)])
    assert no_choice is not None and no_choice.chosen == [0, 1] and no_choice.recall == [0.0, 1.0]
    assert letter_table([record("f", "x", f1=0.5)]) is None  # free form: no gold letter
    single = letter_table([_mc("s", "x", 2, 2)])
    assert (
        single is not None and single.gold == [0, 0, 1] and single.recall == [None, None, 1.0] and single.rstd is None
    )


def test_the_report_shows_each_runs_letters(tmp_path: Path) -> None:
    records = [_mc(f"q{i}", "lean", g, c) for i, (g, c) in enumerate(LEANING)]
    records += [_mc(f"q{i}", "even", g, g) for i, (g, _) in enumerate(LEANING)]
    md = markdown_report(summarized(tmp_path, records, ["lean", "even"]))
    assert "## Selection bias (multiple choice)" in md
    assert "| lean | 2 / 1 / 50.0 | 2 / 1 / 50.0 | 1 / 0 / 0.0 | 1 / 4 / 100.0 | 35.4 |" in md
    assert "| even | 2 / 2 / 100.0 | 2 / 2 / 100.0 | 1 / 1 / 100.0 | 1 / 1 / 100.0 | 0.0 |" in md
    free = [record("a", "bm25", f1=0.5, em=0.0), record("b", "bm25", f1=1.0, em=1.0)]
    assert "Selection bias" not in markdown_report(summarized(tmp_path, free, ["bm25"], kind="musique"))
    assert selection_bias_markdown(["none"], records) == []  # a run with no records
