"""Worked examples before the question (``[answer] demonstrations``; few-shot prompting, Brown et al. 2020, section
2): the plain free-form prompts (sentence and short form) carry the examples as earlier chat turns, each asked with
the same prompt and answered in the form the question should be; with the setting off every prompt is unchanged (so
its LLM cache key holds); multiple choice and the other readings keep their prompts; the answer records the setting,
and ``Memory.ask``, its stream, a repair and the evaluation's fingerprint follow it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from fakes import HashEmbedder, ScriptedLLM, StreamingLLM
from gemrag import Memory
from gemrag.answers.answer import Answer
from gemrag.answers.demonstrations import DEMONSTRATIONS, Demonstration, copied_example
from gemrag.answers.prompts import SHORT_CITE, answer_prompt, short_answer_prompt
from gemrag.answers.provenance import describe_answer
from gemrag.answers.reading import Reading
from gemrag.cli.ask import question_form_lines
from gemrag.config import AnswerSettings
from gemrag.errors import ConfigError
from gemrag.eval.protocol import answer_settings_fingerprint
from gemrag.mcp_server import MemoryTools
from gemrag.memory.asking import reading_of
from gemrag.models.base import Completion, Message
from gemrag.prompting import CITE_INSTRUCTION, format_context
from gemrag.server.serialize import answer_out
from test_answer_repair import HITS, MEWDS, RestatingLLM, answer_with
from test_time_aware_reading import _config

PASSAGES = [h.text for h in HITS]


class RecordingLLM(ScriptedLLM):
    """The scripted double, keeping every call's whole message list (``messages``)."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[list[Message]] = []

    def complete(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
        self.messages.append([dict(m) for m in messages])  # type: ignore[misc]
        return super().complete(messages[:1] + messages[-1:], **kwargs)


def _turns(messages: list[Message]) -> list[Message]:
    """The worked examples' turns: everything between the system message and the question's own turn."""
    assert messages[0]["role"] == "system" and messages[-1]["role"] == "user"
    return messages[1:-1]


@pytest.mark.parametrize("cite", [False, True])
def test_the_short_prompt_shows_each_example_as_the_question_will_be_asked(cite: bool) -> None:
    on = short_answer_prompt(MEWDS, PASSAGES, cite=cite, demonstrations=DEMONSTRATIONS)
    off = short_answer_prompt(MEWDS, PASSAGES, cite=cite)
    assert len(off) == 2 and on[0] == off[0] and on[-1] == off[-1]  # the question's own turn is unchanged
    turns = _turns(on)
    assert [t["role"] for t in turns] == ["user", "assistant"] * len(DEMONSTRATIONS)
    for demo, asked, answered in zip(DEMONSTRATIONS, turns[::2], turns[1::2], strict=True):
        assert asked["content"] == short_answer_prompt(demo.question, list(demo.passages), cite=cite)[-1]["content"]
        assert format_context(list(demo.passages)) in asked["content"] and asked["content"].endswith("Short answer:")
        assert (SHORT_CITE in asked["content"]) is cite
        markers = "".join(f"[{n}]" for n in demo.cites)
        assert answered["content"] == (f"{demo.phrase} {markers}" if cite else demo.phrase)


def test_each_examples_answer_is_the_passages_own_words() -> None:
    for demo in DEMONSTRATIONS:
        cited = " ".join(demo.passages[n - 1] for n in demo.cites)
        assert demo.phrase in cited, demo.question  # the phrase is copied, as the short prompt asks
        assert all(1 <= n <= len(demo.passages) for n in demo.cites)
        assert demo.sentence.endswith(".") and "[" not in demo.sentence


def test_the_sentence_prompt_answers_each_example_in_a_cited_sentence() -> None:
    on = answer_prompt(MEWDS, PASSAGES, cite=True, abstain=True, question_first=True, demonstrations=DEMONSTRATIONS)
    off = answer_prompt(MEWDS, PASSAGES, cite=True, abstain=True, question_first=True)
    assert on[-1] == off[-1]
    turns = _turns(on)
    assert len(turns) == 2 * len(DEMONSTRATIONS)
    first = DEMONSTRATIONS[0]
    assert turns[0]["content"].startswith(f"Question: {first.question}\n\nContext:")  # the same question_first
    assert CITE_INSTRUCTION in turns[0]["content"] and "say that it is not mentioned" in turns[0]["content"]
    assert turns[1]["content"] == "When full, the Hallam reservoir holds 12.4 million cubic metres of water [2]."
    chain = Demonstration(("a", "b"), "q?", "b", "It is b.", (1, 2))
    assert chain.reply(short=False, cite=True) == "It is b [1][2]."
    assert chain.reply(short=False, cite=False) == "It is b."


def test_multiple_choice_keeps_its_prompt() -> None:
    options = ["A retinopathy", "A virus"]
    shown = answer_prompt(MEWDS, PASSAGES, options, demonstrations=DEMONSTRATIONS)
    assert shown == answer_prompt(MEWDS, PASSAGES, options)


@pytest.mark.parametrize("short", [True, False])
def test_the_answer_is_asked_after_the_examples_and_says_so(tmp_path: Path, short: bool) -> None:
    on_llm, off_llm = RecordingLLM(), RecordingLLM()
    on = answer_with(tmp_path, on_llm, MEWDS, Reading(demonstrations=DEMONSTRATIONS), short=short)
    off = answer_with(tmp_path, off_llm, MEWDS, Reading(), short=short)
    assert on_llm.calls == off_llm.calls == 1  # no extra call
    assert len(_turns(on_llm.messages[-1])) == 2 * len(DEMONSTRATIONS) and len(off_llm.messages[-1]) == 2
    assert on_llm.messages[-1][-1] == off_llm.messages[-1][-1]
    assert on.reading == {"demonstrations": True} and off.reading == {}


def test_other_readings_and_choices_are_asked_without_examples(tmp_path: Path) -> None:
    quoted = RecordingLLM()
    answer_with(tmp_path, quoted, MEWDS, Reading(form="quote", demonstrations=DEMONSTRATIONS), short=True)
    chosen = RecordingLLM()
    answer_with(tmp_path, chosen, MEWDS, Reading(demonstrations=DEMONSTRATIONS), choices=["A retinopathy", "A virus"])
    assert all(len(m) == 2 for m in quoted.messages + chosen.messages)


def test_a_repair_is_asked_after_the_examples_too(tmp_path: Path) -> None:
    seen: list[int] = []

    class Counting(RestatingLLM):
        def complete(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
            seen.append(len(messages))
            return super().complete(messages, **kwargs)

    llm = Counting("Multiple evanescent white dot syndrome", "A rare chorioretinopathy")
    repaired = answer_with(tmp_path, llm, MEWDS, Reading(repair=True, demonstrations=DEMONSTRATIONS), short=True)
    assert repaired.text == "A rare chorioretinopathy" and llm.calls == 2
    assert seen == [2 + 2 * len(DEMONSTRATIONS)] * 2  # the second prompt as the first was asked


CHAT = "[1:56 pm on 8 May, 2023] John: I moved to a flat by the beach in Brighton last spring.\n"


@pytest.mark.parametrize("shown", [True, False])
def test_ask_and_its_stream_follow_the_setting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, shown: bool) -> None:
    sizes: list[int] = []

    class Sized(StreamingLLM):
        def complete(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
            if "Answer briefly." in messages[-1]["content"]:  # the answer's call (the stream's too)
                sizes.append(len(messages))
            return super().complete(messages, **kwargs)

    llm = Sized("Brighton")
    cfg = _config(monkeypatch, tmp_path, demonstrations=shown, cite=False, verify="off")
    assert reading_of(cfg.answer).demonstrations == (DEMONSTRATIONS if shown else ())
    with Memory.open(tmp_path / "m", cfg, llm=llm, embedder=HashEmbedder()) as mem:
        mem.add_text(CHAT, "John", source="chat.txt")
        mem.index()
        answer = mem.ask("Where does John live?")
        streamed = list(mem.ask_stream("Where did John move to?"))
    assert sizes == [2 + 2 * len(DEMONSTRATIONS) if shown else 2] * 2
    final = streamed[-1]
    assert isinstance(final, Answer) and final.text == answer.text == "Brighton"
    assert answer.reading.get("demonstrations", False) is shown and final.reading.get("demonstrations", False) is shown


def test_the_setting_is_checked_and_fingerprinted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        _config(monkeypatch, tmp_path, demonstrations="sometimes")
    assert answer_settings_fingerprint(AnswerSettings(demonstrations=True)) == {"demonstrations": True}
    assert "demonstrations" not in answer_settings_fingerprint(AnswerSettings())  # a default run resumes as before


def test_an_answer_naming_an_examples_own_name_is_found() -> None:
    assert copied_example("Helen Marsh", ["G. Stanley Hall founded the journal."]) == "Helen Marsh"
    assert copied_example("helen  marsh [2]", ["Nothing about her."]) == "Helen Marsh"  # case and spacing aside
    assert copied_example("Helen Marsh", ["Helen Marsh wrote it."]) is None  # the context holds it: read, not copied
    assert copied_example("Leeds", ["A city."], question="Was it Leeds or York?") is None  # the question names it
    assert copied_example("Samuel Johnson", ["A writer."]) is None  # "Sam" as a whole word only
    assert copied_example("She was at the animal shelter.", ["A bakery."]) == "at the animal shelter"  # a phrase
    assert copied_example("", ["x"]) is None and copied_example("Stanley Hall", ["x"]) is None


class CopyingLLM(StreamingLLM):
    """Answers with an example's name when the prompt carries the examples, else with the context's answer."""

    def __init__(self) -> None:
        super().__init__(reply="")
        self.sizes: list[int] = []

    def complete(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
        completion = super().complete(messages, **kwargs)
        content = messages[-1]["content"]
        if "Answer briefly." in content or "Short answer:" in content:
            self.sizes.append(len(messages))
            completion.text = "Helen Marsh" if len(messages) > 2 else "Brighton"
        return completion


@pytest.mark.parametrize("short", [True, False])
def test_an_answer_that_copied_an_example_is_asked_again_without_them(tmp_path: Path, short: bool) -> None:
    llm = CopyingLLM()
    answer = answer_with(tmp_path, llm, MEWDS, Reading(demonstrations=DEMONSTRATIONS), short=short)
    assert answer.text == "Brighton" and llm.sizes == [2 + 2 * len(DEMONSTRATIONS), 2]  # the second: no examples
    assert answer.reading == {"demonstrations": True, "example_copied": "Helen Marsh"}
    plain = CopyingLLM()
    assert answer_with(tmp_path, plain, MEWDS, Reading(), short=short).text == "Brighton" and plain.sizes == [2]


def test_a_copied_answer_is_asked_again_and_said_on_every_surface(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    llm = CopyingLLM()
    cfg = _config(monkeypatch, tmp_path, demonstrations=True, cite=False, verify="off")
    with Memory.open(tmp_path / "m", cfg, llm=llm, embedder=HashEmbedder()) as mem:
        mem.add_text(CHAT, "John", source="chat.txt")
        mem.index()
        streamed = list(mem.ask_stream("Where did John move to?"))
        final = streamed[-1]
        assert isinstance(final, Answer) and final.text == "Brighton"
        described = describe_answer(mem.store, final, "dense")  # gemrag ask --json
        mcp_answer = MemoryTools(mem, "dense").ask("Where does John live?")
    assert "".join(p for p in streamed[:-1] if isinstance(p, str)) == "Helen Marsh\nBrighton"  # the copy, then again
    assert final.reading["example_copied"] == "Helen Marsh" and llm.sizes[:2] == [2 + 2 * len(DEMONSTRATIONS), 2]
    assert described.example_copied == answer_out(final, "dense").example_copied == "Helen Marsh"  # --json, server
    assert mcp_answer.answer == "Brighton" and mcp_answer.example_copied == "Helen Marsh"  # MCP's ask
    assert described.demonstrations and answer_out(final, "dense").demonstrations and mcp_answer.demonstrations
    said = [str(line) for line in question_form_lines(final)]  # gemrag ask, under the answer
    assert said == ['· the first answer named "Helen Marsh", from the worked examples, not the context: asked again '
                    "without the examples"]  # fmt: skip
    plain = Answer("Brighton", None, [], 0.0, 0.0, reading={"demonstrations": True})
    assert question_form_lines(plain) == [] and answer_out(plain, "dense").example_copied is None
    unshown = Answer("Brighton", None, [], 0.0, 0.0)
    assert not answer_out(unshown, "dense").demonstrations and not answer_out(unshown, "dense").question_first
