"""The fact graph and the PPR seeds of REMem's default strategy, on hand-made triples and facts."""

from __future__ import annotations

import numpy as np
import pytest

from gemrag.graph.names import normalize_entity
from gemrag.graph.ppr import TransitionMatrix
from gemrag.strategies.remem.fact_graph import adjacency, clean_triples, fact_graph_edges, index_facts
from gemrag.strategies.remem.fact_seeds import (
    entity_seed_weights,
    min_max_normalize,
    passage_seed_weights,
    top_indices,
)


def test_normalize_entity_lowercases_and_turns_non_alphanumerics_into_single_spaces() -> None:
    assert normalize_entity("  Turing's  Test!") == "turing s test"
    assert normalize_entity("São Paulo (city)") == "são paulo city"  # accented letters are kept
    assert normalize_entity("__--") == ""


def test_clean_triples_normalizes_and_keeps_only_triples_naming_an_entity() -> None:
    raw = [
        ["Alan Turing", "proposed", "the Turing Test"],  # subject is an entity
        ["it", "measures", "machine intelligence"],  # names no entity: dropped
        ["Turing", "born in", "London"],  # "turing" is a whole word of "alan turing": kept
        ["Alan Turing", "", "x"],  # empty predicate: dropped
        ["a", "b"],  # two elements: dropped
        ["alan turing", "PROPOSED", "The Turing Test"],  # duplicate after normalization: dropped
    ]
    kept, dropped = clean_triples(raw, ["Alan Turing", "London"])
    assert kept == [("alan turing", "proposed", "the turing test"), ("turing", "born in", "london")]
    assert dropped == 4
    assert len(clean_triples(raw, ["Alan Turing"], require_entity=False)[0]) == 3
    assert len(clean_triples(raw, [])[0]) == 3  # no entities: nothing to require


def test_index_facts_counts_cooccurrences_mentions_and_fact_sources() -> None:
    passages = [
        [("a", "knows", "b"), ("b", "likes", "c")],
        [("a", "knows", "b"), ("c", "is", "c")],  # the same fact again; a self-loop fact
        [],
    ]
    idx = index_facts(passages)
    assert idx.entities == ["a", "b", "c"]
    assert idx.facts == [("a", "knows", "b"), ("b", "likes", "c"), ("c", "is", "c")]
    assert idx.fact_passages == [[0, 1], [0], [1]]
    assert idx.pair_counts == {(0, 1): 2, (1, 2): 1}  # no self-loop edge
    assert idx.mentions.tolist() == [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]
    assert idx.entity_sources() == [[0, 1], [0, 1], [0, 1]]

    synonyms = (np.array([0, 2, 0]), np.array([2, 0, 0]), np.array([0.9, 0.85, 1.0], dtype=np.float32))
    edges = fact_graph_edges(idx, synonyms, "once")
    W = adjacency(idx.n_nodes, edges).toarray()
    p = 3  # passages first
    assert W[p + 0, p + 1] == W[p + 1, p + 0] == 2.0  # fact edge: two occurrences
    assert W[p + 0, p + 2] == pytest.approx(0.9)  # synonym pair found both ways: the larger similarity, once
    assert W[0, p + 0] == 1.0 and W[2].sum() == 0.0  # passage edges; passage 2 has no triples
    assert np.allclose(W, W.T) and np.all(np.diag(W) == 0)


def test_hipporag2_weights_count_fact_and_synonym_edges_in_both_directions() -> None:
    """HippoRAG 2's code stores each fact and synonym edge once per direction in an undirected graph (the default
    here): the same profile as above weighs a fact edge twice its count, a synonym found both ways the sum of its
    two similarities, and a synonym replaces the fact count of its own direction only."""
    idx = index_facts([[("a", "knows", "b"), ("b", "likes", "c")], [("a", "knows", "b"), ("a", "met", "c")], []])
    synonyms = (np.array([0, 2, 1]), np.array([2, 0, 2]), np.array([0.9, 0.85, 0.8]))
    W = adjacency(idx.n_nodes, fact_graph_edges(idx, synonyms)).toarray()
    p = 3
    assert W[p + 0, p + 1] == W[p + 1, p + 0] == 4.0  # two occurrences, both directions
    assert W[p + 0, p + 2] == pytest.approx(0.9 + 0.85)  # a-c: synonyms both ways replace the fact count 1 twice
    assert W[p + 1, p + 2] == pytest.approx(1.0 + 0.8)  # b-c: c->b keeps the count 1, b->c becomes the similarity
    assert W[0, p + 0] == 1.0  # a passage edge: once
    with pytest.raises(ValueError, match="hipporag2"):
        fact_graph_edges(idx, None, "twice")


