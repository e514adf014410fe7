"""QuALITY loader tests on small fixtures in the three supported line formats."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gemrag.errors import InputError
from gemrag.eval.loaders.quality import html_to_text
from gemrag.eval.loading import load_dataset

OPTIONS = ["red", "green", "blue", "black"]


def _write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _leval(doc_index: int, golds: list[int]) -> dict[str, Any]:
    return {
        "doc_index": doc_index,
        "title_guess": "THE   STORY",
        "article": f"  Story number {doc_index}.\n\nIt ends.  ",
        "source": "quality_raw",
        "questions": [
            {"question": f"Q{j}?", "options": OPTIONS, "gold_label": g, "gold_letter": "ABCD"[g - 1]}
            for j, g in enumerate(golds)
        ],
    }


def test_leval_format(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "quality_dev.jsonl", [_leval(0, [2, 1]), _leval(7, [4])])
    ds = load_dataset("quality", path)
    assert ds.name == "quality_dev" and ds.kind == "quality"
    assert [d.id for d in ds.documents] == ["quality-0", "quality-7"]
    assert ds.documents[0].title == "THE STORY"
    assert ds.documents[0].text == "Story number 0.\n\nIt ends."
    assert [q.id for q in ds.questions] == ["quality-0_1", "quality-0_2", "quality-7_1"]
    q = ds.questions[0]
    assert q.gold_index == 1  # gold_label 2 is 1-based
    assert q.answer == "green" and q.answers == ["green"]
    assert q.choices == OPTIONS
    assert q.difficult is None
    assert q.doc_ids == ["quality-0"]
    assert ds.questions[2].gold_index == 3


def _v1_line(set_id: str, questions: list[dict[str, Any]], html: bool = True) -> dict[str, Any]:
    article = (
        "<html><head><title>x</title></head><body><h1>TITLE</h1><p>One  two\nthree.</p><p>A<br/>B</p></body></html>"
    )
    return {
        "article_id": "20001",
        "set_unique_id": set_id,
        "batch_num": "21",
        "writer_id": "1",
        "source": "Gutenberg",
        "title": "A Title",
        "author": "Someone",
        "topic": "t",
        "url": "u",
        "license": "l",
        "article": article if html else "plain text",
        "questions": questions,
    }


def _v1_question(qid: str, gold: int | None, speed: list[int], difficult: int | None) -> dict[str, Any]:
    q: dict[str, Any] = {
        "question": "Which colour?",
        "question_unique_id": qid,
        "options": OPTIONS,
        "writer_label": gold,
        "validation": [],
        "speed_validation": [{"speed_annotator_id": i, "speed_answer": a} for i, a in enumerate(speed)],
    }
    if gold is not None:
        q["gold_label"] = gold
    if difficult is not None:
        q["difficult"] = difficult
    return q


def test_official_v1_format(tmp_path: Path) -> None:
    lines = [
        _v1_line("20001_AAA", [_v1_question("20001_AAA_1", 1, [1, 1, 2, 3, 4], 1)]),
        _v1_line(
            "20001_BBB",
            [
                _v1_question("20001_BBB_1", 3, [3, 3, 3, 1, 2], 0),
                # no official flag: computed from speed answers, 2/5 = 40% correct -> HARD
                _v1_question("20001_BBB_2", 2, [2, 2, 1, 1, 1], None),
                # exactly 50% correct is not HARD ("fewer than 50%")
                _v1_question("20001_BBB_3", 4, [4, 4, 1, 1], None),
            ],
        ),
    ]
    ds = load_dataset("quality", _write_jsonl(tmp_path / "QuALITY.v1.0.1.dev", lines))
    assert [d.id for d in ds.documents] == ["20001"]  # both question sets share the article
    assert ds.documents[0].title == "A Title"
    assert ds.documents[0].text == "TITLE\n\nOne two three.\n\nA\nB"
    assert [q.id for q in ds.questions] == ["20001_AAA_1", "20001_BBB_1", "20001_BBB_2", "20001_BBB_3"]
    assert [q.difficult for q in ds.questions] == [True, False, True, False]
    assert [q.gold_index for q in ds.questions] == [0, 2, 1, 3]
    assert ds.questions[2].metadata["speed_accuracy"] == pytest.approx(0.4)


def test_official_v1_test_split_without_gold(tmp_path: Path) -> None:
    line = _v1_line("20001_T", [_v1_question("20001_T_1", None, [], None)], html=False)
    ds = load_dataset("quality", _write_jsonl(tmp_path / "test.jsonl", [line]))
    q = ds.questions[0]
    assert q.gold_index is None and q.answer is None and q.answers == [] and q.difficult is None
    assert ds.documents[0].text == "plain text"


def _v0_line(unique_id: str) -> dict[str, Any]:
    line: dict[str, Any] = {
        "article_id": 52845,
        "unique_id": unique_id,
        "title": "Old Format",
        "article": ["<html>\n", "<p>\n", "Line one\n", "line two.\n", "</p>\n", "</html>\n"],
    }
    # question1: 1/5 speed annotators correct -> HARD; question2: 3/5 -> not HARD
    for k, (gold, speed) in enumerate([(2, [3, 3, 1, 3, 2]), (4, [1, 4, 4, 2, 4])], start=1):
        line[f"question{k}"] = f"Flat question {k}?"
        for m, option in enumerate(OPTIONS, start=1):
            line[f"question{k}option{m}"] = option + " "
        line[f"question{k}_gold_label"] = gold
        line[f"question{k}_annotator_answers"] = [gold] * 3
        line[f"question{k}_annotator_speed_answers"] = speed
    return line


def test_official_v0_flat_format_with_exact_duplicate(tmp_path: Path) -> None:
    ds = load_dataset("quality", _write_jsonl(tmp_path / "v0.jsonl", [_v0_line("52845_X"), _v0_line("52845_X")]))
    assert [d.id for d in ds.documents] == ["52845"]
    assert ds.documents[0].text == "Line one line two."
    assert [q.id for q in ds.questions] == ["52845_X_1", "52845_X_2"]  # duplicate line dropped
    assert [q.difficult for q in ds.questions] == [True, False]
    assert [q.gold_index for q in ds.questions] == [1, 3]
    assert ds.questions[0].choices == OPTIONS  # option whitespace stripped
    assert ds.questions[0].metadata["speed_accuracy"] == pytest.approx(0.2)


def test_mixed_formats_in_one_file(tmp_path: Path) -> None:
    ds = load_dataset("quality", _write_jsonl(tmp_path / "mixed.jsonl", [_leval(0, [1]), _v0_line("52845_Y")]))
    assert [d.id for d in ds.documents] == ["quality-0", "52845"]
    assert len(ds.questions) == 3


def test_conflicting_duplicate_question_is_an_error(tmp_path: Path) -> None:
    other = _v0_line("52845_X")
    other["question1"] = "A different question?"
    path = _write_jsonl(tmp_path / "dup.jsonl", [_v0_line("52845_X"), other])
    with pytest.raises(InputError, match=r"dup\.jsonl, line 2: question id '52845_X_1' appeared before"):
        load_dataset("quality", path)


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"foo": 1}, "unrecognized QuALITY record"),
        ({"article": "x", "questions": [{"question": "q", "options": "abc", "gold_label": 1}]}, "options"),
        ({"article": "x", "questions": [{"question": "q", "options": OPTIONS, "gold_label": 5}]}, "gold_label"),
        ({"article": 3, "questions": []}, "article"),
        ([1, 2], "must be a JSON object"),
    ],
)
def test_malformed_records(tmp_path: Path, record: Any, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(_leval(0, [1])) + "\n\n" + json.dumps(record) + "\n")
    with pytest.raises(InputError, match=rf"bad\.jsonl, line 3.*{message}"):
        load_dataset("quality", path)


def test_html_to_text() -> None:
    html = "<p>Hello &amp; <i>good</i>\n  bye</p><script>x()</script><br>Next<h2>Head</h2>"
    assert html_to_text(html) == "Hello & good bye\n\nNext\n\nHead"
