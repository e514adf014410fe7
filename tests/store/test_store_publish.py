"""Build generations at the store level: atomic publish, readers' view, checks against the manifest, a kill
(simulated by an exception) at every step of writing and publishing, cleanup of what a killed build left."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import gemrag.store.publish as publish
from backends import MemoryAt, leftovers
from gemrag.errors import DamagedMemoryError, GemragError, StaleGenerationError
from gemrag.store import MemoryStore, Store, open_store

AXES = {"node_ids": ("n",), "vectors": ("n", "d"), "weights": ("n", "n")}


class SimulatedKill(BaseException):
    """Not an Exception: nothing may catch it, like a kill."""


def arrays(n: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "node_ids": np.arange(n, dtype=np.int64) + 100 * seed,
        "vectors": rng.normal(size=(n, 4)).astype(np.float32),
        "weights": rng.random((n, n)),
    }


def build(store: MemoryStore, n: int, seed: int, summaries: int = 2) -> int:
    """One complete build of a fake strategy "fake": derived nodes, three arrays, edges; returns its generation."""
    generation = store.begin_build("fake")
    for j in range(summaries):
        store.add_summary_node(
            j, f"summary {j} of build {seed}", 3, {"seed": seed}, strategy="fake", generation=generation
        )
    entries = [store.write_array("fake", generation, k, a, AXES[k]) for k, a in arrays(n, seed).items()]
    edges = (np.array([1, 2]), np.array([2, 1]), np.array([0.5, 0.5]))
    store.publish("fake", generation, entries, meta={"seed": seed}, edges=edges)
    return generation


def assert_reads_build(store: MemoryStore, n: int, seed: int) -> None:
    published = store.load_published("fake")
    assert published is not None and published.meta == {"seed": seed}
    for name, expected in arrays(n, seed).items():
        np.testing.assert_array_equal(published.arrays[name], expected)
    assert [s.meta["seed"] for s in store.nodes("summary")] == [seed, seed]


def test_publish_and_load(memory_at: MemoryAt) -> None:
    store = open_store(memory_at())
    assert store.load_published("fake") is None and store.published_generation("fake") is None
    assert build(store, 5, 1) == 1
    assert_reads_build(store, 5, 1)
    assert store.edges(1, "fake") == [(2, 0.5)] and store.edges(1, "other") == []  # edges are namespaced by strategy
    assert build(store, 7, 2) == 2
    assert_reads_build(store, 7, 2)
    if hasattr(store.database, "directory"):
        files = sorted(p.name for p in store.database.directory.iterdir() if p.name.startswith("fake."))
        assert files == ["fake.g2.node_ids.npy", "fake.g2.vectors.npy", "fake.g2.weights.npy"]  # generation 1 removed
    else:
        stored = store.database._query("SELECT DISTINCT generation, name FROM build_arrays ORDER BY 1, 2")
        assert stored == [(2, "node_ids"), (2, "vectors"), (2, "weights")]  # generation 1's arrays removed
    manifest = store.manifest("fake")
    assert (
        manifest is not None
        and manifest.arrays["weights"].shape == (7, 7)
        and manifest.arrays["weights"].axes == ("n", "n")
    )
    store.close()
    reopened = open_store(memory_at())
    assert_reads_build(reopened, 7, 2)


def test_builder_view_hides_the_published_nodes(memory_at: MemoryAt) -> None:
    store = open_store(memory_at())
    build(store, 3, 1)
    g = store.begin_build("fake")
    new = store.add_summary_node(0, "new", 1, {"seed": 2}, strategy="fake", generation=g)
    store.set_questions(new, ["what is new?"])
    assert [s.meta["seed"] for s in store.nodes("summary")] == [1, 1]  # readers: the published generation
    assert [s.id for s in store.nodes("summary", build=("fake", g))] == [new]  # the builder: its own nodes only
    assert [q[1] for q in store.questions(build=("fake", g))] == [new]
    assert store.questions() == []


def test_axes_must_agree(tmp_path: Path) -> None:
    store = Store(tmp_path)
    g = store.begin_build("fake")
    entries = [
        store.write_array("fake", g, "node_ids", np.arange(3), ("n",)),
        store.write_array("fake", g, "weights", np.zeros((4, 4)), ("n", "n")),
    ]
    with pytest.raises(ValueError, match="axis 'n'"):
        store.publish("fake", g, entries)
    with pytest.raises(ValueError, match="axis names"):
        store.write_array("fake", g, "bad", np.zeros(3), ("n", "d"))
    with pytest.raises(ValueError, match="must match"):
        store.write_array("fake", g, "no/slashes", np.zeros(3))
    assert store.published_generation("fake") is None


STEPS = [
    "write:node_ids",
    "written:node_ids",
    "write:vectors",
    "written:weights",
    "publish:before_commit",
    "publish:committed",
    "publish:cleaned",
]


@pytest.mark.parametrize("step", STEPS)
def test_a_kill_at_any_step_leaves_one_whole_generation(
    memory_at: MemoryAt, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    store = open_store(memory_at())
    build(store, 5, 1)

    def hook(name: str) -> None:
        if name == step:
            raise SimulatedKill(name)

    monkeypatch.setattr(publish, "crash_hook", hook)
    with pytest.raises(SimulatedKill):
        build(store, 6, 2)
    store.close()
    monkeypatch.setattr(publish, "crash_hook", None)

    reader = open_store(memory_at())  # a new process
    committed = step.startswith("publish:c")
    if committed:
        assert_reads_build(reader, 6, 2)
    else:
        assert_reads_build(reader, 5, 1)  # the old generation, whole: arrays, nodes, edges
        assert reader.edges(1, "fake") == [(2, 0.5)]
    # the next builder removes what the killed one left, then builds on
    assert reader.remove_unpublished() >= 0
    assert not leftovers(reader)
    assert len(reader.nodes("summary")) == 2 and reader.nodes("summary", build=("fake", 99)) == []
    build(reader, 8, 3)
    assert_reads_build(reader, 8, 3)
    assert reader.published_generation("fake") == (3 if committed else 2)


def test_stale_tmp_and_other_generations_are_removed(tmp_path: Path) -> None:
    store = Store(tmp_path)
    build(store, 3, 1)
    (tmp_path / ".fake.g2.vectors.npy.123.tmp").write_bytes(b"half")
    (tmp_path / "fake.g2.vectors.npy").write_bytes(b"unpublished")
    (tmp_path / "fake.g1.index").mkdir()  # an artefact directory the manifest does not name: kept (same generation)
    (tmp_path / "other.g4.x.npy").write_bytes(b"no such strategy")
    (tmp_path / "gem_weights.npy").write_bytes(b"schema 1")
    (tmp_path / "notes.txt").write_text("not ours")
    stale = sorted(p.name for p in store.stale_files())
    assert stale == [".fake.g2.vectors.npy.123.tmp", "fake.g2.vectors.npy", "gem_weights.npy", "other.g4.x.npy"]
    assert store.remove_stale_files() == 4
    assert (tmp_path / "notes.txt").exists() and (tmp_path / "fake.g1.vectors.npy").exists()
    assert (tmp_path / "build.lock").exists() is False  # nothing else created


def test_damaged_and_stale_files(tmp_path: Path) -> None:
    store = Store(tmp_path)
    build(store, 4, 1)
    path = tmp_path / "fake.g1.weights.npy"
    np.save(path, np.zeros((5, 5)))  # a different shape than the manifest's
    with pytest.raises(DamagedMemoryError, match="shape"):
        store.load_published("fake")
    path.unlink()
    with pytest.raises(DamagedMemoryError, match="missing"):  # no newer generation: damage, not staleness
        store.load_published("fake")
    with store.snapshot(), pytest.raises(StaleGenerationError):  # inside a snapshot the caller must retry
        store.load_published("fake")
    assert issubclass(DamagedMemoryError, GemragError)


def test_publishing_an_older_generation_is_refused(memory_at: MemoryAt) -> None:
    store = open_store(memory_at())
    g = store.begin_build("fake")
    build(store, 3, 1)  # published meanwhile (a second builder without the lock)
    entry = store.write_array("fake", g, "node_ids", np.arange(3))
    with pytest.raises(GemragError, match="was published while"):
        store.publish("fake", g, [entry])


def test_snapshot_sees_one_state(memory_at: MemoryAt) -> None:
    writer = open_store(memory_at())
    build(writer, 3, 1)
    reader = open_store(memory_at())
    with reader.snapshot():
        assert reader.published_generation("fake") == 1
        build(writer, 4, 2)  # committed by another connection while the snapshot is open
        assert reader.published_generation("fake") == 1
        assert [s.meta["seed"] for s in reader.nodes("summary")] == [1, 1]
        reader.put_embeddings("m", [("k", np.ones(3, dtype=np.float32))])  # a cache write is deferred
        with pytest.raises(RuntimeError):
            reader.set_meta("x", 1)
    assert reader.published_generation("fake") == 2
    assert "k" in reader.get_embeddings("m", ["k"])
