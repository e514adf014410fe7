"""The gist agent's tool results count against the retrieval budget B (issue 25): its context holds at most B
distinct retrieved items over all its calls, as a retrieval of B items does."""

from __future__ import annotations

from typing import Any

from gemrag.strategies.remem.agent import BUDGET_USED, ToolHit, run_agent


def tools(name: str, arguments: dict[str, Any]) -> list[ToolHit]:
    return [ToolHit(i, f"turn {i} about {arguments['query']}", 1.0 - i / 10) for i in range(5)]


def test_an_agent_whose_context_is_cut_at_b() -> None:
    cut = run_agent(None, "q", tools, max_steps=1, fixed_tool="semantic_retrieve", node_budget=2)
    assert cut.node_ids == [0, 1]
    shown = cut.steps[0]["results"]
    assert shown == [0, 1]
    full = run_agent(None, "q", tools, max_steps=1, fixed_tool="semantic_retrieve")
    assert full.node_ids == [0, 1, 2, 3, 4]  # per call: every item the tool returned (the earlier rule)


def test_items_already_shown_are_not_shown_again_and_the_model_is_told_the_budget_is_used() -> None:
    from gemrag.strategies.remem.agent import _Run

    run = _Run(None, "q", tools, ("semantic_retrieve",), 3000, node_budget=3)
    run.retrieve("semantic_retrieve", {"query": "a"}, "")
    run.retrieve("semantic_retrieve", {"query": "b"}, "")
    assert run.result.node_ids == [0, 1, 2]
    assert run.result.steps[1]["results"] == []  # nothing new fits
    assert BUDGET_USED.format(b=3) in run.messages[-1]["content"]
    assert run.messages[-2]["role"] == "assistant"
    first = next(m["content"] for m in run.messages if m["content"].startswith("Result of"))
    assert "3. turn 2" in first and "4. turn 3" not in first
