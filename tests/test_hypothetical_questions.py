"""Hypothetical questions (``[answer] hypotheticals``): which questions the rule reads as asking what is likely, the
sentence the answer prompt adds (yes-or-no or open), the decline line giving way to the guess line, and that it
reaches the prompt through ``Memory.ask``, its stream, ``--json``, the server and MCP only when the setting is on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fakes import HashEmbedder, ScriptedLLM, StreamingLLM
from gemrag import Memory
from gemrag.answers.answer import Answer
from gemrag.answers.hypotheticals import (
    OPEN_INSTRUCTION,
    YES_NO_INSTRUCTION,
    hypothetical_cue,
    hypothetical_instruction,
    yes_no_question,
)
from gemrag.answers.lists import LIST_INSTRUCTION
from gemrag.answers.prompts import ABSTAIN, GUESS
from gemrag.answers.provenance import describe_answer
from gemrag.answers.question_forms import QuestionForm, question_form
from gemrag.answers.reading import Reading
from gemrag.cli.ask import question_form_lines
from gemrag.errors import ConfigError
from gemrag.mcp_server import MemoryTools
from gemrag.memory.asking import reading_of
from gemrag.server.serialize import answer_out
from gemrag.types import Hit
from test_list_questions import answer_with
from test_time_aware_reading import _config


@pytest.mark.parametrize(
    ("question", "cue", "yes_no"),
    [
        ("Would Caroline likely have Dr. Seuss books on her bookshelf?", "Would", True),
        ("Would Melanie go on another roadtrip soon?", "Would", True),
        ("Is it likely that Nate has friends besides Joanna?", "likely", True),
        ("What might John's degree be in?", "might", False),
        ("What would Caroline's political leaning likely be?", "would", False),
        ("Would Melanie be more interested in going to a national park or a theme park?", "Would", False),
        ("Where will Jon probably open his studio?", "probably", False),
    ],
)
def test_hypothetical_questions_are_read_and_told_apart(question: str, cue: str, yes_no: bool) -> None:
    assert hypothetical_cue(question) == cue
    assert yes_no_question(question) is yes_no
    assert hypothetical_instruction(question) == (YES_NO_INSTRUCTION if yes_no else OPEN_INSTRUCTION)


@pytest.mark.parametrize(
    "question",
    [
        "Did Caroline go to the LGBTQ support group?",
        "What books has Melanie read?",
        "When did Maria adopt Biscuit?",
        "What is the likelihood of transmission?",  # a word that only contains one of the cues
        "Which mighty river did Jon cross?",
    ],
)
def test_other_questions_are_not(question: str) -> None:
    assert hypothetical_cue(question) is None
    assert question_form(question, hypotheticals=True) == QuestionForm()


def test_both_rules_read_one_question() -> None:
    form = question_form("What personality traits might Melanie say Caroline has?", lists=True, hypotheticals=True)
    assert form.instruction == f"{LIST_INSTRUCTION} {OPEN_INSTRUCTION}"
    assert form.cues == {"list_cue": "What personality traits might", "hypothetical_cue": "might"}
    assert form.guess and not form.abstains(True)
    assert question_form("What books has Melanie read?", lists=True, hypotheticals=True).abstains(True)


OUTDOORS = (Hit(1, "chunk", 0.9, "Melanie loves camping and hiking."), Hit(2, "chunk", 0.8, "She hates crowds."))


def _answer(tmp_path: Path, llm: ScriptedLLM, question: str, reading: Reading, **options: Any) -> Answer:
    return answer_with(tmp_path, llm, question, reading, OUTDOORS, **options)


@pytest.mark.parametrize("short", [True, False])
def test_a_hypothetical_question_is_asked_for_a_guess_not_a_decline(tmp_path: Path, short: bool) -> None:
    llm = ScriptedLLM()
    question = "Would Melanie enjoy a national park?"
    read = _answer(tmp_path, llm, question, Reading(hypotheticals=True), short=short, abstain=True)
    prompt = llm.prompts[-1]
    assert YES_NO_INSTRUCTION in prompt and GUESS in prompt and ABSTAIN not in prompt
    assert read.reading == {"hypothetical_cue": "Would"}
    off = _answer(tmp_path, llm, question, Reading(), short=short, abstain=True)
    assert YES_NO_INSTRUCTION not in llm.prompts[-1] and ABSTAIN in llm.prompts[-1] and off.reading == {}
    plain = _answer(tmp_path, llm, "Did Melanie go camping?", Reading(hypotheticals=True), short=short, abstain=True)
    assert ABSTAIN in llm.prompts[-1] and plain.reading == {}  # a question that is not one keeps its decline line


def test_other_readings_and_multiple_choice_are_not_changed(tmp_path: Path) -> None:
    llm = ScriptedLLM()
    question = "Would Melanie enjoy a national park?"
    chosen = _answer(tmp_path, llm, question, Reading(hypotheticals=True), choices=["Yes", "No"])
    assert OPEN_INSTRUCTION not in llm.prompts[-1] and YES_NO_INSTRUCTION not in llm.prompts[-1]
    assert "hypothetical_cue" not in chosen.reading
    noted = _answer(tmp_path, llm, question, Reading(form="notes", hypotheticals=True), short=True)
    assert all(YES_NO_INSTRUCTION not in p for p in llm.prompts) and "hypothetical_cue" not in noted.reading


CHAT = """[1:56 pm on 8 May, 2023] Melanie: We went camping in the mountains again, I love the outdoors.
[1:56 pm on 8 May, 2023] Caroline: You always come back so happy!

