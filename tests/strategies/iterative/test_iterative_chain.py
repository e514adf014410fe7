"""IRCoT's growing chain (Trivedi et al. 2023, section 3): with ``chain = "grow"`` (the default) each next-query pass
reads the thoughts the passes before it wrote; ``chain = "queries"`` keeps the earlier form (the searches made only),
whose prompts, and so LLM cache keys, are unchanged. The first pass is the same prompt in both forms."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from iterative_memory import QUESTION, Opener, memories
from steps_llm import StepLLM

from gemrag.config import Config
from gemrag.strategies.iterative import IterativeConfig, IterativeStrategy
from gemrag.strategies.iterative.prompts import next_query_prompt

THOUGHTS = ["Blue River was directed by Jane Roe.", "Jane Roe was born in Tromsø."]
REPLIES: list[dict[str, Any]] = [
    {"thought": THOUGHTS[0], "enough": False, "query": "Where was Jane Roe born?"},
    {"thought": THOUGHTS[1], "enough": False, "query": "Which country is Tromsø in?"},
    {"thought": "Tromsø is in Norway.", "enough": True, "query": ""},
]


@pytest.fixture
def opened(tmp_path: Path, config: Config) -> Iterator[Opener]:
    with memories(tmp_path, config) as opener:
        yield opener


def test_each_pass_reads_the_chain_so_far(opened: Opener) -> None:
    llm = StepLLM(next_query=REPLIES)
    hits = opened(llm, max_steps=3).retrieve(QUESTION, 4, strategy="iterative")
    assert llm.passes() == ["next_query"] * 3
    first, second, third = (prompt for _, prompt in llm.calls)
    assert "Reasoning so far" not in first
    assert f"Reasoning so far: {THOUGHTS[0]}\n" in second and THOUGHTS[1] not in second
    assert f"Reasoning so far: {THOUGHTS[0]} {THOUGHTS[1]}\n" in third  # joined in order, as IRCoT's chain
    assert '"thought": the next sentence of the reasoning' in third
    # the chain comes after the searches: the prompt up to them still extends the previous one's passages
    assert third.index("Searches made:") < third.index("Reasoning so far")
    trace = hits[0].meta["trace"]
    assert trace["chain"] == "grow" and trace["stop"] == "enough" and trace["calls"] == 3
    assert [s.get("thought") for s in trace["steps"][1:]] == THOUGHTS


def test_the_queries_form_shows_no_thoughts_and_keeps_its_prompts(opened: Opener) -> None:
    llm = StepLLM(next_query=REPLIES)
    hits = opened(llm, max_steps=3, chain="queries").retrieve(QUESTION, 4, strategy="iterative")
    assert llm.passes() == ["next_query"] * 3
    assert all("Reasoning so far" not in prompt and THOUGHTS[0] not in prompt for _, prompt in llm.calls)
    assert hits[0].meta["trace"]["chain"] == "queries"
    # the earlier form's prompt, word for word (the same LLM cache keys as before the chain existed)
    searches = "1. " + QUESTION + "\n2. Where was Jane Roe born?"
    assert llm.calls[1][1].endswith(
        f"Searches made:\n{searches}\n\n"
        'Reply with {"thought": one sentence on what the passages say and what is still missing, '
        '"enough": true or false, "query": the next search query, or "" when enough}.'
    )


def test_the_first_pass_is_shared_by_both_forms(opened: Opener) -> None:
    llm = StepLLM(next_query=REPLIES)
    mem = opened(llm, max_steps=2, chain="queries")
    mem.retrieve(QUESTION, 3, strategy="iterative")
    assert len(llm.calls) == 2
    grow = IterativeStrategy(IterativeConfig(base="dense", mode="ircot", max_steps=2, chain="grow"))
    llm.replies["next_query"] = [REPLIES[1]]
    grow.retrieve(mem.ctx, QUESTION, 3)
    # the first pass is answered by the LLM cache (the same prompt), the second reads the chain: a new call
    assert len(llm.calls) == 3 and "Reasoning so far: " + THOUGHTS[0] in llm.calls[2][1]


def test_blank_thoughts_are_left_out_of_the_chain() -> None:
    with_blank = next_query_prompt(QUESTION, ["p"], [QUESTION, "q"], ["", "  ", "A is B."])
    assert "Reasoning so far: A is B.\n" in with_blank[1]["content"]
    assert next_query_prompt(QUESTION, ["p"], [QUESTION], ["", " "]) == next_query_prompt(QUESTION, ["p"], [QUESTION])
