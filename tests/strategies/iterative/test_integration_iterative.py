"""``iterative`` end to end with the real embedded models (MiniLM ONNX + Qwen2.5-Coder-0.5B GGUF via llama.cpp) on a
two-document corpus whose question needs the second hop: the next-query, decomposition, sub-answer and rerank schemas
compile to llama.cpp grammars and give usable answers, the steps are retrieved and merged, and the LLM cache answers
the same question again."""

from __future__ import annotations

from typing import Any

import pytest

from gemrag import Memory, load_config
from gemrag.strategies.iterative import IterativeConfig, IterativeStrategy
from realparts import require_small_model

pytestmark = pytest.mark.integration

DOCS = {
    "Blue River": "Blue River is a 1994 film directed by Jane Roe. It was shot on the coast of Maine.",
    "Jane Roe": "Jane Roe was born in Tromsø, Norway. She studied painting before she made films.",
}
QUESTION = "Where was the director of the film Blue River born?"


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    require_small_model()
    cfg = load_config(None, {"llm": {"model": "qwen2.5-coder-0.5b", "n_ctx": 2048}})
    mem = Memory.open(tmp_path_factory.mktemp("iterative"), cfg)
    for title, text in DOCS.items():
        mem.add_text(text, title)
    mem.index(strategy="iterative")
    yield mem
    mem.close()


def _titles(memory: Memory, node_ids: list[int]) -> list[str]:
    titles = {int(d["id"]): str(d["title"]) for d in memory.store.documents()}
    return [titles[int(memory.store.node(i).doc_id)] for i in node_ids]  # type: ignore[arg-type]


def test_second_hop_with_the_real_small_model(memory: Memory) -> None:
    dense = memory.retrieve(QUESTION, 2, strategy="dense")
    assert _titles(memory, [h.node_id for h in dense])[0] == "Blue River"  # the bridge passage first: a second hop
    settings: dict[str, Any]
    for settings in ({"mode": "ircot"}, {"mode": "decompose"}, {"mode": "ircot", "rerank": True, "max_steps": 1}):
        strategy = IterativeStrategy(IterativeConfig(**settings))
        hits = strategy.retrieve(memory.ctx, QUESTION, 2)
        trace = hits[0].meta["trace"]
        print(settings, trace)  # what the model wrote, for the lead to read (pytest -s)
        assert trace["failures"] == [], trace  # every pass answered valid JSON under its grammar
        assert 1 <= trace["calls"] <= strategy.config.max_steps
        assert sorted(_titles(memory, [h.node_id for h in hits])) == ["Blue River", "Jane Roe"]
        assert all(s["query"].strip() for s in trace["steps"]) and trace["steps"][0]["query"] == QUESTION
        if settings["mode"] == "decompose":
            assert 1 <= len(trace["subquestions"]) <= 3
        if settings.get("rerank"):
            assert trace["rerank_calls"] == 1 and sorted(trace["steps"][0]["reranked"]) == [1, 2]
        again = strategy.retrieve(memory.ctx, QUESTION, 2)  # answered by the LLM cache
        assert again[0].meta["trace"] == trace
