"""REMem's seeds, recognition filter and short-entity synonyms as HippoRAG 2's code runs them (issue 38): entity
seeds ranked by weight (``seed_rank``), a filter that may keep every candidate and whose worked examples never
answer empty, and short entities that can be a longer entity's synonym (``short_synonyms``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from backends import MemoryAt
from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.cli.config import effective_settings
from gemrag.config import load_config
from gemrag.graph import synonym_pairs
from gemrag.models.base import Completion, Usage
from gemrag.strategies.remem import strategy as remem_strategy
from gemrag.strategies.remem.fact_seeds import entity_seed_weights
from gemrag.strategies.remem.openie_prompts import recognition_prompt_few_shot, recognition_schema
from gemrag.strategies.remem.recognition import match_facts, max_tokens, recognize_facts

DOCS = [
    "Alma Reyes was born in Valdora. Valdora lies on the coast of Corvania.",
    "Tomas Reyes is the father of Alma Reyes. Tomas Reyes died in Brisvale.",
    "Brisvale hosts the Lantern Festival every spring. Lantern Festival crowds fill Brisvale.",
]


# --- item 1: entity seeds ranked by weight ---------------------------------------------------------------------------


def test_the_hub_case_of_issue_38_seeds_as_hippo_rag_2_ranks() -> None:
    """Facts scored 1.0, 0.9, 0.8 with two entities each; entity 1 (a hub) occurs in 40 passages, the others in one.
    Every entity's weight is its fact's score / its passages: [1, 0.025, 0.9, 0.9, 0.8, 0.8]. Five are kept.
    HippoRAG 2 (``get_top_k_weights``) keeps the five largest weights, dropping the hub; the earlier rule keeps the
    five best mean fact scores (ties to the lower index), so the hub keeps 0.025 and entity 5 loses 0.8."""
    scores = np.array([1.0, 0.9, 0.8])
    subj, obj = np.array([0, 2, 4]), np.array([1, 3, 5])
    passages = np.array([1, 40, 1, 1, 1, 1])
    hippo = entity_seed_weights([0, 1, 2], scores, subj, obj, passages, link_top_k=5)
    ours = entity_seed_weights([0, 1, 2], scores, subj, obj, passages, link_top_k=5, rank="score")
    assert hippo.tolist() == pytest.approx([1.0, 0.0, 0.9, 0.9, 0.8, 0.8])
    assert ours.tolist() == pytest.approx([1.0, 0.025, 0.9, 0.9, 0.8, 0.0])
    # the reset mass that moves from the specific entity 5 to the hub: 0.8 of HippoRAG 2's 4.4, about 18%
    assert (hippo - ours).clip(min=0).sum() / hippo.sum() == pytest.approx(0.8 / 4.4)
    assert np.count_nonzero(hippo) == np.count_nonzero(ours) == 5
    with pytest.raises(ValueError, match="seed_rank"):
        entity_seed_weights([0], scores, subj, obj, passages, 5, rank="mean")  # type: ignore[arg-type]


def test_an_entity_in_several_kept_facts_is_weighted_by_its_mean_score() -> None:
    """HippoRAG 2 adds ``score / passages`` once per fact naming the entity and divides by the number of facts:
    the mean score over those facts, divided by the entity's passages."""
    scores = np.array([1.0, 0.4, 0.7])
    subj, obj = np.array([0, 0, 2]), np.array([1, 2, 0])  # entity 0 is in all three facts
    passages = np.array([2, 1, 5])
    w = entity_seed_weights([0, 1, 2], scores, subj, obj, passages, link_top_k=3)
    assert w.tolist() == pytest.approx([(1.0 + 0.4 + 0.7) / 3 / 2, 1.0, (0.4 + 0.7) / 2 / 5])


