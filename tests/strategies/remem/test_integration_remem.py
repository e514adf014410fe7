"""``remem`` end to end with the real embedded models (MiniLM ONNX + Qwen2.5-Coder-0.5B GGUF via llama.cpp): the
OpenIE schemas compile to llama.cpp grammars and give valid artefacts, the fact graph is built from them, and the
recognition filter's structured answer is used by retrieval."""

from __future__ import annotations

import pytest

from gemrag import Memory, load_config
from gemrag.strategies.remem.openie_prompts import NER_VERSION, TRIPLES_VERSION, NamedEntities, Triples
from realparts import require_small_model

pytestmark = pytest.mark.integration

PARAGRAPHS = [
    "Marie Laurent was born in Lyon in 1962. She studied chemistry at the University of Geneva.",
    "The University of Geneva was founded in 1559 by John Calvin in the Republic of Geneva.",
    "Lyon is a city in France on the Rhône river. Its old town is a UNESCO World Heritage Site.",
]


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    require_small_model()
    cfg = load_config(None, {"llm": {"model": "qwen2.5-coder-0.5b", "n_ctx": 2048}, "strategy": "remem"})
    mem = Memory.open(tmp_path_factory.mktemp("remem"), cfg)
    for i, text in enumerate(PARAGRAPHS):
        mem.add_text(text, f"paragraph {i}")
    mem.index(strategy="remem")
    yield mem
    mem.close()


def test_openie_artefacts_and_graph_from_the_real_model(memory: Memory) -> None:
    chunks = memory.store.nodes("chunk")
    assert len(chunks) == 3
    ner = memory.store.artifacts("remem", "ner", NamedEntities, NER_VERSION)
    triples = memory.store.artifacts("remem", "triples", Triples, TRIPLES_VERSION)
    assert set(ner) == set(triples) == {c.id for c in chunks}  # constrained decoding: every answer valid
    assert all(ner[c.id].named_entities for c in chunks)
    assert all(len(t) == 3 for a in triples.values() for t in a.triples)
    names = {n.text for n in memory.store.nodes("entity", strategy="remem")}
    assert {"marie laurent", "university of geneva"} & names, names
    report = memory.get_strategy("remem").report(memory.ctx)
    assert report["facts"] > 0 and report["edges"]["passage"] > 0
    assert not [f for f in memory.store.failures() if f["phase"].startswith("index/remem")]


def test_retrieval_with_the_real_recognition_filter(memory: Memory) -> None:
    hits = memory.retrieve("Who founded the university where Marie Laurent studied?", 3)
    assert len(hits) == 3 and {h.kind for h in hits} == {"chunk"}
    meta = hits[0].meta
    assert meta["candidates"] and "recognition_error" not in meta  # the filter answered valid JSON
    assert all(f in meta["candidates"] for f in meta["facts"])  # kept facts are candidates, nothing invented
    if "fallback" not in meta:  # PageRank: probabilities, best first
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True) and 0 < sum(scores) <= 1
