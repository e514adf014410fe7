"""``remem_gist``: turns, gist and fact artefacts and nodes, the agent's fixed and flexible modes, malformed tool
calls, fact time filters, return kinds, delete (unit tests with the scripted LLM and the hashing embedder)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.config import Config, load_config
from gemrag.errors import ConfigError, MemoryNotIndexedError
from gemrag.memory.retrieval import warm_published
from gemrag.memory.states import StaleStrategyWarning
from gemrag.models.base import Completion, Usage
from gemrag.strategies.base import strategy_config
from gemrag.strategies.remem.agent import ToolHit, run_agent
from gemrag.strategies.remem.episodic import FACT_ROW, GIST, VERBATIM, LoadedGist, RememGistStrategy
from gemrag.strategies.remem.gists import KIND, WindowGists, gist_version

NAME = "remem_gist"
S1, S2, S3 = "1:56 pm on 8 May, 2023", "3:10 pm on 20 June, 2023", "9:00 am on 2 July, 2023"
DOCS = [
    f"[{S1}] Ann: I adopted a puppy named Biscuit yesterday.\n"
    f"[{S1}] Bob: Congratulations on Biscuit! I started painting lessons.\n"
    f"[{S1}] Ann: Painting sounds relaxing.\n\n"
    f"[{S2}] Bob: I sold my first painting at the Tarnow market.\n"
    f"[{S2}] Ann: Biscuit learned to swim in the lake.",
    f"[{S3}] Cleo: We hiked the Valdora ridge last weekend.\n[{S3}] Dan: I am training for the Brisvale marathon.",
]


def make_config(**section: Any) -> Config:
    return load_config(None, {"memory": {"chunk_tokens": 30}, "strategy": NAME, NAME: section})


def built(path: Path, config: Config, llm: Any = None) -> Memory:
    mem = Memory.open(path, config, llm=llm or ScriptedLLM(), embedder=HashEmbedder())
    for doc in DOCS:
        mem.add_text(doc)
    mem.index(strategy=NAME)
    return mem


def usage() -> Usage:
    return Usage(prompt_tokens=10, completion_tokens=5, calls=1)


def is_agent(messages: Any) -> bool:
    return messages[0]["content"].startswith("You answer questions about a long conversation")


class AgentLLM(ScriptedLLM):
    """The scripted LLM, except that the agent's calls are answered by ``reply(messages, schema)`` (a dict is sent as
    JSON, a str as is); counts the agent's calls."""

    def __init__(self, reply: Any) -> None:
        super().__init__()
        self.reply = reply
        self.agent_calls: list[dict[str, Any] | None] = []

    def complete(self, messages: Any, **kw: Any) -> Completion:
        if not is_agent(messages):
            return super().complete(messages, **kw)
        self.calls += 1
        self.agent_calls.append(kw.get("schema"))
        out = self.reply(messages, kw.get("schema"))
        text = out if isinstance(out, str) else json.dumps(out)
        return Completion(text, out if isinstance(out, dict) else None, usage())