def test_the_strategy_passes_seed_rank_and_config_shows_it(
    memory_at: MemoryAt, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert effective_settings(load_config(None, {}))["remem"]["seed_rank"] == "weight"
    seen: list[str] = []

    def spy(*args: Any, **kwargs: Any) -> np.ndarray:
        seen.append(args[6])
        return entity_seed_weights(*args, **kwargs)

    monkeypatch.setattr(remem_strategy, "entity_seed_weights", spy)
    for rank in ("weight", "score"):
        config = load_config(None, {"memory": {"chunk_tokens": 40}, "remem": {"seed_rank": rank}})
        with Memory.open(memory_at(rank), config, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
            for doc in DOCS:
                mem.add_text(doc)
            mem.index(strategy="remem")
            hits = mem.retrieve("Where did the father of Alma Reyes die?", 2, strategy="remem")
            assert hits and "fallback" not in hits[0].meta
    assert seen == ["weight", "score"]


# --- item 4: the recognition filter ----------------------------------------------------------------------------------


def test_no_worked_example_of_the_filter_answers_empty() -> None:
    """HippoRAG 2's filter demonstrations never answer with an empty list; each of ours keeps facts shown to it."""
    messages = recognition_prompt_few_shot("Who?", [["a", "b", "c"]])
    shots = messages[1:-1]
    assert len(shots) == 4 and [m["role"] for m in shots] == ["user", "assistant"] * 2
    for asked, answered in zip(shots[::2], shots[1::2], strict=True):
        kept = json.loads(answered["content"])["facts"]
        listed = asked["content"].split("Candidate facts:\n")[1].split("\n\nQuestion:")[0].splitlines()
        assert kept and all(json.dumps(f) in listed for f in kept)


class _Echo:
    """A filter LLM that returns every candidate it is shown, recording the schema and token limit it got."""

    model_id = "fake:echo"
    context_window = 8192

    def __init__(self) -> None:
        self.schemas: list[dict[str, Any]] = []
        self.limits: list[int] = []

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def complete(self, messages: Any, *, schema: Any = None, max_tokens: int = 256, **kw: Any) -> Completion:
        self.schemas.append(schema)
        self.limits.append(max_tokens)
        lines = messages[-1]["content"].split("Candidate facts:\n")[1].split("\n\nQuestion:")[0].splitlines()
        text = json.dumps({"facts": [json.loads(line) for line in lines]})
        return Completion(text, json.loads(text), Usage(prompt_tokens=1, completion_tokens=1, calls=1))


class _Ctx:
    def __init__(self, llm: _Echo) -> None:
        self.llm = llm

    def get_llm(self) -> _Echo:
        return self.llm


def test_the_filter_keeps_up_to_all_five_candidates() -> None:
    """HippoRAG 2 keeps up to ``link_top_k`` = 5 of the filter's answer (gemrag kept at most four before)."""
    candidates = [[f"e{i}", "is near", f"e{i + 1}"] for i in range(5)]
    llm = _Echo()
    kept, error = recognize_facts(_Ctx(llm), "Where is e0?", candidates)  # type: ignore[arg-type]
    assert (kept, error) == ([0, 1, 2, 3, 4], None)
    assert llm.schemas[0] == recognition_schema(5) and recognition_schema(5)["properties"]["facts"]["maxItems"] == 5
    assert llm.limits[0] == max_tokens(5) == 676
    assert match_facts(candidates[::-1], candidates) == [4, 3, 2, 1, 0]
    with pytest.raises(ValueError, match="max_facts"):
        recognition_schema(0)


# --- item 4: short entities as synonyms ------------------------------------------------------------------------------


def test_a_short_entity_is_a_long_ones_synonym_but_seeks_none() -> None:
    """HippoRAG 2's ``add_synonymy_edges`` skips the search for an entity of <= 2 alphanumeric characters but lets
    a longer entity find it; ``eligible`` (the earlier rule) removes it on both sides."""
    a = np.radians([0.0, 5.0, 10.0])
    x = np.stack([np.cos(a), np.sin(a)], axis=1).astype(np.float32)  # rows 0, 1 long; row 2 short; all similar
    long = np.array([True, True, False])
    src, dst, _ = synonym_pairs(x, 0.9, 10, method="exact", seekers=long)
    assert sorted(zip(src.tolist(), dst.tolist(), strict=True)) == [(0, 1), (0, 2), (1, 0), (1, 2)]
    src, dst, _ = synonym_pairs(x, 0.9, 10, method="exact", eligible=long)
    assert sorted(zip(src.tolist(), dst.tolist(), strict=True)) == [(0, 1), (1, 0)]
    with pytest.raises(ValueError, match="seekers"):
        synonym_pairs(x, 0.9, 10, seekers=np.array([1, 1, 0]))


@pytest.mark.parametrize(("rule", "eligible"), [("hipporag2", False), ("none", True)])
def test_the_build_passes_the_short_synonym_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rule: str, eligible: bool
) -> None:
    calls: list[dict[str, Any]] = []

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return synonym_pairs(*args, **kwargs)

    monkeypatch.setattr(remem_strategy, "synonym_pairs", spy)
    config = load_config(None, {"memory": {"chunk_tokens": 40}, "remem": {"short_synonyms": rule}})
    with Memory.open(tmp_path / rule, config, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
        mem.add_text(DOCS[0])
        mem.index(strategy="remem")
    (kw,) = calls
    assert kw["seekers"].dtype == np.bool_ and kw["seekers"].all()  # these entities are all long
    assert (kw["eligible"] is not None) == eligible
