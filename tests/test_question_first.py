"""The question shown before the context as well as after it (``[answer] question_first``; query-aware
contextualization, Liu et al., "Lost in the Middle", TACL 2024, section 4.2): every answer prompt leads with the
question when the setting is on and is unchanged when it is off (so its LLM cache key holds), the answer records it,
and ``Memory.ask``, its stream and the evaluation's fingerprint follow the setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from fakes import HashEmbedder, ScriptedLLM, StreamingLLM
from gemrag import Memory
from gemrag.answers.answer import Answer
from gemrag.answers.prompts import answer_prompt, question_lead, short_answer_prompt
from gemrag.answers.provenance import describe_answer
from gemrag.answers.reading import Reading, reading_prompt
from gemrag.config import AnswerSettings
from gemrag.errors import ConfigError
from gemrag.eval.protocol import answer_settings_fingerprint
from gemrag.memory.asking import reading_of
from gemrag.server.serialize import answer_out
from test_answer_repair import HITS, MEWDS, RestatingLLM, answer_with
from test_time_aware_reading import _config

PASSAGES = [h.text for h in HITS]
LEAD = f"Question: {MEWDS}\n\nContext:\n"


def _user(messages: list[dict[str, str]]) -> str:
    return messages[-1]["content"]


def test_every_prompt_leads_with_the_question_only_when_asked() -> None:
    assert question_lead(MEWDS, True) == f"Question: {MEWDS}\n\n" and question_lead(MEWDS, False) == ""
    built = {
        "sentence": lambda first: answer_prompt(MEWDS, PASSAGES, question_first=first),
        "short": lambda first: short_answer_prompt(MEWDS, PASSAGES, question_first=first),
        "choice": lambda first: answer_prompt(MEWDS, PASSAGES, ["A retinopathy", "A virus"], question_first=first),
    }
    for name, build in built.items():
        on, off = _user(build(True)), _user(build(False))
        assert on.startswith(LEAD), name
        assert on.count(f"Question: {MEWDS}") == 2 and off.count(f"Question: {MEWDS}") == 1, name
        assert on == question_lead(MEWDS, True) + off, name  # nothing else changes
        assert off.startswith("Context:\n"), name  # the default prompt is the one of earlier releases
    assert _user(answer_prompt(MEWDS, PASSAGES)) == _user(answer_prompt(MEWDS, PASSAGES, question_first=False))


@pytest.mark.parametrize("short", [True, False])
def test_the_answer_is_asked_with_the_question_first_and_says_so(tmp_path: Path, short: bool) -> None:
    on_llm, off_llm = ScriptedLLM(), ScriptedLLM()
    on = answer_with(tmp_path, on_llm, MEWDS, Reading(question_first=True), short=short)
    off = answer_with(tmp_path, off_llm, MEWDS, Reading(), short=short)
    assert on_llm.prompts[-1].startswith(LEAD) and not off_llm.prompts[-1].startswith("Question:")
    assert on_llm.prompts[-1] == question_lead(MEWDS, True) + off_llm.prompts[-1]
    assert on.reading == {"question_first": True} and off.reading == {}
    assert on_llm.calls == off_llm.calls == 1  # no extra call


def test_other_readings_choices_and_the_repair_lead_with_it_too(tmp_path: Path) -> None:
    quoted = ScriptedLLM()
    answer_with(tmp_path, quoted, MEWDS, Reading(form="quote", question_first=True), short=True)
    expected = reading_prompt(MEWDS, PASSAGES, "quote", short=True, abstain=False, preface=question_lead(MEWDS, True))
    assert quoted.prompts[-1].startswith(LEAD) and quoted.prompts[-1].startswith(_user(expected)[:200])
    orders = ScriptedLLM()
    answer_with(tmp_path, orders, MEWDS, Reading(option_orders=2, question_first=True), choices=["A", "B virus"])
    assert orders.calls == 2 and all(p.startswith(LEAD) for p in orders.prompts)  # every order of the options
    restating = RestatingLLM("Multiple evanescent white dot syndrome", "A rare chorioretinopathy")
    repaired = answer_with(tmp_path, restating, MEWDS, Reading(repair=True, question_first=True), short=True)
    assert repaired.text == "A rare chorioretinopathy" and restating.calls == 2
    assert all(p.startswith(LEAD) for p in restating.prompts)  # the second prompt as the first was asked


CHAT = "[1:56 pm on 8 May, 2023] John: I moved to a flat by the beach in Brighton last spring.\n"
WHERE = "Where does John live?"
MOVED = "Where did John move to?"


@pytest.mark.parametrize("first", [True, False])
def test_ask_and_its_stream_follow_the_setting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, first: bool) -> None:
    llm = StreamingLLM("Brighton")
    cfg = _config(monkeypatch, tmp_path, question_first=first, cite=False, verify="off")
    assert reading_of(cfg.answer).question_first is first
    with Memory.open(tmp_path / "m", cfg, llm=llm, embedder=HashEmbedder()) as mem:
        mem.add_text(CHAT, "John", source="chat.txt")
        mem.index()
        answer = mem.ask(WHERE)
        streamed = list(mem.ask_stream(MOVED))  # another question: the same prompt would come from the cache
        described = describe_answer(mem.store, answer, "dense")  # gemrag ask --json, and MCP's ask (the same model)
    asked = [p for p in llm.prompts if "Answer briefly." in p]
    assert len(asked) == 2 and llm.streams == 1  # ask, then the stream
    for question, prompt in zip([WHERE, MOVED], asked, strict=True):
        assert prompt.startswith(f"Question: {question}\n\nContext:") is first
    final = streamed[-1]
    assert isinstance(final, Answer) and final.text == answer.text == "Brighton"
    assert answer.reading.get("question_first", False) is first and final.reading.get("question_first", False) is first
    assert described.question_first is answer_out(final, "dense").question_first is first  # and the server
    assert described.demonstrations is False


def test_the_setting_is_checked_and_fingerprinted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        _config(monkeypatch, tmp_path, question_first="sometimes")
    assert answer_settings_fingerprint(AnswerSettings(question_first=True)) == {"question_first": True}
    assert "question_first" not in answer_settings_fingerprint(AnswerSettings())  # a default run resumes as before
