"""``iterative`` with test doubles: step order, the stop rule, the merge (a passage once, budget B), the LLM cache,
decomposition filling ``#1``, the rerank order, malformed output, configuration errors and ``gemrag config``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from iterative_memory import DOCS, QUESTION, Opener, doc_of, ids, interleaved, memories
from steps_llm import StepLLM
from typer.testing import CliRunner

from fakes import HashEmbedder
from gemrag import Memory, cli
from gemrag.config import Config, load_config
from gemrag.errors import ConfigError
from gemrag.strategies import get_strategy
from gemrag.strategies.iterative import IterativeConfig, IterativeStrategy
from gemrag.strategies.iterative.merge import Step, merge_steps
from gemrag.strategies.iterative.passes import fill, references, rerank_order
from gemrag.types import Hit


@pytest.fixture
def opened(tmp_path: Path, config: Config) -> Iterator[Opener]:
    with memories(tmp_path, config) as opener:
        yield opener


def test_ircot_steps_in_order_merged_within_the_budget(opened: Any) -> None:
    second = "Where was Jane Roe born?"
    llm = StepLLM(
        next_query=[
            {"thought": "Blue River was directed by Jane Roe.", "enough": False, "query": second},
            {"thought": "Jane Roe was born in Tromsø.", "enough": True, "query": ""},
        ]
    )
    mem = opened(llm, read=2)
    hits = mem.retrieve(QUESTION, 3, strategy="iterative")
    assert llm.passes() == ["next_query", "next_query"]
    first_prompt, second_prompt = (text for _, text in llm.calls)
    # step 1's prompt: the question, its top 2 passages (titles first), and the one search made
    assert first_prompt.startswith(f"Question: {QUESTION}") and "1. " + QUESTION in first_prompt
    assert second not in first_prompt and "2. " + second in second_prompt
    # the second prompt extends the first's passages (the numbers are kept, so the prefix is reused)
    assert second_prompt.split("Searches made:")[0].startswith(first_prompt.split("Searches made:")[0].rstrip())
    dense_q = ids(mem.retrieve(QUESTION, 5, strategy="dense"))
    dense_2 = ids(mem.retrieve(second, 5, strategy="dense"))
    assert ids(hits) == interleaved([dense_q, dense_2], 3)
    assert len(set(ids(hits))) == 3 and [h.rank for h in hits] == [0, 1, 2]
    assert "Jane Roe" in [doc_of(mem, i) for i in ids(hits)]  # the second hop's passage got in
    trace = hits[0].meta["trace"]
    assert [s["query"] for s in trace["steps"]] == [QUESTION, second]
    assert trace["stop"] == "enough" and trace["calls"] == 2 and trace["failures"] == []
    assert trace["steps"][1]["thought"] == "Blue River was directed by Jane Roe."
    for h in hits:  # each hit names the step that placed it and that step's query
        step = h.meta["iterative"]["step"]
        assert h.meta["iterative"]["query"] == [QUESTION, second][step - 1]
        assert h.node_id in (dense_q, dense_2)[step - 1]
        assert h.meta["iterative"]["steps"][step] == (dense_q, dense_2)[step - 1].index(h.node_id) + 1


def test_stop_rule_and_call_budget(opened: Any) -> None:
    enough = StepLLM(next_query=[{"thought": "", "enough": True, "query": "ignored"}])
    mem = opened(enough, min_steps=0)
    hits = mem.retrieve(QUESTION, 3, strategy="iterative")
    assert enough.passes() == ["next_query"]  # trusted "enough" ends the loop: one call, one retrieval
    assert ids(hits) == ids(mem.retrieve(QUESTION, 3, strategy="dense"))
    assert hits[0].meta["trace"]["stop"] == "enough" and len(hits[0].meta["trace"]["steps"]) == 1

    # by default (min_steps = 1) the first pass's "enough" is overruled: its thought (no query written) is
    # retrieved, as IRCoT retrieves with each chain-of-thought sentence; the second pass's "enough" is trusted
    eager_stop = [
        {"thought": "Blue River was directed by Jane Roe.", "enough": True, "query": ""},
        {"thought": "", "enough": True, "query": "ignored"},
    ]
    overruled = StepLLM(next_query=eager_stop)
    trace = opened(overruled).retrieve(QUESTION, 3, strategy="iterative")[0].meta["trace"]
    assert overruled.passes() == ["next_query", "next_query"] and trace["overruled"] == 1
    assert [s["query"] for s in trace["steps"]] == [QUESTION, "Blue River was directed by Jane Roe."]
    assert trace["stop"] == "enough" and trace["calls"] == 2

    eager = StepLLM(next_query=[{"thought": "", "enough": False, "query": f"query {i}"} for i in range(9)])
    hits = opened(eager, max_steps=3).retrieve(QUESTION, 4, strategy="iterative")
    trace = hits[0].meta["trace"]
    assert eager.passes() == ["next_query"] * 3 and trace["calls"] == 3 and trace["stop"] == "max_steps"
    assert [s["query"] for s in trace["steps"]] == [QUESTION, "query 0", "query 1", "query 2"]

    repeat = StepLLM(next_query=[{"thought": "", "enough": False, "query": QUESTION.upper()}])
    hits = opened(repeat).retrieve(QUESTION, 3, strategy="iterative")
    assert repeat.passes() == ["next_query"] and hits[0].meta["trace"]["stop"] == "repeat"

    none = StepLLM()
    hits = opened(none, max_steps=0).retrieve(QUESTION, 3, strategy="iterative")
    assert none.calls == [] and hits[0].meta["trace"]["calls"] == 0


def test_merge_a_passage_once_within_the_budget() -> None:
    def step(query: str, node_ids: list[int]) -> Step:
        hits = [Hit(i, "chunk", 1.0 - r / 10, f"t{i}", r, {"base": True}) for r, i in enumerate(node_ids)]
        return Step(query, hits)

    steps = [step("q", [1, 2, 3, 4]), step("a", [2, 5, 6]), step("b", [5, 7])]
    hits = merge_steps(steps, 5)
    # ranks 1: 1 (q), 2 (a), 5 (b); ranks 2: 2 again (q) skipped, 5 again (a) skipped, 7 (b); ranks 3: 3 (q)
    assert ids(hits) == [1, 2, 5, 7, 3]
    assert [h.meta["iterative"]["step"] for h in hits] == [1, 2, 3, 3, 1]
    assert hits[1].meta["iterative"] == {"step": 2, "query": "a", "steps": {1: 2, 2: 1}}
    assert hits[0].meta["base"] is True and [h.score for h in hits] == [1.0, 1.0, 1.0, 0.5, 1 / 3]
    assert ids(merge_steps(steps, 2)) == [1, 2] and merge_steps(steps, 0) == []
    assert ids(merge_steps(steps, 3)) == ids(hits)[:3]  # nested in the budget
    assert len(merge_steps(steps, 100)) == 7  # every distinct node once
    # rrf: node 2 (two steps) and node 5 (two steps) rise above step 1's first passage
    fused = merge_steps(steps, 3, "rrf")
    assert ids(fused) == [2, 5, 1]
    assert fused[0].score == pytest.approx(1 / 62 + 1 / 61) and fused[0].meta["iterative"]["step"] == 2
    with pytest.raises(ValueError, match="merge rule"):
        merge_steps(steps, 3, "sum")  # type: ignore[arg-type]


def test_the_same_question_twice_costs_no_new_call(opened: Any) -> None:
    llm = StepLLM(
        next_query=[
            {"thought": "", "enough": False, "query": "Where was Jane Roe born?"},
            {"thought": "", "enough": True, "query": ""},
        ]
    )
    mem = opened(llm)
    first = mem.retrieve(QUESTION, 3, strategy="iterative")
    assert len(llm.calls) == 2
    llm.replies["next_query"] = ["this would be a different answer"]
    again = mem.retrieve(QUESTION, 3, strategy="iterative")
    assert len(llm.calls) == 2  # both passes answered by the memory's LLM cache
    assert ids(again) == ids(first) and again[0].meta["trace"] == first[0].meta["trace"]
    mem.retrieve("Who was born in Graz?", 3, strategy="iterative")
    assert len(llm.calls) == 3  # another question is another key (the bad reply: a recorded failure)


def test_decomposition_fills_the_earlier_answer(opened: Any) -> None:
    llm = StepLLM(
        decompose=[{"subquestions": ["Who directed the film Blue River?", "Where was #1 born?"]}],
        sub_answer=[{"answer": "Jane Roe"}],
    )
    mem = opened(llm, mode="decompose")
    hits = mem.retrieve(QUESTION, 3, strategy="iterative")
    assert llm.passes() == ["decompose", "sub_answer"]
    assert llm.calls[1][1].startswith("Question: Who directed the film Blue River?")
    assert llm.schemas[0]["properties"]["subquestions"]["maxItems"] == 3  # max_steps + 1
    trace = hits[0].meta["trace"]
    assert [s["query"] for s in trace["steps"]] == [
        QUESTION,
        "Who directed the film Blue River?",
        "Where was Jane Roe born?",
    ]
    assert trace["steps"][2]["subquestion"] == "Where was #1 born?" and "unfilled" not in trace["steps"][2]
    assert trace["answers"] == {1: "Jane Roe"} and trace["calls"] == 2 and trace["stop"] == "done"
    lists = [ids(mem.retrieve(s["query"], 5, strategy="dense")) for s in trace["steps"]]
    assert ids(hits) == interleaved(lists, 3)


def test_placeholders() -> None:
    assert references("Who led #2 after #1 and #2?") == [2, 1]
    assert fill("Who led #2 after #1?", {2: "Austria"}) == "Who led Austria after #1?"


def test_decomposition_budget_leaves_a_reference_unfilled(opened: Any) -> None:
    subs = ["Who directed the film Blue River?", "Where was #1 born?", "Which country is #2 in?"]
    llm = StepLLM(decompose=[{"subquestions": subs}], sub_answer=[{"answer": "Jane Roe"}, {"answer": "Tromsø"}])
    hits = opened(llm, mode="decompose").retrieve(QUESTION, 4, strategy="iterative")
    # max_steps = 2: the decomposition and one sub-answer; #2 is filled with sub-question 2's own text
    assert llm.passes() == ["decompose", "sub_answer"]
    steps = hits[0].meta["trace"]["steps"]
    assert steps[3]["query"] == "Which country is Where was Jane Roe born? in?" and steps[3]["unfilled"] == [2]
    more = StepLLM(decompose=[{"subquestions": subs}], sub_answer=[{"answer": "Jane Roe"}, {"answer": "Tromsø"}])
    hits = opened(more, mode="decompose", max_steps=3).retrieve(QUESTION, 4, strategy="iterative")
    assert more.passes() == ["decompose", "sub_answer", "sub_answer"]
    assert hits[0].meta["trace"]["steps"][3]["query"] == "Which country is Tromsø in?"


def test_rerank_orders_the_first_step(opened: Any) -> None:
    llm = StepLLM(rerank=[{"ranking": [3, 3, 9, 1]}])
    mem = opened(llm, rerank=True, rerank_depth=4, max_steps=0)
    hits = mem.retrieve(QUESTION, 5, strategy="iterative")
    base = ids(mem.retrieve(QUESTION, 5, strategy="dense"))
    # the model's order (repeats and out-of-range numbers ignored), then the candidates it left out, then the rest
    assert ids(hits) == [base[2], base[0], base[1], base[3], base[4]]
    assert llm.passes() == ["rerank"]  # not counted against max_steps = 0
    trace = hits[0].meta["trace"]
    assert trace["rerank_calls"] == 1 and trace["calls"] == 0 and trace["steps"][0]["reranked"] == [3, 1, 2, 4]
    assert llm.schemas[0]["properties"]["ranking"]["items"]["maximum"] == 4
    assert rerank_order([2, 2, 0, 7], 3) == ([1, 0, 2], None)
    order, error = rerank_order([0, 4], 3)
    assert order is None and "names none" in str(error)


@pytest.mark.parametrize(
    ("settings", "failed"),
    [({}, "next_query"), ({"mode": "decompose"}, "decompose"), ({"rerank": True, "max_steps": 0}, "rerank")],
)
def test_malformed_output_falls_back_to_the_base(opened: Any, settings: dict[str, Any], failed: str) -> None:
    garbage = "Sure! The next query is: who"
    llm = StepLLM(next_query=[garbage], decompose=[garbage], rerank=[garbage])
    mem = opened(llm, **settings)
    hits = mem.retrieve(QUESTION, 3, strategy="iterative")
    assert ids(hits) == ids(mem.retrieve(QUESTION, 3, strategy="dense"))  # the base's ranking
    trace = hits[0].meta["trace"]
    assert [f["pass"] for f in trace["failures"]] == [failed] and "validation" in trace["failures"][0]["error"]
    assert len(llm.calls) == 1  # attempts = 1: no second call


def test_config_errors_are_clear(tmp_path: Path, config: Config) -> None:
    with pytest.raises(ConfigError, match=r"\[iterative\].*unknown strategy 'nope'"):
        get_strategy("iterative", load_config(None, {"iterative": {"base": "nope"}}))
    with pytest.raises(ConfigError, match="its own base"):
        get_strategy("iterative", load_config(None, {"iterative": {"base": "iterative"}}))
    with pytest.raises(ConfigError, match="max_steps"):
        get_strategy("iterative", load_config(None, {"iterative": {"max_steps": -1}}))
    with pytest.raises(ConfigError, match="unknown strategy 'nope'"):
        Memory.open(tmp_path / "m", load_config(None, {"iterative": {"base": "nope"}}), embedder=HashEmbedder())
    made = get_strategy("iterative", load_config(None, {"iterative": {"base": "fused", "mode": "decompose"}}))
    assert isinstance(made, IterativeStrategy) and made.config.base == "fused" and not made.nested
    assert IterativeConfig().model_dump() == {
        "base": "fused",
        "mode": "decompose",
        "max_steps": 2,
        "min_steps": 1,
        "chain": "grow",
        "read": 5,
        "merge": "interleave",
        "rerank": False,
        "rerank_depth": 10,
        "rerank_window": 20,
        "rerank_step": 10,
        "follow_up": "always",
        "answer_from": "passages",
        "attempts": 1,
    }
    with pytest.raises(ConfigError, match="rerank_step .10. must be below rerank_window .10."):
        get_strategy("iterative", load_config(None, {"iterative": {"rerank_window": 10}}))
    with pytest.raises(ConfigError, match='answer_from = "steps" reads the sub-answers of mode = "decompose"'):
        get_strategy("iterative", load_config(None, {"iterative": {"mode": "ircot", "answer_from": "steps"}}))
    with pytest.raises(ConfigError, match="chain"):
        get_strategy("iterative", load_config(None, {"iterative": {"chain": "thoughts"}}))


def test_a_base_leading_back_to_iterative_is_an_error(tmp_path: Path) -> None:
    cfg = load_config(None, {"iterative": {"base": "fused"}, "fused": {"parts": ["dense", "iterative"]}})
    with Memory.open(tmp_path / "loop", cfg, llm=StepLLM(), embedder=HashEmbedder()) as mem:
        mem.add_text(DOCS["Jane Roe"], title="Jane Roe")
        with pytest.raises(ConfigError, match="lead back to iterative"):
            mem.index(strategy="iterative")
        mem.index(strategy="dense")
        with pytest.raises(ConfigError, match="lead back to iterative"):  # each a new instance: caught all the same
            get_strategy("iterative", cfg).retrieve(mem.ctx, QUESTION, 2)


def test_iterative_over_dense_is_nested(opened: Any) -> None:
    mem = opened(StepLLM(next_query=[{"thought": "", "enough": False, "query": "Where was Jane Roe born?"}]))
    deep = mem.retrieve(QUESTION, 5, strategy="iterative")
    assert mem.get_strategy("iterative").nested
    assert ids(mem.retrieve(QUESTION, 2, strategy="iterative")) == ids(deep)[:2]


def test_gemrag_config_shows_the_section(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli.app, ["config", "--set", "iterative.mode=decompose"])
    assert result.exit_code == 0, result.output
    section = result.output.split("[iterative]")[1].split("\n[")[0]
    assert 'base = "fused"' in section and 'mode = "decompose"' in section and "max_steps = 2" in section


def test_one_subquestion_asks_no_follow_up_when_needed_only(opened: Any) -> None:
    """Self-ask's "Are follow up questions needed here: No": under ``follow_up = "needed"`` a decomposition of one
    sub-question retrieves nothing more (the context is the question's own ranking); ``"always"`` (the default)
    retrieves the paraphrase and interleaves it; two sub-questions are retrieved under both."""
    one = [{"subquestions": ["What do tide tables list for every hour?"]}]  # a retrieval of its own
    always = opened(StepLLM(decompose=list(one)), mode="decompose")
    needed_llm = StepLLM(decompose=list(one))
    needed = opened(needed_llm, mode="decompose", follow_up="needed")
    hits = needed.retrieve(QUESTION, 3, strategy="iterative")
    trace = hits[0].meta["trace"]
    assert needed_llm.passes() == ["decompose"] and trace["stop"] == "no_follow_up" and len(trace["steps"]) == 1
    assert ids(hits) == ids(needed.retrieve(QUESTION, 3, strategy="dense"))
    merged = always.retrieve(QUESTION, 3, strategy="iterative")
    assert len(merged[0].meta["trace"]["steps"]) == 2 and merged[0].meta["trace"]["stop"] == "done"
    lists = [ids(always.retrieve(s["query"], 5, strategy="dense")) for s in merged[0].meta["trace"]["steps"]]
    assert ids(merged) == interleaved(lists, 3) and ids(merged) != ids(hits)
    two = StepLLM(decompose=[{"subquestions": ["Who directed the film Blue River?", "Where was #1 born?"]}])
    split = opened(two, mode="decompose", follow_up="needed", max_steps=1).retrieve(QUESTION, 3, strategy="iterative")
    assert len(split[0].meta["trace"]["steps"]) == 3