def test_build_stores_turns_gists_and_timed_facts_with_sources(tmp_path: Path) -> None:
    llm = ScriptedLLM()
    with built(tmp_path / "m", make_config(), llm) as mem:
        chunks = mem.store.nodes("chunk")
        assert len(chunks) > 2  # the conversation spans chunks
        turns = mem.store.nodes("verbatim", strategy=NAME)
        gists = mem.store.nodes("gist", strategy=NAME)
        facts = mem.store.nodes("fact", strategy=NAME)
        assert len(turns) == 7 and len(gists) == 3 and len(facts) == 7
        assert llm.calls == 3  # one gist call per session window
        first = turns[0]
        assert first.text == f"[{S1}] Ann: I adopted a puppy named Biscuit yesterday."
        assert first.meta | {"members": None} == {
            "speaker": "Ann",
            "date": S1,
            "iso_date": "2023-05-08",
            "session": 1,
            "members": None,
            "inputs": 1,
        }  # inputs: the store records how many chunks a derived node was made from
        assert first.meta["members"] == mem.store.node_sources([first.id])[first.id] == [chunks[0].id]
        assert [t.meta["session"] for t in turns] == [1, 1, 1, 2, 2, 1, 1]
        assert gists[0].text.startswith("On 2023-05-08, Ann said")
        assert gists[0].meta["members"] == [t.id for t in turns[:3]]
        sources = mem.store.node_sources([g.id for g in gists])
        assert sources[gists[0].id] == sorted({c for t in turns[:3] for c in mem.store.node_sources([t.id])[t.id]})
        biscuit = facts[0]
        assert biscuit.meta["triple"][0] == "Ann" and biscuit.meta["time"] == "2023-05-07"  # "yesterday"
        assert biscuit.meta["session_date"] == "2023-05-08" and biscuit.meta["gist"] == gists[0].id
        stored = mem.store.artifacts(NAME, KIND, WindowGists, gist_version(12))
        assert sum(len(a.windows) for a in stored.values()) == 3 and set(stored) <= {c.id for c in chunks}
        published = mem.store.load_published(NAME).arrays
        kinds = published["node_kind"].tolist()
        assert kinds.count(VERBATIM) == 7 and kinds.count(GIST) == 3 and kinds.count(FACT_ROW) == 7
        report = mem.get_strategy(NAME).report(mem.ctx)
        assert report["turns"] == 7 and report["gists"] == 3 and report["failed_windows"] == 0

        mem.index(strategy=NAME)  # a rebuild reads the artefacts
        assert llm.calls == 3


class BrokenGistLLM(ScriptedLLM):
    """Answers the gist of the window naming Valdora with text that is not JSON (every attempt) while ``broken``."""

    broken = True

    def complete(self, messages: Any, **kw: Any) -> Completion:
        gist = messages[0]["content"].startswith("You write short episodic")
        if self.broken and gist and "Valdora" in messages[3]["content"]:
            self.calls += 1
            return Completion("Sure! Cleo hiked", None, usage())
        return super().complete(messages, **kw)


def test_a_window_whose_gist_stays_malformed_is_recorded_and_retried_later(tmp_path: Path) -> None:
    llm = BrokenGistLLM()
    with built(tmp_path / "m", make_config(), llm) as mem:
        failures = [f for f in mem.store.failures() if f["phase"] == f"index/{NAME}/{KIND}@{gist_version(12)}"]
        cleo = next(c for c in mem.store.nodes("chunk") if "Valdora" in c.text)
        assert [f["node_id"] for f in failures] == [cleo.id] and "window 0" in failures[0]["message"]
        assert len(mem.store.nodes("gist", strategy=NAME)) == 2
        assert any("Valdora" in t.text for t in mem.store.nodes("verbatim", strategy=NAME))  # still a turn
        assert mem.get_strategy(NAME).report(mem.ctx)["failed_windows"] == 1
        llm.broken = False
        calls = llm.calls
        mem.index(strategy=NAME)  # retried with new attempt numbers: one call, the others from artefacts
        assert llm.calls == calls + 1 and len(mem.store.nodes("gist", strategy=NAME)) == 3


def test_gist_window_size_splits_sessions_and_is_part_of_the_version(tmp_path: Path) -> None:
    llm = ScriptedLLM()
    with built(tmp_path / "m", make_config(gist_window=2), llm) as mem:
        assert llm.calls == 4  # session 1 (3 turns) -> 2 windows, session 2, the second conversation
        assert len(mem.store.nodes("gist", strategy=NAME)) == 4
        assert mem.store.artifacts(NAME, KIND, WindowGists, gist_version(12)) == {}


