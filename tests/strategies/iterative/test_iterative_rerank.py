"""RankGPT's rerank (Sun et al. 2023, section 3.2) in sliding windows, back to front, and fitted to the LLM's
context window: a window too long for it has its passages cut to fit (RankGPT's own rule), said in the trace and
warned, where the single pass used to fail and keep the base's order without a word."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from iterative_memory import QUESTION, Opener, ids, memories
from steps_llm import StepLLM

from gemrag.config import Config
from gemrag.strategies.iterative.passes import rerank_limit
from gemrag.strategies.iterative.prompts import rerank_prompt
from gemrag.strategies.iterative.rerank import RerankFitWarning, fitted, prompt_tokens, sliding_windows


@pytest.fixture
def opened(tmp_path: Path, config: Config) -> Iterator[Opener]:
    with memories(tmp_path, config) as opener:
        yield opener


def test_sliding_windows_back_to_front() -> None:
    assert sliding_windows(50) == [(30, 50), (20, 40), (10, 30), (0, 20)]  # RankGPT's window 20, step 10
    assert sliding_windows(100) == [(80, 100), (70, 90), (60, 80), (50, 70), (40, 60), (30, 50), (20, 40),
                                    (10, 30), (0, 20)]  # fmt: skip
    assert sliding_windows(25) == [(5, 25), (0, 15)]  # the last window is clamped to the top
    assert sliding_windows(20) == [(0, 20)] and sliding_windows(21) == [(1, 21), (0, 11)]
    assert sliding_windows(10) == [(0, 10)] and sliding_windows(0) == []
    assert sliding_windows(5, 3, 1) == [(2, 5), (1, 4), (0, 3)]
    for window, step in ((1, 1), (4, 4), (4, 0)):
        with pytest.raises(ValueError, match="need window >= 2"):
            sliding_windows(10, window, step)


def test_a_deep_rerank_slides_its_window_to_the_top(opened: Opener) -> None:
    reverse = {"ranking": [3, 2, 1]}
    llm = StepLLM(rerank=[reverse])
    mem = opened(llm, rerank=True, rerank_depth=5, rerank_window=3, rerank_step=1, max_steps=0)
    base = ids(mem.retrieve(QUESTION, 5, strategy="dense"))
    hits = mem.retrieve(QUESTION, 5, strategy="iterative")
    # windows [3, 5], [2, 4], [1, 3], each reversed: 0 1 2 3 4 -> 0 1 4 3 2 -> 0 3 4 1 2 -> 4 3 0 1 2 (0-based)
    assert ids(hits) == [base[i] for i in (4, 3, 0, 1, 2)]  # the last passage climbed to the top in one sweep
    assert llm.passes() == ["rerank"] * 3
    assert all("Here are 3 passages" in prompt for _, prompt in llm.calls)
    assert [s["properties"]["ranking"]["items"]["maximum"] for s in llm.schemas] == [3, 3, 3]
    trace = hits[0].meta["trace"]
    assert trace["rerank_calls"] == 3 and trace["calls"] == 0 and "rerank_fit" not in trace
    assert trace["steps"][0]["rerank_windows"] == [[3, 5], [2, 4], [1, 3]]
    assert trace["steps"][0]["reranked"] == [5, 4, 1, 2, 3]


def test_a_malformed_window_keeps_its_order_and_the_sweep_goes_on(opened: Opener) -> None:
    llm = StepLLM(rerank=["not a ranking", {"ranking": [3, 2, 1]}, {"ranking": [3, 2, 1]}])
    mem = opened(llm, rerank=True, rerank_depth=5, rerank_window=3, rerank_step=1, max_steps=0)
    base = ids(mem.retrieve(QUESTION, 5, strategy="dense"))
    hits = mem.retrieve(QUESTION, 5, strategy="iterative")
    # window [3, 5] kept; [2, 4]: 1 2 3 -> 3 2 1; [1, 3]: 0 3 2 -> 2 3 0
    assert ids(hits) == [base[i] for i in (2, 3, 0, 1, 4)]
    trace = hits[0].meta["trace"]
    assert trace["rerank_calls"] == 3 and [f["pass"] for f in trace["failures"]] == ["rerank"]


def test_fitted_cuts_every_passage_to_the_most_words_that_fit() -> None:
    llm = StepLLM()  # counts a token per word
    texts = [" ".join(f"w{i}x{j}" for j in range(40)) for i in range(4)]
    room = prompt_tokens(llm, rerank_prompt(QUESTION, [" ".join(t.split()[:12]) for t in texts]))
    llm.context_window = room + rerank_limit(4)  # exactly 12 words of each fit
    assert fitted(llm, QUESTION, texts) == ([" ".join(t.split()[:12]) for t in texts], 12)
    llm.context_window = 10_000
    assert fitted(llm, QUESTION, texts) == (texts, None)  # fits whole: unchanged (the earlier prompt, its cache key)
    llm.context_window = 20
    assert fitted(llm, QUESTION, texts) is None  # not even the question and the instructions fit


def test_a_window_too_long_for_the_context_is_cut_to_fit_said_and_warned(opened: Opener) -> None:
    llm = StepLLM(rerank=[{"ranking": [2, 1]}])
    llm.context_window = 140  # words, as StepLLM counts tokens: five whole passages (~190) do not fit
    mem = opened(llm, rerank=True, rerank_depth=5, max_steps=0)
    with pytest.warns(RerankFitWarning, match=r"each was cut to its first \d+ words"):
        hits = mem.retrieve(QUESTION, 5, strategy="iterative")
    trace = hits[0].meta["trace"]
    [fit] = trace["rerank_fit"]
    assert fit["window"] == [1, 5] and 1 <= fit["words"] < 20
    assert trace["failures"] == [] and trace["rerank_calls"] == 1
    assert trace["steps"][0]["reranked"][:2] == [2, 1]  # the pass answered: the base's order is not kept silently
    [(_, prompt)] = llm.calls
    passages = prompt.split("passages:\n", 1)[1].split("\n\nQuestion:")[0].split("\n\n")
    assert len(passages) == 5 and all(len(p.split()) <= fit["words"] + 1 for p in passages)  # "[n]" and the words


def test_a_window_that_cannot_fit_is_a_failure_and_a_warning(opened: Opener) -> None:
    llm = StepLLM(rerank=[{"ranking": [2, 1]}])
    llm.context_window = 30
    mem = opened(llm, rerank=True, rerank_depth=5, max_steps=0)
    with pytest.warns(RerankFitWarning, match="not even one word of each passage fits the context window"):
        hits = mem.retrieve(QUESTION, 5, strategy="iterative")
    assert ids(hits) == ids(mem.retrieve(QUESTION, 5, strategy="dense")) and llm.calls == []
    trace = hits[0].meta["trace"]
    assert [f["pass"] for f in trace["failures"]] == ["rerank"] and trace["rerank_calls"] == 0
