"""``dense`` (the GEM-RAG paper's "Embed" baseline): exact cosine top-B, shared embeddings, saved arrays."""

from __future__ import annotations

import numpy as np
import pytest

from backends import MemoryAt
from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.config import Config
from gemrag.errors import MemoryNotIndexedError
from gemrag.strategies import available
from test_memory import DOC_A, DOC_B


def test_dense_is_the_exact_cosine_top_b(memory_at: MemoryAt, config: Config) -> None:
    with Memory.open(memory_at("m"), config, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
        mem.add_text(DOC_A)
        mem.add_text(DOC_B)
        mem.index(strategy="dense")
        question = "Who mended the shutters when storms battered the island?"
        hits = mem.retrieve(question, 3, strategy="dense")
        # by hand
        chunks = mem.store.nodes("chunk")
        emb = HashEmbedder()
        vectors = emb.embed([c.text for c in chunks]).astype(np.float64)
        v_p = emb.embed([question])[0].astype(np.float64)
        cos = vectors @ v_p / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(v_p))
        best = np.argsort(-cos, kind="stable")[:3]
        assert [h.node_id for h in hits] == [chunks[i].id for i in best]
        np.testing.assert_allclose([h.score for h in hits], cos[best], atol=1e-6)
        assert [h.kind for h in hits] == ["chunk"] * 3 and [h.rank for h in hits] == [0, 1, 2]
        assert hits[0].text == chunks[best[0]].text and "shutters" in hits[0].text
        # the arrays are in the memory directory
        published = mem.store.load_published("dense")
        ids = published.arrays["node_ids"]
        assert ids.dtype == np.int64 and ids.tolist() == [c.id for c in chunks]
        assert published.arrays["vectors"].shape == (len(chunks), emb.dim)
        assert mem.get_strategy("dense").report(mem.ctx) == {"chunks": len(chunks)}
        assert len(mem.retrieve(question, 100, strategy="dense")) == len(chunks)


def test_dense_reuses_the_memory_embeddings(memory_at: MemoryAt, config: Config) -> None:
    emb = HashEmbedder()
    with Memory.open(memory_at("m"), config, llm=ScriptedLLM(), embedder=emb) as mem:
        mem.add_text(DOC_A)
        mem.index()  # gem embeds every chunk
        embedded = emb.texts_embedded
        mem.index(strategy="dense")
        assert emb.texts_embedded == embedded  # every chunk vector came from the memory's cache
        assert mem.retrieve("silver medal", 1, strategy="dense")[0].text.count("silver medal") == 1


def test_dense_before_index(memory_at: MemoryAt, config: Config) -> None:
    assert {"gem", "dense", "bm25", "raptor", "full"} <= set(available())
    with Memory.open(memory_at("m"), config, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
        assert mem.get_strategy("dense").report(mem.ctx) == {"chunks": 0}
        with pytest.raises(MemoryNotIndexedError, match="dense"):
            mem.retrieve("anything", strategy="dense")
        with pytest.raises(MemoryNotIndexedError):
            mem.index(strategy="dense")  # no documents