def test_fixed_mode_makes_one_retrieval_then_answers(tmp_path: Path) -> None:
    llm = ScriptedLLM()
    with built(tmp_path / "m", make_config(), llm) as mem:
        calls = llm.calls
        hits = mem.retrieve("Where did Bob sell his first painting?", 3)
        assert llm.calls == calls + 1  # the answer; the retrieval is no LLM call
        steps = hits[0].meta["agent_steps"]
        assert [s["tool"] for s in steps] == ["semantic_retrieve", "output_answer"]
        assert steps[0]["arguments"] == {"query": "Where did Bob sell his first painting?"}
        assert [h.kind for h in hits] == ["verbatim"] * 3
        assert "Tarnow market" in hits[0].text
        assert hits[0].meta["agent_answer"] == steps[1]["arguments"]["answer"]
        assert "Tarnow" in hits[0].meta["agent_answer"]
        assert [h.score for h in hits] == [1.0, 0.5, pytest.approx(1 / 3)]


def test_ask_answers_with_the_agents_answer_without_another_call(tmp_path: Path) -> None:
    llm = ScriptedLLM()
    with built(tmp_path / "m", make_config(), llm) as mem:
        calls = llm.calls
        answer = mem.ask("Where did Bob sell his first painting?")
        # the agent's answer step only, no answer prompt after it (besides the default verification's checks)
        assert llm.calls == calls + 1 + answer.verification_usage.calls
        assert answer.text == answer.hits[0].meta["agent_answer"] and "Tarnow" in answer.text
        choice = mem.ask("Where did Bob sell his first painting?", ["at the Tarnow market", "online"])
        checks = answer.verification_usage.calls  # multiple choice is not verified
        assert choice.choice == 0 and llm.calls == calls + 2 + checks  # cached agent call; a multiple-choice prompt


def test_warm_up_loads_the_generation_without_an_agent_run(tmp_path: Path) -> None:
    llm = ScriptedLLM()
    with built(tmp_path / "m", make_config(), llm) as mem:
        calls = llm.calls
        warm_published(mem, NAME, 3)
        assert llm.calls == calls  # untimed warm-up: no agent call (a warm-up question would cost one)
        mem.retrieve("Where did Bob sell his first painting?", 3)
        assert llm.calls == calls + 1
    with Memory.open(tmp_path / "e", make_config(), llm=llm, embedder=HashEmbedder()) as mem:
        mem.add_text(DOCS[0])
        with pytest.raises(MemoryNotIndexedError):
            warm_published(mem, NAME, 3)


def test_retrieve_only_mode_needs_no_llm(tmp_path: Path) -> None:
    llm = ScriptedLLM()
    with built(tmp_path / "m", make_config(agent_max_steps=1), llm) as mem:
        calls = llm.calls
        hits = mem.retrieve("Who trains for the Brisvale marathon?", 2)
        assert llm.calls == calls and hits[0].meta["agent_answer"] is None
        assert "Brisvale marathon" in hits[0].text


def test_return_chunk_gists_returns_gist_hits(tmp_path: Path) -> None:
    with built(tmp_path / "m", make_config(return_chunk="gists")) as mem:
        hits = mem.retrieve("Where did Bob sell his first painting?", 2)
        gist_ids = {g.id for g in mem.store.nodes("gist", strategy=NAME)}
        assert [h.kind for h in hits] == ["gist", "gist"] and {h.node_id for h in hits} <= gist_ids
        assert hits[0].text.startswith("On 2023-06-20, Bob said I sold my first painting")


def test_flexible_mode_lets_the_model_choose_and_answer(tmp_path: Path) -> None:
    llm = ScriptedLLM()
    with built(tmp_path / "m", make_config(agent_fixed_tools=False), llm) as mem:
        calls = llm.calls
        hits = mem.retrieve("Where did Bob sell his first painting?", 5)
        assert llm.calls == calls + 2
        steps = hits[0].meta["agent_steps"]
        assert [s["tool"] for s in steps] == ["semantic_retrieve", "output_answer"]
        assert steps[0]["arguments"]["target"] == "gists"
        assert len(hits) == 5 and all(h.kind == "verbatim" for h in hits)  # a retrieved gist stands for its turns


