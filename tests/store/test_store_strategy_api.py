"""The store's generic API for strategies: typed per-node artefacts with prompt versions, strategy-namespaced node
and edge kinds, sparse and dense arrays in a generation, carrying rows into a new generation, build states."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import scipy.sparse as sp
from pydantic import BaseModel

from backends import MemoryAt, overwrite_array
from gemrag.errors import DamagedMemoryError
from gemrag.store import MemoryStore, open_store
from gemrag.store.publish import KEEP_COVERS


class Triples(BaseModel):
    triples: list[tuple[str, str, str]]


class Other(BaseModel):
    count: int


@pytest.fixture
def store(memory_at: MemoryAt) -> Iterator[MemoryStore]:
    s = open_store(memory_at("m"))
    doc, _ = s.add_document("a.txt", "a", "alpha beta. gamma delta. epsilon.")
    s.add_chunks(doc, [("alpha beta.", 2), ("gamma delta.", 2), ("epsilon.", 1)])
    yield s
    s.close()


def chunk_ids(store: MemoryStore) -> list[int]:
    return [n.id for n in store.nodes("chunk")]


def test_artifacts_are_typed_versioned_and_resumable(store: MemoryStore) -> None:
    a, b, c = chunk_ids(store)
    value = Triples(triples=[("alpha", "is", "beta")])
    store.put_artifact("mine", "triples", a, value, "v1")
    assert store.get_artifact("mine", "triples", a, Triples, "v1") == value
    assert store.get_artifact("mine", "triples", a, Triples, "v2") is None  # a new prompt version recomputes
    assert store.missing_artifacts("mine", "triples", "v1", [a, b, c]) == [b, c]  # resumable
    assert store.missing_artifacts("mine", "triples", "v2", [a, b, c]) == [a, b, c]
    store.put_artifacts("mine", "triples", [(b, value), (c, value)], "v1")
    assert set(store.artifacts("mine", "triples", Triples, "v1")) == {a, b, c}
    assert store.artifact_counts("mine") == {("mine", "triples", "v1"): 3}
    store.put_artifact("other", "triples", a, Other(count=1), "v1")  # another strategy's namespace
    assert store.get_artifact("mine", "triples", a, Triples, "v1") == value
    with pytest.raises(DamagedMemoryError, match="does not match Triples"):
        store.artifacts("other", "triples", Triples, "v1")
    with pytest.raises(ValueError, match="must match"):
        store.put_artifact("mine", "bad kind", a, value, "v1")
    assert store.delete_artifacts("mine", stale_for="v1") == 0
    assert store.delete_artifacts("mine", "triples") == 3


def test_node_and_edge_kinds_are_namespaced_by_strategy(store: MemoryStore) -> None:
    a, b, c = chunk_ids(store)
    with pytest.raises(ValueError, match="chunk"):
        store.add_node("x", 1, "chunk", "no")
    gx = store.begin_build("x")
    ex = store.add_node("x", gx, "entity", "alpha", sources=[a])
    store.add_edges("x", gx, "mentions", np.array([ex]), np.array([a]), np.array([1.0]))
    assert store.nodes("entity", strategy="x") == [] and store.edges(ex, "x") == []  # not published yet
    assert [n.id for n in store.nodes("entity", strategy="x", build=("x", gx))] == [ex]
    store.publish("x", gx, [], covers=[a, b, c])
    gy = store.begin_build("y")
    ey = store.add_node("y", gy, "entity", "gamma", sources=[b, c])
    store.publish("y", gy, [], edges={"links": (np.array([ey]), np.array([b]), np.array([0.5]))})
    x_rows = (store.nodes(strategy="x"), store.edge_list("x"))
    assert [n.id for n in x_rows[0]] == [ex] and x_rows[1] == [("mentions", ex, a, 1.0)]
    for _ in range(2):  # rebuilding y never touches x's nodes and edges
        g = store.begin_build("y")
        store.add_node("y", g, "entity", "gamma again", sources=[b])
        store.publish("y", g, [])
        assert (store.nodes(strategy="x"), store.edge_list("x")) == x_rows
    assert store.edge_list("y") == []  # y's new generation has no edges
    assert store.node_sources([ex, ey]) == {ex: [a], ey: []}  # ey went with y's older generation
    assert store.nodes_only_from([a]) == [ex] and store.nodes_only_from([b]) == [store.nodes(strategy="y")[0].id]


def test_sparse_and_dense_arrays_in_one_generation(store: MemoryStore) -> None:
    g = store.begin_build("x")
    m = sp.random(5, 7, density=0.3, random_state=0, format="coo")
    dense = np.arange(5, dtype=np.int64)
    entries = [
        store.write_array("x", g, "node_ids", dense, ("n",)),
        store.write_array("x", g, "incidence", m, ("n", "k")),
    ]
    assert entries[1].file.endswith(".npz") and entries[1].sparse and entries[1].nnz == m.nnz
    store.publish("x", g, entries)
    published = store.load_published("x")
    assert published is not None and sp.issparse(published.arrays["incidence"])
    np.testing.assert_allclose(published.arrays["incidence"].toarray(), m.toarray())
    np.testing.assert_array_equal(published.arrays["node_ids"], dense)
    g2 = store.begin_build("x")
    bad = [
        store.write_array("x", g2, "node_ids", dense[:4], ("n",)),
        store.write_array("x", g2, "incidence", m, ("n", "k")),
    ]
    with pytest.raises(ValueError, match="axis 'n'"):
        store.publish("x", g2, bad)
    overwrite_array(store, "x", g, "incidence", sp.csr_matrix(m.toarray()[:, :6]))
    with pytest.raises(DamagedMemoryError, match="incidence"):
        store.load_published("x")


def test_carry_keeps_nodes_and_edges_and_build_states(store: MemoryStore) -> None:
    a, b, c = chunk_ids(store)
    assert store.build_state("x").state == "never built"
    g = store.begin_build("x")
    keep = store.add_node("x", g, "entity", "keep", sources=[a, b])
    drop = store.add_node("x", g, "entity", "drop", sources=[c])
    store.publish("x", g, [], edges={"e": (np.array([keep]), np.array([drop]), np.array([1.0]))}, params={"p": 1})
    state = store.build_state("x")
    assert (state.state, state.generation, state.params, state.describe()) == (
        "built",
        1,
        {"p": 1},
        "built (generation 1)",
    )
    doc, _ = store.add_document("b.txt", "b", "zeta.")
    store.add_chunks(doc, [("zeta.", 1)])
    assert store.build_state("x").describe() == "stale: 1 new chunk (generation 1)"
    g2 = store.begin_build("x")
    store.publish("x", g2, [], carry=True, retire=[drop], covers=KEEP_COVERS)
    assert [n.id for n in store.nodes(strategy="x")] == [keep]  # carried into generation 2, drop retired
    assert store.nodes(strategy="x")[0].generation == 2 and store.edge_list("x") == []  # its edge went with drop
    assert store.build_state("x").new_chunks == 1


def test_nodes_by_id_is_node_for_several_ids(memory_at: MemoryAt) -> None:
    """``nodes_by_id`` returns what ``node`` returns for each id (one query for all), and KeyError for an unknown
    id, on both backends."""
    store = open_store(memory_at("m"))
    try:
        doc, _ = store.add_document("a.txt", "a", "one two three")
        store.add_chunks(doc, [("one", 1), ("two", 1), ("three", 1)])
        ids = [n.id for n in store.nodes("chunk")]
        got = store.nodes_by_id([ids[2], ids[0], ids[2]])
        assert got == {ids[2]: store.node(ids[2]), ids[0]: store.node(ids[0])}
        assert store.nodes_by_id([]) == {}
        with pytest.raises(KeyError):
            store.nodes_by_id([ids[0], max(ids) + 100])
    finally:
        store.close()
