"""The span-answer form: the short answer prompt (a separate prompt: the default prompt's cache keys stay), cutting
a completion to its answer, and the final extraction step for an agent's long answer."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from fakes import ScriptedLLM
from gemrag.answers.answering import answer_question
from gemrag.answers.prompts import ABSTAIN, SHORT_INSTRUCTION, answer_prompt, short_answer_prompt
from gemrag.answers.replies import short_form
from gemrag.models.base import Completion, Message, Usage
from gemrag.models.meter import UsageMeter
from gemrag.store import Store
from gemrag.types import Hit


def test_short_prompt_is_a_separate_prompt() -> None:
    default = answer_prompt("Who sold the boat?", ["Marta sold her boat."], abstain=True)
    short = short_answer_prompt("Who sold the boat?", ["Marta sold her boat."], abstain=True)
    assert default != short and default[0] == short[0]  # same system message, another user message
    assert SHORT_INSTRUCTION in short[1]["content"] and ABSTAIN in short[1]["content"]
    assert short[1]["content"].endswith("Short answer:")
    assert short[1]["content"].startswith(default[1]["content"].split("\n\nAnswer briefly")[0])  # same context


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("Marta.", "Marta"),
        ("  Marta Silva\nShe sold it in 1998 because ...", "Marta Silva"),
        ("The passage says Marta sold it.\nAnswer: Marta", "Marta"),
        ("Thought: first ...\nShort answer: **Tromsø**", "Tromsø"),
        ('"in 1998"', "in 1998"),
        ("Final answer - not mentioned.", "not mentioned"),
        ("", ""),
        ("e.g...", "e.g..."),
    ],
)
def test_short_form(completion: str, expected: str) -> None:
    assert short_form(completion) == expected


class Recording(ScriptedLLM):
    """Answers every call with a fixed completion and records the messages and limits."""

    def __init__(self, reply: str) -> None:
        super().__init__()
        self.reply, self.seen = reply, []  # type: list[tuple[Sequence[Message], int]]

    def complete(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
        self.seen.append((messages, kwargs.get("max_tokens", 256)))
        return Completion(self.reply, None, Usage(prompt_tokens=10, completion_tokens=3, seconds=0.0, calls=1))


def _answer(tmp_path: Path, llm: Recording, hits: list[Hit], **options: bool) -> str:
    store = Store(tmp_path / "m")
    try:
        return answer_question(lambda: llm, UsageMeter(), store, "Who sold the boat?", hits, **options).text
    finally:
        store.close()


def test_short_answers_use_the_short_prompt(tmp_path: Path) -> None:
    hits = [Hit(1, "chunk", 0.9, "Marta sold her boat to Ivo.")]
    llm = Recording("Marta.\nShe sold it to Ivo in 1998.")
    assert _answer(tmp_path, llm, hits, short=True) == "Marta"
    ((messages, max_tokens),) = llm.seen
    assert messages == short_answer_prompt("Who sold the boat?", [hits[0].text]) and max_tokens < 256
    assert _answer(tmp_path, llm, hits) == "Marta.\nShe sold it to Ivo in 1998."  # the default form is unchanged
    assert llm.seen[-1][0] == answer_prompt("Who sold the boat?", [hits[0].text])


def test_an_agent_answer_is_shortened_once(tmp_path: Path) -> None:
    long = "Based on the conversation, it was Marta who sold her old boat to Ivo in the spring."
    hits = [Hit(1, "verbatim", 1.0, "Marta: I sold my boat to Ivo.", meta={"agent_answer": long})]
    llm = Recording("Short answer: Marta")
    assert _answer(tmp_path, llm, hits) == long and llm.seen == []  # default form: the agent's answer, no call
    assert _answer(tmp_path, llm, hits, short=True) == "Marta"
    ((messages, _),) = llm.seen
    assert long in messages[1]["content"] and "short phrase" in messages[1]["content"]
    few = [Hit(1, "verbatim", 1.0, "t", meta={"agent_answer": "Marta."})]
    assert _answer(tmp_path, llm, few, short=True) == "Marta" and len(llm.seen) == 1  # short already: no call
