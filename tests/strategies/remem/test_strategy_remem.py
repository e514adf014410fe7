"""``remem``: OpenIE artefacts, the fact graph, recognition memory, PPR retrieval, DPR fallback, add and delete
(unit tests with the scripted LLM and the hashing embedder)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

from backends import MemoryAt
from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.config import Config, load_config
from gemrag.errors import ConfigError, MemoryNotIndexedError
from gemrag.memory.retrieval import warm_published
from gemrag.models.base import Completion, Usage
from gemrag.strategies.remem.openie_prompts import NER_VERSION, TRIPLES_VERSION, NamedEntities, Triples
from gemrag.strategies.remem.recognition import match_facts

DOCS = [
    "Alma Reyes was born in Valdora. Valdora lies on the coast of Corvania.",
    "Tomas Reyes is the father of Alma Reyes. Tomas Reyes died in Brisvale.",
    "Brisvale hosts the Lantern Festival every spring. Lantern Festival crowds fill Brisvale.",
    "Mira Holt painted the harbour. Mira Holt sold paintings in Tarnow.",
]


@pytest.fixture
def remem_config(config: Config) -> Config:
    return load_config(None, {"memory": {"chunk_tokens": 40}, "strategy": "remem"})


def open_memory(path: str | Path, config: Config, llm: Any = None) -> Memory:
    return Memory.open(path, config, llm=llm or ScriptedLLM(), embedder=HashEmbedder())


def built(path: Path, config: Config, llm: Any = None) -> Memory:
    mem = open_memory(path, config, llm)
    for doc in DOCS:
        mem.add_text(doc)
    mem.index(strategy="remem")
    return mem


def test_build_stores_openie_artefacts_entities_facts_and_a_symmetric_graph(
    memory_at: MemoryAt, remem_config: Config
) -> None:
    llm = ScriptedLLM()
    with built(memory_at("m"), remem_config, llm) as mem:
        chunks = mem.store.nodes("chunk")
        assert len(chunks) == 4 and llm.calls == 8  # two OpenIE calls per chunk
        ner = mem.store.artifacts("remem", "ner", NamedEntities, NER_VERSION)
        triples = mem.store.artifacts("remem", "triples", Triples, TRIPLES_VERSION)
        assert set(ner) == set(triples) == {c.id for c in chunks}
        assert ["Tomas Reyes", "is the father of", "Alma Reyes"] in triples[chunks[1].id].triples

        entities = {n.text: n for n in mem.store.nodes("entity", strategy="remem")}
        facts = {n.text: n for n in mem.store.nodes("fact", strategy="remem")}
        assert {"alma reyes", "tomas reyes", "valdora", "brisvale", "lantern festival"} <= set(entities)
        father = facts["tomas reyes is the father of alma reyes"]
        assert father.meta["triple"] == ["tomas reyes", "is the father of", "alma reyes"]
        # sources: the chunks stating the fact / mentioning the entity
        assert mem.store.node_sources([father.id])[father.id] == [chunks[1].id]
        assert mem.store.node_sources([entities["brisvale"].id])[entities["brisvale"].id] == sorted(
            [chunks[1].id, chunks[2].id]
        )

        published = mem.store.load_published("remem")
        W = sp.csr_matrix(published.arrays["adjacency"])
        ids = published.arrays["node_ids"].tolist()
        assert abs(W - W.T).max() == 0
        row = {nid: i for i, nid in enumerate(ids)}
        # passage edge weight 1.0; fact edge = co-occurrence count (one triple links tomas and alma)
        assert W[row[chunks[1].id], row[entities["tomas reyes"].id]] == 1.0
        # one triple, counted in both directions (HippoRAG 2's weights, the default)
        assert W[row[entities["tomas reyes"].id], row[entities["alma reyes"].id]] == 2.0
        assert W[row[chunks[0].id], row[chunks[1].id]] == 0.0  # passages are joined only through entities
        assert mem.store.edges(entities["brisvale"].id, "remem", "passage") != []
        report = mem.get_strategy("remem").report(mem.ctx)
        assert report["passages"] == 4 and report["facts"] == len(facts) and report["entities"] == len(entities)


def test_rebuild_costs_no_llm_call_and_adding_a_document_costs_two_per_new_chunk(
    memory_at: MemoryAt, remem_config: Config
) -> None:
    llm = ScriptedLLM()
    with built(memory_at("m"), remem_config, llm) as mem:
        assert llm.calls == 8
        mem.index(strategy="remem")
        assert llm.calls == 8
        mem.add_text("Jonas Weber founded Tarnow Press. Tarnow Press printed maps of Corvania.")
        mem.index(strategy="remem")
        assert llm.calls == 10
        names = {n.text for n in mem.store.nodes("entity", strategy="remem")}
        assert "tarnow press" in names
        hits = mem.retrieve("Who founded Tarnow Press?", 2)
        assert "Jonas Weber" in hits[0].text


def test_warm_up_loads_the_generation_without_a_recognition_call(memory_at: MemoryAt, remem_config: Config) -> None:
    llm = ScriptedLLM()
    with built(memory_at("m"), remem_config, llm) as mem:
        warm_published(mem, "remem", 3)
        assert llm.calls == 8  # the OpenIE calls only: the untimed warm-up spends no filter call
        mem.retrieve("Where did the father of Alma Reyes die?", 3)
        assert llm.calls == 9  # a question's retrieval asks the recognition filter once
    with pytest.raises(MemoryNotIndexedError), open_memory(memory_at("empty"), remem_config) as mem:
        mem.add_text(DOCS[0])
        warm_published(mem, "remem", 3)


def test_retrieval_seeds_ppr_with_the_recognized_facts(memory_at: MemoryAt, remem_config: Config) -> None:
    with built(memory_at("m"), remem_config) as mem:
        hits = mem.retrieve("Where did the father of Alma Reyes die?", 3)
        assert [h.kind for h in hits] == ["chunk"] * 3
        assert "Tomas Reyes died in Brisvale" in hits[0].text
        assert "fallback" not in hits[0].meta
        kept = hits[0].meta["facts"]
        assert kept and all(set(f) & {"alma reyes", "tomas reyes"} for f in kept)
        assert all(f in hits[0].meta["candidates"] for f in kept)
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True) and 0 < sum(scores) <= 1  # PageRank probabilities
        # the default budget is remem.qa_top_k (5), capped by the number of passages
        assert len(mem.retrieve("Where did the father of Alma Reyes die?")) == 4


class NoFactLLM(ScriptedLLM):
    """Answers the recognition filter with no fact, or with facts that match no candidate."""

    def __init__(self, facts: list[list[str]] | None = None) -> None:
        super().__init__()
        self.facts = facts or []
        self.recognitions = 0

    def complete(self, messages: Any, **kw: Any) -> Completion:
        if "Candidate facts:" in messages[-1]["content"]:
            self.recognitions += 1
            text = json.dumps({"facts": self.facts})
            return Completion(text, json.loads(text), Usage(prompt_tokens=10, completion_tokens=5, calls=1))
        return super().complete(messages, **kw)


@pytest.mark.parametrize(("facts", "match"), [([], "snap"), ([["alma reyes", "invented", "a fact"]], "exact")])
def test_no_recognized_fact_falls_back_to_dense_retrieval(
    memory_at: MemoryAt, facts: list[list[str]], match: str
) -> None:
    """An empty answer, or (with ``filter_match = "exact"``) an invented fact, keeps no fact: dense retrieval."""
    llm = NoFactLLM(facts)
    section = {"filter_match": match}
    config = load_config(None, {"memory": {"chunk_tokens": 40}, "strategy": "remem", "remem": section})
    with built(memory_at("m"), config, llm) as mem:
        mem.index(strategy="dense")
        question = "Where did the father of Alma Reyes die?"
        hits = mem.retrieve(question, 3)
        dense = mem.retrieve(question, 3, strategy="dense")
        assert llm.recognitions == 1
        assert [h.node_id for h in hits] == [h.node_id for h in dense]
        assert [h.score for h in hits] == pytest.approx([h.score for h in dense])
        assert hits[0].meta["fallback"] == "dpr" and hits[0].meta["facts"] == []


def test_without_the_recognition_filter_the_top_facts_seed_the_walk(memory_at: MemoryAt, config: Config) -> None:
    cfg = load_config(None, {"memory": {"chunk_tokens": 40}, "remem": {"recognition_filter": False}})
    llm = NoFactLLM()
    with built(memory_at("m"), cfg, llm) as mem:
        hits = mem.retrieve("Where did the father of Alma Reyes die?", 3, strategy="remem")
        assert llm.recognitions == 0
        assert hits[0].meta["facts"] == hits[0].meta["candidates"] and len(hits[0].meta["facts"]) == 5


def test_a_paraphrased_fact_snaps_to_its_candidate_by_default_and_exact_drops_it() -> None:
    """HippoRAG 2's filter snaps each returned fact to the closest candidate (difflib), the default here."""
    candidates = [["tomas reyes", "is the father of", "alma reyes"], ["alma reyes", "was born in", "valdora"]]
    returned = [["Tomas Reyes", "is father of", "Alma"], ["alma reyes", "born in", "valdora"]]  # shortened copies
    assert match_facts(returned, candidates) == [0, 1]
    assert match_facts(returned, candidates, "exact") == []
    assert match_facts([["alma reyes", "was born in", "valdora"]], candidates, "snap") == [1]  # exact still wins
    assert match_facts([[]], candidates) == []  # an empty fact selects nothing
    with pytest.raises(ValueError, match="snap"):
        match_facts(returned, candidates, "closest")


