"""``hlgraph``: extraction artefacts, the association graph in the store (both voices, several relations on an edge,
event nodes), retrieval (main ideas, traversal, sentences, source chunks), the switches, add and delete (unit
tests with the scripted LLM and the hashing embedder)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from backends import MemoryAt
from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.config import Config, load_config
from gemrag.errors import ConfigError
from gemrag.memory.states import StaleStrategyWarning
from gemrag.models.base import Completion, Usage
from gemrag.strategies.hlgraph.facts import passive_voice, strip_object
from gemrag.strategies.hlgraph.prompts import EXTRACTION_VERSION, ChunkMemory
from gemrag.strategies.platform.titles import title_version

DOCS = [
    "John pushes Selena. John loves Selena.",
    "Selena left Harbor Town because John lied in 2019.",
    "Mira Holt painted the harbour. Mira Holt sold paintings in Tarnow.",
]


def cfg(**hlgraph: Any) -> Config:
    return load_config(None, {"memory": {"chunk_tokens": 40}, "strategy": "hlgraph", "hlgraph": hlgraph})


def built(path: Path, config: Config, llm: Any = None, docs: list[str] = DOCS) -> Memory:
    mem = Memory.open(path, config, llm=llm or ScriptedLLM(), embedder=HashEmbedder())
    for i, doc in enumerate(docs):
        mem.add_text(doc, f"doc {i}")
    mem.index(strategy="hlgraph")
    return mem


def by_text(mem: Memory, kind: str) -> dict[str, Any]:
    return {n.text: n for n in mem.store.nodes(kind, strategy="hlgraph")}


def test_build_stores_artefacts_nodes_both_voices_and_several_relations_per_edge(memory_at: MemoryAt) -> None:
    llm = ScriptedLLM()
    with built(memory_at("m"), cfg(), llm) as mem:
        chunks = mem.store.nodes("chunk")
        assert len(chunks) == 3 and llm.calls == 3  # one extraction call per chunk
        version = title_version(mem.ctx, EXTRACTION_VERSION, False)  # from the chunk text alone, as the paper
        answers = mem.store.artifacts("hlgraph", "memory", ChunkMemory, version)
        assert set(answers) == {c.id for c in chunks}
        subjects, events, relations = by_text(mem, "subject"), by_text(mem, "event"), by_text(mem, "relation")
        assert {"John", "Selena", "Harbor Town", "Mira Holt", "Tarnow"} <= set(subjects)
        pushes = relations["John pushes Selena."]
        assert pushes.meta["passive"] == "is pushed by" and pushes.meta["passive_by_rule"]  # the rule fallback
        assert mem.store.node_sources([pushes.id])[pushes.id] == [chunks[0].id]
        left = events["Selena left Harbor Town"]  # CR: the event is a node, with why and time
        assert left.meta["why"] == "John lied in 2019" and left.meta["time"] == "2019"
        assert sorted(mem.store.node_sources([subjects["John"].id])[subjects["John"].id]) == [c.id for c in chunks[:2]]

        published = mem.store.load_published("hlgraph")
        a = published.arrays
        row = {int(n): i for i, n in enumerate(a["node_ids"])}
        john, selena = row[subjects["John"].id], row[subjects["Selena"].id]
        forward = np.flatnonzero((a["rel_src"] == john) & (a["rel_dst"] == selena))
        backward = np.flatnonzero((a["rel_src"] == selena) & (a["rel_dst"] == john))
        assert len(forward) == len(backward) == 2  # "pushes" and "loves" on the same edge, both directions
        assert not a["rel_inverse"][forward].any() and a["rel_inverse"][backward].all()
        loves = relations["John loves Selena."]
        assert {int(f) for f in a["rel_fact"][backward]} == {pushes.id, loves.id}
        emb = HashEmbedder()
        passive_vec = emb.embed(["is pushed by"])[0]
        assert any(np.allclose(a["rel_labels"][r], passive_vec) for r in backward)  # the reverse carries the passive
        assert dict(mem.store.edges(subjects["John"].id, "hlgraph"))[subjects["Selena"].id] == 2.0  # two relations
        report = mem.get_strategy("hlgraph").report(mem.ctx)
        assert report["events"] == 1 and report["relations"] == 3 and report["extracted_chunks"] == 3


def test_retrieval_from_the_object_reads_the_passive_voice(memory_at: MemoryAt) -> None:
    with built(memory_at("m"), cfg(split_question=False, source_chunks=1)) as mem:
        hits = mem.retrieve("Selena", 4)
        assert [h.kind for h in hits] == ["relations", "chunk"]
        text = hits[0].text.splitlines()
        assert "Selena is pushed by John." in text and "Selena is loved by John." in text  # DW, traversed backwards
        assert "Selena left Harbor Town, because John lied in 2019 (2019)." in text  # the event with why and time
        assert hits[0].node_id == by_text(mem, "subject")["Selena"].id and hits[0].meta["ideas"] == ["Selena"]
        assert hits[1].node_id in {c.id for c in mem.store.nodes("chunk")[:2]}
    with built(memory_at("one"), cfg(split_question=False, max_nodes=1, source_chunks=0)) as mem:
        (hit,) = mem.retrieve("Selena left Harbor Town", 4)  # the event node alone: its event is the context
        assert hit.node_id == by_text(mem, "event")["Selena left Harbor Town"].id
        assert hit.text == "Selena left Harbor Town, because John lied in 2019 (2019)." and hit.score == pytest.approx(
            1
        )
    with built(memory_at("default"), cfg(split_question=False)) as mem:  # the paper: graph knowledge only
        assert [h.kind for h in mem.retrieve("Selena", 4)] == ["relations"]
    with built(memory_at("off"), cfg(split_question=False, directional=False)) as mem:
        text = mem.retrieve("Selena", 4)[0].text.splitlines()
        assert "Selena pushes John." in text  # without DW: the paper's error case


def test_main_ideas_each_start_a_traversal_and_a_bad_answer_falls_back_to_the_question(memory_at: MemoryAt) -> None:
    llm = ScriptedLLM()
    with built(memory_at("m"), cfg(max_nodes=2), llm) as mem:
        hits = mem.retrieve("Did Mira Holt meet John?")
        relations = [h for h in hits if h.kind == "relations"]
        assert [h.meta["idea"] for h in relations] == ["Did Mira Holt", "John"]  # the fake's ideas: capitalized runs
        assert "Mira Holt sold paintings in Tarnow." in relations[0].text
        assert len(relations[1].meta["nodes"]) <= 2  # max_nodes per idea
        assert len(hits) <= mem.get_strategy("hlgraph").default_budget

    class BadIdeas(ScriptedLLM):
        def complete(self, messages: Any, **kw: Any) -> Completion:
            if messages[0]["content"].startswith("You turn a message"):
                return Completion("no json here", None, Usage(prompt_tokens=1, completion_tokens=1, calls=1))
            return super().complete(messages, **kw)

    with built(memory_at("bad"), cfg(), BadIdeas()) as mem:
        hits = mem.retrieve("Tarnow", 3)
        assert hits[0].meta["ideas"] == ["Tarnow"] and "ideas_error" in hits[0].meta
        assert hits[0].text == 'Tarnow is the object of "sold paintings in" by Mira Holt.'  # the rule's general form


def test_switches_routing_and_passive_rule(memory_at: MemoryAt) -> None:
    class Passive(ScriptedLLM):
        def complete(self, messages: Any, **kw: Any) -> Completion:
            out = super().complete(messages, **kw)
            if out.parsed and "relations" in out.parsed:
                for r in out.parsed["relations"]:
                    r["passive"] = "got " + r["meaning"] + " by"
                text = json.dumps(out.parsed)
                return Completion(text, json.loads(text), out.usage)
            return out

    with built(memory_at("llm"), cfg(routing=False), Passive()) as mem:
        assert by_text(mem, "event") == {}  # no CR: the SRQ relations only
        assert by_text(mem, "relation")["John pushes Selena."].meta["passive"] == "got pushes by"
    with built(memory_at("rule"), cfg(passive="rule"), Passive()) as mem:
        assert by_text(mem, "relation")["John pushes Selena."].meta["passive"] == "is pushed by"
    with pytest.raises(ConfigError, match="hlgraph"):
        Memory.open(memory_at("x"), cfg(max_nodes=0), llm=ScriptedLLM(), embedder=HashEmbedder())


def test_passive_voice_rule() -> None:
    assert passive_voice("pushes") == "is pushed by"
    assert passive_voice("pushed into the lake") == "was pushed into the lake by"
    assert passive_voice("was pushed by") == "pushed"
    assert passive_voice("sold") == "was sold by" and passive_voice("carries") == "is carried by"
    assert passive_voice("loves") == "is loved by" and passive_voice("helps") == "is helped by"
    assert passive_voice("lives in") == 'is the object of "lives in" by'
    assert passive_voice("sold paintings in") == 'is the object of "sold paintings in" by'
    assert strip_object("forgave John", "john") == "forgave" and strip_object("John", "John") == "John"
    assert strip_object("lives in Harbor Town", "Ivo") == "lives in Harbor Town"


def test_add_costs_one_call_per_new_chunk_and_delete_removes_what_only_the_document_said(memory_at: MemoryAt) -> None:
    llm = ScriptedLLM()
    with built(memory_at("m"), cfg(split_question=False), llm) as mem:
        mem.index(strategy="hlgraph")
        assert llm.calls == 3  # the rebuild reuses the artefacts
        mem.add_text("Jonas Weber founded Tarnow Press.", "doc 3")
        mem.index(strategy="hlgraph")
        assert llm.calls == 4
        assert "Jonas Weber founded Tarnow Press." in mem.retrieve("Jonas Weber", 2)[0].text

        mira = next(d for d in mem.store.documents() if d["title"] == "doc 2")
        mem.delete(mira["id"])
        assert not {"Mira Holt", "Tarnow"} & set(by_text(mem, "subject"))
        assert "Mira Holt sold paintings in Tarnow." not in by_text(mem, "relation")
        a = mem.store.load_published("hlgraph").arrays
        alive = {n.id for n in mem.store.nodes(strategy="hlgraph")}
        assert set(a["node_ids"].tolist()) <= alive and set(a["rel_fact"].tolist()) <= alive
        assert a["rel_src"].max() < len(a["node_ids"]) and a["rel_dst"].max() < len(a["node_ids"])
        with pytest.warns(StaleStrategyWarning):
            text = mem.retrieve("Selena", 3)[0].text
        assert "Selena is pushed by John." in text and "Mira" not in text
        mem.index(strategy="hlgraph")
        assert llm.calls == 4  # the rebuild after the delete costs no LLM call


def test_failed_extractions_are_recorded_and_an_empty_graph_falls_back_to_dense(memory_at: MemoryAt) -> None:
    llm = ScriptedLLM(fail=lambda i, prompt: True)  # every answer malformed
    with built(memory_at("m"), cfg(), llm) as mem:
        failures = [f for f in mem.store.failures() if f["phase"].startswith("index/hlgraph/memory")]
        assert sorted(f["node_id"] for f in failures) == [c.id for c in mem.store.nodes("chunk")]
        assert mem.get_strategy("hlgraph").report(mem.ctx)["extracted_chunks"] == 0
        hits = mem.retrieve("Where does Selena live?", 2)
        assert [h.kind for h in hits] == ["chunk", "chunk"] and hits[0].meta["fallback"] == "dense"
        assert "ideas_error" in hits[0].meta and hits[0].meta["ideas"] == ["Where does Selena live?"]