def test_flexible_mode_stops_at_max_steps_when_the_model_keeps_calling_tools(tmp_path: Path) -> None:
    def always_tool(messages: Any, schema: Any) -> dict[str, Any]:
        return {"tool": "lexical_retrieve", "arguments": {"query": "Biscuit"}}

    llm = AgentLLM(always_tool)
    with built(tmp_path / "m", make_config(agent_fixed_tools=False, agent_max_steps=4), llm) as mem:
        hits = mem.retrieve("What is the puppy called?", 3)
        steps = hits[0].meta["agent_steps"]
        assert [s.get("tool") for s in steps[:3]] == ["lexical_retrieve"] * 3
        assert steps[3]["step"] == 4 and "error" in steps[3]  # the last step allows only output_answer
        assert steps[4] == {"fallback": "free text", "answer": None}  # the free-text reply was a tool call again
        assert hits[0].meta["agent_answer"] is None
        assert "agent_error" in hits[0].meta and "Biscuit" in hits[0].text
        # 3 tool steps, the last step with its repair attempts (3), all answer-only; then the free-text request
        assert len(llm.agent_calls) == 3 + 3 + 1
        assert all("anyOf" not in (s or {}) for s in llm.agent_calls[3:6]) and llm.agent_calls[6] is None


def test_the_free_text_fallback_answers_when_the_final_call_stays_malformed(tmp_path: Path) -> None:
    def prose(messages: Any, schema: Any) -> str:
        return "Biscuit" if schema is None else "The puppy is called"  # JSON never, the free text at the end

    llm = AgentLLM(prose)
    with built(tmp_path / "m", make_config(), llm) as mem:
        hits = mem.retrieve("What is the puppy called?", 3)
        steps = hits[0].meta["agent_steps"]
        assert [s.get("tool") for s in steps] == ["semantic_retrieve", None, None]
        assert steps[1]["step"] == 2 and steps[2] == {"fallback": "free text", "answer": "Biscuit"}
        assert hits[0].meta["agent_answer"] == "Biscuit" and len(llm.agent_calls) == 3 + 1


def test_a_malformed_tool_call_is_retried_then_recorded_and_the_agent_still_answers(tmp_path: Path) -> None:
    def broken_first_step(messages: Any, schema: Any) -> Any:
        if schema is not None and "anyOf" in schema:
            return "I think I should search for the painting"  # not JSON, every attempt
        return {"tool": "output_answer", "arguments": {"answer": "at a market"}}

    llm = AgentLLM(broken_first_step)
    with built(tmp_path / "m", make_config(agent_fixed_tools=False), llm) as mem:
        hits = mem.retrieve("Where did Bob sell his first painting?", 3)
        assert hits == []  # nothing was retrieved
        result = mem.get_strategy(NAME).ask_agent(mem.ctx, "Where did Bob sell his first painting?")
        assert result.answer == "at a market" and result.node_ids == []
        assert result.steps[0]["step"] == 1 and "error" in result.steps[0]
        assert result.steps[1] == {"tool": "output_answer", "arguments": {"answer": "at a market"}}
        assert len([s for s in llm.agent_calls if s and "anyOf" in s]) == 3  # the first step's attempts
        assert not [f for f in mem.store.failures() if "agent" in f["phase"]]  # query time: in the result only


def test_run_agent_validates_its_arguments() -> None:
    def tools(name: str, arguments: dict[str, Any]) -> list[ToolHit]:
        return []

    with pytest.raises(ValueError):
        run_agent(ScriptedLLM(), "q", tools, max_steps=3, fixed_tool="semantic_retrieve")
    with pytest.raises(ValueError):
        run_agent(ScriptedLLM(), "q", tools, max_steps=0)


