"""Tests of the normalized dataset schema and the loader registry (gemrag.eval.datasets)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from gemrag.errors import ConfigError, InputError
from gemrag.eval.datasets import Dataset, Document, Question, build_dataset
from gemrag.eval.loading import available_kinds, load_dataset


def _q(qid: str, doc_ids: list[str], **kw: object) -> Question:
    return Question(id=qid, doc_ids=doc_ids, question=f"question {qid}?", **kw)


def _per_doc_dataset() -> Dataset:
    docs = [Document(id=f"d{i}", title=f"T{i}", text=f"text {i}") for i in range(3)]
    questions = [_q("q1", ["d0"]), _q("q2", ["d1"]), _q("q3", ["d0"]), _q("q4", ["d2"])]
    return Dataset(name="toy", kind="toy", documents=docs, questions=questions)


def _corpus_dataset() -> Dataset:
    docs = [Document(id=f"p{i}", text=f"passage {i}") for i in range(4)]
    questions = [_q("q1", ["corpus"]), _q("q2", ["corpus"])]
    return Dataset(name="mh", kind="musique", documents=docs, questions=questions, corpus_id="corpus")


def test_question_answer_is_inserted_into_answers() -> None:
    q = _q("q", ["d"], answer="Paris", answers=["paris, france"])
    assert q.answers == ["Paris", "paris, france"]
    q2 = _q("q", ["d"], answer="Paris", answers=["x", "Paris"])
    assert q2.answers == ["x", "Paris"]


def test_question_gold_index_validation() -> None:
    ok = _q("q", ["d"], choices=["a", "b"], gold_index=1)
    assert ok.gold_index == 1
    with pytest.raises(ValidationError, match="out of range"):
        _q("q", ["d"], choices=["a", "b"], gold_index=2)
    with pytest.raises(ValidationError, match="no choices"):
        _q("q", ["d"], gold_index=0)
    with pytest.raises(ValidationError):
        Question(id="q", doc_ids=[], question="?")  # at least one document


def test_dataset_rejects_duplicates_and_dangling_ids() -> None:
    doc = Document(id="d", text="t")
    with pytest.raises(ValidationError, match="duplicate document id"):
        Dataset(name="n", kind="k", documents=[doc, doc], questions=[])
    with pytest.raises(ValidationError, match="duplicate question id"):
        Dataset(name="n", kind="k", documents=[doc], questions=[_q("q", ["d"]), _q("q", ["d"])])
    with pytest.raises(ValidationError, match="unknown document"):
        Dataset(name="n", kind="k", documents=[doc], questions=[_q("q", ["nope"])])
    with pytest.raises(ValidationError, match="collides"):
        Dataset(name="n", kind="k", documents=[doc], questions=[], corpus_id="d")


def test_questions_by_document_and_documents_for() -> None:
    ds = _per_doc_dataset()
    grouped = ds.questions_by_document()
    assert list(grouped) == ["d0", "d1", "d2"]
    assert [q.id for q in grouped["d0"]] == ["q1", "q3"]
    assert [d.id for d in ds.documents_for(ds.questions[1])] == ["d1"]
    corpus = _corpus_dataset()
    assert len(corpus.documents_for(corpus.questions[0])) == 4
    assert list(corpus.questions_by_document()) == ["corpus"]


def test_groups() -> None:
    groups = _per_doc_dataset().groups()
    assert [g.doc_ids for g in groups] == [("d0",), ("d1",), ("d2",)]
    assert [[q.id for q in g.questions] for g in groups] == [["q1", "q3"], ["q2"], ["q4"]]
    assert [d.id for d in groups[0].documents] == ["d0"]
    corpus_groups = _corpus_dataset().groups()
    assert len(corpus_groups) == 1
    assert len(corpus_groups[0].documents) == 4 and len(corpus_groups[0].questions) == 2


def test_limit_keeps_needed_documents_only() -> None:
    ds = _per_doc_dataset()
    small = ds.limit(2)
    assert [q.id for q in small.questions] == ["q1", "q2"]
    assert [d.id for d in small.documents] == ["d0", "d1"]
    assert len(ds.questions) == 4  # original untouched
    assert ds.limit(0).documents == [] and ds.limit(0).questions == []
    assert ds.limit(100) == ds
    with pytest.raises(ValueError):
        ds.limit(-1)


def test_limit_keeps_whole_shared_corpus() -> None:
    small = _corpus_dataset().limit(1)
    assert len(small.questions) == 1
    assert len(small.documents) == 4
    assert small.corpus_id == "corpus"


def test_select_by_documents_and_per_category_keeps_file_order() -> None:
    docs = [Document(id=f"d{i}", text=f"text {i}") for i in range(2)]
    cats = ["1", "2", "1", "1", "5", "2", None, "5", None]
    questions = [_q(f"q{i}", ["d0"], category=c) for i, c in enumerate(cats)] + [_q("other", ["d1"], category="1")]
    ds = Dataset(name="conv", kind="locomo", documents=docs, questions=questions)
    only_d0 = ds.select(documents=["d0"])
    assert [d.id for d in only_d0.documents] == ["d0"] and len(only_d0.questions) == 9
    two = ds.select(documents=["d0"], per_category=2)
    assert [q.id for q in two.questions] == ["q0", "q1", "q2", "q4", "q5", "q6", "q7", "q8"]
    one = ds.select(per_category=1)  # both documents: "other" is a second category-1 question, dropped
    assert [q.id for q in one.questions] == ["q0", "q1", "q4", "q6"] and [d.id for d in one.documents] == ["d0"]
    assert ds.select() == ds
    with pytest.raises(ValueError, match="unknown document id.*'nope'"):
        ds.select(documents=["nope"])
    with pytest.raises(ValueError, match="per_category"):
        ds.select(per_category=0)


def test_select_by_category_keeps_the_file_ids_and_names_the_known_categories() -> None:
    docs = [Document(id=f"d{i}", text=f"text {i}") for i in range(2)]
    cats = ["1", "3", "1", "3", "5"]
    questions = [_q(f"q{i}", ["d0"], category=c) for i, c in enumerate(cats)] + [_q("other", ["d1"], category="1")]
    ds = Dataset(name="conv", kind="locomo", documents=docs, questions=questions)
    three = ds.select(categories=["3"])
    assert [q.id for q in three.questions] == ["q1", "q3"] and [d.id for d in three.documents] == ["d0"]
    first = ds.select(categories=["1", "5"], per_category=1)  # the category filter comes before per_category
    assert [q.id for q in first.questions] == ["q0", "q4"]
    with pytest.raises(ValueError, match=r"unknown question category '4'; the file has 1, 3, 5"):
        ds.select(categories=["4"])
    with pytest.raises(ValueError, match="none given"):
        ds.select(categories=[])


def test_build_dataset_turns_validation_errors_into_input_error(tmp_path: Path) -> None:
    doc = Document(id="d", text="t")
    with pytest.raises(InputError, match=r"broken\.json.*duplicate document id 'd'"):
        build_dataset(tmp_path / "broken.json", "toy", [doc, doc], [])


def test_registry_lists_kinds() -> None:
    kinds = available_kinds()
    for kind in ("quality", "qasper", "musique", "hotpotqa", "2wiki", "hipporag", "covid_qa", "locomo"):
        assert kind in kinds


def test_unknown_kind_and_bad_option(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown dataset kind 'nope'"):
        load_dataset("nope", tmp_path / "x.json")
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({"article": "a", "questions": []}) + "\n")
    with pytest.raises(ConfigError, match="does not accept option 'per_question_corpus'"):
        load_dataset("quality", path, per_question_corpus=True)


def test_kind_aliases(tmp_path: Path) -> None:
    path = tmp_path / "covid.json"
    path.write_text(json.dumps({"data": [{"paragraphs": [{"context": "c", "document_id": 1, "qas": []}]}]}))
    assert load_dataset("CovidQA", path).kind == "covid_qa"