[2:10 pm on 25 May, 2023] Melanie: Theme parks are too loud for me.
"""


@pytest.mark.parametrize("setting", ["auto", "off"])
def test_ask_and_its_stream_follow_the_setting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, setting: str) -> None:
    llm = StreamingLLM(reply="Likely yes: she loves the outdoors.")
    cfg = _config(monkeypatch, tmp_path, hypotheticals=setting)
    assert reading_of(cfg.answer).hypotheticals is (setting == "auto")
    question = "Would Melanie enjoy a national park?"
    with Memory.open(tmp_path / "m", cfg, llm=llm, embedder=HashEmbedder()) as mem:
        mem.add_text(CHAT, "Melanie and Caroline", source="chat.txt")
        mem.index()
        answer = mem.ask(question)
        asked = llm.prompts[-1]
        streamed = list(mem.ask_stream(question))
        described = describe_answer(mem.store, answer, "dense")  # gemrag ask --json
        mcp_answer = MemoryTools(mem, "dense").ask(question)
    final = streamed[-1]
    assert isinstance(final, Answer) and final.text == answer.text
    assert llm.streams == 0  # the stream's prompt is ask's (with the hypothetical sentence or without): a cache hit
    assert (YES_NO_INSTRUCTION in asked) is (setting == "auto")
    cue = "Would" if setting == "auto" else None
    assert answer.reading.get("hypothetical_cue") == cue and final.reading.get("hypothetical_cue") == cue
    assert described.hypothetical_cue == cue and answer_out(final, "dense").hypothetical_cue == cue  # server
    assert mcp_answer.hypothetical_cue == cue  # MCP's ask
    said = [str(line) for line in question_form_lines(answer)]  # gemrag ask, under the answer
    assert said == ([f'· read as a hypothetical question ("{cue}"): asked for what the context points to; the answer '
                     "is an inference the context need not state"] if cue else [])  # fmt: skip


def test_the_cli_says_how_the_question_was_read() -> None:
    both = Answer("Likely yes", None, [], 0.0, 0.0, reading={"list_cue": "What parks are", "hypothetical_cue": "might"})
    said = [str(line) for line in question_form_lines(both)]
    assert said[0] == '· read as a list question ("What parks are"): asked for every item the context names'
    assert said[1].startswith('· read as a hypothetical question ("might")') and len(said) == 2
    assert question_form_lines(Answer("Yes", None, [], 0.0, 0.0)) == []


def test_the_setting_is_checked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        _config(monkeypatch, tmp_path, hypotheticals="on")
