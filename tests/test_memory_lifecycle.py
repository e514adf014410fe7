"""Incremental add and delete for every strategy, build states (built / stale / never built), and a strategy
written outside the package that keeps its own artefacts, nodes, edges and arrays in the store."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from pydantic import BaseModel
from test_strategy_raptor import pca
from typer.testing import CliRunner

from backends import MemoryAt
from conftest import STORY
from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.config import Config
from gemrag.errors import GemragError, MemoryNotIndexedError
from gemrag.memory.states import StaleStrategyWarning
from gemrag.strategies import register
from gemrag.strategies.base import StrategyContext
from gemrag.strategies.gem.settings import gem_config
from gemrag.strategies.platform.common import chunk_hits, chunk_nodes, load_published, publish_arrays
from gemrag.strategies.platform.forgetting import forgotten_nodes
from gemrag.strategies.platform.titles import indexed_text_of
from gemrag.strategies.raptor.strategy import RaptorConfig, RaptorStrategy
from gemrag.types import Hit

QUESTIONS = [
    "What did the ambassador say about the language of the natives?",
    "Why was Korvin's door left unlocked?",
    "Who guarded the prisoner at night?",
    "What did the Ruler want to know?",
]
STRATEGIES = ("gem", "dense", "bm25", "raptor")


def documents(n: int = 5, words: int = 150) -> list[str]:
    """``n`` documents: consecutive passages of the QuALITY story in examples/."""
    text = STORY.read_text(encoding="utf-8").split()
    return [" ".join(text[i * words : (i + 1) * words]) for i in range(n)]


def open_memory(path: str | Path, config: Config, llm: ScriptedLLM) -> Memory:
    mem = Memory.open(path, config, llm=llm, embedder=HashEmbedder())
    raptor = RaptorConfig(reducer=pca, reduction_dim=3, max_clusters=6)  # no UMAP JIT, a short BIC search
    mem._strategies["raptor"] = RaptorStrategy(raptor)
    return mem


def build_all(mem: Memory, strategies: tuple[str, ...] = STRATEGIES) -> None:
    for name in strategies:
        mem.index(name)


def answers(mem: Memory, strategy: str) -> list[list[str]]:
    with warnings.catch_warnings():
        warnings.simplefilter("error", StaleStrategyWarning)  # the memory must not be stale here
        return [[h.text for h in mem.retrieve(q, 4, strategy=strategy)] for q in QUESTIONS]


@pytest.fixture
def lifecycle_config(config: Config) -> Config:
    return config.model_copy(update={"memory": config.memory.model_copy(update={"chunk_tokens": 40})})


def test_adding_a_document_costs_llm_calls_for_its_chunks_only(memory_at: MemoryAt, lifecycle_config: Config) -> None:
    docs = documents()
    llm = ScriptedLLM()
    with open_memory(memory_at("m"), lifecycle_config, llm) as mem:
        for i, d in enumerate(docs[:-1]):
            mem.add_text(d, f"part {i}")
        mem.index()
        before = len(llm.prompts)
        doc_id, _ = mem.add_text(docs[-1], "last part")
        assert mem.store.build_state("gem").describe().startswith("stale: ")
        report = mem.index()
        text_of = indexed_text_of(mem.ctx, titles=False)  # GEM's prompt holds the chunk's text alone (its paper)
        new_chunks = {text_of(n) for n in mem.store.nodes("chunk") if n.doc_id == doc_id}
        assert report.new_chunks == len(new_chunks)
        prompts = llm.prompts[before:]
        question_passages = [p.split('"""')[1].strip() for p in prompts if "questions that this passage" in p]
        summaries = [p for p in prompts if "These passages share a theme" in p]
        summary_texts = {n.text for n in mem.store.nodes("summary", strategy="gem")}
        assert len(question_passages) + len(summaries) == len(prompts) == report.llm_calls > 0
        assert new_chunks <= set(question_passages) <= new_chunks | summary_texts  # its chunks, changed summaries
        assert len(summaries) <= gem_config(lifecycle_config).eigen
        assert mem.store.build_state("gem").state == "built"


