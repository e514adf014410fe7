"""benchmarks/abstention.py: the precision and recall of abstaining (below an evidence threshold, when the model
declines, or either), the ROC AUC of the evidence score, and the labels of unanswerable questions, on hand-computed
cases and on a published LoCoMo run."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from gemrag.answers.reading import NOT_FOUND
from gemrag.eval.categories import is_unanswerable
from gemrag.eval.datasets import Question
from paths import REPO, load_script

SCRIPT = REPO / "benchmarks" / "abstention.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_script(SCRIPT, "benchmark_abstention")


SCORES = [
    {"score": 0.1, "unanswerable": True, "declined": False},
    {"score": 0.2, "unanswerable": False, "declined": False},
    {"score": 0.3, "unanswerable": True, "declined": False},
    {"score": 0.6, "unanswerable": False, "declined": True},
    {"score": 0.7, "unanswerable": True, "declined": True},
]


def test_detect_separates_precision_recall_and_loss(bench: ModuleType) -> None:
    # 3 abstained, 1 of them unanswerable; 2 unanswerable in all; 3 answerable, 2 of them lost
    out = bench.detect([True, True, True, False, False], [True, False, False, True, False])
    assert (out["questions"], out["unanswerable"], out["abstained"], out["hits"], out["answerable_lost"]) == (
        5,
        2,
        3,
        1,
        2,
    )
    assert out["precision"] == pytest.approx(1 / 3) and out["recall"] == pytest.approx(1 / 2)
    assert out["lost_share"] == pytest.approx(2 / 3)
    for name in ("precision", "recall", "lost_share"):
        low, high = out[f"{name}_ci"]
        assert 0.0 <= low <= out[name] <= high <= 1.0
    assert out["recall_ci"][0] < out["recall_ci"][1]  # two different values resampled: an interval of some width


def test_detect_without_a_denominator_says_none(bench: ModuleType) -> None:
    out = bench.detect([False, False], [False, False])
    assert out["precision"] is None and out["precision_ci"] is None and out["recall"] is None
    assert out["lost_share"] == 0.0
    with pytest.raises(ValueError):
        bench.detect([True], [True, False])


def test_sweep_by_evidence_and_by_evidence_or_model(bench: ModuleType) -> None:
    low, mid = bench.sweep(SCORES, [0.15, 0.35])
    assert (low["threshold"], low["abstained"], low["precision"], low["recall"]) == (0.15, 1, 1.0, pytest.approx(1 / 3))
    assert (mid["abstained"], mid["hits"], mid["answerable_lost"]) == (3, 2, 1)
    assert mid["precision"] == pytest.approx(2 / 3) and mid["recall"] == pytest.approx(2 / 3)
    either = bench.sweep(SCORES, [0.15], model=True)[0]  # score < 0.15 or declined: questions 1, 4 and 5
    assert (either["abstained"], either["hits"], either["answerable_lost"]) == (3, 2, 1)
    assert either["recall"] == pytest.approx(2 / 3) and either["lost_share"] == pytest.approx(1 / 2)


def test_auc_of_a_low_score(bench: ModuleType) -> None:
    # pairs (unanswerable, answerable) with the unanswerable lower: (0.1, 0.2), (0.1, 0.6), (0.3, 0.6) of 6
    assert bench.auc(SCORES) == pytest.approx(3 / 6)
    assert bench.auc(SCORES[:4]) == pytest.approx(0.75)
    assert bench.auc([{"score": 0.5, "unanswerable": True}, {"score": 0.5, "unanswerable": False}]) == 0.5
    assert bench.auc(SCORES[:1]) is None


def test_declined_is_the_scorers_rule_and_the_memorys_abstention(bench: ModuleType) -> None:
    for answer in (
        "Not mentioned in the conversation",
        "(b) Not mentioned in the conversation",
        "No information available.",
        NOT_FOUND,
    ):
        assert bench.declined({"answer": answer}), answer
    assert bench.declined({"answer": "", "reading": {"abstained": True}})
    for answer in ("Melanie", "It was mentioned on Monday", "unknown", "", None):
        assert not bench.declined({"answer": answer}), answer


def _question(answers: list[str], category: str | None = None, **metadata: object) -> Question:
    return Question(id="q", doc_ids=["d"], question="?", answers=answers, category=category, metadata=metadata)


def test_unanswerable_labels() -> None:
    assert is_unanswerable("locomo", _question(["Not mentioned in the conversation"], "5"))
    assert not is_unanswerable("locomo", _question(["Sweden"], "4"))
    assert not is_unanswerable("qasper", _question(["Yes"], "5"))  # category 5 is LoCoMo's only
    assert is_unanswerable("qasper", _question(["Unanswerable"], "none"))
    assert not is_unanswerable("qasper", _question(["Unanswerable", "BERT"], "none"))  # one annotator answered
    assert not is_unanswerable("qasper", _question([]))
    assert is_unanswerable("covid_qa", _question([], is_impossible=True))


def test_measure_a_published_locomo_run(bench: ModuleType, tmp_path: Path) -> None:
    """The model detector's recall on LoCoMo's category 5 is the category's published F1 (the same rule)."""
    for suffix in (".json", ".records.jsonl.gz"):
        shutil.copy(REPO / "results" / f"locomo-anchored-plain{suffix}", tmp_path)
    source = bench.load_source(tmp_path / "locomo-anchored-plain.records.jsonl.gz")
    records = source["records"]
    assert source["kind"] == "locomo" and source["llm"] == "llama_cpp:qwen2.5-coder-1.5b" and len(records) == 79
    assert [r["question_id"] for r in records if r["unanswerable"]] == [
        r["question_id"] for r in records if r["category"] == "5"
    ]
    summary, rows = bench.measure(source, [0.4], None)
    assert [(s["questions"], s["unanswerable"], s["answered"], s["auc"]) for s in summary] == [(79, 21, 79, None)]
    (model,) = rows  # no evidence without the run's memories: the model's declines only
    c5 = [r["scores"]["f1"] for r in records if r["category"] == "5"]
    assert model["detector"] == "model" and model["recall"] == pytest.approx(sum(c5) / len(c5))
    assert model["hits"] == sum(c5) and model["answerable_lost"] == model["abstained"] - model["hits"]


