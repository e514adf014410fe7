"""``bm25``: lexical top-B with bm25s, English stopwords, index saved in the memory directory."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from backends import MemoryAt
from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.config import Config
from gemrag.errors import MemoryNotIndexedError
from gemrag.strategies.baselines.bm25 import tokenize
from test_memory import DOC_A, DOC_B


def open_memory(path: str | Path, config: Config) -> Memory:
    return Memory.open(path, config, llm=ScriptedLLM(), embedder=HashEmbedder())


def test_exact_keyword_chunk_ranks_first_with_the_bm25_score(memory_at: MemoryAt, config: Config) -> None:
    with open_memory(memory_at("m"), config) as mem:
        mem.add_text(DOC_A)
        mem.add_text(DOC_B)
        mem.index(strategy="bm25")
        chunks = mem.store.nodes("chunk")
        hits = mem.retrieve("Where do the puffins nest?", 3, strategy="bm25")
        puffin = next(c for c in chunks if "puffins" in c.text)
        assert hits[0].node_id == puffin.id and hits[0].kind == "chunk" and hits[0].text == puffin.text
        # by hand (Lucene BM25, k1 = 1.5, b = 0.75): "where", "do", "the" are stopwords; "nest" and "puffins"
        # each occur once in the corpus, in the puffin chunk
        docs = tokenize([c.text for c in chunks])
        n, avgdl = len(docs), sum(map(len, docs)) / len(docs)
        dl = len(docs[chunks.index(puffin)])
        idf = math.log(1 + (n - 1 + 0.5) / (1 + 0.5))
        term = idf * 1 / (1 + 1.5 * (1 - 0.75 + 0.75 * dl / avgdl))
        assert hits[0].score == pytest.approx(2 * term, rel=1e-5)
        assert [h.score for h in hits[1:]] == [0.0, 0.0]  # no other chunk shares a word


def test_index_is_saved_and_reloaded(memory_at: MemoryAt, tmp_path: Path, config: Config, backend: str) -> None:
    with open_memory(memory_at("m"), config) as mem:
        mem.add_text(DOC_A)
        mem.index(strategy="bm25")
        mem.index(strategy="bm25")  # rebuilding publishes generation 2 and removes generation 1
        n = len(mem.store.nodes("chunk"))
        assert mem.get_strategy("bm25").report(mem.ctx) == {"chunks": n}
        if backend == "postgres":  # the index directory is stored packed beside the arrays, generation 1's are gone
            stored = mem.store.database._query(
                "SELECT DISTINCT generation, name FROM build_arrays WHERE strategy = 'bm25'"
            )
            assert sorted(stored) == [(2, "node_ids"), (2, "path/index")]
    if backend == "sqlite":
        assert (tmp_path / "m" / "bm25.g2.index").is_dir() and (tmp_path / "m" / "bm25.g2.node_ids.npy").exists()
        assert not list((tmp_path / "m").glob("bm25.g1.*"))  # the previous generation is gone
        assert not list((tmp_path / "m").glob(".*.tmp"))  # no temporary files left
    with open_memory(memory_at("m"), config) as mem:  # a new process: loaded from disk, not rebuilt
        hits = mem.retrieve("silver medal courage", 2, strategy="bm25")
        assert "silver medal" in hits[0].text and hits[0].score > hits[1].score


def test_no_shared_word_gives_zero_scores_in_store_order(memory_at: MemoryAt, config: Config) -> None:
    with open_memory(memory_at("m"), config) as mem:
        mem.add_text(DOC_A)
        mem.index(strategy="bm25")
        hits = mem.retrieve("xylophone zeppelin", 2, strategy="bm25")
        assert [h.node_id for h in hits] == [c.id for c in mem.store.nodes("chunk")[:2]]
        assert [h.score for h in hits] == [0.0, 0.0]


def test_bm25_before_index(memory_at: MemoryAt, config: Config) -> None:
    with open_memory(memory_at("m"), config) as mem:
        assert mem.get_strategy("bm25").report(mem.ctx) == {"chunks": 0}
        with pytest.raises(MemoryNotIndexedError, match="bm25"):
            mem.retrieve("anything", strategy="bm25")