def test_delete_leaves_the_memory_equal_to_one_built_without_the_document(
    memory_at: MemoryAt, lifecycle_config: Config
) -> None:
    # Without chunk titles: RAPTOR's pruned tree equals a fresh clustering only when the clusterings agree (README);
    # with the title "part i" in every chunk's indexed text the hash embeddings of this toy corpus form one cluster
    # before the delete and four layers after it, so the comparison would test the clustering, not the delete.
    lifecycle_config = lifecycle_config.model_copy(
        update={"memory": lifecycle_config.memory.model_copy(update={"chunk_titles": False})}
    )
    docs = documents()
    llm = ScriptedLLM()
    with open_memory(memory_at("ref"), lifecycle_config, ScriptedLLM()) as ref:
        for i, d in enumerate(docs):
            if i != 2:
                ref.add_text(d, f"part {i}")
        build_all(ref)
        expected = {s: answers(ref, s) for s in STRATEGIES}
    with open_memory(memory_at("m"), lifecycle_config, llm) as mem:
        for i, d in enumerate(docs):
            mem.add_text(d, f"part {i}")
        build_all(mem)
        doomed = {n.id for n in mem.store.nodes("chunk") if n.doc_id == 3}  # "part 2"
        citing = set(mem.store.nodes_citing(sorted(doomed)))  # every derived node made from one of them, at least
        assert citing - set(mem.store.nodes_only_from(sorted(doomed)))  # a summary drew on part 2 and on others
        calls = llm.calls
        report = mem.delete("part 2")
        assert (report.document["title"], report.chunks, report.llm_calls) == ("part 2", len(doomed), 0)
        assert llm.calls == calls and sorted(report.pruned) == sorted(STRATEGIES) and report.withdrawn == []
        assert [d["title"] for d in mem.store.documents()] == [f"part {i}" for i in range(len(docs)) if i != 2]
        states = mem.strategy_states()
        assert all(states[s].describe().startswith(f"stale: {len(doomed)} deleted chunks") for s in STRATEGIES)
        for s in STRATEGIES:  # right after the delete: nothing of the document is retrieved, each warns once
            with pytest.warns(StaleStrategyWarning, match="deleted chunk"):
                hits = mem.retrieve(QUESTIONS[0], 4, strategy=s)
            assert hits and not (doomed | citing) & {h.node_id for h in hits}
        assert report.derived_nodes == len(citing)  # none of these strategies keeps a kind past a removed input
        assert not (doomed | citing) & {n.id for n in mem.store.nodes()}
        assert not [e for s in STRATEGIES for e in mem.store.edge_list(s) if {e[1], e[2]} & doomed]
        spent = {}
        for s in STRATEGIES:  # the next index: LLM calls only for what changed
            calls = llm.calls
            mem.index(s)
            spent[s] = llm.calls - calls
        # changed summaries and their questions, no chunk
        assert spent["gem"] <= 2 * gem_config(lifecycle_config).eigen
        assert spent["dense"] == spent["bm25"] == 0
        assert spent["raptor"] <= len(mem.store.nodes("summary", strategy="raptor"))  # its re-clustered summaries
        for s in STRATEGIES:
            assert answers(mem, s) == expected[s], s
        before = len(llm.prompts)
        mem.add_text(docs[2], "part 2")  # re-adding it: its chunks' questions come from the LLM cache
        build_all(mem)
        text_of = indexed_text_of(mem.ctx, titles=False)
        chunk_texts = {text_of(n) for n in mem.store.nodes("chunk")}
        assert not [
            p
            for p in llm.prompts[before:]
            if "questions that this passage" in p and p.split('"""')[1].strip() in chunk_texts
        ]


def test_stale_warns_once_and_unbuilt_raises_or_builds(memory_at: MemoryAt, lifecycle_config: Config) -> None:
    docs = documents(3)
    with open_memory(memory_at("m"), lifecycle_config, ScriptedLLM()) as mem:
        mem.add_text(docs[0], "a")
        mem.index()
        with pytest.raises(MemoryNotIndexedError, match="gemrag index --strategy dense") as unbuilt:
            mem.retrieve(QUESTIONS[0], strategy="dense")
        assert str(unbuilt.value).endswith("built here: gem (ask one with `--strategy NAME`)")
        assert mem.strategy_states()["dense"].state == "never built" and "full" not in mem.strategy_states()
        assert mem.retrieve(QUESTIONS[0], strategy="dense", build=True)
        assert mem.strategy_states()["dense"].describe() == "built (generation 1)"
        mem.add_text(docs[1], "b")
        mem.index("full")  # chunks the new document (full has nothing to build)
        with pytest.warns(StaleStrategyWarning, match=r"'gem' is stale: \d+ new chunks"):
            mem.retrieve(QUESTIONS[0])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            mem.retrieve(QUESTIONS[1])  # once
        assert "stale" in mem.stats()["strategies"]["gem"]


