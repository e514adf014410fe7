"""``answer_from = "steps"``: the final answer also reads the decomposition's sub-questions and sub-answers, before
the passages (self-ask's composition, Press et al. 2023, section 3); the passages keep their numbers, so citations
name passages only; the answer is cached like any other. ``"passages"`` (the default) leaves every prompt as it was."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from iterative_memory import QUESTION, Opener, memories
from steps_llm import StepLLM

from gemrag.answers.answer import Answer
from gemrag.answers.answering import answer_question
from gemrag.answers.prompts import answer_prompt, follow_ups_text, short_answer_prompt
from gemrag.config import Config

SUBS = ["Who directed the film Blue River?", "Where was #1 born?"]
FOLLOW_UPS = [
    {"question": "Who directed the film Blue River?", "answer": "Jane Roe"},
    {"question": "Where was Jane Roe born?", "answer": None},
]
SHOWN = (
    "Follow-up questions asked while searching:\n"
    "Follow up: Who directed the film Blue River?\nIntermediate answer: Jane Roe\n"
    "Follow up: Where was Jane Roe born?\n\n"
)


@pytest.fixture
def opened(tmp_path: Path, config: Config) -> Iterator[Opener]:
    with memories(tmp_path, config) as opener:
        yield opener


def _llm(**answer: Any) -> StepLLM:
    return StepLLM(decompose=[{"subquestions": SUBS}], sub_answer=[{"answer": "Jane Roe"}], **answer)


def test_the_hits_carry_the_follow_ups_and_the_answer_reads_them_first(opened: Opener) -> None:
    llm = _llm(answer=["Tromsø"])
    mem = opened(llm, mode="decompose", answer_from="steps")
    hits = mem.retrieve(QUESTION, 3, strategy="iterative")
    assert all(h.meta["follow_ups"] == FOLLOW_UPS for h in hits)
    answer = mem.answer(QUESTION, hits, short=True)
    assert answer.text == "Tromsø" and llm.passes() == ["decompose", "sub_answer", "answer"]
    prompt = llm.calls[-1][1]
    assert prompt == short_answer_prompt(QUESTION, [h.text for h in hits], follow_ups=FOLLOW_UPS)[1]["content"]
    assert prompt.startswith(SHOWN + "Context:\n[1] ")  # the follow-ups, then the numbered passages
    assert f"[{len(hits)}] " in prompt and f"[{len(hits) + 1}]" not in prompt  # the follow-ups take no number
    again = mem.answer(QUESTION, hits, short=True)
    assert again.text == "Tromsø" and len(llm.calls) == 3  # answered by the LLM cache


def test_the_default_answer_reads_the_passages_only(opened: Opener) -> None:
    llm = _llm(answer=["Tromsø"])
    mem = opened(llm, mode="decompose")
    hits = mem.retrieve(QUESTION, 3, strategy="iterative")
    assert all("follow_ups" not in h.meta for h in hits)
    mem.answer(QUESTION, hits, short=True)
    # the prompt of every other strategy (and of issue 42's measurements): its LLM cache keys hold
    assert llm.calls[-1][1] == short_answer_prompt(QUESTION, [h.text for h in hits])[1]["content"]
    assert "Follow up" not in llm.calls[-1][1]


def test_citations_number_the_passages_only(opened: Opener) -> None:
    llm = _llm(answer=["Jane Roe was born in Tromsø [2]."])
    mem = opened(llm, mode="decompose", answer_from="steps")
    hits = mem.retrieve(QUESTION, 3, strategy="iterative")
    answer = answer_question(mem.llm, mem.meter, mem.store, QUESTION, hits, cite=True)
    assert answer.cited == [2] and answer.dropped_citations == 0
    prompt = llm.calls[-1][1]
    assert prompt == answer_prompt(QUESTION, [h.text for h in hits], cite=True, follow_ups=FOLLOW_UPS)[1]["content"]
    assert prompt.startswith(SHOWN + "Context:\n[1] ")


def test_the_streamed_answer_reads_them_too(opened: Opener) -> None:
    llm = _llm(answer=["Tromsø, Norway."])
    mem = opened(llm, mode="decompose", answer_from="steps")
    items = list(mem.ask_stream(QUESTION, budget=3, strategy="iterative"))
    final = items[-1]
    assert isinstance(final, Answer) and final.text == "Tromsø, Norway."
    assert llm.calls[-1][0] == "answer" and llm.calls[-1][1].startswith(SHOWN + "Context:\n[1] ")


def test_no_follow_ups_when_the_decomposition_failed(opened: Opener) -> None:
    llm = StepLLM(decompose=["not JSON"], answer=["Tromsø"])
    mem = opened(llm, mode="decompose", answer_from="steps")
    hits = mem.retrieve(QUESTION, 3, strategy="iterative")
    assert all("follow_ups" not in h.meta for h in hits)
    mem.answer(QUESTION, hits, short=True)
    assert llm.calls[-1][1] == short_answer_prompt(QUESTION, [h.text for h in hits])[1]["content"]


def test_follow_ups_text() -> None:
    assert follow_ups_text([]) == ""
    assert follow_ups_text(FOLLOW_UPS) == SHOWN
    # without follow-ups the prompts are the ones before the option existed, word for word
    assert answer_prompt("Q?", ["p"], follow_ups=[]) == answer_prompt("Q?", ["p"])
    assert answer_prompt("Q?", ["p"])[1]["content"] == (
        "Context:\n[1] p\n\nQuestion: Q?\n\nAnswer briefly. If the context does not contain the answer, give your "
        "best guess."
    )
