"""An answer asked again because its form did not fit the question (``[answer] repair``), or because it copied a
worked example (``[answer] demonstrations``), on the web page, in
Debian's chromium (the ``browser`` fixture, test doubles): the page shows the second answer and a note with the
fault and the first answer."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from test_web_look import seeded_page
from test_web_page import ask_question, served

from fakes import HashEmbedder, StreamingLLM
from gemrag.answers.repair import ALTERNATIVES_INSTRUCTION
from gemrag.config import Config, load_config
from gemrag.models.base import Completion, Message


class _SaysYes(StreamingLLM):
    """Answers "Yes" to the question offering alternatives, and "Pilot" once the prompt asks for one of them."""

    def __init__(self) -> None:
        super().__init__("Yes")

    def complete(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
        self.reply = "Pilot" if ALTERNATIVES_INSTRUCTION in messages[-1]["content"] else "Yes"
        return super().complete(messages, **kwargs)

    def complete_stream(self, messages: Sequence[Message], **kwargs: Any) -> Any:
        self.reply = "Pilot" if ALTERNATIVES_INSTRUCTION in messages[-1]["content"] else "Yes"
        return super().complete_stream(messages, **kwargs)


def test_an_answer_asked_again_is_shown_with_the_first(browser: Any, tmp_path: Path, config: Config) -> None:
    cfg = load_config(
        None,
        {"strategy": "dense", "memory": {"chunk_tokens": 30}, "gem": {"questions": 2},
         "answer": {"repair": "auto", "verify": "off"}},
    )  # fmt: skip
    with seeded_page(browser, served(tmp_path / "root", cfg, embedder=HashEmbedder(), llm=_SaysYes())) as (
        page,
        errors,
    ):
        ask_question(page, "Is the keeper's cat named Rex or Pilot?")
        answer = page.inner_text("#answer-text")
        note = page.inner_text("#answer-state [data-state='repair']")
    assert errors == []
    assert answer.strip() == "Pilot", answer  # the final answer's text replaces the streamed "Yes"
    assert note.startswith("Asked again.") and "“Yes”" in note and "alternatives" in note, note
    assert "the answer above is the second" in note, note


class _CopiesAnExample(StreamingLLM):
    """Answers with a worked example's name while the prompt carries the examples, else "Pilot"."""

    def __init__(self) -> None:
        super().__init__("Pilot")

    def complete(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
        self.reply = "Helen Marsh" if len(messages) > 2 else "Pilot"
        return super().complete(messages, **kwargs)


def test_an_answer_that_copied_a_worked_example_says_so(browser: Any, tmp_path: Path, config: Config) -> None:
    cfg = load_config(
        None,
        {"strategy": "dense", "memory": {"chunk_tokens": 30}, "gem": {"questions": 2},
         "answer": {"demonstrations": True, "verify": "off"}},
    )  # fmt: skip
    with seeded_page(browser, served(tmp_path / "root", cfg, embedder=HashEmbedder(), llm=_CopiesAnExample())) as (
        page,
        errors,
    ):
        ask_question(page, "What is the keeper's cat named?")
        answer = page.inner_text("#answer-text")
        note = page.inner_text("#answer-state [data-state='example-copied']")
    assert errors == []
    assert answer.strip() == "Pilot", answer  # the final answer's text replaces the streamed copy
    assert note.startswith("Asked again.") and "“Helen Marsh”" in note and "worked examples" in note, note