def test_match_facts_drops_facts_that_match_no_candidate() -> None:
    candidates = [["tomas reyes", "is the father of", "alma reyes"], ["alma reyes", "was born in", "valdora"]]
    returned = [
        ["Alma Reyes", "was born in", "Valdora!"],  # same after normalization
        ["tomas reyes", "is father of", "alma reyes"],  # close to a candidate, but not one: dropped
        ["alma reyes", "was born in", "valdora"],  # duplicate
        ["only two", "elements"],
    ]
    assert match_facts(returned, candidates, "exact") == [1]


class MalformedLLM(ScriptedLLM):
    """Answers the triple pass for one chunk (first attempt and repair attempts) with text that is not JSON."""

    def complete(self, messages: Any, **kw: Any) -> Completion:
        if messages[0]["content"].startswith("You extract facts") and "Mira Holt" in messages[3]["content"]:
            self.calls += 1
            return Completion("Sure! The facts are: Mira painted", None, Usage(prompt_tokens=5, calls=1))
        return super().complete(messages, **kw)


def test_a_chunk_whose_triples_stay_malformed_is_recorded_and_stays_a_passage(
    memory_at: MemoryAt, remem_config: Config
) -> None:
    with built(memory_at("m"), remem_config, MalformedLLM()) as mem:
        failures = [f for f in mem.store.failures() if "remem/triples" in f["phase"]]
        mira = next(c for c in mem.store.nodes("chunk") if "Mira Holt" in c.text)
        assert [f["node_id"] for f in failures] == [mira.id]
        assert mira.id in mem.store.load_published("remem").arrays["node_ids"].tolist()
        assert "mira holt" not in {n.text for n in mem.store.nodes("entity", strategy="remem")}
        hits = mem.retrieve("Who painted the harbour?", 4)
        assert mira.id in [h.node_id for h in hits]


