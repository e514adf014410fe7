"""Multi-hop loader tests: MuSiQue / HippoRAG, HotpotQA and 2WikiMultihopQA forms."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gemrag.errors import InputError
from gemrag.eval.loaders.multihop import join_sentences
from gemrag.eval.loading import load_dataset


def _para(idx: int, title: str, text: str, supporting: bool = False) -> dict[str, Any]:
    return {"idx": idx, "title": title, "paragraph_text": text, "is_supporting": supporting}


def _musique() -> list[dict[str, Any]]:
    return [
        {
            "id": "2hop__1_2",
            "question": "Who founded the publisher of J?",
            "answer": "G. Hall",
            "answer_aliases": ["Hall"],
            "answerable": True,
            "paragraphs": [
                _para(0, "J", "J is published by APA.", True),
                _para(1, "APA", "APA was founded by G. Hall.", True),
                _para(2, "Virginia", "Virginia is a state."),
            ],
        },
        {
            "id": "3hop1__3_4_5",
            "question": "Where is Virginia?",
            "answer": "USA",
            "answer_aliases": [],
            "paragraphs": [
                _para(0, "Virginia", "Virginia is a   state."),  # same passage, other whitespace
                _para(1, "Virginia", "Virginia is a song.", True),  # same title, other passage
            ],
        },
    ]


def _write(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def test_musique_without_corpus_builds_deduplicated_corpus(tmp_path: Path) -> None:
    path = tmp_path / "musique_dev.jsonl"  # official MuSiQue is JSON Lines
    path.write_text("".join(json.dumps(r) + "\n" for r in _musique()))
    ds = load_dataset("musique", path)
    assert ds.kind == "musique" and ds.corpus_id == "corpus:musique_dev"
    assert [d.id for d in ds.documents] == ["J", "APA", "Virginia", "Virginia#1"]
    assert ds.documents[3].text == "Virginia is a song."
    q1, q2 = ds.questions
    assert q1.doc_ids == [ds.corpus_id]
    assert q1.answer == "G. Hall" and q1.answers == ["G. Hall", "Hall"]
    assert q1.gold_passages == ["J", "APA"]
    assert q1.category == "2hop" and q2.category == "3hop"
    assert q1.metadata == {"answerable": True}
    assert q2.gold_passages == ["Virginia#1"]
    assert len(ds.documents_for(q2)) == 4


def test_hipporag_sibling_corpus_is_used(tmp_path: Path) -> None:
    path = _write(tmp_path / "musique.json", _musique())
    corpus = [
        {"title": "Distractor", "text": "Never asked about."},
        {"title": "Virginia", "text": "Virginia is a song."},
        {"title": "APA", "text": "APA was founded by G. Hall."},
        {"title": "Virginia", "text": "Virginia is a state."},
        {"title": "APA", "text": "APA was founded by G. Hall."},  # exact repeat collapses
    ]
    _write(tmp_path / "musique_corpus.json", corpus)
    ds = load_dataset("hipporag", path)
    # corpus order first; the paragraph "J" is missing from the corpus file and gets appended
    assert [d.id for d in ds.documents] == ["Distractor", "Virginia", "APA", "Virginia#1", "J"]
    assert ds.questions[0].gold_passages == ["J", "APA"]
    assert ds.questions[1].gold_passages == ["Virginia"]  # "Virginia is a song." came first in the corpus
    assert ds.limit(1).documents == ds.documents  # shared corpus is kept whole


def test_per_question_corpus(tmp_path: Path) -> None:
    path = _write(tmp_path / "musique.json", _musique())
    _write(tmp_path / "musique_corpus.json", [{"title": "Distractor", "text": "Never asked about."}])
    ds = load_dataset("musique", path, per_question_corpus=True)
    assert ds.corpus_id is None
    assert [d.id for d in ds.documents] == ["J", "APA", "Virginia", "Virginia#1"]  # distractor dropped
    assert ds.questions[0].doc_ids == ["J", "APA", "Virginia"]
    assert ds.questions[1].doc_ids == ["Virginia", "Virginia#1"]
    groups = ds.groups()
    assert [len(g.documents) for g in groups] == [3, 2]
    assert [d.id for d in ds.limit(1).documents] == ["J", "APA", "Virginia"]


def _hotpot() -> list[dict[str, Any]]:
    return [
        {
            "_id": "5a8b",
            "question": "If Gallu is a demon Lilu is what?",
            "answer": "a spirit",
            "type": "bridge",
            "level": "easy",
            "supporting_facts": [["Alu", 1], ["Lilu", 0]],
            "context": [
                ["Alu", ["Alu is a spirit.", " It has no mouth."]],
                ["Lilu", ["A lilu is a spirit."]],
                ["Other", ["Unrelated."]],
            ],
        },
        {
            "_id": "5a8c",
            "question": "Is Alu mouthless?",
            "answer": "yes",
            "type": "comparison",
            "level": "hard",
            "supporting_facts": [["Alu", 1]],
            "context": [["Alu", ["Alu is a spirit.", " It has no mouth."]], ["Zed", ["Zed."]]],
        },
    ]


def test_hotpotqa_with_dict_corpus(tmp_path: Path) -> None:
    path = _write(tmp_path / "hotpotqa_train.json", _hotpot())
    corpus = {
        "Alu": ["Alu is a spirit.", " It has no mouth."],
        "Lilu": ["A lilu is a spirit."],
        "Other": ["Unrelated."],
        "Zed": ["Zed."],
        "Extra": ["Extra passage."],
    }
    _write(tmp_path / "hotpotqa_train_corpus.json", corpus)
    ds = load_dataset("hotpotqa", path)
    assert [d.id for d in ds.documents] == ["Alu", "Lilu", "Other", "Zed", "Extra"]
    assert ds.documents[0].text == "Alu is a spirit. It has no mouth."
    q1, q2 = ds.questions
    assert q1.id == "5a8b" and q1.answers == ["a spirit"]
    assert q1.gold_passages == ["Alu", "Lilu"]
    assert q1.category == "bridge" and q1.metadata["level"] == "easy"
    assert q1.metadata["supporting_facts"] == [["Alu", 1], ["Lilu", 0]]
    assert q2.gold_passages == ["Alu"]


def test_hotpotqa_without_corpus_deduplicates_contexts(tmp_path: Path) -> None:
    ds = load_dataset("hotpotqa", _write(tmp_path / "hotpot.json", _hotpot()))
    assert [d.id for d in ds.documents] == ["Alu", "Lilu", "Other", "Zed"]


def test_2wiki_format_and_explicit_corpus_path(tmp_path: Path) -> None:
    records = [
        {
            "_id": "w1",
            "type": "compositional",
            "question": "Who is the director's father?",
            "answer": "Bob",
            "context": {"title": ["Film", "Dir"], "sentences": [["Film is a film.", "By Dir."], ["Dir is Bob's son."]]},
            "supporting_facts": {"title": ["Film", "Dir"], "sent_id": [1, 0]},
            "evidences": [["Film", "director", "Dir"], ["Dir", "father", "Bob"]],
        }
    ]
    path = _write(tmp_path / "dev.json", records)
    # a corpus that joined sentences without a space still matches by its unique title
    corpus = _write(tmp_path / "elsewhere.json", [{"title": "Film", "text": "Film is a film.By Dir."}])
    ds = load_dataset("2wikimultihopqa", path, corpus_path=corpus)
    assert ds.kind == "2wiki"
    assert [d.id for d in ds.documents] == ["Film", "Dir"]
    q = ds.questions[0]
    assert q.gold_passages == ["Film", "Dir"] and q.category == "compositional"
    assert q.metadata["evidences"][1] == ["Dir", "father", "Bob"]


def test_join_sentences() -> None:
    assert join_sentences(["A.", "B."]) == "A. B."
    assert join_sentences(["A.", " B.", "C"]) == "A. B. C"
    assert join_sentences([]) == ""


@pytest.mark.parametrize(
    ("records", "message"),
    [
        ([{"id": "x", "question": "q", "answer": "a"}], "unrecognized multi-hop record"),
        ([{"_id": "x", "question": "q", "answer": "a", "context": [["T"]]}], r"context\[0\]"),
        ([{"id": "x", "question": "q", "answer": "a", "paragraphs": [{"title": "T"}]}], "paragraph_text|text"),
        ([{"id": "x", "answer": "a", "paragraphs": []}], "missing field 'question'"),
    ],
)
def test_malformed_records(tmp_path: Path, records: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(InputError, match=rf"bad\.json, record 1.*{message}"):
        load_dataset("musique", _write(tmp_path / "bad.json", records))


def test_malformed_corpus(tmp_path: Path) -> None:
    path = _write(tmp_path / "q.json", _musique())
    _write(tmp_path / "q_corpus.json", "just a string")
    with pytest.raises(InputError, match=r"q_corpus\.json: corpus must be"):
        load_dataset("musique", path)
    _write(tmp_path / "q_corpus.json", [{"title": "T"}])
    with pytest.raises(InputError, match=r"q_corpus\.json, record 1: missing field 'text'"):
        load_dataset("musique", path)
