"""List questions (``[answer] lists``): which questions the rule takes for list questions, the sentence the answer
prompt adds for them, and that it reaches the prompt through ``Memory.ask``, its stream and the evaluation's answer
path only when the setting is on and the question is one."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from fakes import HashEmbedder, ScriptedLLM, StreamingLLM
from gemrag import Memory
from gemrag.answers.answer import Answer
from gemrag.answers.answering import answer_question
from gemrag.answers.lists import LIST_INSTRUCTION, list_cue
from gemrag.answers.prompts import answer_prompt, short_answer_prompt
from gemrag.answers.provenance import describe_answer
from gemrag.answers.reading import Reading
from gemrag.errors import ConfigError
from gemrag.mcp_server import MemoryTools
from gemrag.memory.asking import reading_of
from gemrag.models.meter import UsageMeter
from gemrag.server.serialize import answer_out
from gemrag.store import Store
from gemrag.types import Hit
from test_time_aware_reading import _config


@pytest.mark.parametrize(
    ("question", "cue"),
    [
        ("What activities does Melanie partake in?", "What activities does"),
        ("Which cities has Jon visited?", "Which cities has"),
        ("What European countries has Maria been to?", "What European countries has"),
        ("What LGBTQ+ events has Caroline participated in?", "What LGBTQ+ events has"),
        ("What musical artists/bands has Melanie seen?", "What musical artists/bands has"),
        ("What people has Maria met while volunteering?", "What people has"),
        ("what types of yoga has Maria practiced?", "what types of"),
        ("What kinds of pets are allowed in the building?", "What kinds of"),  # "are" + no name: still a list
        ("What types of acute respiratory infections can be screened?", "What types of"),
        ("What are the names of John's children?", "What are"),
        ("Who were the guests?", "Who were"),
        ("Please list all the songs she sang.", "list all"),
    ],
)
def test_list_questions(question: str, cue: str) -> None:
    assert list_cue(question) == cue


@pytest.mark.parametrize(
    "question",
    [
        "What book did Melanie read?",  # a singular noun
        "What news did Maria share?",  # -s, but not a plural
        "What status does the order have?",  # -us
        "What analysis did he run?",  # -is
        "What percentage of patients were positive?",  # the asked-for noun is the one before "of"
        "Which class does she teach?",  # -ss
        "What is the capital of France?",
        "When did Caroline go camping?",
        "Where has Melanie camped?",  # a list by its answer, not by its form: read as written
        "What kinds of viruses are Japanese encephalitis virus (JEV) and TBEV?",  # which kind a named thing is
        "What types of cells are T cells?",
        "Who sold the boat?",
        "",
    ],
)
def test_other_questions(question: str) -> None:
    assert list_cue(question) is None


def test_the_prompts_add_the_list_sentence_only_when_asked() -> None:
    question, context = "What books has Melanie read?", ["Melanie read Charlotte's Web.", "She loved Becoming Nicole."]
    for prompt in (short_answer_prompt, answer_prompt):
        plain, listed = prompt(question, context), prompt(question, context, instruction=LIST_INSTRUCTION)
        assert LIST_INSTRUCTION not in plain[1]["content"] and LIST_INSTRUCTION in listed[1]["content"]
        # the same prompt otherwise, the sentence before the last instructions
        assert listed[1]["content"].replace(f"{LIST_INSTRUCTION} ", "") == plain[1]["content"]
    short = short_answer_prompt(question, context, instruction=LIST_INSTRUCTION)[1]["content"]
    assert short.index(LIST_INSTRUCTION) > short.index("Question:") and short.endswith("Short answer:")


BOOKS = (Hit(1, "chunk", 0.9, "Melanie read Charlotte's Web."), Hit(2, "chunk", 0.8, "She read Becoming Nicole."))


def answer_with(
    tmp_path: Path, llm: ScriptedLLM, question: str, reading: Reading, hits: Sequence[Hit] = BOOKS, **options: Any
) -> Answer:
    """``answer_question`` over ``hits`` with a scripted LLM (its prompts recorded) and a fresh store."""
    store = Store(tmp_path / "m")
    try:
        return answer_question(lambda: llm, UsageMeter(), store, question, hits, reading=reading, **options)
    finally:
        store.close()


@pytest.mark.parametrize("short", [True, False])
def test_answer_question_asks_a_list_question_for_every_item(tmp_path: Path, short: bool) -> None:
    llm = ScriptedLLM()
    listed = answer_with(tmp_path, llm, "What books has Melanie read?", Reading(lists=True), short=short)
    assert LIST_INSTRUCTION in llm.prompts[-1] and listed.reading == {"list_cue": "What books has"}
    off = answer_with(tmp_path, llm, "What books has Melanie read?", Reading(), short=short)
    assert LIST_INSTRUCTION not in llm.prompts[-1] and off.reading == {}
    single = answer_with(tmp_path, llm, "What book did Melanie read first?", Reading(lists=True), short=short)
    assert LIST_INSTRUCTION not in llm.prompts[-1] and single.reading == {}


def test_other_readings_and_multiple_choice_are_not_changed(tmp_path: Path) -> None:
    llm = ScriptedLLM()
    question = "What books has Melanie read?"
    chosen = answer_with(tmp_path, llm, question, Reading(lists=True), choices=["Charlotte's Web", "Dune"])
    assert LIST_INSTRUCTION not in llm.prompts[-1] and "list_cue" not in chosen.reading
    quoted = answer_with(tmp_path, llm, question, Reading(form="quote", lists=True), short=True)
    assert all(LIST_INSTRUCTION not in p for p in llm.prompts) and "list_cue" not in quoted.reading


CHAT = """[1:56 pm on 8 May, 2023] Melanie: I finished Charlotte's Web last night, a classic.
[1:56 pm on 8 May, 2023] Caroline: Lovely! I am reading Becoming Nicole.

[2:10 pm on 25 May, 2023] Melanie: I read Nothing is Impossible this week, so good.
"""


@pytest.mark.parametrize("lists", ["auto", "off"])
def test_ask_and_its_stream_follow_the_setting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, lists: str) -> None:
    llm = StreamingLLM(reply="Charlotte's Web, Nothing is Impossible.")
    cfg = _config(monkeypatch, tmp_path, lists=lists)
    assert reading_of(cfg.answer).lists is (lists == "auto")
    with Memory.open(tmp_path / "m", cfg, llm=llm, embedder=HashEmbedder()) as mem:
        mem.add_text(CHAT, "Melanie and Caroline", source="chat.txt")
        mem.index()
        answer = mem.ask("What books has Melanie read?")
        asked = llm.prompts[-1]
        streamed = list(mem.ask_stream("What books has Melanie read?"))
        described = describe_answer(mem.store, answer, "dense")  # gemrag ask --json
        mcp_answer = MemoryTools(mem, "dense").ask("What books has Melanie read?")
    final = streamed[-1]
    assert isinstance(final, Answer) and final.text == answer.text
    assert llm.streams == 0  # the stream's prompt is ask's (with the list sentence or without): a cache hit
    assert (LIST_INSTRUCTION in asked) is (lists == "auto")
    expected = {"list_cue": "What books has"} if lists == "auto" else {}
    assert {k: v for k, v in answer.reading.items() if k == "list_cue"} == expected
    assert {k: v for k, v in final.reading.items() if k == "list_cue"} == expected
    cue = expected.get("list_cue")
    assert described.list_cue == cue and answer_out(final, "dense").list_cue == cue  # the server's answer and stream
    assert mcp_answer.list_cue == cue  # MCP's ask


def test_the_setting_is_checked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        _config(monkeypatch, tmp_path, lists="on")
