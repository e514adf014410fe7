"""A kept node keeps nothing of a removed source (DESIGN.md, "Forgetting"): for every strategy, removing a document
from a memory of documents A, B and C leaves the published structures (store nodes and their texts, meta and
sources, store edges and their weights, every published array, BM25's scores) equal to those of a memory built
from A and C alone with the same (deterministic) test doubles: node texts exactly, arrays and weights within float
tolerance.

Two moments are compared. *At the removal* (``delete``, no LLM call), for every strategy whose published structures
need no LLM call to be remade: the baselines, REMem (facts, entities, synonym edges, the PPR graph), HLGraphRAG
(subjects, relations, events, their wording and weights), UnWeaver (classes and representatives), REMem's
gist strategies (gists are per window of one document); for GEM and RAPTOR the chunk part of their graphs (GEM's
chunk-graph weights, the chunk vectors and questions), since their summaries leave with a member and need the LLM.
*After the next* ``index`` (answered from the LLM cache), every strategy whole."""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from backends import MemoryAt
from fakes import LEDGER_DOCS, HashEmbedder, LedgerLLM, ScriptedLLM
from gemrag import Memory
from gemrag.config import Config, load_config
from gemrag.memory.states import StaleStrategyWarning
from gemrag.strategies import available, get_strategy
from gemrag.strategies.hlgraph.facts import passive_voice
from structures import (
    AT_REMOVAL,
    CHUNK_PART_AT_REMOVAL,
    MERGE_OVERRIDES,
    build_differences,
    built,
    deterministic_raptor,
)

DOCS = LEDGER_DOCS

STRATEGIES = (*AT_REMOVAL, *CHUNK_PART_AT_REMOVAL, "full")


@pytest.fixture
def merge_config(config: Config) -> Config:
    return load_config(None, MERGE_OVERRIDES)


def open_memory(location: str | Path, config: Config, llm: ScriptedLLM | None = None) -> Memory:
    return deterministic_raptor(Memory.open(location, config, llm=llm or ScriptedLLM(), embedder=HashEmbedder()))


def build(mem: Memory, docs: Sequence[str], name: str) -> None:
    for d in docs:
        mem.add_text(DOCS[d], d, id=d)
    mem.index(name)


def assert_same_builds(got: dict[str, Any], want: dict[str, Any], what: str) -> None:
    problems = build_differences(got, want, what)
    assert not problems, problems


def test_every_registered_strategy_is_compared() -> None:
    """A strategy gemrag ships must join the removal-equals-a-build comparison (or say why not); strategies other
    test modules register are not gemrag's."""
    shipped = [n for n in available() if type(get_strategy(n)).__module__.startswith("gemrag.")]
    assert sorted(STRATEGIES) == sorted(shipped)


@pytest.mark.parametrize("name", STRATEGIES)
def test_removal_equals_a_build_without_the_document(name: str, tmp_path: Path, merge_config: Config) -> None:
    with open_memory(tmp_path / "ac", merge_config) as mem:
        build(mem, "ac", name)
        want = built(mem)
        want_chunks = built(mem, chunks_only=CHUNK_PART_AT_REMOVAL)
    with open_memory(tmp_path / "abc", merge_config) as mem:
        build(mem, "abc", name)
        if want:  # B changed what was built: the comparison can fail
            assert built(mem) != want
        mem.delete("b")
        if name in CHUNK_PART_AT_REMOVAL:
            assert_same_builds(
                built(mem, chunks_only=CHUNK_PART_AT_REMOVAL), want_chunks, "(chunk graph) at the removal"
            )
        else:
            assert_same_builds(built(mem), want, "at the removal")
        mem.index(name)
        assert_same_builds(built(mem), want, "after the next index")


def sentences(mem: Memory, question: str) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StaleStrategyWarning)
        return " ".join(h.text for h in mem.retrieve(question, 3, strategy="hlgraph"))


