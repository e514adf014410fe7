"""A user's own worked examples (``[answer] demonstrations_file``): a TOML or JSON file read into
:class:`~gemrag.answers.demonstrations.Demonstration`s, checked with a clear error naming the file, shown instead of the
library's four before the question (sentence and short form, ``ask`` and its stream), guarded by the copy rule with
the file's own names, and fingerprinted by the examples it holds."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from fakes import HashEmbedder, StreamingLLM
from gemrag import Memory
from gemrag.answers.answer import Answer
from gemrag.answers.demonstrations import DEMONSTRATIONS, Demonstration, copied_example, load_demonstrations
from gemrag.config import AnswerSettings
from gemrag.errors import ConfigError
from gemrag.eval.protocol import answer_settings_fingerprint
from gemrag.memory.asking import examples_of, reading_of
from gemrag.models.base import Completion, Message
from test_time_aware_reading import _config

CLINIC = """# two examples of a clinic's own style
[[example]]
passages = ["The Northgate clinic opens at 8 am on weekdays.", "Dr Okafor sees patients on Tuesdays."]
question = "When does the Northgate clinic open?"
phrase = "at 8 am on weekdays"
sentence = "The Northgate clinic opens at 8 am on weekdays."
cites = [1]
names = ["Northgate"]

[[example]]
passages = ["Dr Okafor sees patients on Tuesdays.", "The clinic closes on public holidays."]
question = "Which day does Dr Okafor see patients?"
phrase = "Tuesdays"
sentence = "Dr Okafor sees patients on Tuesdays."
cites = [1]
names = ["Dr Okafor"]
"""
FIRST = Demonstration(
    ("The Northgate clinic opens at 8 am on weekdays.", "Dr Okafor sees patients on Tuesdays."),
    "When does the Northgate clinic open?",
    "at 8 am on weekdays",
    "The Northgate clinic opens at 8 am on weekdays.",
    (1,),
    ("Northgate",),
)


def _write(tmp_path: Path, text: str, name: str = "examples.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_toml_file_is_read_in_order(tmp_path: Path) -> None:
    examples = load_demonstrations(_write(tmp_path, CLINIC))
    assert len(examples) == 2 and examples[0] == FIRST
    assert examples[1].names == ("Dr Okafor",) and examples[1].cites == (1,)


def test_a_json_file_is_read_as_a_table_or_a_bare_list(tmp_path: Path) -> None:
    entry = {
        "passages": list(FIRST.passages),
        "question": FIRST.question,
        "phrase": FIRST.phrase,
        "sentence": FIRST.sentence,
        "cites": [1],
        "names": ["Northgate"],
    }
    table = _write(tmp_path, json.dumps({"example": [entry]}), "table.json")
    bare = _write(tmp_path, json.dumps([entry]), "bare.json")
    assert load_demonstrations(table) == load_demonstrations(bare) == (FIRST,)


GOOD = 'passages = ["A.", "B."]\nquestion = "Q?"\nphrase = "the answer"\nsentence = "It is A."\ncites = [1]\n'


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[[example]]\npassages = [", "not valid TOML"),
        ("", "example: Field required"),
        ("example = []", "example: List should have at least 1 item"),
        (
            f"[[example]]\n{GOOD.replace('cites = [1]', 'cites = [3]')}",
            "example 1: cites [3]: the example has passages 1 to",
        ),
        (f"[[example]]\n{GOOD.replace('It is A.', 'It is A [1].')}", "carries [n] markers"),
        (f"[[example]]\n{GOOD.replace('phrase = ', 'answer = ')}", "example 1, phrase: Field required"),
        (f"[[example]]\n{GOOD}colour = 1\n", "example 1, colour: Extra inputs are not permitted"),
        (f"[[example]]\n{GOOD.replace('B.', ' ')}", "example 1, passages: an empty string"),
        (f"[[example]]\n{GOOD.replace('Q?', ' ')}", "example 1, question: empty"),
    ],
)
def test_a_malformed_file_is_refused_naming_the_file_and_the_fault(tmp_path: Path, text: str, said: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as raised:
        load_demonstrations(path)
    assert str(raised.value).startswith(f"demonstrations file {path}: ") and said in str(raised.value)


def test_a_file_that_cannot_be_read_is_refused(tmp_path: Path) -> None:
    (tmp_path / "latin1.toml").write_bytes("question = 'Café'".encode("latin-1"))
    faults = {
        tmp_path / "missing.toml": "no such file",
        tmp_path: "a directory, not a file",
        tmp_path / "latin1.toml": "not UTF-8 text",
        _write(tmp_path, "{not json", "bad.json"): "not valid JSON",
        _write(tmp_path, "3", "number.json"): "expected a table of examples",
    }
    for path, said in faults.items():
        with pytest.raises(ConfigError, match=said):
            load_demonstrations(path)


def test_the_settings_choose_the_examples(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _write(tmp_path, CLINIC)
    with pytest.raises(ConfigError, match="demonstrations is off"):
        _config(monkeypatch, tmp_path, demonstrations_file="examples.toml")
    own = _config(monkeypatch, tmp_path, demonstrations=True, demonstrations_file="examples.toml")  # relative: cwd
    assert examples_of(own.answer)[0] == FIRST and reading_of(own.answer).demonstrations == examples_of(own.answer)
    assert examples_of(AnswerSettings(demonstrations=True)) == DEMONSTRATIONS and examples_of(AnswerSettings()) == ()


def test_the_fingerprint_follows_the_examples_not_the_files_layout(tmp_path: Path) -> None:
    path = _write(tmp_path, CLINIC)
    settings = AnswerSettings(demonstrations=True, demonstrations_file=str(path))
    first = answer_settings_fingerprint(settings)
    assert first["demonstrations"] is True and first["demonstrations_file"] == str(path)
    _write(tmp_path, CLINIC.replace("# two examples", "# 2 examples").replace("cites = [1]", "cites = [ 1 ]"))
    assert answer_settings_fingerprint(settings) == first  # a comment and spacing: the same examples
    _write(tmp_path, CLINIC.replace("on Tuesdays.", "on Mondays."))
    assert answer_settings_fingerprint(settings)["demonstrations_sha256"] != first["demonstrations_sha256"]
    assert "demonstrations_sha256" not in answer_settings_fingerprint(AnswerSettings(demonstrations=True))


def test_the_copy_rule_guards_the_files_own_names() -> None:
    examples = (FIRST, Demonstration(("It rained.",), "Did it rain?", "yes", "Yes, it rained.", (1,)))
    assert copied_example("Northgate", ["The Eastside clinic."], examples=examples) == "Northgate"
    assert copied_example("at 8 am on weekdays", ["Opens at noon."], examples=examples) == "at 8 am on weekdays"
    assert copied_example("Yes", ["The report says so."], examples=examples) is None  # a one-word phrase: any answer
    assert copied_example("Helen Marsh", ["Nothing."], examples=examples) is None  # the library's are not shown
    assert copied_example("Helen Marsh", ["Nothing."]) == "Helen Marsh"  # by default they are


class Recording(StreamingLLM):
    """Streams ``reply``; keeps every answer call's message list (``asked``)."""

    def __init__(self, reply: str) -> None:
        super().__init__(reply)
        self.asked: list[list[Message]] = []

    def complete(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
        if "Answer briefly." in messages[-1]["content"]:
            self.asked.append(list(messages))
        return super().complete(messages, **kwargs)


CHAT = "[1:56 pm on 8 May, 2023] John: I moved to a flat by the beach in Brighton last spring.\n"


def test_ask_and_its_stream_show_the_users_examples(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _write(tmp_path, CLINIC)
    llm = Recording("Brighton")
    cfg = _config(monkeypatch, tmp_path, demonstrations=True, demonstrations_file="examples.toml", verify="off")
    with Memory.open(tmp_path / "m", cfg, llm=llm, embedder=HashEmbedder()) as mem:
        mem.add_text(CHAT, "John", source="chat.txt")
        mem.index()
        answer = mem.ask("Where does John live?")
        final = list(mem.ask_stream("Where did John move to?"))[-1]
    assert isinstance(final, Answer) and answer.text == final.text == "Brighton"
    assert answer.reading["demonstrations"] is True and final.reading["demonstrations"] is True
    for messages in llm.asked:
        turns = messages[1:-1]
        assert len(turns) == 4  # the file's two examples, not the library's four
        assert "Question: When does the Northgate clinic open?" in turns[0]["content"]
        assert turns[1]["content"] == "The Northgate clinic opens at 8 am on weekdays [1]."  # cited: ask cites
        assert not any("Hallam" in t["content"] for t in turns)


def test_a_file_broken_after_the_settings_were_read_is_a_clear_error_and_loses_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = _write(tmp_path, CLINIC)
    cfg = _config(monkeypatch, tmp_path, demonstrations=True, demonstrations_file="examples.toml", verify="off")
    with Memory.open(tmp_path / "m", cfg, llm=Recording("Brighton"), embedder=HashEmbedder()) as mem:
        mem.add_text(CHAT, "John", source="chat.txt")
        mem.index()
        path.write_text("[[example]]\nquestion = 1\n", encoding="utf-8")
        with pytest.raises(ConfigError, match="examples.toml"):
            mem.ask("Where does John live?")
        path.write_text(CLINIC, encoding="utf-8")  # fixed: the next question reads it again
        assert mem.ask("Where does John live?").text == "Brighton"
        assert len(mem.store.documents()) == 1


SHIPPED = sorted((Path(__file__).resolve().parents[1] / "examples" / "demonstrations").glob("*.toml"))


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_the_example_files_in_the_repository_load(path: Path) -> None:
    examples = load_demonstrations(path)
    assert len(examples) >= 3 and all(e.names for e in examples)  # each guards its own names
    assert len({e.question for e in examples}) == len(examples)


def test_the_papers_examples_answer_with_the_papers_own_words() -> None:
    papers = next(p for p in SHIPPED if p.name == "papers.toml")
    for demo in load_demonstrations(papers):
        assert demo.phrase in " ".join(demo.passages[n - 1] for n in demo.cites), demo.question
