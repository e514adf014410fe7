"""``unweaver``: extraction artefacts, equivalence classes, representatives (LLM shortening and its truncation
fallback), elections, alignment, add and delete (unit tests with the scripted LLM and the hashing embedder)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from backends import MemoryAt
from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.config import Config, load_config
from gemrag.errors import ConfigError, MemoryNotIndexedError
from gemrag.memory.states import StaleStrategyWarning
from gemrag.models.base import Completion, Message, Usage
from gemrag.strategies.unweaver.prompts import ENTITIES_VERSION, ChunkEntities
from gemrag.strategies.unweaver.representatives import SHORTEN_PHASE, truncate
from gemrag.strategies.unweaver.strategy import UnweaverConfig, UnweaverStrategy

DOCS = [
    "Alma Reyes was born in Valdora. Valdora lies on the coast of Corvania.",
    "Tomas Reyes is the father of Alma Reyes. Tomas Reyes died in Brisvale.",
    "Brisvale hosts The Lantern Festival every spring. Crowds of visitors fill Brisvale.",
    "Mira Holt painted the harbour of Tarnow. The Lantern Festival inspired Mira Holt.",
]


def unweaver_config(**section: Any) -> Config:
    return load_config(None, {"memory": {"chunk_tokens": 40}, "strategy": "unweaver", "unweaver": section})


def built(path: Path, config: Config, llm: Any = None) -> Memory:
    mem = Memory.open(path, config, llm=llm or ScriptedLLM(), embedder=HashEmbedder())
    for doc in DOCS:
        mem.add_text(doc)
    mem.index(strategy="unweaver")
    return mem


def classes_by_name(mem: Memory) -> dict[str, Any]:
    return {n.text: n for n in mem.store.nodes("entity", strategy="unweaver")}


def test_build_extracts_once_per_chunk_and_merges_equivalent_names(memory_at: MemoryAt, config: Config) -> None:
    llm = ScriptedLLM()
    with built(memory_at("m"), unweaver_config(), llm) as mem:
        chunks = mem.store.nodes("chunk")
        assert len(chunks) == 4 and llm.calls == 4  # one extraction call per chunk, no shortening needed
        version = mem.get_strategy("unweaver").version(mem.ctx)  # ENTITIES_VERSION, from the chunk text alone
        assert version == f"{ENTITIES_VERSION}+untitled"
        artefacts = mem.store.artifacts("unweaver", "entities", ChunkEntities, version)
        assert set(artefacts) == {c.id for c in chunks}
        classes = classes_by_name(mem)
        # "The Lantern Festival" (chunks 2 and 3, one with a leading article in the fake's capitalized run)
        festival = classes["The Lantern Festival"]
        assert festival.meta["key"] == "lantern festival"
        assert mem.store.node_sources([festival.id])[festival.id] == [chunks[2].id, chunks[3].id]
        alma = classes["Alma Reyes"]
        assert mem.store.node_sources([alma.id])[alma.id] == [chunks[0].id, chunks[1].id]
        # representative: name + descriptions in chunk order
        assert alma.meta["representative"].startswith("Alma Reyes: Alma Reyes was born in Valdora.")
        assert alma.meta["representative"].index("born") < alma.meta["representative"].index("father")

        published = mem.store.load_published("unweaver")
        D = published.arrays["incidence"].toarray()
        ids = published.arrays["class_ids"].tolist()
        assert D.shape == (len(classes), 4) and set(np.unique(D)) == {0.0, 1.0}
        assert D[ids.index(festival.id)].tolist() == [0, 0, 1, 1]
        assert published.arrays["class_vectors"].shape == (len(classes), 256)
        report = mem.get_strategy("unweaver").report(mem.ctx)
        assert report["classes"] == len(classes) and report["extracted_chunks"] == 4
        assert report["truncated"] == 0


@pytest.mark.parametrize("rule", ["av", "pav", "cc", "seq-pav", "seq-cc", "released"])
def test_every_rule_elects_chunks_approved_by_the_most_similar_classes(
    memory_at: MemoryAt, config: Config, rule: str
) -> None:
    with built(memory_at("m"), unweaver_config(rule=rule, top_k_classes=3)) as mem:
        hits = mem.retrieve("Where did Tomas Reyes die?", 2)
        assert 1 <= len(hits) <= 2 and {h.kind for h in hits} == {"chunk"}
        assert "Tomas Reyes died in Brisvale" in hits[0].text
        meta = hits[0].meta
        assert meta["rule"] == rule and len(meta["classes"]) <= 3
        assert meta["classes"][0] == "Tomas Reyes"
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True)


def test_default_budget_and_fewer_candidates_than_budget(memory_at: MemoryAt, config: Config) -> None:
    with built(memory_at("m"), unweaver_config(top_k_classes=1, qa_top_k=3)) as mem:
        hits = mem.retrieve("Mira Holt")  # one voter: only the chunks naming Mira Holt are candidates
        assert [h.text for h in hits] == [DOCS[3]]


@pytest.mark.parametrize("alignment", ["fairness", "least_squares"])
@pytest.mark.parametrize("use", ["reorder", "select"])
def test_alignment_reorders_or_selects_candidate_chunks(
    memory_at: MemoryAt, config: Config, alignment: str, use: str
) -> None:
    cfg = unweaver_config(rule="av", top_k_classes=4, alignment=alignment, alignment_use=use)
    with built(memory_at("m"), cfg) as mem:
        hits = mem.retrieve("Where did Tomas Reyes die?", 2)
        assert len(hits) == 2 and hits[0].meta["alignment"] == alignment
        if use == "reorder":  # the same committee as without alignment, possibly in another order
            plain = UnweaverStrategy(UnweaverConfig(rule="av", top_k_classes=4))
            elected = plain.retrieve(mem.ctx, "Where did Tomas Reyes die?", 2)
            assert {h.node_id for h in hits} == {h.node_id for h in elected}
        else:  # the highest prices, best first
            scores = [h.score for h in hits]
            assert scores == sorted(scores, reverse=True)


def test_rebuild_costs_no_llm_call_and_a_new_document_one_per_chunk(memory_at: MemoryAt, config: Config) -> None:
    llm = ScriptedLLM()
    # two voters: with equal ballots (the default) and ten voters, the chunk naming most classes would win
    with built(memory_at("m"), unweaver_config(top_k_classes=2), llm) as mem:
        mem.index(strategy="unweaver")
        assert llm.calls == 4
        mem.add_text("Jonas Weber founded Tarnow Press. Tarnow Press printed maps of Corvania.")
        mem.index(strategy="unweaver")
        assert llm.calls == 5
        assert "Tarnow Press" in classes_by_name(mem)
        hits = mem.retrieve("Who founded Tarnow Press?", 1)
        assert "Jonas Weber" in hits[0].text


def test_deleting_a_document_removes_the_classes_only_it_named(memory_at: MemoryAt, config: Config) -> None:
    llm = ScriptedLLM()
    with built(memory_at("m"), unweaver_config(top_k_classes=2), llm) as mem:
        festival = classes_by_name(mem)["The Lantern Festival"]  # named by chunks 2 and 3
        assert "Mira Holt" in festival.meta["representative"]
        mem.delete(mem.store.documents()[3]["id"])  # the Mira Holt document
        classes = classes_by_name(mem)
        assert "Mira Holt" not in classes and "Tarnow" not in classes
        # chunk 2 still names it: the class stays, its representative re-taken from chunk 2 alone
        assert "Mira Holt" not in classes["The Lantern Festival"].meta["representative"]
        assert classes["The Lantern Festival"].meta["inputs"] == 1
        published = mem.store.load_published("unweaver")
        D = published.arrays["incidence"]
        assert D.shape == (len(classes), 3) and (np.diff(D.tocsr().indptr) > 0).all()
        assert set(published.arrays["class_ids"].tolist()) == {n.id for n in classes.values()}
        with pytest.warns(StaleStrategyWarning):  # pruned, not rebuilt: the index says so
            hits = mem.retrieve("Where did Tomas Reyes die?", 2)
        assert "Tomas Reyes died in Brisvale" in hits[0].text
        calls = llm.calls
        mem.index(strategy="unweaver")
        assert llm.calls == calls  # the rebuild reads the stored artefacts
        festival = classes_by_name(mem)["The Lantern Festival"]  # back, from chunk 2 alone
        assert "Mira Holt" not in festival.meta["representative"]


def test_long_descriptions_are_shortened_by_the_llm(memory_at: MemoryAt, config: Config) -> None:
    llm = ScriptedLLM()
    with built(memory_at("m"), unweaver_config(representative_max_chars=100), llm) as mem:
        brisvale = classes_by_name(mem)["Brisvale"]  # three sentences from two chunks, over 100 characters
        assert brisvale.meta["shortened"] == "llm"
        assert brisvale.meta["representative"] == "Brisvale: Tomas Reyes died in Brisvale."  # the fake's first sentence
        assert llm.calls > 4
        assert not [f for f in mem.store.failures() if f["phase"] == SHORTEN_PHASE]


class BadShortener(ScriptedLLM):
    """Answers the extraction like :class:`ScriptedLLM`; the shortening with ``reply`` (empty: invalid)."""

    def __init__(self, reply: str) -> None:
        super().__init__()
        self.reply = reply

    def complete(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
        if messages[0]["content"].startswith("You merge several descriptions"):
            self.calls += 1
            return Completion(self.reply, None, Usage(prompt_tokens=10, completion_tokens=5, seconds=0.0, calls=1))
        return super().complete(messages, **kwargs)


@pytest.mark.parametrize("reply", ["", "far too long " * 20])
def test_a_failed_shortening_falls_back_to_truncation_and_is_recorded(
    memory_at: MemoryAt, config: Config, reply: str
) -> None:
    with built(memory_at("m"), unweaver_config(representative_max_chars=100), BadShortener(reply)) as mem:
        brisvale = classes_by_name(mem)["Brisvale"]
        assert brisvale.meta["shortened"] == "truncated"
        description = brisvale.meta["representative"].removeprefix("Brisvale: ")
        assert len(description) <= 100 and description.startswith("Tomas Reyes died in Brisvale.")
        failures = [f for f in mem.store.failures() if f["phase"] == SHORTEN_PHASE]
        assert any("'Brisvale'" in f["message"] for f in failures)
        assert mem.get_strategy("unweaver").report(mem.ctx)["truncated"] >= 1


def test_truncate_cuts_at_a_word_boundary() -> None:
    assert truncate("short", 10) == "short"
    assert truncate("alpha beta gamma delta", 12) == "alpha beta"
    assert truncate("x" * 30, 10) == "x" * 10


def test_semantic_merge_joins_similar_representatives(memory_at: MemoryAt, config: Config) -> None:
    with built(memory_at("m"), unweaver_config(semantic_merge=True, semantic_threshold=0.5)) as merged:
        n_merged = len(classes_by_name(merged))
    with built(memory_at("n"), unweaver_config()) as plain:
        assert n_merged < len(classes_by_name(plain))


def test_unbuilt_strategy_and_config_errors(memory_at: MemoryAt, config: Config) -> None:
    with Memory.open(memory_at("m"), unweaver_config(), llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
        mem.add_text(DOCS[0])
        with pytest.raises(MemoryNotIndexedError):
            mem.retrieve("Alma?", 2, strategy="unweaver")
    with pytest.raises(ConfigError, match="top_k_clases"):
        Memory.open(memory_at("x"), unweaver_config(top_k_clases=3), llm=ScriptedLLM(), embedder=HashEmbedder())
    with pytest.raises(ConfigError, match="rule"):
        Memory.open(memory_at("y"), unweaver_config(rule="borda"), llm=ScriptedLLM(), embedder=HashEmbedder())
