"""``remem_temporal``: temporal questions go to the timed facts of the question's period first, results in date
order; it shares remem_gist's gist artefacts (unit tests with the scripted LLM and the hashing embedder)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_strategy_remem_gist import DOCS

from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.config import load_config
from gemrag.strategies.remem.temporal import is_temporal, question_range

NAME = "remem_temporal"


def test_is_temporal_and_question_range() -> None:
    assert is_temporal("When did Caroline go to the support group?")
    assert is_temporal("What year did Ann adopt Biscuit?") and is_temporal("What did Bob sell in June 2023?")
    assert not is_temporal("Where did Bob sell his first painting?".replace("first ", ""))
    assert question_range("What did Bob sell in June 2023?") == ("2023-06", "2023-06")
    assert question_range("What happened on 8 May 2023?") == ("2023-05-08", "2023-05-08")
    assert question_range("What happened on May 8th, 2023?") == ("2023-05-08", "2023-05-08")
    assert question_range("What did Ann do before June 2023?") == (None, "2023-06")
    assert question_range("What has Bob painted since 2022?") == ("2022", None)
    assert question_range("When did Ann adopt Biscuit?") == (None, None)


def built(path: Path, llm: ScriptedLLM, **section: object) -> Memory:
    cfg = load_config(None, {"memory": {"chunk_tokens": 30}, "strategy": NAME, NAME: section})
    mem = Memory.open(path, cfg, llm=llm, embedder=HashEmbedder())
    for doc in DOCS:
        mem.add_text(doc)
    mem.index(strategy="remem_gist")
    calls = llm.calls
    mem.index(strategy=NAME)
    assert llm.calls == calls  # remem_gist's gist artefacts are reused: no LLM call
    return mem


def day(mem: Memory, node_id: int) -> str:
    return mem.store.node(node_id).meta["iso_date"] or "9999"


def test_a_question_about_a_period_reads_that_periods_facts_first(tmp_path: Path) -> None:
    with built(tmp_path / "m", ScriptedLLM()) as mem:
        hits = mem.retrieve("What did Bob sell in June 2023?", 5)
        first = hits[0].meta["agent_steps"][0]
        assert first["tool"] == "fact_retrieve"
        assert (first["arguments"]["start"], first["arguments"]["end"]) == ("2023-06", "2023-06")
        facts = [mem.store.node(i) for i in first["results"]]
        assert facts and all((f.meta["time"] or f.meta["session_date"]).startswith("2023-06") for f in facts)
        assert all(h.meta["chronological"] for h in hits)
        days = [day(mem, h.node_id) for h in hits]
        assert days == sorted(days) and [h.rank for h in hits] == list(range(len(hits)))


def test_other_questions_keep_remem_gists_retrieval(tmp_path: Path) -> None:
    with built(tmp_path / "m", ScriptedLLM()) as mem:
        question = "Where did Bob sell his painting?"
        hits = mem.retrieve(question, 3)
        gist_hits = mem.retrieve(question, 3, strategy="remem_gist")
        assert hits[0].meta["agent_steps"][0]["tool"] == "semantic_retrieve"
        assert [h.text for h in hits] == [h.text for h in gist_hits]  # each strategy has its own turn nodes
        assert "chronological" not in hits[0].meta


@pytest.mark.parametrize("mode", ["always", "never"])
def test_chronological_modes(tmp_path: Path, mode: str) -> None:
    with built(tmp_path / "m", ScriptedLLM(), chronological=mode) as mem:
        question = "Where did Bob sell his painting?"
        hits = mem.retrieve(question, 5)
        days = [day(mem, h.node_id) for h in hits]
        if mode == "always":
            assert days == sorted(days)
        else:
            assert [h.text for h in hits] == [h.text for h in mem.retrieve(question, 5, strategy="remem_gist")]
