"""COVID-QA (SQuAD format) and LoCoMo loader tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gemrag.errors import InputError
from gemrag.eval.loaders.locomo import NOT_MENTIONED
from gemrag.eval.loading import load_dataset


def _write(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def _squad() -> dict[str, Any]:
    return {
        "data": [
            {
                "paragraphs": [
                    {
                        "context": "Paper Title One\n\nhttps://example.org\n\nThe virus is 30 kb long.",
                        "document_id": 630,
                        "qas": [
                            {
                                "question": "How long is the virus?",
                                "id": 262,
                                "answers": [
                                    {"text": "30 kb", "answer_start": 999},  # wrong offsets are tolerated
                                    {"text": "30 kb long", "answer_start": 0},
                                    {"text": "30 kb", "answer_start": 0},
                                ],
                                "is_impossible": False,
                            }
                        ],
                    }
                ]
            },
            {
                "title": "Article Two",
                "paragraphs": [
                    {
                        "context": "Second context.",
                        "qas": [{"question": "Q?", "id": "x", "answers": [], "is_impossible": True}],
                    },
                    {"context": "Third context.", "qas": []},
                ],
            },
        ]
    }


def test_covid_qa_squad_format(tmp_path: Path) -> None:
    ds = load_dataset("covid_qa", _write(tmp_path / "covid.json", _squad()))
    assert [d.id for d in ds.documents] == ["630", "1_0", "1_1"]
    assert ds.documents[0].title == "Paper Title One"
    assert ds.documents[1].title == "Article Two"
    q1, q2 = ds.questions
    assert q1.id == "262" and q1.doc_ids == ["630"]
    assert q1.answer == "30 kb" and q1.answers == ["30 kb", "30 kb long"]
    assert q1.gold_passages == []
    assert q2.answer is None and q2.answers == [] and q2.metadata == {"is_impossible": True}


def test_covid_qa_repeated_document_id_gets_suffix(tmp_path: Path) -> None:
    data = {"data": [{"paragraphs": [{"context": c, "document_id": 7, "qas": []} for c in ("a", "b")]}]}
    ds = load_dataset("covid_qa", _write(tmp_path / "c.json", data))
    assert [d.id for d in ds.documents] == ["7", "7#1"]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([1, 2], "top-level value must be a JSON object"),
        ({"version": 1}, "missing field 'data'"),
        ({"data": [{"paragraphs": [{"qas": []}]}]}, r"data\[0\]\.paragraphs\[0\]: missing field 'context'"),
        (
            {"data": [{"paragraphs": [{"context": "c", "qas": [{"question": "q", "id": 1, "answers": []}]}]}]},
            "answerable question without answers",
        ),
    ],
)
def test_covid_qa_malformed(tmp_path: Path, value: Any, message: str) -> None:
    with pytest.raises(InputError, match=rf"bad\.json.*{message}"):
        load_dataset("covid_qa", _write(tmp_path / "bad.json", value))


def _locomo() -> list[dict[str, Any]]:
    return [
        {
            "sample_id": "conv-1",
            "conversation": {
                "speaker_a": "Ann",
                "speaker_b": "Bo",
                "session_2_date_time": "9:00 am on 2 May, 2023",
                "session_2": [{"speaker": "Bo", "dia_id": "D2:1", "text": "Later."}],
                "session_1_date_time": "1:56 pm on 8 May, 2022",
                "session_1": [
                    {"speaker": "Ann", "dia_id": "D1:1", "text": "Hi Bo!"},
                    {"speaker": "Bo", "dia_id": "D1:2", "text": "Look.", "blip_caption": "a photo of a dog"},
                ],
            },
            "qa": [
                {"question": "When did Ann say hi?", "answer": "8 May 2022", "evidence": ["D1:1"], "category": 2},
                {"question": "What year?", "answer": 2022, "evidence": ["D1:1; D2:1", "D1:1"], "category": 1},
                {"question": "What did Ann paint?", "adversarial_answer": "a dog", "evidence": ["D1:2"], "category": 5},
            ],
            "event_summary": {},
            "session_summary": {},
        }
    ]


def test_locomo(tmp_path: Path) -> None:
    ds = load_dataset("locomo", _write(tmp_path / "locomo.json", _locomo()))
    (doc,) = ds.documents
    assert doc.id == "conv-1" and doc.title == "Conversation between Ann and Bo"
    assert doc.text == (
        "[1:56 pm on 8 May, 2022] Ann: Hi Bo!\n"
        "[1:56 pm on 8 May, 2022] Bo: Look. [shares a photo of a dog]\n"
        "\n"
        "[9:00 am on 2 May, 2023] Bo: Later."
    )
    turns = doc.metadata["turns"]
    assert [t["dia_id"] for t in turns] == ["D1:1", "D1:2", "D2:1"]
    for turn in turns:
        assert doc.text[turn["start"] : turn["end"]].startswith(f"[{turn['date']}]")
    assert doc.text[turns[2]["start"] : turns[2]["end"]] == "[9:00 am on 2 May, 2023] Bo: Later."
    q1, q2, q3 = ds.questions
    assert q1.id == "conv-1_q1" and q1.category == "2" and q1.gold_passages == ["D1:1"]
    assert q2.answer == "2022" and q2.gold_passages == ["D1:1", "D2:1"]
    assert q3.category == "5" and q3.answer == NOT_MENTIONED
    assert q3.metadata == {"adversarial_answer": "a dog"}


def test_locomo_malformed(tmp_path: Path) -> None:
    bad = _locomo()
    del bad[0]["conversation"]["session_1"][0]["dia_id"]
    with pytest.raises(InputError, match=r"locomo\.json, record 1, session_1\[0\]: missing field 'dia_id'"):
        load_dataset("locomo", _write(tmp_path / "locomo.json", bad))
    with pytest.raises(InputError, match="no 'session_<n>' lists"):
        load_dataset("locomo", _write(tmp_path / "locomo.json", [{"sample_id": "c", "conversation": {}, "qa": []}]))