def test_a_base_built_under_iterative_is_built_and_goes_stale_with_it(
    memory_at: MemoryAt, lifecycle_config: Config
) -> None:
    """Building ``iterative`` over ``fused`` builds fused's parts; fused itself (it keeps no arrays) is recorded as
    built too, so it can be asked directly with no index of its own, and a new document makes it stale like the
    strategy that built it."""
    config = lifecycle_config.model_copy(update={"strategy": "iterative", "iterative": {"base": "fused"}})
    with open_memory(memory_at("m"), config, ScriptedLLM()) as mem:
        mem.add_text(documents(1)[0], "a")
        mem.index()
        states = mem.strategy_states()
        built = {name for name, state in states.items() if state.state == "built"}
        assert {"iterative", "fused", "dense", "bm25"} <= built and "gem" not in built, states
        assert [h.kind for h in mem.retrieve(QUESTIONS[0], 2, strategy="fused")] == ["chunk", "chunk"]
        mem.add_text(documents(2)[1], "b")
        mem.index("full")  # chunks the new document only
        assert mem.strategy_states()["fused"].state == "stale"


# -- a strategy written outside the package ------------------------------------------------------------------


class Keywords(BaseModel):
    words: list[str]


class KeywordsConfig(BaseModel):
    """The user strategy's own ``[keywords]`` section."""

    min_length: int = 1


CALLS: dict[str, int] = {"extract": 0}


@register("keywords", config=KeywordsConfig)
class KeywordStrategy:
    """Per chunk, its capitalized words of at least ``min_length`` letters (an 'LLM artefact'); keyword nodes with
    'mentions' edges to chunks; a sparse chunk x keyword matrix; retrieval by shared keywords."""

    name = "keywords"
    VERSION = "kw-1"

    def __init__(self, config: KeywordsConfig) -> None:
        self.config = config

    def build(self, ctx: StrategyContext) -> None:
        chunks = chunk_nodes(ctx)
        ids = [c.id for c in chunks]
        for node_id in ctx.store.missing_artifacts(self.name, "keywords", self.VERSION, ids):  # resumable
            CALLS["extract"] += 1
            text = ctx.store.node(node_id).text
            words = sorted({w.strip(".,;:!?'\"") for w in text.split() if w[:1].isupper()})
            words = [w for w in words if len(w) >= self.config.min_length]
            ctx.store.put_artifact(self.name, "keywords", node_id, Keywords(words=words), self.VERSION)
        found = ctx.store.artifacts(self.name, "keywords", Keywords, self.VERSION, ids)
        vocabulary = sorted({w for k in found.values() for w in k.words})
        generation = ctx.store.begin_build(self.name)
        node_of: dict[str, int] = {}
        for w in vocabulary:
            sources = [i for i in ids if w in found[i].words]
            node_of[w] = ctx.store.add_node(self.name, generation, "keyword", w, sources=sources)
        rows, cols = zip(*[(r, vocabulary.index(w)) for r, i in enumerate(ids) for w in found[i].words], strict=True)
        matrix = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(ids), len(vocabulary)))
        src = np.array([node_of[w] for i in ids for w in found[i].words])
        dst = np.array([i for i in ids for _ in found[i].words])
        publish_arrays(
            ctx,
            self.name,
            generation,
            {"node_ids": np.array(ids, dtype=np.int64), "incidence": matrix},
            axes={"node_ids": ("n",), "incidence": ("n", "k")},
            edges={"mentions": (src, dst, np.ones(len(src)))},
        )

    def retrieve(self, ctx: StrategyContext, question: str, budget: int) -> list[Hit]:
        arrays = load_published(ctx, self.name, lambda p: p.arrays, mmap=False)
        scores = np.asarray(arrays["incidence"].sum(axis=1)).ravel()
        order = np.argsort(-scores, kind="stable")[:budget]
        return chunk_hits(ctx, arrays["node_ids"][order].tolist(), scores[order].tolist())

    def report(self, ctx: StrategyContext) -> dict[str, Any]:
        return {}


def rows_of(mem: Memory, strategy: str) -> tuple[Any, ...]:
    return (
        mem.store.nodes(strategy=strategy),
        mem.store.edge_list(strategy),
        mem.store.artifact_counts(strategy),
        mem.store.published_generation(strategy),
    )


