"""``hlgraph`` end to end with the real embedded models (MiniLM ONNX + Qwen2.5-Coder-0.5B GGUF via llama.cpp) on a
three-chunk story: the extraction schema compiles to a llama.cpp grammar and gives valid artefacts, the association
graph is built from them (both directions of every fact), and the main-idea split's structured answer drives the
traversal."""

from __future__ import annotations

import numpy as np
import pytest

from gemrag import Memory, load_config
from gemrag.strategies.hlgraph.prompts import EXTRACTION_VERSION, ChunkMemory
from gemrag.strategies.platform.titles import title_version
from realparts import require_small_model

pytestmark = pytest.mark.integration

STORY = [
    "In 2019 John pushed Selena into the lake because she had laughed at his poem.",
    "Selena lives in Harbor Town with her brother Ivo.",
    "In 2023 Selena forgave John because he apologized.",
]


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    require_small_model()
    cfg = load_config(None, {"llm": {"model": "qwen2.5-coder-0.5b", "n_ctx": 2048}, "strategy": "hlgraph"})
    mem = Memory.open(tmp_path_factory.mktemp("hlgraph"), cfg)
    for i, text in enumerate(STORY):
        mem.add_text(text, f"part {i}")
    mem.index(strategy="hlgraph")
    yield mem
    mem.close()


def test_extraction_and_graph_from_the_real_model(memory: Memory) -> None:
    chunks = memory.store.nodes("chunk")
    assert len(chunks) == 3
    version = title_version(memory.ctx, EXTRACTION_VERSION, False)  # from the chunk text alone, as the paper
    answers = memory.store.artifacts("hlgraph", "memory", ChunkMemory, version)
    assert set(answers) == {c.id for c in chunks}  # constrained decoding: every answer valid
    assert not [f for f in memory.store.failures() if f["phase"].startswith("index/hlgraph")]
    subjects = {n.text.lower() for n in memory.store.nodes("subject", strategy="hlgraph")}
    assert {"john", "selena"} & subjects, subjects
    a = memory.store.load_published("hlgraph").arrays
    assert a["rel_src"].size > 0 and a["rel_src"].size % 2 == 0  # every fact stored in both directions
    assert np.array_equal(a["rel_src"][0::2], a["rel_dst"][1::2]) and a["rel_inverse"][1::2].all()
    report = memory.get_strategy("hlgraph").report(memory.ctx)
    assert report["extracted_chunks"] == 3 and report["relation_rows"] == a["rel_src"].size


def test_retrieval_with_the_real_main_idea_split(memory: Memory) -> None:
    hits = memory.retrieve("Why did John push Selena into the lake?", 4)
    assert hits and len(hits) <= 4
    meta = hits[0].meta
    assert "ideas_error" not in meta and 1 <= len(meta["ideas"]) <= 3  # the split answered valid JSON
    relations = [h for h in hits if h.kind == "relations"]
    assert relations and "fallback" not in meta, [h.text for h in hits]
    assert all(line.endswith(".") for h in relations for line in h.text.splitlines())
    chunk_ids = {c.id for c in memory.store.nodes("chunk")}
    assert {h.node_id for h in hits if h.kind == "chunk"} <= chunk_ids