def test_deleting_a_document_removes_its_facts_and_entities(memory_at: MemoryAt, remem_config: Config) -> None:
    llm = ScriptedLLM()
    with built(memory_at("m"), remem_config, llm) as mem:
        doc = mem.store.documents()[3]  # the Mira Holt document
        mem.delete(doc["id"])
        names = {n.text for n in mem.store.nodes("entity", strategy="remem")}
        assert "mira holt" not in names and "tarnow" not in names and "brisvale" in names
        assert not [n for n in mem.store.nodes("fact", strategy="remem") if "mira" in n.text]
        published = mem.store.load_published("remem")
        ids = set(published.arrays["node_ids"].tolist())
        assert len(published.arrays["fact_ids"]) == len(mem.store.nodes("fact", strategy="remem"))
        subj = published.arrays["fact_subject"]
        assert all(published.arrays["node_kind"][subj] == 1)  # re-indexed onto entity rows
        assert not any("Mira" in mem.store.node(i).text for i in ids)
        calls = llm.calls
        hits = mem.retrieve("Where did the father of Alma Reyes die?", 3)
        assert "Tomas Reyes died in Brisvale" in hits[0].text
        mem.index(strategy="remem")  # the rebuild after a delete costs no OpenIE call (one recognition call above)
        assert llm.calls == calls + 1