def test_an_edge_counted_twice_shifts_the_pagerank_transition_toward_the_fact() -> None:
    """One passage stating one triple a -> b: from a, the walk follows the fact edge with probability 2/3 under
    HippoRAG 2's weights (the fact counted in both directions against one passage edge) and 1/2 counted once."""
    idx = index_facts([[("a", "r", "b")]])
    for weights, to_b in (("hipporag2", 2 / 3), ("once", 1 / 2)):
        T = TransitionMatrix.from_adjacency(adjacency(idx.n_nodes, fact_graph_edges(idx, None, weights)))
        P = T.transpose.T.toarray()  # row-stochastic P = D^-1 W; nodes: passage 0, a = 1, b = 2
        assert P[1, 2] == pytest.approx(to_b) and P[1, 0] == pytest.approx(1 - to_b), weights


def test_adjacency_rejects_bad_edges() -> None:
    idx = index_facts([[("a", "r", "b")]])
    with pytest.raises(ValueError, match="outside"):
        adjacency(2, fact_graph_edges(idx))
    bad = fact_graph_edges(idx, (np.array([0]), np.array([1]), np.array([-0.5])), "once")
    bad.kinds["synonym"] = (bad.kinds["synonym"][0], bad.kinds["synonym"][1], np.array([-0.5]))
    with pytest.raises(ValueError, match="non-negative"):
        adjacency(idx.n_nodes, bad)


def test_min_max_and_top_indices() -> None:
    assert min_max_normalize(np.array([2.0, 4.0, 3.0])).tolist() == [0.0, 1.0, 0.5]
    assert min_max_normalize(np.array([3.0, 3.0])).tolist() == [1.0, 1.0]
    assert top_indices(np.array([0.5, 0.9, 0.9, 0.1]), 3).tolist() == [1, 2, 0]
    with pytest.raises(ValueError):
        min_max_normalize(np.array([1.0, np.nan]))


def test_entity_seed_weights_by_hand() -> None:
    # facts: 0 = (e0, e1) score 1.0; 1 = (e1, e2) score 0.5; 2 = (e3, e4) score 0.2 (not kept)
    scores = np.array([1.0, 0.5, 0.2])
    subj, obj = np.array([0, 1, 3]), np.array([1, 2, 4])
    passages = np.array([1, 4, 2, 1, 1])  # e1 is mentioned by 4 passages
    w = entity_seed_weights([0, 1], scores, subj, obj, passages, link_top_k=5)
    # e0: mean(1.0)/1; e1: mean(1.0, 0.5)/4; e2: mean(0.5)/2; e3, e4: not in kept facts
    assert w.tolist() == pytest.approx([1.0, 0.75 / 4, 0.25, 0.0, 0.0])
    # top 2 entities by weight (HippoRAG 2's rule): e0 (1.0), e2 (0.25); the hub e1 (0.1875) loses its weight
    w2 = entity_seed_weights([0, 1], scores, subj, obj, passages, link_top_k=2)
    assert w2.tolist() == pytest.approx([1.0, 0.0, 0.25, 0.0, 0.0])
    # by mean fact score (the earlier rule): e0 (1.0), e1 (0.75); e2 (0.5) loses its weight
    w3 = entity_seed_weights([0, 1], scores, subj, obj, passages, link_top_k=2, rank="score")
    assert w3.tolist() == pytest.approx([1.0, 0.75 / 4, 0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="out of range"):
        entity_seed_weights([7], scores, subj, obj, passages, 5)
    with pytest.raises(ValueError, match="link_top_k"):
        entity_seed_weights([0], scores, subj, obj, passages, 0)


def test_passage_seed_weights() -> None:
    assert passage_seed_weights(np.array([0.2, 0.6, 0.4]), 0.05).tolist() == pytest.approx([0.0, 0.05, 0.025])
    with pytest.raises(ValueError):
        passage_seed_weights(np.array([0.1]), -1.0)