def test_measure_with_evidence_gives_the_three_detectors(bench: ModuleType) -> None:
    records = [
        {"question_id": f"q{i}", "strategy": "fused", "answer": a, "unanswerable": u}
        for i, (a, u) in enumerate([("x", True), ("y", False), ("not mentioned", True), ("z", False)])
    ]
    evidence = {("q0", "fused"): 0.1, ("q1", "fused"): 0.5, ("q2", "fused"): 0.6, ("q3", "fused"): 0.7}
    summary, rows = bench.measure({"name": "run", "records": records}, [0.3], evidence)
    assert summary[0]["auc"] == pytest.approx(0.75)  # q0 below both answerable, q2 below one of them
    by = {r["detector"]: r for r in rows}
    assert (by["evidence"]["abstained"], by["evidence"]["hits"]) == (1, 1)
    assert (by["model"]["abstained"], by["model"]["hits"], by["model"]["threshold"]) == (1, 1, None)
    assert (by["evidence or model"]["abstained"], by["evidence or model"]["recall"]) == (2, 1.0)


def test_bad_source_is_one_error_line() -> None:
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "no-such-run", "--no-evidence"], capture_output=True, text=True, check=False
    )
    assert out.returncode == 2 and "error: no-such-run: no such run directory" in out.stderr


def test_kept_vectors_embed_each_text_once(bench: ModuleType) -> None:
    from fakes import HashEmbedder
    from gemrag.answers.shaping import evidence_score

    inner = HashEmbedder()
    kept = bench.KeptVectors(inner)
    texts = ["Caroline went to a support group. She liked it.", "Melanie paints sunsets."]
    first = evidence_score("Who paints?", texts, kept)
    assert first == pytest.approx(evidence_score("Who paints?", texts, HashEmbedder()))
    embedded = inner.texts_embedded
    assert evidence_score("Who went to a group?", texts, kept) > 0 and inner.texts_embedded == embedded + 1
    assert kept.embed([]).shape == (0, inner.dim) and kept.dim == inner.dim


def _locomo_run(tmp_path: Path) -> tuple[Path, Path]:
    """A LoCoMo file of one conversation with an answerable and an adversarial question, and a run directory still
    going (records and run.json, no results.json) that answered both."""
    conversation = {
        "speaker_a": "Caroline",
        "speaker_b": "Melanie",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Caroline", "dia_id": "D1:1", "text": "I went to a support group yesterday."},
            {"speaker": "Melanie", "dia_id": "D1:2", "text": "I painted a sunset last week."},
        ],
    }
    qa = [
        {"question": "What did Melanie paint?", "answer": "a sunset", "evidence": ["D1:2"], "category": 4},
        {"question": "What did Caroline paint?", "adversarial_answer": "a sunset", "evidence": [], "category": 5},
    ]
    data = tmp_path / "mini.json"
    data.write_text(json.dumps([{"sample_id": "conv-1", "conversation": conversation, "qa": qa}]), encoding="utf-8")
    from gemrag.eval.loading import load_dataset

    ids = [q.id for q in load_dataset("locomo", data).questions]
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"dataset": "locomo:mini", "llm": "fake:llm"}), encoding="utf-8")
    answers = ["a sunset", "Not mentioned in the conversation"]
    lines = [
        json.dumps({"question_id": i, "strategy": "fused", "group": "conv-1", "answer": a, "context": [1]})
        for i, a in zip(ids, answers, strict=True)
    ]
    (run / "records.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return run, data


def test_a_run_still_going_is_read_with_its_dataset(bench: ModuleType, tmp_path: Path) -> None:
    run, data = _locomo_run(tmp_path)
    with pytest.raises(FileNotFoundError, match="--dataset"):
        bench.load_source(run)
    source = bench.load_source(run, data)
    assert source["kind"] == "locomo" and source["llm"] == "fake:llm"
    assert [r["unanswerable"] for r in source["records"]] == [False, True]
    _, rows = bench.measure(source, [0.4], None)
    assert [(r["detector"], r["abstained"], r["precision"], r["recall"], r["llm"]) for r in rows] == [
        ("model", 1, 1.0, 1.0, "fake:llm")
    ]
