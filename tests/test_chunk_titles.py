"""``gem.chunk_titles``: a chunk's indexed text is its document's title and its text (embedded, BM25-indexed, sent to
the extraction passes), its stored text is unchanged, and the setting is recorded per memory."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.config import Config, load_config
from gemrag.errors import IncompatibleMemoryError
from gemrag.strategies.platform.common import TITLES_META
from test_memory import DOC_A, DOC_B


def _config(config: Config, **gem: object) -> Config:
    return load_config(None, {"gem": {**config.gem.model_dump(exclude={"chunk_titles"}), **gem}})


def test_titles_are_indexed_not_stored(tmp_path: Path, config: Config) -> None:
    emb = HashEmbedder()
    with Memory.open(tmp_path / "m", config, llm=ScriptedLLM(), embedder=emb) as mem:
        assert mem.store.get_meta(TITLES_META) is True  # the default, recorded by the new memory
        mem.add_text(DOC_A, title="Zanzibar Beacon")
        mem.add_text(DOC_B)  # the default title "text" names nothing: no header
        mem.index(strategy="dense")
        mem.index(strategy="bm25")
        chunks = mem.store.nodes("chunk")
        a = [c for c in chunks if c.doc_id == chunks[0].doc_id]
        b = [c for c in chunks if c.doc_id != chunks[0].doc_id]
        assert all(not c.text.startswith("Zanzibar") for c in chunks)  # the stored text is the passage
        vectors = mem.store.load_published("dense").arrays["vectors"]
        expected = emb.embed([f"Zanzibar Beacon\n{c.text}" for c in a] + [c.text for c in b])
        np.testing.assert_allclose(vectors, expected, atol=1e-6)
        # BM25 finds the titled chunks by a word only their title has; the hit's text is the plain chunk
        hits = mem.retrieve("Zanzibar", len(chunks), strategy="bm25")
        assert {h.node_id for h in hits if h.score > 0} == {c.id for c in a}
        assert hits[0].text == mem.store.node(hits[0].node_id).text
        assert mem.stats()["params"]["chunk_titles"] is True


def test_extraction_sees_the_title(tmp_path: Path, config: Config) -> None:
    llm = ScriptedLLM()
    with Memory.open(tmp_path / "m", config, llm=llm, embedder=HashEmbedder()) as mem:
        mem.add_text(DOC_A, title="Zanzibar Beacon")
        mem.index(strategy="remem")  # OpenIE: named entities, then triples
        mem.index(strategy="gem")  # utility questions
        n = len(mem.store.nodes("chunk"))
        ner = [p for p in llm.prompts if "Zanzibar Beacon\n" in p]
        assert len(ner) >= 3 * n  # NER, triples and utility-question prompts of every chunk carry the title


def test_switched_off_and_recorded(tmp_path: Path, config: Config) -> None:
    off = _config(config, chunk_titles=False)
    emb = HashEmbedder()
    with Memory.open(tmp_path / "m", off, llm=ScriptedLLM(), embedder=emb) as mem:
        mem.add_text(DOC_A, title="Zanzibar Beacon")
        mem.index(strategy="dense")
        chunks = mem.store.nodes("chunk")
        np.testing.assert_allclose(
            mem.store.load_published("dense").arrays["vectors"], emb.embed([c.text for c in chunks]), atol=1e-6
        )
    # the default (not given explicitly) keeps the memory's record; an explicit other value is refused
    with Memory.open(tmp_path / "m", config, llm=ScriptedLLM(), embedder=emb) as mem:
        assert mem.store.get_meta(TITLES_META) is False
    with pytest.raises(IncompatibleMemoryError, match="without their document titles"):
        Memory.open(tmp_path / "m", _config(config, chunk_titles=True), llm=ScriptedLLM(), embedder=emb)


def test_a_memory_chunked_before_the_setting_keeps_working(tmp_path: Path, config: Config) -> None:
    emb = HashEmbedder()
    with Memory.open(tmp_path / "m", config, llm=ScriptedLLM(), embedder=emb) as mem:
        mem.add_text(DOC_A, title="Zanzibar Beacon")
        mem.index(strategy="dense")
        before = np.array(mem.store.load_published("dense").arrays["vectors"])
        mem.store.set_meta(TITLES_META, None)  # as an older gemrag left it: chunks, nothing recorded
    with Memory.open(tmp_path / "m", config, llm=ScriptedLLM(), embedder=emb) as mem:
        assert mem.store.get_meta(TITLES_META) is False  # recorded as chunked without titles
        mem.index(strategy="dense")
        chunks = mem.store.nodes("chunk")
        after = mem.store.load_published("dense").arrays["vectors"]
        np.testing.assert_allclose(after, emb.embed([c.text for c in chunks]), atol=1e-6)
        assert not np.allclose(before, after)  # the titled build it had was a different index
