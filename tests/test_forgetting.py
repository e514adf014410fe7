"""Forgetting that holds (DESIGN.md, "Forgetting"): after a document is deleted, replaced by an edited version or
removed by ``--sync``, no hit, provenance passage, derived node or answer prompt of any strategy family holds its
text, on both stores, from the same step on and after the next build; and a retrieval refuses a hit that rests on
removed text (:func:`gemrag.strategies.platform.forgetting.check_inputs`)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from test_strategy_raptor import pca

from backends import MemoryAt
from conftest import STORY
from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.config import Config, load_config
from gemrag.errors import ForgottenTextError
from gemrag.memory.states import StaleStrategyWarning
from gemrag.strategies.platform.forgetting import check_inputs, forgotten_nodes
from gemrag.strategies.raptor.strategy import RaptorConfig, RaptorStrategy
from gemrag.types import Hit

CANARY = (
    "The secret launch code of the Zephyr station is Magenta Fourfoursevenone. Captain Ilse Varga keeps the launch "
    "code. Captain Ilse Varga guards the Zephyr station at night. The Zephyr station orbits the moon Quillon."
)
EDITED = (
    "The secret launch code of the Orion depot is Cyan Ninetwozero. Captain Oskar Lind keeps the launch code. "
    "Captain Oskar Lind guards the Orion depot at night. The Orion depot orbits the moon Pellar."
)
CANARY_STRINGS = ("magenta", "fourfoursevenone", "ilse", "varga", "zephyr", "quillon")
QUESTIONS = (
    "What is the launch code of the Zephyr station?",
    "Who keeps the launch code, Captain Ilse Varga?",
    "Which moon does the Zephyr station orbit?",
)
FAMILIES = ("gem", "dense", "bm25", "raptor", "remem", "remem_gist", "hlgraph", "unweaver")
"""One strategy of every family: GEM's summaries, the baselines, RAPTOR's tree, REMem's facts and entities and its
gists, HLGraphRAG's subjects, relations and events, UnWeaver's classes."""


def leaks(text: str) -> list[str]:
    low = text.lower()
    return [s for s in CANARY_STRINGS if s in low]


def background() -> list[str]:
    words = STORY.read_text(encoding="utf-8").split()
    return [" ".join(words[i * 120 : (i + 1) * 120]) for i in range(3)]


@pytest.fixture
def forget_config(config: Config) -> Config:
    # GEM's eigenthemes take 12 of the ~14 chunks, so a summary draws on the canary and on the story alike
    return load_config(None, {"memory": {"chunk_tokens": 40}, "gem": {"questions": 2, "eigen": 2, "eigen_top": 12}})


def open_memory(location: str | Path, config: Config, llm: ScriptedLLM) -> Memory:
    mem = Memory.open(location, config, llm=llm, embedder=HashEmbedder())
    mem._strategies["raptor"] = RaptorStrategy(RaptorConfig(reducer=pca, reduction_dim=3, max_clusters=6))
    return mem


def write_folder(folder: Path) -> Path:
    folder.mkdir()
    for i, text in enumerate(background()):
        (folder / f"story{i}.txt").write_text(text, encoding="utf-8")
    canary = folder / "zz_note.txt"
    canary.write_text(CANARY, encoding="utf-8")
    return canary


def mixed_nodes(mem: Memory, canary_chunks: set[int]) -> list[str]:
    """The strategies with a derived node made from a canary chunk AND another chunk (the case the old rule kept)."""
    derived = [n for n in mem.store.nodes() if n.kind != "chunk"]
    sources = mem.store.node_sources([n.id for n in derived])
    mixed = [n for n in derived if canary_chunks & set(sources[n.id]) and set(sources[n.id]) - canary_chunks]
    return sorted({str(n.strategy) for n in mixed})


def assert_forgotten(mem: Memory, llm: ScriptedLLM, *, fresh_answer: bool) -> None:
    """No derived node, hit, provenance passage, answer context or answer prompt of any family holds a canary string;
    ``fresh_answer``: the answer to the question asked before the removal is not the cached one (its context held
    the canary), the LLM is asked again."""
    for n in mem.store.nodes():
        assert not leaks(n.text + json.dumps(n.meta)), (n.strategy, n.kind, n.text)
    for name in FAMILIES:
        for q in QUESTIONS:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", StaleStrategyWarning)
                hits = mem.retrieve(q, 4, strategy=name)
            for h in hits:
                chunks = [p.chunk_id for p in (h.provenance.passages if h.provenance else ())]
                passages = " ".join(n.text for n in mem.store.nodes_by_id(chunks).values())
                assert not leaks(h.text + passages), (name, h.kind, h.text)
    before = len(llm.prompts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StaleStrategyWarning)
        answer = mem.ask(QUESTIONS[0], strategy="gem")
    assert not leaks(answer.text) and not [h for h in answer.hits if leaks(h.text)]
    assert not [p for p in llm.prompts[before:] if leaks(p.replace(QUESTIONS[0], ""))]  # the question names it
    if fresh_answer:  # the cached answer rested on the canary: not served
        assert len(llm.prompts) > before


@pytest.mark.parametrize("scenario", ["delete", "replace", "sync"])
def test_no_strategy_keeps_removed_text(
    scenario: str, memory_at: MemoryAt, forget_config: Config, tmp_path: Path
) -> None:
    llm = ScriptedLLM()
    canary = write_folder(tmp_path / "docs")
    with open_memory(memory_at("m"), forget_config, llm) as mem:
        mem.add([tmp_path / "docs"], sync=True)
        for name in FAMILIES:
            mem.index(name)
        doc = next(d for d in mem.store.documents() if d["source"].endswith("zz_note.txt"))
        doomed = set(mem.store.document_chunk_ids(int(doc["id"])))
        assert "gem" in mixed_nodes(mem, doomed)  # a summary drew on the canary and on the story: the case to forget
        answered = mem.ask(QUESTIONS[0], strategy="gem")  # its prompt (holding the canary) is cached
        assert answered.hits and any(leaks(h.text) for h in mem.retrieve(QUESTIONS[0], 4, strategy="dense"))
        if scenario == "delete":
            mem.delete(str(canary))
        elif scenario == "replace":
            canary.write_text(EDITED, encoding="utf-8")
            mem.add([tmp_path / "docs"], sync=True)
        else:
            canary.unlink()
            mem.add([tmp_path / "docs"], sync=True)
        assert not doomed & {n.id for n in mem.store.nodes()}
        assert not mixed_nodes(mem, doomed)
        assert_forgotten(mem, llm, fresh_answer=True)  # from the same step on, before any rebuild
        for name in FAMILIES:
            mem.index(name)
            assert mem.store.build_state(name).state == "built"
        assert_forgotten(mem, llm, fresh_answer=False)  # and after the rebuild
        if scenario == "replace":  # the edited version is what the memory now holds
            hits = mem.retrieve("Who keeps the launch code of the Orion depot?", 4, strategy="dense")
            assert any("Oskar Lind" in h.text for h in hits)


def test_a_kept_entity_stays_while_another_chunk_names_it(tmp_path: Path, forget_config: Config) -> None:
    llm = ScriptedLLM()
    with open_memory(tmp_path / "m", forget_config, llm) as mem:
        mem.add_text("Alma Reyes was born in Valdora. Valdora lies on the coast.", "a")
        mem.add_text("Tomas Reyes visited Valdora in spring. Tomas Reyes loved Valdora.", "b")
        mem.index("remem")
        entity = {n.text: n for n in mem.store.nodes("entity", strategy="remem")}["valdora"]
        stated_by = mem.store.node_sources([entity.id])[entity.id]
        assert len(stated_by) == 2
        mem.delete("a")
        after = {n.text: n for n in mem.store.nodes("entity", strategy="remem")}
        assert "alma reyes" not in after and "valdora" in after  # stated by "b" too: it stays (reassembled)
        kept = after["valdora"]
        assert mem.store.node_sources([kept.id])[kept.id] == stated_by[1:]  # without the removed chunk
        assert kept.meta["inputs"] == 1
        with pytest.warns(StaleStrategyWarning):
            assert mem.retrieve("Where was Tomas Reyes?", 2, strategy="remem")


def test_forgotten_nodes_follows_the_rule(tmp_path: Path, forget_config: Config) -> None:
    with open_memory(tmp_path / "m", forget_config, ScriptedLLM()) as mem:
        mem.add_text("Alma Reyes was born in Valdora.", "a")
        mem.add_text("Tomas Reyes visited Valdora.", "b")
        mem.index("dense")  # chunks them
        a, b = (mem.store.document_chunk_ids(int(d["id"]))[0] for d in mem.store.documents())
        g = mem.store.begin_build("remem")
        shared = mem.store.add_node("remem", g, "entity", "Valdora", sources=[a, b])  # a kept kind of remem
        only_a = mem.store.add_node("remem", g, "entity", "Alma Reyes", sources=[a])
        summary = mem.store.add_node("gem", 1, "summary", "Both visited Valdora.", sources=[a, b])
        upper = mem.store.add_node("raptor", 1, "summary", "Of a summary.", sources=[summary])
        other = mem.store.add_node("gem", 1, "summary", "Tomas alone.", sources=[b])
        gone = forgotten_nodes(mem.store, [a])
        assert gone == sorted([only_a, summary, upper])  # any input removed: it leaves, and what was made from it
        assert shared not in gone and other not in gone
        assert mem.store.nodes_by_id([summary])[summary].meta["inputs"] == 2


def test_a_retrieval_refuses_a_hit_resting_on_removed_text(tmp_path: Path, forget_config: Config) -> None:
    with open_memory(tmp_path / "m", forget_config, ScriptedLLM()) as mem:
        mem.add_text("Alma Reyes was born in Valdora.", "a")
        mem.add_text("Tomas Reyes visited Valdora.", "b")
        mem.index("dense")
        a, b = (mem.store.document_chunk_ids(int(d["id"]))[0] for d in mem.store.documents())
        summary = mem.store.add_node("gem", 1, "summary", "Both visited Valdora.", sources=[a, b])
        hits = [Hit(b, "chunk", 1.0, "Tomas Reyes visited Valdora."), Hit(summary, "summary", 0.5, "Both", 1)]
        check_inputs(mem.store, hits)  # every input present: accepted
        with mem.store.transaction() as c:  # remove a chunk behind the rule's back: the summary lost an input
            mem.store.delete_nodes(c, [a])
        with pytest.raises(ForgottenTextError, match="made from 2 chunks, 1 of them removed"):
            check_inputs(mem.store, hits)
        with pytest.raises(ForgottenTextError, match="was removed"):
            check_inputs(mem.store, [Hit(a, "chunk", 1.0, "Alma Reyes was born in Valdora.")])
