"""Incremental RAPTOR (gemrag.strategies.raptor.update): new chunks join their nearest layer-1 cluster, only the
changed clusters and their ancestors are summarized again, and deleting the document restores the tree."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_strategy_raptor import module_config, pca, story  # noqa: F401 - module_config is a fixture

from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.config import Config
from gemrag.strategies.raptor.strategy import RaptorConfig, RaptorStrategy
from gemrag.strategies.raptor.update import assign_to_clusters, ordered_children, should_rebuild

EXTRA = (
    "Captain Hadley repaired the broken radio antenna on the roof of the lighthouse during the storm. "
    "The keeper's daughter counted the ships that passed the reef before dawn and wrote their names down."
)


def test_assign_to_clusters_picks_the_nearest_centroid() -> None:
    e = np.eye(3, dtype=np.float32)
    clusters = [e[[0]], np.stack([e[1], e[2]])]  # centroids (1,0,0) and (0,.7,.7)
    picks = assign_to_clusters(np.stack([e[0], e[2], (e[1] + e[2]) / np.sqrt(2)]), clusters)
    assert picks.tolist() == [0, 1, 1]
    with pytest.raises(ValueError):
        assign_to_clusters(e[[0]], [e[[0]], e[:0]])


def test_ordered_children_keeps_the_prompt_order() -> None:
    recorded = {10: [5, 3, 9], 11: [1]}
    current = {10: {9, 5, 12, 7}, 11: set()}
    assert ordered_children(recorded, current) == {10: [5, 9, 7, 12], 11: []}


def test_should_rebuild() -> None:
    assert not should_rebuild(100, 5, 0, 0.25) and should_rebuild(100, 20, 6, 0.25) and should_rebuild(0, 1, 0, 1)


def raptor_memory(path: Path, config: Config, llm: ScriptedLLM, **settings: Any) -> Memory:
    mem = Memory.open(path, config, llm=llm, embedder=HashEmbedder())
    mem._strategies["raptor"] = RaptorStrategy(RaptorConfig(reducer=pca, reduction_dim=4, **settings))
    return mem


def tree_texts(mem: Memory) -> dict[str, Any]:
    """The published tree by content: each node's text, layer and vector, and each summary's children's texts."""
    published = mem.store.load_published("raptor")
    assert published is not None
    ids = np.asarray(published.arrays["node_ids"]).tolist()
    vectors = np.asarray(published.arrays["vectors"])
    rows = sorted(
        (mem.store.node(i).text, int(layer), tuple(np.round(v, 5)))
        for i, layer, v in zip(ids, np.asarray(published.arrays["layers"]).tolist(), vectors, strict=True)
    )
    edges = sorted(
        (mem.store.node(s).text, mem.store.node(c).text) for _, s, c, _ in mem.store.edge_list("raptor", "child")
    )
    return {"rows": rows, "edges": edges}


def test_adding_then_deleting_a_document_touches_only_its_clusters(tmp_path: Path, module_config: Config) -> None:  # noqa: F811
    llm = ScriptedLLM()
    with raptor_memory(tmp_path / "m", module_config, llm) as mem:
        mem.add_text(story(), "story")
        mem.index("raptor")
        before = tree_texts(mem)
        summaries = {n.id: n for n in mem.store.nodes("summary", strategy="raptor")}
        layers = max(n.meta["layer"] for n in summaries.values())
        assert layers >= 2 and all(n.meta["children"] for n in summaries.values())
        calls = llm.calls
        mem.add_text(EXTRA, "extra")
        mem.index("raptor")
        new_chunk = [n for n in mem.store.nodes("chunk") if n.text.startswith("Captain Hadley")]
        assert len(new_chunk) == 1
        spent = llm.calls - calls
        after = {n.id: n for n in mem.store.nodes("summary", strategy="raptor")}
        sources = mem.store.node_sources(list(after))
        on_path = {i for i in after if new_chunk[0].id in sources[i]}  # the new chunk's ancestors
        # at most one LLM call per ancestor (fewer when the fake LLM's truncated summary of a changed cluster equals
        # the old one, so the next layer's prompt is cached), none elsewhere: the rest kept their nodes
        assert 1 <= spent <= len(on_path) < len(summaries)
        assert set(after) - on_path <= set(summaries) and not on_path & set(summaries)
        assert {after[i].meta["layer"] for i in on_path} == set(range(1, layers + 1))  # one path to the top
        published = mem.store.load_published("raptor")
        assert new_chunk[0].id in np.asarray(published.arrays["node_ids"]).tolist()
        assert mem.store.build_state("raptor").state == "built"
        calls = llm.calls
        report = mem.delete("extra")
        assert report.llm_calls == 0
        mem.index("raptor")
        assert llm.calls == calls  # every restored cluster's summary comes from the LLM cache
        assert tree_texts(mem) == before


@pytest.mark.parametrize("settings", [{"incremental": False}, {"rebuild_fraction": 0.0}])
def test_full_rebuild_when_asked_or_when_too_much_changed(
    tmp_path: Path,
    module_config: Config,  # noqa: F811
    settings: dict[str, Any],
) -> None:
    llm = ScriptedLLM()
    with raptor_memory(tmp_path / "m", module_config, llm, **settings) as mem:
        mem.add_text(story(), "story")
        mem.index("raptor")
        first = {n.id for n in mem.store.nodes("summary", strategy="raptor")}
        mem.add_text(EXTRA, "extra")
        mem.index("raptor")
        assert not first & {n.id for n in mem.store.nodes("summary", strategy="raptor")}  # a new tree throughout