@pytest.fixture
def keyword_memory(memory_at: MemoryAt, lifecycle_config: Config) -> Iterator[Memory]:
    CALLS["extract"] = 0
    config = Config.model_validate({**lifecycle_config.model_dump(), "keywords": {"min_length": 4}})
    with open_memory(memory_at("m"), config, ScriptedLLM()) as mem:
        for i, d in enumerate(documents(3)):
            mem.add_text(d, f"part {i}")
        mem.index()
        mem.index("keywords")
        yield mem


def test_user_strategy_survives_gem_rebuilds_and_deletes_cleanly(keyword_memory: Memory) -> None:
    mem = keyword_memory
    n_chunks = len(mem.store.nodes("chunk"))
    assert CALLS["extract"] == n_chunks and mem.store.build_state("keywords").state == "built"
    ours = rows_of(mem, "keywords")
    assert mem.get_strategy("keywords").config == KeywordsConfig(min_length=4)  # type: ignore[attr-defined]
    assert all(len(n.text) >= 4 for n in ours[0])  # its section reached its build
    assert mem.store.build_state("keywords").params == {"min_length": 4}
    assert ours[0] and ours[1] and ours[2] == {("keywords", "keywords", "kw-1"): n_chunks}
    mem.add_text("Zanzibar Quixote arrived.", "extra")
    mem.index()  # GEM's new generation: the user strategy's rows are untouched
    assert rows_of(mem, "keywords") == ours and mem.store.build_state("keywords").new_chunks == 1
    mem.index("keywords")
    assert CALLS["extract"] == n_chunks + 1  # only the new chunk's artefact was computed
    mem.delete("extra")
    doomed = set(mem.store.document_chunk_ids(2))  # "part 1"
    only = {n.id for n in mem.store.nodes("keyword", strategy="keywords")} & set(
        forgotten_nodes(mem.store, sorted(doomed))
    )
    report = mem.delete("part 1")
    assert "keywords" in report.pruned and report.derived_nodes >= len(only) > 0
    nodes, edges, counts, _ = rows_of(mem, "keywords")
    assert not only & {n.id for n in nodes} and not [e for e in edges if {e[1], e[2]} & (doomed | only)]
    assert counts == {("keywords", "keywords", "kw-1"): n_chunks - len(doomed)}  # its artefacts went with them
    published = mem.store.load_published("keywords")
    assert not doomed & set(published.arrays["node_ids"].tolist())
    assert published.arrays["incidence"].shape[0] == len(published.arrays["node_ids"])
    with pytest.warns(StaleStrategyWarning):
        assert mem.retrieve("anything", 2, strategy="keywords")
    mem.index("keywords")
    assert CALLS["extract"] == n_chunks + 1 and mem.store.build_state("keywords").state == "built"


def test_cli_delete_prints_what_it_did(keyword_memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    from gemrag import cli

    store = keyword_memory.store
    directory, config = (
        getattr(store.database, "url", None) or getattr(store.database, "directory", None),
        keyword_memory.config,
    )
    keyword_memory.close()
    real_open = Memory.open

    def fake_open(cls: type[Memory], d: Path, c: Config | None = None, **kw: Any) -> Memory:
        return real_open(d, config, llm=ScriptedLLM(), embedder=HashEmbedder())

    monkeypatch.setattr(Memory, "open", classmethod(fake_open))  # as cli/options.py:open_memory opens it
    result = CliRunner().invoke(cli.app, ["delete", "part 0", "--memory", str(directory)])
    assert result.exit_code == 0, result.output
    assert "deleted document 1 (part 0" in result.output and "LLM calls 0" in result.output
    assert "gem: stale:" in result.output
    result = CliRunner().invoke(cli.app, ["delete", "nothing-like-this", "--memory", str(directory)])
    assert result.exit_code == 2 and "no document" in result.output


def test_deleting_a_document_not_indexed_yet_and_an_unknown_one(memory_at: MemoryAt, lifecycle_config: Config) -> None:
    docs = documents(2)
    with open_memory(memory_at("m"), lifecycle_config, ScriptedLLM()) as mem:
        mem.add_text(docs[0], "a")
        mem.index()
        generation = mem.store.published_generation("gem")
        doc_id, _ = mem.add_text(docs[1], "b")
        report = mem.delete(doc_id)  # by id; nothing was chunked, so no build changes
        assert (report.chunks, report.pruned, mem.store.published_generation("gem")) == (0, [], generation)
        assert mem.store.build_state("gem").state == "built"
        with pytest.raises(GemragError, match="no document"):
            mem.delete("b")
