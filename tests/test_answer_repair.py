"""Answers whose form does not fit their question (``[answer] repair``): which answers the rules find at fault, that
such an answer is asked once more with the fault's sentence and the second kept only when it has no fault, that
nothing else changes (no extra call, the same prompt), and that the repair reaches ``Memory.ask``, its stream, the
evaluation's answer path and every surface (``--json``, the server, MCP, the CLI's line) only with the setting on."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from fakes import HashEmbedder, ScriptedLLM, StreamingLLM
from gemrag import Memory
from gemrag.answers.answer import Answer
from gemrag.answers.provenance import describe_answer
from gemrag.answers.reading import Reading
from gemrag.answers.repair import (
    ALTERNATIVES_INSTRUCTION,
    RESTATED_INSTRUCTION,
    Repair,
    answer_fault,
    offers_alternatives,
    repair_instruction,
    restates_question,
    yes_no_to_alternatives,
)
from gemrag.cli.ask import question_form_lines
from gemrag.config import AnswerSettings
from gemrag.errors import ConfigError
from gemrag.eval.protocol import answer_settings_fingerprint
from gemrag.mcp_server import MemoryTools
from gemrag.memory.asking import reading_of
from gemrag.models.base import Completion, Message
from gemrag.server.serialize import answer_out
from gemrag.types import Hit
from test_list_questions import answer_with as answer_over
from test_time_aware_reading import _config

MEWDS = "What is multiple evanescent white dot syndrome?"
DEFINED = "A rare, sudden onset of unilateral chorioretinopathy"
HITS = (
    Hit(1, "chunk", 0.9, "Multiple evanescent white dot syndrome is a rare, sudden onset of unilateral retinopathy."),
    Hit(2, "chunk", 0.8, "A prodromal flu-like illness precedes half of the cases."),
)


@pytest.mark.parametrize(
    ("question", "answer", "fault"),
    [
        (MEWDS, "Multiple evanescent white dot syndrome", "restated"),
        (MEWDS, "Multiple evanescent white dot syndrome (MEWDS)", "restated"),  # an abbreviation added
        ("What is Acute hemorrhagic encephalomyelitis?", "Acute hemorrhagic encephalomyelitis.", "restated"),
        ("Who is Caroline?", "Caroline", "restated"),
        ("Does John live close to a beach or the mountains?", "Yes", "yes_no_to_alternatives"),
        ("Does John live close to a beach or the mountains?", "Likely no.", "yes_no_to_alternatives"),
        ("Is the orf1ab gene at the 3' or 5' end of the genome?", "No", "yes_no_to_alternatives"),
    ],
)
def test_answers_whose_form_does_not_fit_are_found(question: str, answer: str, fault: str) -> None:
    assert answer_fault(question, answer) == fault


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        (MEWDS, DEFINED),  # says what it is
        (MEWDS, "Multiple evanescent white dot syndrome is a rare chorioretinopathy"),  # words beyond the question's
        ("What is the size of bovine coronavirus?", "31 kb"),
        ("Which band was formed first The Exies or Circus Diablo ?", "The Exies"),  # one alternative named
        ("Which is older, Sid Haig or Vic Darchinyan?", "Sid Haig"),
        ("Does John live close to a beach or the mountains?", "Yes, the beach"),  # goes on to name one
        ("Is hepcidin toxic?", "Yes"),  # a yes-or-no question
        ("Is hepcidin toxic?", "Yes, hepcidin is toxic"),  # answered, with the question's words
        ("Did she go, or not?", "No"),  # "or not": yes or no is asked for
        ("Is it true or not that he left?", "Yes"),
        ("What did he say?", ""),  # nothing to restate
        ("What is it?", "It"),  # no content word
    ],
)
def test_other_answers_are_not(question: str, answer: str) -> None:
    assert answer_fault(question, answer) is None


def test_the_rules_read_the_last_clause_and_the_whole_answer() -> None:
    assert offers_alternatives("Which came first, the band or the singer?")
    assert not offers_alternatives("Were the masks or respirators counted, in the end?")  # "or" before the last comma
    assert restates_question("What does RANBP2 do?", "RANBP2")
    assert not restates_question("What does RANBP2 do?", "RANBP2 traffics proteins")
    assert not yes_no_to_alternatives("Is it A or B?", "A")  # not yes or no


AGAIN = (RESTATED_INSTRUCTION, ALTERNATIVES_INSTRUCTION)  # the repairs' sentences


class RestatingLLM(StreamingLLM):
    """A streaming test double whose free-form answer restates the question (``first``) unless the prompt carries
    a repair's sentence (``second``); every prompt is recorded (``prompts``)."""

    def __init__(self, first: str, second: str) -> None:
        super().__init__(reply=first)
        self.first, self.second = first, second

    def complete(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
        completion = super().complete(messages, **kwargs)
        content = messages[-1]["content"]
        if "Answer briefly." in content or "short phrase" in content.lower():
            completion.text = self.second if any(a in content for a in AGAIN) else self.first
        return completion


def answer_with(tmp_path: Path, llm: ScriptedLLM, question: str, reading: Reading, **options: Any) -> Answer:
    """``answer_question`` over :data:`HITS` (:func:`test_list_questions.answer_with`)."""
    return answer_over(tmp_path, llm, question, reading, HITS, **options)


@pytest.mark.parametrize("short", [True, False])
def test_a_restating_answer_is_asked_again_and_the_second_kept(tmp_path: Path, short: bool) -> None:
    llm = RestatingLLM("Multiple evanescent white dot syndrome", DEFINED)
    answer = answer_with(tmp_path, llm, MEWDS, Reading(repair=True), short=short)
    assert answer.text == DEFINED and llm.calls == 2
    sentence = repair_instruction("restated")
    assert sentence == RESTATED_INSTRUCTION and "Multiple" not in sentence  # the first answer is not shown
    assert sentence not in llm.prompts[0] and sentence in llm.prompts[1]
    assert llm.prompts[1].replace(sentence, "").split() == llm.prompts[0].split()  # only the sentence added
    assert answer.reading["repair"] == {
        "fault": "restated",
        "first_answer": "Multiple evanescent white dot syndrome",
        "kept": "second",
    }


def test_a_second_answer_with_the_same_fault_leaves_the_first(tmp_path: Path) -> None:
    llm = RestatingLLM("Multiple evanescent white dot syndrome", "Multiple evanescent white dot syndrome.")
    answer = answer_with(tmp_path, llm, MEWDS, Reading(repair=True), short=True)
    assert answer.text == "Multiple evanescent white dot syndrome" and llm.calls == 2
    assert answer.reading["repair"]["kept"] == "first"


def test_nothing_changes_without_a_fault_or_without_the_setting(tmp_path: Path) -> None:
    fine = RestatingLLM(DEFINED, "unused")
    answer = answer_with(tmp_path, fine, MEWDS, Reading(repair=True), short=True)
    assert answer.text == DEFINED and fine.calls == 1 and "repair" not in answer.reading
    off = RestatingLLM("Multiple evanescent white dot syndrome", DEFINED)
    plain = answer_with(tmp_path, off, MEWDS, Reading(), short=True)
    assert plain.text == "Multiple evanescent white dot syndrome" and off.calls == 1
    assert fine.prompts[0] == off.prompts[0]  # the setting alone does not change the prompt (nor its cache key)


def test_multiple_choice_and_other_readings_are_not_repaired(tmp_path: Path) -> None:
    llm = RestatingLLM("Multiple evanescent white dot syndrome", DEFINED)
    chosen = answer_with(tmp_path, llm, MEWDS, Reading(repair=True), choices=["A retinal disease", "A virus"])
    assert "repair" not in chosen.reading
    sampled = answer_with(tmp_path, llm, MEWDS, Reading(repair=True, samples=3), short=True)
    assert "repair" not in sampled.reading
    assert all(a not in p for p in llm.prompts for a in AGAIN)


CHAT = """[1:56 pm on 8 May, 2023] John: The beach is a five minute walk from my flat, I go every morning.
[1:57 pm on 8 May, 2023] Maria: Lucky you, the mountains are far from mine.
"""
BEACH = "Does John live close to a beach or the mountains?"


@pytest.mark.parametrize("repair", ["auto", "off"])
def test_ask_its_stream_and_every_surface_follow_the_setting(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, repair: str
) -> None:
    llm = RestatingLLM("Yes", "A beach")
    cfg = _config(monkeypatch, tmp_path, repair=repair, cite=False, verify="off")
    assert reading_of(cfg.answer).repair is (repair == "auto")
    with Memory.open(tmp_path / "m", cfg, llm=llm, embedder=HashEmbedder()) as mem:
        mem.add_text(CHAT, "John and Maria", source="chat.txt")
        mem.index()
        answer = mem.ask(BEACH)
        streamed = list(mem.ask_stream(BEACH))
        described = describe_answer(mem.store, answer, "dense")  # gemrag ask --json
        mcp_answer = MemoryTools(mem, "dense").ask(BEACH)
    final = streamed[-1]
    assert isinstance(final, Answer) and final.text == answer.text
    expected = Repair(fault="yes_no_to_alternatives", first_answer="Yes", kept="second") if repair == "auto" else None
    assert answer.text == ("A beach" if repair == "auto" else "Yes")
    assert Repair.of(answer.reading) == expected and Repair.of(final.reading) == expected
    assert described.repair == expected and answer_out(final, "dense").repair == expected  # the server's answer
    assert mcp_answer.repair == expected  # MCP's ask
    pieces = [p for p in streamed if isinstance(p, str)]
    assert "".join(pieces) == ("Yes\nA beach" if repair == "auto" else "Yes")  # the second follows the first
    said = [str(line) for line in question_form_lines(answer)]  # gemrag ask, under the answer
    assert said == (
        ['· the first answer, "Yes", said yes or no to a question offering alternatives: asked again, the second '
         "answer kept"] if repair == "auto" else []
    )  # fmt: skip


def test_the_cli_says_when_the_first_answer_stayed() -> None:
    kept_first = Answer("Caroline", None, [], 0.0, 0.0, reading={"repair": {"fault": "restated",
                        "first_answer": "Caroline", "kept": "first"}})  # fmt: skip
    said = [str(line) for line in question_form_lines(kept_first)]
    assert said == ['· the first answer, "Caroline", only restated the question: asked again, the second had the '
                    "same fault; the first kept"]  # fmt: skip


def test_the_setting_is_checked_and_fingerprinted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        _config(monkeypatch, tmp_path, repair="on")
    assert answer_settings_fingerprint(AnswerSettings(repair="auto")) == {"repair": "auto"}
    assert "repair" not in answer_settings_fingerprint(AnswerSettings())  # a default run resumes as before