def test_a_merged_relation_loses_the_removed_documents_wording(memory_at: MemoryAt, merge_config: Config) -> None:
    with open_memory(memory_at("m"), merge_config, LedgerLLM()) as mem:
        build(mem, "abc", "hlgraph")
        (paid,) = [n for n in mem.store.nodes("relation", strategy="hlgraph") if "paid" in n.text.lower()]
        assert paid.meta["label"] == "PAID" and "Kestrel" in paid.meta["passive"]  # B's wording, B's chunk first
        mem.delete("b")
        (paid,) = [n for n in mem.store.nodes("relation", strategy="hlgraph") if "paid" in n.text.lower()]
        assert (paid.text, paid.meta["label"]) == ("Ilse Varga paid Mayor Holt.", "paid")
        assert paid.meta["passive"] == passive_voice("paid")  # C's: the rule's, as C's answer gave none
        assert len(mem.store.node_sources([paid.id])[paid.id]) == 1
        everything = json.dumps([(n.text, n.meta) for n in mem.store.nodes(strategy="hlgraph")])
        assert "Kestrel" not in everything and "PAID" not in everything and "1999" not in everything
        assert "Kestrel" not in sentences(mem, "Who paid Mayor Holt?")
        (warned,) = [n for n in mem.store.nodes("event", strategy="hlgraph")]  # C states the event too: it stays
        assert warned.meta["why"] == "the harbour vote was near" and warned.meta["time"] == ""


def fact_edge(mem: Memory, a: str, b: str) -> float:
    entities = {n.text: n.id for n in mem.store.nodes("entity", strategy="remem")}
    return sum(w for kind, s, d, w in mem.store.edge_list("remem", "fact") if (s, d) == (entities[a], entities[b]))


def test_an_edge_only_the_removed_document_made_goes_with_it(memory_at: MemoryAt, merge_config: Config) -> None:
    with open_memory(memory_at("m"), merge_config) as mem:
        build(mem, "abc", "remem")
        # triple occurrences counted both ways (HippoRAG 2's weights): "paid" and "warned" in B and in C
        assert fact_edge(mem, "ilse varga", "mayor holt") == 2 * 4
        assert fact_edge(mem, "ilse varga", "valdora") == 2 * 1  # "bribed": B alone
        mem.delete("b")
        assert fact_edge(mem, "ilse varga", "mayor holt") == 2 * 2  # C's share only
        assert fact_edge(mem, "ilse varga", "valdora") == 0.0  # both entities stay (A, C), the edge goes
        facts = {n.text for n in mem.store.nodes("fact", strategy="remem")}
        assert "ilse varga paid mayor holt" in facts and not [f for f in facts if "bribed" in f]
        entities = {n.text: n for n in mem.store.nodes("entity", strategy="remem")}
        sources = mem.store.node_sources([entities["ilse varga"].id])[entities["ilse varga"].id]
        assert entities["ilse varga"].meta["inputs"] == len(sources)  # what it rests on now


def test_unweaver_keeps_an_unchanged_shortening_and_defers_a_changed_one(tmp_path: Path) -> None:
    """A class whose descriptions are too long (here over 100 characters) is shortened by the LLM: at a removal, one
    the removal left unchanged keeps its shortening (no LLM call), one it changed leaves until the next ``index``."""
    cfg = load_config(None, {"memory": {"chunk_tokens": 40}, "unweaver": {"representative_max_chars": 100}})

    def classes(mem: Memory) -> dict[str, dict[str, Any]]:
        return {n.text: n.meta for n in mem.store.nodes("entity", strategy="unweaver")}

    with open_memory(tmp_path / "ac", cfg) as mem:
        build(mem, "ac", "unweaver")
        want = classes(mem)
    llm = ScriptedLLM()
    with open_memory(tmp_path / "abc", cfg, llm) as mem:
        build(mem, "abc", "unweaver")
        before = classes(mem)
        calls = llm.calls
        mem.delete("b")
        assert llm.calls == calls
        after = classes(mem)
        reused = [n for n, m in after.items() if m["shortened"] == "llm"]
        deferred = sorted(set(want) - set(after))
        assert reused and deferred  # the case each way
        for name in reused:  # unchanged by the removal: the same shortening as before and as without B
            assert after[name]["representative"] == before[name]["representative"] == want[name]["representative"]
        for name in deferred:  # changed and too long: its shortening needs the LLM
            assert want[name]["shortened"] == "llm" and name in before
        for name, meta in after.items():  # the others as without B
            assert meta == want[name]
        mem.index("unweaver")
        assert classes(mem) == want
