"""``unweaver`` end to end with the real embedded models (MiniLM ONNX + Qwen2.5-Coder-0.5B GGUF via llama.cpp) and
the real election library: the entity schema compiles to a llama.cpp grammar and gives valid artefacts, classes
join names across chunks, and an exact PAV election (abcvoting, HiGHS) picks the chunks."""

from __future__ import annotations

import importlib.util

import pytest

from gemrag import Memory, load_config
from gemrag.strategies.unweaver.prompts import ENTITIES_VERSION, ChunkEntities
from realparts import require_real, require_small_model

pytestmark = pytest.mark.integration

PARAGRAPHS = [
    "Marie Laurent was born in Lyon in 1962. She studied chemistry at the University of Geneva.",
    "The University of Geneva was founded in 1559 by John Calvin in the Republic of Geneva.",
    "Lyon is a city in France on the Rhône river. Its old town is a UNESCO World Heritage Site.",
]


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    require_small_model()
    if importlib.util.find_spec("abcvoting") is None or importlib.util.find_spec("highspy") is None:
        require_real("abcvoting or highspy is not installed (pip install 'gemrag[unweaver]')")
    cfg = load_config(
        None, {"llm": {"model": "qwen2.5-coder-0.5b", "n_ctx": 2048}, "strategy": "unweaver", "unweaver": {}}
    )
    mem = Memory.open(tmp_path_factory.mktemp("unweaver"), cfg)
    for i, text in enumerate(PARAGRAPHS):
        mem.add_text(text, f"paragraph {i}")
    mem.index(strategy="unweaver")
    yield mem
    mem.close()


def test_entity_artefacts_and_classes_from_the_real_model(memory: Memory) -> None:
    chunks = memory.store.nodes("chunk")
    assert len(chunks) == 3
    version = memory.get_strategy("unweaver").version(memory.ctx)
    assert version.startswith(ENTITIES_VERSION)
    artefacts = memory.store.artifacts("unweaver", "entities", ChunkEntities, version)
    assert set(artefacts) == {c.id for c in chunks}  # constrained decoding: every answer valid
    assert all(artefacts[c.id].entities for c in chunks)
    classes = {n.meta["key"]: n for n in memory.store.nodes("entity", strategy="unweaver")}
    assert "university of geneva" in classes, sorted(classes)
    geneva = classes["university of geneva"]
    assert len(memory.store.node_sources([geneva.id])[geneva.id]) == 2  # named by chunks 0 and 1: one class
    assert not [f for f in memory.store.failures() if f["phase"].startswith("index/unweaver")]


def test_pav_election_over_the_real_index(memory: Memory) -> None:
    hits = memory.retrieve("Who founded the university where Marie Laurent studied?", 2)
    assert 1 <= len(hits) <= 2 and {h.kind for h in hits} == {"chunk"}
    assert hits[0].meta["rule"] == "pav" and hits[0].meta["classes"]
    assert any("John Calvin" in h.text for h in hits)
