"""The AssociationGraph (HLGraphRAG section 3): ranked and plain depth-first visit orders on a hand-made graph,
directional weights on the paper's "pushed" example, several relations on one edge."""

from __future__ import annotations

import numpy as np
import pytest

from gemrag.strategies.hlgraph.association import AssociationGraph, directed_relations

Q = np.array([1.0, 0.0, 0.0])
NEUTRAL = [0.0, 0.0, 1.0]  # a label orthogonal to the query: the RR score is then the node's cosine / 2


def hand_graph() -> AssociationGraph:
    """0 -> 1 -> 5, 0 -> 2, 0 -> 3 -> 4, edges added in that order; cos(Q, node): 0 ~ .995, 1 = 0, 2 ~ .447,
    3 ~ .958, 4 ~ .874, 5 = 0."""
    nodes = np.array([[1, 0.1, 0], [0, 1, 0], [0.5, 1, 0], [1, 0.3, 0], [0.9, 0.5, 0], [0, 0, 1]])
    src, dst = np.array([0, 1, 0, 0, 3]), np.array([1, 5, 2, 3, 4])
    return AssociationGraph(nodes, src, dst, np.array([NEUTRAL] * 5))


def test_plain_dfs_follows_edge_order_and_ranked_dfs_the_query() -> None:
    g = hand_graph()
    assert g.nearest(Q)[0] == 0
    plain = g.traverse(0, Q, 5, ranked=False)
    assert plain.nodes == [0, 1, 5, 2, 3]  # depth first in the order the edges were added: 1's subtree first
    assert plain.parents == [-1, 0, 1, 0, 0]
    ranked = g.traverse(0, Q, 5, ranked=True)
    assert ranked.nodes == [0, 3, 4, 2, 1]  # the most similar child first, its subtree, then back up
    assert ranked.parents == [-1, 0, 3, 0, 0]
    assert ranked.scores[1] == pytest.approx(np.cos(np.arctan(0.3)) / 2)  # (cos(Q, node 3) + 0) / 2
    assert g.traverse(0, Q, 3, ranked=True).nodes == [0, 3, 4]  # the limit stops the walk
    assert g.traverse(0, Q, 50, ranked=False).nodes == [0, 1, 5, 2, 3, 4]  # everything reachable, once
    assert g.traverse(5, Q, 5).nodes == [5]  # no outgoing edge: the start alone


def test_edge_labels_rank_neighbours_with_equal_nodes_and_an_edge_holds_several_relations() -> None:
    nodes = np.array([[1, 0, 0], [0, 1, 0], [0, 1, 0]])
    labels = np.array([NEUTRAL, NEUTRAL, [1, 0, 0]])  # edge 0 -> 2 carries two relations, one about the query
    g = AssociationGraph(nodes, np.array([0, 0, 0]), np.array([1, 2, 2]), labels, np.array([1.0, 1.0, 2.0]))
    assert g.relations(0, 2) == [1, 2] and g.relations(0, 1) == [0] and g.relations(1, 0) == []
    assert g.n_relations == 3 and g.neighbours(0) == [1, 2]
    ranked = g.ranked_neighbours(0, Q)
    assert [v for v, _ in ranked] == [2, 1]  # the best label of the edge counts
    assert ranked[0][1] == pytest.approx(0.5) and ranked[1][1] == pytest.approx(0.0)
    assert g.traverse(0, Q, 2, ranked=True).nodes == [0, 2]
    assert g.traverse(0, Q, 2, ranked=False).nodes == [0, 1]
    assert g.relations_among([0, 2]) == [1, 2]


def test_directional_weights_on_the_pushed_example() -> None:
    """The paper's example (section 3), "Selena was pushed by John": John -> Selena reads "pushes", Selena -> John
    "was pushed by"."""
    john, selena = 0, 1
    pushes, pushed_by = np.array([[0.0, 1.0, 0.0]]), np.array([[0.0, 0.0, 1.0]])
    src, dst, labels, fact, inverse = directed_relations(
        np.array([john]), np.array([selena]), pushes, pushed_by, directional=True
    )
    assert src.tolist() == [john, selena] and dst.tolist() == [selena, john]
    assert np.allclose(labels, [pushes[0], pushed_by[0]]) and fact.tolist() == [0, 0]
    assert inverse.tolist() == [False, True]
    g = AssociationGraph(np.array([[1.0, 0, 0], [0.8, 0.6, 0]]), src, dst, labels)
    from_object = g.traverse(selena, np.array([0.0, 0, 1]), 2)
    assert from_object.nodes == [selena, john]  # the object's edge leads back to the subject
    (row,) = g.relations(selena, john)
    assert inverse[row] and np.allclose(g.label_vectors[row], pushed_by[0])  # read in the passive voice
    off = directed_relations(np.array([john]), np.array([selena]), pushes, pushed_by, directional=False)
    assert np.allclose(off[2], [pushes[0], pushes[0]])  # without DW both directions say "pushes"


def test_bad_input_raises() -> None:
    g = hand_graph()
    with pytest.raises(ValueError, match="max_nodes"):
        g.traverse(0, Q, 0)
    with pytest.raises(ValueError, match="not a node row"):
        g.traverse(9, Q)
    with pytest.raises(ValueError, match="all zero"):
        g.nearest(np.zeros(3))
    with pytest.raises(ValueError, match="outside"):
        AssociationGraph(np.eye(2), np.array([0]), np.array([2]), np.array([[1.0, 0]]))
    with pytest.raises(ValueError, match="disagree"):
        directed_relations(np.array([0]), np.array([1, 2]), np.eye(1), np.eye(1))
    with pytest.raises(ValueError, match="no node"):
        AssociationGraph(np.zeros((0, 3)), np.zeros(0, int), np.zeros(0, int), np.zeros((0, 3))).nearest(Q)
