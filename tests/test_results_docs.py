"""The documentation's measured figures are generated from the published results in results/: regenerating every
marked figure of README.md and docs/**/*.md changes nothing (a figure edited by hand, or a record changed without
regenerating, fails here: run ``python -m gemrag.eval.publish_docs``), and every published result re-scores from
its committed per-question records to the figures it publishes (its costs too), and every paired comparison in
results/paired/ is recomputed from the published runs it pairs (its counts of questions scored higher, lower and
answered otherwise too, where the pairing has them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gemrag.eval.paired import load_paired, pair_published, paired_names
from gemrag.eval.publish_docs import MARK, differences, documents, render_file
from gemrag.eval.published import load_published, load_records, published_names
from gemrag.eval.published_costs import answer_costs
from paths import load_script

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "results"


def test_every_marked_figure_is_its_records() -> None:
    stale = []
    for path in documents(REPO):
        text, new = render_file(path, RESULTS)
        if text != new:
            stale.append(str(path.relative_to(REPO)))
    assert not stale, f"figures differ from results/ (run python -m gemrag.eval.publish_docs): {stale}"


def test_a_hand_edited_cell_of_a_benchmark_table_fails_the_check() -> None:
    page = REPO / "docs" / "results-forgetting.md"
    text = page.read_text(encoding="utf-8")
    tables = [m for m in MARK.finditer(text) if m["kind"] == "result-rows" and m["spec"].startswith("erase-cost ")]
    assert tables, "the erase-cost table is generated from results/erase-cost.json"
    body = tables[0]["body"]
    row = next(line for line in body.splitlines() if line.startswith("| postgres | 10,000 |"))
    cells = row.split(" | ")
    edited_row = " | ".join([*cells[:6], "0.01", *cells[7:]])  # the erase's seconds, typed by hand
    assert edited_row != row
    edited = text.replace(row, edited_row)
    found = differences(edited, RESULTS, "docs/results-forgetting.md")
    assert len(found) == 1 and "erase-cost store entries" in found[0] and "the document says" in found[0]
    assert differences(text, RESULTS, "docs/results-forgetting.md") == []


def test_the_readme_takes_its_retrieval_figures_from_records() -> None:
    marks = MARK.findall((REPO / "README.md").read_text(encoding="utf-8"))
    assert len(marks) >= 3
    runs = {spec.split()[0] for kind, spec, _ in marks if kind != "result-pair"}
    pairs = {spec.split()[0] for kind, spec, _ in marks if kind == "result-pair"}
    assert runs and runs <= set(published_names(RESULTS))
    assert pairs <= set(paired_names(RESULTS))  # a paired figure names a comparison of two published runs


@pytest.mark.parametrize("name", published_names(RESULTS))
def test_a_published_result_rescores_from_its_committed_records(name: str) -> None:
    run = load_published(name, RESULTS)
    assert (RESULTS / run.records_file).stat().st_size < 1_000_000  # committed records stay small
    rescore = load_script(REPO / "benchmarks" / "rescore_recall.py", "rescore_recall")
    rows = rescore.rescore_published(name, RESULTS)
    assert rows and all(r["same"] for r in rows), [r for r in rows if not r["same"]]


@pytest.mark.parametrize("name", paired_names(RESULTS))
def test_a_paired_comparison_is_recomputed_from_its_published_records(name: str) -> None:
    kept = load_paired(name, RESULTS)
    again = pair_published(
        name, kept.before, kept.after, RESULTS, strategies=kept.strategies, categories=kept.categories,
        metrics=list(kept.metrics),
    )  # fmt: skip
    assert again.costs == kept.costs and kept.costs  # each side's costs kept too
    assert again.metrics.keys() == kept.metrics.keys()
    for metric, figures in kept.metrics.items():
        counted = {"higher": None, "lower": None} if figures.higher is None else {}  # counted since: these only
        assert again.metrics[metric].model_copy(update=counted) == figures, metric
    assert kept.answers_changed in (None, again.answers_changed)


@pytest.mark.parametrize("name", published_names(RESULTS))
def test_a_published_results_costs_are_its_records(name: str) -> None:
    run = load_published(name, RESULTS)
    records = load_records(run, RESULTS)
    for strategy, result in run.strategies.items():
        assert result.costs == answer_costs(r for r in records if r["strategy"] == strategy), (name, strategy)


def test_published_answers_keep_what_a_rescore_of_the_answers_needs() -> None:
    answered = [n for n in published_names(RESULTS) if load_published(n, RESULTS).answer]
    assert answered
    for name in answered:
        for record in load_records(load_published(name, RESULTS), RESULTS):
            assert {"answer", "gold_answers", "tokens", "llm_calls", "answer_seconds"} <= set(record), name
            scores = record["scores"]  # a free-form answer's F1 and EM, or a multiple-choice answer's accuracy
            assert ("f1" in scores and "em" in scores) or "accuracy" in scores, name
