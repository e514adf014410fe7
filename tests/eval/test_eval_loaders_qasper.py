"""Qasper loader tests: the official JSON form and the L-Eval JSON Lines form."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gemrag.errors import InputError
from gemrag.eval.loaders.qasper import qasper_answer_text
from gemrag.eval.loading import load_dataset


def _answer(**kw: Any) -> dict[str, Any]:
    info = {
        "unanswerable": False,
        "extractive_spans": [],
        "yes_no": None,
        "free_form_answer": "",
        "evidence": [],
        "highlighted_evidence": [],
    }
    info.update(kw)
    return {"answer": info, "annotation_id": "a", "worker_id": "w"}


def _official() -> dict[str, Any]:
    return {
        "1909.00001": {
            "title": "A Paper",
            "abstract": "We study things.",
            "full_text": [
                {"section_name": "Introduction", "paragraphs": ["Para one.", "", "Para two."]},
                {"section_name": "Method ::: Details", "paragraphs": ["Details here."]},
                {"section_name": "Empty", "paragraphs": []},
            ],
            "qas": [
                {
                    "question": "Which models?",
                    "question_id": "qa1",
                    "answers": [
                        _answer(extractive_spans=["BERT", "ELMo"], evidence=["Para one."]),
                        _answer(free_form_answer="BERT and ELMo"),
                        _answer(extractive_spans=["BERT", "ELMo"]),  # duplicate text kept once
                    ],
                },
                {
                    "question": "Is it good?",
                    "question_id": "qa2",
                    "answers": [_answer(yes_no=True), _answer(yes_no=False)],
                },
                {"question": "Cost?", "question_id": "qa3", "answers": [_answer(unanswerable=True)]},
                {"question": "Unlabelled?", "question_id": "qa4", "answers": []},
            ],
        },
        "1909.00002": {"title": "Second", "abstract": "", "full_text": [], "qas": []},
    }


def test_official_format(tmp_path: Path) -> None:
    path = tmp_path / "qasper-dev-v0.3.json"
    path.write_text(json.dumps(_official()))
    ds = load_dataset("qasper", path)
    assert [d.id for d in ds.documents] == ["1909.00001", "1909.00002"]
    doc = ds.documents[0]
    assert doc.title == "A Paper"
    assert doc.text == (
        "Abstract\nWe study things.\n\nIntroduction\nPara one.\nPara two.\n\nMethod ::: Details\nDetails here.\n\nEmpty"
    )
    q1, q2, q3, q4 = ds.questions
    assert q1.id == "qa1" and q1.doc_ids == ["1909.00001"]
    assert q1.answer == "BERT, ELMo"
    assert q1.answers == ["BERT, ELMo", "BERT and ELMo"]
    assert q1.category == "extractive"
    assert q1.metadata["answer_types"] == ["extractive", "abstractive", "extractive"]
    assert q1.metadata["evidence"][0] == ["Para one."]
    assert q2.answers == ["Yes", "No"] and q2.category == "boolean"
    assert q3.answer == "Unanswerable" and q3.category == "none"
    assert q4.answer is None and q4.answers == [] and q4.category is None


def test_official_list_of_papers(tmp_path: Path) -> None:
    papers = [{"id": pid, **paper} for pid, paper in _official().items()]
    path = tmp_path / "qasper.json"
    path.write_text(json.dumps(papers))
    ds = load_dataset("qasper", path)
    assert [d.id for d in ds.documents] == ["1909.00001", "1909.00002"]
    assert len(ds.questions) == 4


def test_answer_text_rules() -> None:
    assert qasper_answer_text(_answer(unanswerable=True)["answer"]) == ("Unanswerable", "none")
    assert qasper_answer_text(_answer(extractive_spans=["a", "b"])["answer"]) == ("a, b", "extractive")
    assert qasper_answer_text(_answer(free_form_answer="free")["answer"]) == ("free", "abstractive")
    assert qasper_answer_text(_answer(yes_no=False)["answer"]) == ("No", "boolean")
    assert qasper_answer_text(_answer()["answer"]) is None


def test_leval_format(tmp_path: Path) -> None:
    records = [
        {"input": "Introduction\nText A.", "instructions": ["Q1?", "Q2?"], "outputs": ["A1", "A2"], "evaluation": "f1"},
        {"input": "Introduction\nText B.", "instructions": ["Q3?"], "outputs": ["A3"], "source": "scientific_qa"},
    ]
    path = tmp_path / "qasper_leval.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    ds = load_dataset("qasper", path)
    assert [d.id for d in ds.documents] == ["qasper-0", "qasper-1"]
    assert ds.documents[1].text == "Introduction\nText B."
    assert [q.id for q in ds.questions] == ["qasper-0_1", "qasper-0_2", "qasper-1_1"]
    assert ds.questions[1].answer == "A2" and ds.questions[1].answers == ["A2"]
    assert ds.questions[1].doc_ids == ["qasper-0"]
    assert ds.questions[0].metadata == {"evaluation": "f1"}


def test_leval_length_mismatch_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    good = {"input": "x", "instructions": ["Q"], "outputs": ["A"]}
    bad = {"input": "x", "instructions": ["Q1", "Q2"], "outputs": ["A"]}
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(InputError, match=r"bad\.jsonl, line 2: .*one answer per instruction"):
        load_dataset("qasper", path)


def test_unrecognized_shape(tmp_path: Path) -> None:
    path = tmp_path / "weird.json"
    path.write_text(json.dumps({"paper": {"title": "no qas"}}))
    with pytest.raises(InputError, match=r"weird\.json: unrecognized Qasper record"):
        load_dataset("qasper", path)