def test_unbuilt_strategy_and_config_errors(memory_at: MemoryAt, config: Config) -> None:
    with open_memory(memory_at("m"), config) as mem:
        mem.add_text(DOCS[0])
        with pytest.raises(MemoryNotIndexedError):
            mem.retrieve("Where was Alma Reyes born?", strategy="remem")
    with pytest.raises(ConfigError, match="damping"):
        Memory.open(memory_at("x"), load_config(None, {"remem": {"damping": 1.5}}), embedder=HashEmbedder())


def test_ppr_scores_match_a_direct_computation(memory_at: MemoryAt, remem_config: Config) -> None:
    """The hit scores are the PageRank of the published adjacency with the seeds of fact_seeds (recomputed here
    with numpy's dense solver, not the strategy's iteration)."""
    from gemrag.strategies.platform.common import cosine_scores, prompt_vector
    from gemrag.strategies.remem.fact_seeds import entity_seed_weights, min_max_normalize, passage_seed_weights

    with built(memory_at("m"), remem_config) as mem:
        question = "Where did the father of Alma Reyes die?"
        hits = mem.retrieve(question, 4)
        a = mem.store.load_published("remem").arrays
        kind, ids = np.asarray(a["node_kind"]), np.asarray(a["node_ids"])
        passages, entities = np.flatnonzero(kind == 0), np.flatnonzero(kind == 1)
        W = sp.csr_matrix(a["adjacency"]).toarray()
        q = prompt_vector(mem.ctx, question)
        fact_scores = min_max_normalize(cosine_scores(q, np.asarray(a["fact_vectors"])))
        text_to_fact = {mem.store.node(int(f)).text: i for i, f in enumerate(a["fact_ids"])}
        kept = [text_to_fact[" ".join(f)] for f in hits[0].meta["facts"]]
        pos = {int(r): i for i, r in enumerate(entities)}
        subj = np.array([pos[int(r)] for r in a["fact_subject"]])
        obj = np.array([pos[int(r)] for r in a["fact_object"]])
        counts = (W[np.ix_(entities, passages)] > 0).sum(axis=1)
        reset = np.zeros(len(ids))
        reset[entities] = entity_seed_weights(kept, fact_scores, subj, obj, counts, 5)
        reset[passages] = passage_seed_weights(cosine_scores(q, np.asarray(a["node_vectors"])[passages]), 0.05)
        r = reset / reset.sum()
        deg = W.sum(axis=1)
        P = np.divide(W, deg[:, None], out=np.zeros_like(W), where=deg[:, None] > 0)
        P[deg == 0] = r  # dangling rows restart at the seeds
        ppr = np.linalg.solve(np.eye(len(ids)) - 0.5 * P.T, 0.5 * r)
        expect = sorted(((float(ppr[p]), int(ids[p])) for p in passages), key=lambda t: (-t[0], t[1]))
        assert [h.node_id for h in hits] == [i for _, i in expect]
        assert [h.score for h in hits] == pytest.approx([s for s, _ in expect], abs=1e-9)


def test_the_recognition_prompt_is_few_shot_by_default_and_zero_shot_on_request(tmp_path: Path) -> None:
    """HippoRAG 2's filter prompt carries worked examples; ``filter_prompt = "zero-shot"`` is the earlier prompt."""
    from gemrag.strategies.remem.openie_prompts import recognition_prompt, recognition_prompt_few_shot

    facts = [["tomas reyes", "died in", "brisvale"]]
    few = recognition_prompt_few_shot("Where did Tomas die?", facts)
    zero = recognition_prompt("Where did Tomas die?", facts)
    assert few[0] == zero[0] and few[-1] == zero[-1]  # the same instructions and request
    assert [m["role"] for m in few[1:-1]] == ["user", "assistant"] * 2  # two worked examples
    seen: list[int] = []

    class Counting(NoFactLLM):
        def complete(self, messages: Any, **kw: Any) -> Completion:
            if "Candidate facts:" in messages[-1]["content"]:
                seen.append(len(messages))
            return super().complete(messages, **kw)

    for prompt, size in (("few-shot", len(few)), ("zero-shot", len(zero))):
        config = load_config(
            None, {"memory": {"chunk_tokens": 40}, "strategy": "remem", "remem": {"filter_prompt": prompt}}
        )
        with built(tmp_path / prompt, config, Counting([])) as mem:
            mem.retrieve("Where did the father of Alma Reyes die?", 2)
        assert seen[-1] == size