def test_fact_retrieve_filters_by_time(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m", make_config(), llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
        texts = {1: "ann adopted a puppy", 2: "ann adopted a kitten", 3: "ann adopted a goldfish"}
        days = [f"2023-0{m}-10" for m in (5, 6)] + [None]
        from datetime import date

        g = LoadedGist(
            ids=np.array([1, 2, 3]),
            kind=np.full(3, FACT_ROW, dtype=np.int8),
            vectors=HashEmbedder().embed(list(texts.values())),
            gist=np.full(3, -1),
            day=np.array([date.fromisoformat(d).toordinal() if d else 0 for d in days]),
            texts=texts,
            rows={VERBATIM: np.array([], dtype=np.int64), GIST: np.array([], dtype=np.int64), FACT_ROW: np.arange(3)},
            bm25=None,
        )
        tools = RememGistStrategy().tools(mem.ctx, g)
        assert sorted(h.node_id for h in tools("fact_retrieve", {"query": "ann adopted"})) == [1, 2, 3]
        june = tools("fact_retrieve", {"query": "ann adopted", "start": "2023-06-01", "end": "2023-06-30"})
        assert [(h.node_id, h.text) for h in june] == [(2, "ann adopted a kitten (2023-06-10)")]
        assert [h.node_id for h in tools("fact_retrieve", {"query": "ann", "end": "2023-05"})] == [1]
        assert [h.node_id for h in tools("fact_retrieve", {"query": "ann", "start": "2023-05-11"})] == [2]
        with pytest.raises(ValueError):
            tools("fact_retrieve", {"query": "ann", "start": "last spring"})


def test_deleting_a_document_removes_its_turns_gists_and_facts(tmp_path: Path) -> None:
    llm = ScriptedLLM()
    with built(tmp_path / "m", make_config(), llm) as mem:
        doc = mem.store.documents()[1]  # Cleo and Dan
        mem.delete(doc["id"])
        for kind in ("verbatim", "gist", "fact"):
            nodes = mem.store.nodes(kind, strategy=NAME)
            assert nodes and not [n for n in nodes if "Cleo" in n.text or "Valdora" in n.text or "2023-07" in n.text]
        published = mem.store.load_published(NAME).arrays
        alive = {n.id for n in mem.store.nodes(strategy=NAME)}
        assert set(published["node_ids"].tolist()) == alive
        calls = llm.calls
        with pytest.warns(StaleStrategyWarning):
            hits = mem.retrieve("Where did Bob sell his first painting?", 2)
        assert "Tarnow" in hits[0].text
        mem.index(strategy=NAME)  # the rebuild after a delete costs no gist call (one answer call above)
        assert llm.calls == calls + 1


def test_config_section_name_validation_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="agent_max_steps"):
        strategy_config(NAME, make_config(agent_max_steps=3))
    flexible = strategy_config(NAME, make_config(agent_fixed_tools=False))
    assert flexible.max_steps == 5 and strategy_config(NAME, make_config()).max_steps == 2  # type: ignore[union-attr]
    monkeypatch.setenv("GEMRAG_REMEM_GIST__GIST_WINDOW", "4")
    assert strategy_config(NAME, load_config(None, {})).gist_window == 4  # type: ignore[union-attr]


def test_a_retrieved_gist_stands_for_its_most_relevant_turns_first(tmp_path: Path) -> None:
    """A gist hit expands to its window's turns ranked by similarity to the question (default), so a budget of
    one keeps the turn that answers; ``window_turns = "order"`` (the earlier rule) keeps the window's first turn."""
    question = "Where did Biscuit learn to swim in the lake?"  # the second turn of its window
    with built(tmp_path / "m", make_config(agent_fixed_tools=False)) as mem:
        (ranked,) = mem.retrieve(question, 1)
        assert "Biscuit learned to swim" in ranked.text
    with built(tmp_path / "o", make_config(agent_fixed_tools=False, window_turns="order")) as mem:
        (first,) = mem.retrieve(question, 1)
        gist = next(g for g in mem.store.nodes("gist", strategy=NAME) if first.node_id in g.meta["members"])
        assert first.node_id == gist.meta["members"][0] and "Biscuit" not in first.text
