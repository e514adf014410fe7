"""``gemrag eval qa FILE`` (issue 41 item 3, :mod:`gemrag.eval.loaders.qa_file`): the user's own questions and answers
over their own documents, JSON Lines and CSV, end to end through the CLI with the test doubles; malformed rows are
one-line errors naming their line."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from fakes import HashEmbedder, ScriptedLLM
from gemrag import cli
from gemrag.config import Config
from gemrag.errors import InputError
from gemrag.eval import runner as runner_module
from gemrag.eval.loaders.qa_file import CORPUS_ID
from gemrag.eval.loading import load_dataset
from gemrag.eval.metrics import passage_recall
from gemrag.memory import Memory
from paths import STORY

STORY_ID = "lost_in_translation.txt"
#: Ten questions on the shipped story (examples/quality/lost_in_translation.txt), answered by its text.
ROWS: list[dict[str, Any]] = [
    {"question": "What is the name of the Tr'en who comes to Korvin's cell?", "answer": "Didyak",
     "sources": ["lost_in_translation"], "evidence": ["I am Didyak of the Tr'en"]},
    {"question": "How many teeth do the Tr'en have?", "answer": ["fifty-eight", "58"],
     "evidence": ["the disclosure of the Tr'en fifty-eight teeth, mostly pointed"]},
    {"question": "What color is the Room of the Ruler?", "answer": "brown", "sources": ["LOST_IN_TRANSLATION"]},
    {"question": "How many days of isolation had Korvin had in his cell?", "answer": ["three days", "three"]},
    {"question": "What machine did the technicians attach to Korvin?", "answer": ["a lie-detector", "lie-detector"],
     "sources": [STORY_ID]},
    {"question": "What is a chulad?", "answer": "a small native pet", "category": "definitions"},
    {"question": "What does Korvin call his form of government?", "answer": "democracy", "id": "government"},
    {"question": "How tall is the Ruler of the Tr'en?", "answer": "over seven feet tall"},
    {"question": "How is a new Ruler of the Tr'en chosen?", "answer": "He is adopted by the previous Ruler",
     "evidence": ["The Ruler is adopted by the previous Ruler"]},
    {"question": "On which day did Korvin escape?", "answer": ["the third day", "third"], "sources": ["notes.md"]},
]  # fmt: skip
NOTES = "Notes on the garden. Marta released ladybirds to eat the aphids on the roses.\n"


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A directory with the story and a second document (notes.md)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(STORY, docs / STORY_ID)
    (docs / "notes.md").write_text(NOTES, encoding="utf-8")
    return docs


@pytest.fixture
def doubles(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner_module, "build_embedder", lambda settings: HashEmbedder())
    monkeypatch.setattr(runner_module, "build_llm", lambda settings, cache_dir=None: ScriptedLLM())


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_the_story_questions_end_to_end_through_the_cli(
    tmp_path: Path, config: Config, corpus: Path, doubles: None
) -> None:
    qa = write_jsonl(tmp_path / "story_qa.jsonl", ROWS)
    out = tmp_path / "out"
    args = ["eval", "qa", str(qa), "--documents", str(corpus), "--strategies", "dense,bm25", "--budget", "3"]
    result = CliRunner().invoke(cli.app, [*args, "--out", str(out), "--no-plots", "-q"])
    assert result.exit_code == 0, result.output
    assert "| fake:hash-embedder | llama_cpp:qwen2.5-coder-1.5b | dense |" in result.output
    assert "F1" in result.output and "R@5" in result.output and "R@k is per question" in result.output
    results = json.loads((out / "results.json").read_text())
    assert results["dataset"]["kind"] == "qa" and results["dataset"]["questions"] == 10
    assert results["dataset"]["documents"] == 2 and results["runs"] == ["dense", "bm25"]
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert len(records) == 20 and all(r["f1"] is not None and r["em"] is not None for r in records)
    dense = {r["question_id"]: r for r in records if r["strategy"] == "dense"}
    assert dense["q1"]["gold_passages"] == [STORY_ID] and dense["q10"]["gold_passages"] == ["notes.md"]
    assert dense["q1"]["recall@5"] in (0.0, 1.0) and "recall_from" not in dense["q1"]  # documents' Recall@k
    assert dense["q2"]["recall_from"] == "evidence passage and chunk overlap"
    assert dense["q4"]["recall_from"] == "answer span in chunk"
    assert dense["government"]["category"] is None and dense["q6"]["category"] == "definitions"
    assert all(r["tokens"]["prompt_tokens"] > 0 and r["answer"] is not None for r in records)
    run = json.loads((out / "run.json").read_text())
    assert run["dataset"] == "qa:story_qa" and run["answer_form"] == "short"  # auto: short, as the span-answer kinds


def test_a_csv_file_with_several_answers_and_retrieval_only(
    tmp_path: Path, config: Config, corpus: Path, doubles: None
) -> None:
    path = tmp_path / "story_qa.csv"
    with path.open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["Question", "answer", "sources", "evidence"])
        for row in ROWS[:4]:
            answers = row["answer"] if isinstance(row["answer"], list) else [row["answer"]]
            writer.writerow(
                [
                    row["question"],
                    "|".join(answers),
                    "|".join(row.get("sources", [])),
                    "|".join(row.get("evidence", [])),
                ]
            )
    data = load_dataset("qa", path, documents=[str(corpus)])
    assert [q.answers for q in data.questions][:2] == [["Didyak"], ["fifty-eight", "58"]]
    assert data.questions[0].gold_passages == [STORY_ID] and data.questions[1].gold_passages == []
    assert data.questions[1].metadata["evidence_passages"] == [ROWS[1]["evidence"][0]]
    assert [q.id for q in data.questions] == ["q2", "q3", "q4", "q5"]  # the line each row starts on
    assert all(q.doc_ids == [CORPUS_ID] for q in data.questions)

    out = tmp_path / "out"
    args = ["eval", "qa", str(path), "--documents", str(corpus / STORY_ID), "--documents", str(corpus / "notes.md")]
    result = CliRunner().invoke(cli.app, [*args, "--strategies", "dense", "--no-answer", "--out", str(out), "-q"])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert len(records) == 4 and all(r["answer"] is None and r["recall@5"] is not None for r in records)


def test_the_documents_of_an_existing_memory(tmp_path: Path, config: Config, corpus: Path) -> None:
    with Memory.open(tmp_path / "mine", config, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
        mem.add([corpus])
    data = load_dataset("qa", write_jsonl(tmp_path / "qa.jsonl", ROWS), memory=str(tmp_path / "mine"))
    assert sorted(d.id for d in data.documents) == ["lost_in_translation.txt", "notes.md"]
    assert data.questions[-1].gold_passages == ["notes.md"]
    with pytest.raises(InputError, match="no gemrag memory there"):
        load_dataset("qa", tmp_path / "qa.jsonl", memory=str(tmp_path / "nowhere"))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            '{"question": "Who?", "answer": "Didyak"}\n{"question": "Who?", "answer": \n',
            "qa.jsonl, line 2: not valid JSON",
        ),
        ('{"question": "Who?", "answer": "Didyak"}\n\n{"answer": "Didyak"}\n', "qa.jsonl, line 3: missing 'question'"),
        ('{"question": "Who?", "answer": ""}\n', "qa.jsonl, line 1: empty 'answer'"),
        ('{"question": "Who?", "answer": []}\n', "qa.jsonl, line 1: empty 'answer'"),
        ('{"question": "Who?", "answer": ["Didyak", 3]}\n', "qa.jsonl, line 1: 'answer' must be a string or a list"),
        ('{"question": "Who?", "answers": "Didyak"}\n', "qa.jsonl, line 1: unknown key(s) 'answers'"),
        ('{"question": "Who?", "answer": "x", "sources": ["moby.txt"]}\n', "line 1: source 'moby.txt' names no"),
        ('["Who?", "Didyak"]\n', "qa.jsonl, line 1: row must be a JSON object"),
    ],
)
def test_a_malformed_jsonl_row_is_one_line_naming_it(
    tmp_path: Path, config: Config, corpus: Path, content: str, message: str
) -> None:
    path = tmp_path / "qa.jsonl"
    path.write_text(content, encoding="utf-8")
    result = CliRunner().invoke(cli.app, ["eval", "qa", str(path), "--documents", str(corpus), "-q"])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], result.output


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("query,answer\nWho?,Didyak\n", "qa.csv, line 1: unknown column(s) 'query'"),
        ("answer,sources\nDidyak,notes.md\n", "qa.csv, line 1: no 'question' column"),
        ('question,answer\nWho?,Didyak\n"Who,\nreally?",\n', "qa.csv, line 3: empty 'answer'"),
        ("question,answer\nWho?,Didyak\n,Didyak\n", "qa.csv, line 3: empty 'question'"),
        ("question,answer\nWho?,Didyak|\n", "qa.csv, line 2: 'answer' holds an empty item"),
        ("question,answer\nWho?,Didyak,extra\n", "qa.csv, line 2: 3 cells but the header has 2 columns"),
    ],
)
def test_a_malformed_csv_row_names_its_line(tmp_path: Path, corpus: Path, content: str, message: str) -> None:
    path = tmp_path / "qa.csv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_dataset("qa", path, documents=[str(corpus)])
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_no_documents_is_a_clear_error(tmp_path: Path, config: Config) -> None:
    path = write_jsonl(tmp_path / "qa.jsonl", ROWS[:1])
    result = CliRunner().invoke(cli.app, ["eval", "qa", str(path), "-q"])
    assert result.exit_code == 2 and "--documents PATH" in result.output


def test_passage_recall_counts_an_overlap_either_way() -> None:
    chunk = "Korvin sighed. The Ruler is adopted by the previous Ruler; in this way we are assured."
    assert passage_recall([chunk], ["the ruler is ADOPTED by the previous ruler"]) == 1.0  # passage in the chunk
    assert passage_recall(["The Ruler is adopted"], ["The Ruler is adopted by the previous Ruler."]) == 1.0
    assert passage_recall([chunk], ["Korvin escaped on the third day"]) == 0.0
    assert passage_recall([chunk], ["   "]) == 0.0
