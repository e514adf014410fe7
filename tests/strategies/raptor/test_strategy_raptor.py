"""RAPTOR strategy: the tree (layers, summary nodes and child edges of its own in the store), collapsed-tree
retrieval under a token budget,
coexistence with GEM's summary nodes, caching, small corpora.

UMAP's first fit compiles numba code (~20-40 s), so the unit tests inject a PCA reducer through
:class:`RaptorParams`; the real UMAP path runs in the integration test at the end.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from backends import MemoryAt, overwrite_array
from conftest import STORY
from fakes import HashEmbedder, ScriptedLLM, pca
from gemrag import Memory
from gemrag.config import Config, load_config
from gemrag.errors import DamagedMemoryError, GemragError, MemoryNotIndexedError
from gemrag.strategies.gem.settings import gem_config
from gemrag.strategies.platform.titles import indexed_text_of
from gemrag.strategies.raptor.strategy import RaptorParams, RaptorStrategy

CHUNK_TOKENS = 100


def story(words: int = 2500) -> str:
    return " ".join(STORY.read_text(encoding="utf-8").split()[:words])


@pytest.fixture(scope="module")
def module_config() -> Iterator[Config]:
    with pytest.MonkeyPatch.context() as mp:
        for var in list(__import__("os").environ):
            if var.startswith("GEMRAG_"):
                mp.delenv(var, raising=False)
        yield load_config(None, {"memory": {"chunk_tokens": CHUNK_TOKENS}, "gem": {"questions": 0, "eigen": 0}})


def open_memory(path: str | Path, config: Config, llm: ScriptedLLM | None = None) -> Memory:
    return Memory.open(path, config, llm=llm or ScriptedLLM(), embedder=HashEmbedder())


def build(mem: Memory, params: RaptorParams) -> RaptorStrategy:
    mem.index(strategy="full")  # chunks the documents (``full`` has nothing to build)
    strategy = RaptorStrategy(params)
    strategy.build(mem.ctx)
    return strategy


@pytest.fixture(scope="module")
def tree_memory(tmp_path_factory: pytest.TempPathFactory, module_config: Config) -> Iterator[tuple[Memory, int]]:
    llm = ScriptedLLM()
    mem = open_memory(tmp_path_factory.mktemp("raptor"), module_config, llm)
    mem.add_text(story(), "story")
    build(mem, RaptorParams(reducer=pca))
    yield mem, llm.calls
    mem.close()


def tree_of(mem: Memory) -> dict[str, Any]:
    """The published tree: its arrays, and its summary nodes with their child edges, read from the store."""
    published = mem.store.load_published("raptor")
    summaries = [
        {
            "id": n.id,
            "text": n.text,
            "layer": n.meta["layer"],
            "children": sorted(c for c, _ in mem.store.edges(n.id, "raptor", "child")),
        }
        for n in mem.store.nodes("summary", strategy="raptor")
    ]
    arrays = {k: np.asarray(published.arrays[k]).tolist() for k in ("node_ids", "layers", "n_tokens")}
    return {**arrays, "summaries": summaries, "params": published.meta["params"]}


def node_texts(mem: Memory) -> tuple[list[int], list[str], list[int]]:
    tree = tree_of(mem)
    text_of = indexed_text_of(mem.ctx, titles=False)  # what is embedded: a chunk's text alone (RAPTOR's default)
    texts = [text_of(mem.store.node(i)) for i in tree["node_ids"]]
    return tree["node_ids"], texts, tree["n_tokens"]


def test_tree_over_forty_chunks(tree_memory: tuple[Memory, int]) -> None:
    mem, llm_calls = tree_memory
    chunk_ids = [n.id for n in mem.store.nodes("chunk")]
    assert 35 <= len(chunk_ids) <= 45
    report = mem.get_strategy("raptor").report(mem.ctx)
    layers = report["nodes_per_layer"]
    assert len(layers) >= 2 and layers[0] == len(chunk_ids) and 2 <= layers[1] < layers[0]
    assert layers[-1] <= 11 < layers[-2]  # RAPTOR's stop rule: a layer of <= reduction_dim + 1 nodes is the top
    tree = tree_of(mem)
    summaries = tree["summaries"]
    assert llm_calls == len(summaries) == report["summary_nodes"]  # one LLM summary per cluster
    assert mem.store.nodes("summary", strategy="gem") == []  # RAPTOR's summary nodes are its own
    assert tree["node_ids"] == chunk_ids + [s["id"] for s in summaries]
    sources = mem.store.node_sources([s["id"] for s in summaries])
    assert all(set(sources[s["id"]]) == set(s["children"]) for s in summaries if s["layer"] == 1)
    first = [s for s in summaries if s["layer"] == 1]
    assert all(set(s["children"]) <= set(chunk_ids) for s in first)
    assert set().union(*(s["children"] for s in first)) == set(chunk_ids)  # every chunk has a parent
    # the saved vectors are E(text) of every node, summaries included
    _, texts, n_tokens = node_texts(mem)
    vectors = mem.store.load_published("raptor").arrays["vectors"]
    np.testing.assert_allclose(vectors, HashEmbedder().embed(texts), atol=1e-6)
    assert n_tokens[: len(chunk_ids)] == [n.n_tokens for n in mem.store.nodes("chunk")]
    assert tree["params"]["reducer"] == "pca" and tree["params"]["threshold"] == 0.1


@pytest.mark.parametrize("budget", [1, 2, 4])
def test_collapsed_tree_respects_the_token_budget_exactly(tree_memory: tuple[Memory, int], budget: int) -> None:
    mem, _ = tree_memory
    question = "What did the ambassador say about the language of the natives?"
    hits = mem.retrieve(question, budget, strategy="raptor")
    # by hand: rank every node of every layer by cosine, take them while the total stays <= B x T
    ids, texts, n_tokens = node_texts(mem)
    emb = HashEmbedder()
    scores = emb.embed(texts) @ emb.embed([question])[0]
    order = np.argsort(-scores, kind="stable")
    limit, total, expected = budget * CHUNK_TOKENS, 0, []
    for row in order:
        if total + n_tokens[row] > limit:
            break
        total += n_tokens[row]
        expected.append(ids[row])
    assert [h.node_id for h in hits] == expected and hits
    assert sum(n_tokens[ids.index(h.node_id)] for h in hits) == total <= limit
    assert total + n_tokens[order[len(hits)]] > limit  # the next node would not fit
    np.testing.assert_allclose([h.score for h in hits], scores[order[: len(hits)]], atol=1e-6)
    assert [h.rank for h in hits] == list(range(len(hits)))


def test_collapsed_tree_returns_summary_nodes(tree_memory: tuple[Memory, int]) -> None:
    mem, _ = tree_memory
    tree = tree_of(mem)
    summary = tree["summaries"][0]
    hits = mem.retrieve(summary["text"], 4, strategy="raptor")
    top = hits[0]
    assert top.kind == "summary" and top.node_id == summary["id"] and top.text == summary["text"]
    assert top.meta == {"strategy": "raptor", "layer": 1, "children": summary["children"]}
    chunk_ids = {n.id for n in mem.store.nodes("chunk")}
    assert all((h.kind == "summary") == (h.node_id not in chunk_ids) for h in hits)


def test_deeper_tree_links_summaries_of_summaries(memory_at: MemoryAt, module_config: Config) -> None:
    with open_memory(memory_at("m"), module_config) as mem:
        mem.add_text(story())
        build(mem, RaptorParams(reducer=pca, reduction_dim=4, max_layers=2))  # stop rule: <= 5 nodes
        tree = tree_of(mem)
        layers = np.bincount(tree["layers"]).tolist()
        assert len(layers) == 3 and layers[0] > layers[1] > layers[2] >= 1  # two summary layers, no more
        layer_of = dict(zip(tree["node_ids"], tree["layers"], strict=True))
        for i, s in enumerate(tree["summaries"]):
            assert all(layer_of[c] == s["layer"] - 1 for c in s["children"]), f"summary {i}"


def test_coexists_with_gem_and_rebuilds_from_the_cache(memory_at: MemoryAt, module_config: Config) -> None:
    cfg = module_config.model_copy(
        update={
            "strategy": "gem",
            "gem": gem_config(module_config).model_copy(update={"questions": 1, "eigen": 2, "eigen_top": 3}),
        }
    )
    llm = ScriptedLLM()
    with open_memory(memory_at("m"), cfg, llm) as mem:
        mem.add_text(story(1000))
        mem.index()  # gem: two summary nodes in the store
        gem_summaries = [n.id for n in mem.store.nodes("summary", strategy="gem")]
        assert len(gem_summaries) == 2
        raptor = RaptorStrategy(RaptorParams(reducer=pca))
        raptor.build(mem.ctx)
        assert [n.id for n in mem.store.nodes("summary", strategy="gem")] == gem_summaries
        before = mem.retrieve("the ambassador and the natives", 4, strategy="raptor")
        calls = llm.calls
        raptor.build(mem.ctx)  # same clusters: every summary comes from the LLM cache
        assert llm.calls == calls
        assert [h.text for h in mem.retrieve("the ambassador and the natives", 4, strategy="raptor")] == [
            h.text for h in before
        ]
        before = mem.retrieve("the ambassador and the natives", 4, strategy="raptor")
        raptor_rows = (mem.store.nodes(strategy="raptor"), mem.store.edge_list("raptor"))
        assert raptor_rows[0] and raptor_rows[1]
        mem.index()  # rebuilding GEM replaces its summary nodes, not RAPTOR's tree
        assert (mem.store.nodes(strategy="raptor"), mem.store.edge_list("raptor")) == raptor_rows
        assert mem.retrieve("the ambassador and the natives", 4, strategy="raptor") == before
        assert any(h.kind == "summary" for h in mem.retrieve(before[0].text, 4))  # gem still works


def test_a_failed_summary_is_recorded_and_skipped(memory_at: MemoryAt, module_config: Config) -> None:
    class FailsOnce(ScriptedLLM):
        def complete(self, messages, **kwargs):  # type: ignore[no-untyped-def]
            if not self.calls and messages[-1]["content"].startswith("Write a summary"):
                self.calls += 1
                raise GemragError("backend down")
            return super().complete(messages, **kwargs)

    with open_memory(memory_at("m"), module_config, FailsOnce()) as mem:
        mem.add_text(story(1000))
        build(mem, RaptorParams(reducer=pca))
        failures = mem.store.failures()
        assert [f["phase"] for f in failures] == ["index/raptor"] and "backend down" in failures[0]["message"]
        published = mem.store.load_published("raptor")
        tree = tree_of(mem)
        assert len(tree["summaries"]) >= 1 and len(tree["node_ids"]) == len(published.arrays["vectors"])
        assert mem.retrieve("the ambassador", 2, strategy="raptor")


def test_small_corpus_has_only_leaves(memory_at: MemoryAt, module_config: Config) -> None:
    def no_reduction(X: np.ndarray, k: int, nn: int) -> np.ndarray:
        raise AssertionError("3 chunks need no clustering")

    llm = ScriptedLLM()
    with open_memory(memory_at("m"), module_config, llm) as mem:
        mem.add_text(story(200))
        build(mem, RaptorParams(reducer=no_reduction))
        assert mem.get_strategy("raptor").report(mem.ctx)["nodes_per_layer"] == [len(mem.store.nodes("chunk"))]
        assert llm.calls == 0
        hits = mem.retrieve("the ambassador", 1, strategy="raptor")
        assert len(hits) == 1 and hits[0].kind == "chunk"


def test_missing_or_inconsistent_tree(memory_at: MemoryAt, module_config: Config) -> None:
    with open_memory(memory_at("m"), module_config) as mem:
        mem.add_text(story(200))
        mem.index(strategy="full")
        assert mem.get_strategy("raptor").report(mem.ctx) == {}
        with pytest.raises(MemoryNotIndexedError, match="raptor"):
            mem.retrieve("anything", strategy="raptor")
        RaptorStrategy(RaptorParams(reducer=pca)).build(mem.ctx)
        published = mem.store.load_published("raptor", mmap=False)
        generation = mem.store.published_generation("raptor")
        # an array that does not match the manifest
        overwrite_array(mem.store, "raptor", generation, "vectors", published.arrays["vectors"][:-1].copy())
        with pytest.raises(DamagedMemoryError, match="damaged"):
            RaptorStrategy().retrieve(mem.ctx, "anything", 4)


@pytest.mark.integration
def test_umap_tree_on_forty_chunks(memory_at: MemoryAt, module_config: Config) -> None:
    """The published pipeline with the real UMAP (its numba JIT takes ~20-40 s on first use)."""
    with open_memory(memory_at("m"), module_config) as mem:
        mem.add_text(story())
        mem.index(strategy="raptor")
        layers = mem.get_strategy("raptor").report(mem.ctx)["nodes_per_layer"]
        assert len(layers) >= 2 and layers[1] >= 2
        hits = mem.retrieve("What did the ambassador say about the language?", 4, strategy="raptor")
        assert hits and sum(1 for _ in hits) >= 1
