"""What one question's iterative retrieval reuses, and must reuse right: the per-question retrieval cache after
RankGPT's rerank of step 1 (a sub-question repeating the question gets the reranked list, and the sub-answer pass
reads it), and a sub-answer pass that failed (not asked again, so its pass goes to another answer)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from iterative_memory import QUESTION, Opener, ids, memories
from steps_llm import StepLLM

from gemrag.config import Config

REVERSED = {"ranking": [5, 4, 3, 2, 1]}
"""The rerank's answer over five candidates: the base's order reversed."""


@pytest.fixture
def opened(tmp_path: Path, config: Config) -> Iterator[Opener]:
    with memories(tmp_path, config) as opener:
        yield opener


def test_a_subquestion_repeating_the_question_gets_the_reranked_list(opened: Opener) -> None:
    # the decomposition prompt asks a one-fact question to be its own single sub-question: step 2 is the question
    llm = StepLLM(rerank=[REVERSED], decompose=[{"subquestions": [QUESTION]}])
    mem = opened(llm, mode="decompose", rerank=True, rerank_depth=5)
    base = ids(mem.retrieve(QUESTION, 5, strategy="dense"))
    hits = mem.retrieve(QUESTION, 4, strategy="iterative")
    reranked = base[::-1]
    steps = hits[0].meta["trace"]["steps"]
    assert steps[0]["hits"][:5] == reranked and steps[1]["query"] == QUESTION
    assert steps[1]["hits"][:5] == reranked  # not the base's list, which the rerank replaced
    # so the merge of two equal lists is that list (before the fix: r1, b1, r2, b2, the demoted passages restored)
    assert ids(hits) == reranked[:4]
    assert llm.passes() == ["rerank", "decompose"]


def test_the_sub_answer_pass_reads_the_reranked_order(opened: Opener) -> None:
    subs = [QUESTION, "Which country is #1 in?"]
    llm = StepLLM(rerank=[REVERSED], decompose=[{"subquestions": subs}], sub_answer=[{"answer": "Tromsø"}])
    mem = opened(llm, mode="decompose", rerank=True, rerank_depth=5, read=2)
    base = mem.retrieve(QUESTION, 5, strategy="dense")
    hits = mem.retrieve(QUESTION, 4, strategy="iterative")
    assert llm.passes() == ["rerank", "decompose", "sub_answer"]
    prompt = llm.calls[2][1]
    # the sub-answer reads sub-question 1's top 2 (read = 2): the reranked list's, the base's last two passages
    read = [prompt.find(h.text) for h in base]
    assert read[0] == read[1] == read[2] == -1 and 0 <= read[4] < read[3]
    assert hits[0].meta["trace"]["answers"] == {1: "Tromsø"}


def test_a_failed_sub_answer_is_not_asked_again(opened: Opener) -> None:
    subs = ["Who directed the film Blue River?", "Where was #1 born?", "What did #1 study in #2?"]
    garbage = "Sure! The director is"
    llm = StepLLM(decompose=[{"subquestions": subs}], sub_answer=[garbage, {"answer": "Tromsø"}])
    hits = opened(llm, mode="decompose", max_steps=3).retrieve(QUESTION, 4, strategy="iterative")
    trace = hits[0].meta["trace"]
    # the decomposition, sub-answer 1 (malformed), then sub-question 3 needs #1 and #2: #1 failed once and is not
    # asked again (before the fix a second pass went to #1's cached failure and #2 was left without a pass)
    assert llm.passes() == ["decompose", "sub_answer", "sub_answer"]
    assert trace["calls"] == 3 and [f["pass"] for f in trace["failures"]] == ["sub_answer"]
    assert trace["answers"] == {2: "Tromsø"}
    assert llm.calls[2][1].startswith("Question: Where was Who directed the film Blue River? born?")
    steps = trace["steps"]
    assert steps[2]["unfilled"] == [1] and steps[3]["unfilled"] == [1]
    assert steps[3]["query"] == "What did Who directed the film Blue River? study in Tromsø?"
