"""GEM-RAG ablation variants: k-means summary members (Table I), fused ranking without the graph walk,
m = 0 questions and k = 0 summaries (Figure 2), and summary hits' kind (Table III)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.config import Config
from gemrag.graph.laplacian import normalized_laplacian, symmetrize
from gemrag.graph.similarity import similarity_matrix
from gemrag.strategies.gem.settings import GemConfig, gem_config
from gemrag.strategies.gem.summaries import summary_members
from test_memory import DOC_A, DOC_B


def with_gem(config: Config, **gem: object) -> Config:
    memory = {k: gem.pop(k) for k in ("chunk_tokens", "budget", "chunk_titles") if k in gem}  # [memory]'s
    gem_part, memory_part = gem_config(config).model_copy(update=gem), config.memory.model_copy(update=memory)
    return config.model_copy(update={"gem": gem_part, "memory": memory_part})


def open_memory(path: Path, config: Config, llm: ScriptedLLM | None = None) -> Memory:
    return Memory.open(path, config, llm=llm or ScriptedLLM(), embedder=HashEmbedder())


def cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return (a @ b) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b))


def test_settings_accept_the_variants() -> None:
    gem = GemConfig(search="fused", members="kmeans")
    assert (gem.search, gem.members) == ("fused", "kmeans")
    assert GemConfig().members == "spectral"
    with pytest.raises(ValidationError):
        GemConfig(members="dbscan")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        GemConfig(search="walk")  # type: ignore[arg-type]


def test_kmeans_members_differ_from_spectral_members() -> None:
    # three groups of 6, 4 and 2 noisy unit vectors around orthogonal directions
    rng = np.random.default_rng(0)
    groups = np.repeat([0, 1, 2], [6, 4, 2])
    X = np.eye(8)[groups] + 0.3 * rng.normal(size=(12, 8))
    X = (X / np.linalg.norm(X, axis=1, keepdims=True)).astype(np.float32)
    L = normalized_laplacian(symmetrize(similarity_matrix(X, np.zeros((0, 8), np.float32), np.zeros(0, np.int64))))
    spectral = summary_members(L, X, 2, 3, "spectral")
    kmeans = summary_members(L, X, 2, 3, "kmeans")
    # spectral: the Perron vector's top components (the most central nodes) and one pole of the second
    # eigenvector, both in the biggest group; k-means: the chunks nearest each centroid, in two groups
    assert {int(g) for idx, _ in spectral for g in groups[idx]} == {0}
    assert len({int(g) for idx, _ in kmeans for g in groups[idx]}) >= 2
    assert [set(i.tolist()) for i, _ in spectral] != [set(i.tolist()) for i, _ in kmeans]
    assert [meta for _, meta in kmeans] == [{"kmeans_index": 0}, {"kmeans_index": 1}]
    assert set(spectral[0][1]) == {"eigen_index", "eigenvalue"}
    with pytest.raises(ValueError, match="chunk vectors"):
        summary_members(L, None, 2, 3, "kmeans")


def test_kmeans_summary_nodes_in_a_memory(tmp_path: Path, config: Config) -> None:
    from sklearn.cluster import KMeans

    cfg = with_gem(config, members="kmeans", questions=0)  # m = 0 works with the variant too
    llm = ScriptedLLM()
    with open_memory(tmp_path / "m", cfg, llm) as mem:
        mem.add_text(DOC_A)
        mem.index()
        chunks = mem.store.nodes("chunk")
        summaries = mem.store.nodes("summary")
        assert len(summaries) == gem_config(cfg).eigen and mem.store.questions() == []
        # by hand: k-means (same seed) on the chunk vectors; members = the e chunks nearest each centroid
        X = HashEmbedder().embed([c.text for c in chunks])
        km = KMeans(n_clusters=gem_config(cfg).eigen, n_init=10, random_state=0).fit(X)
        dist = km.transform(X)
        by_size = np.argsort(-np.bincount(km.labels_), kind="stable")
        for node, centroid in zip(summaries, by_size, strict=True):
            nearest = np.argsort(dist[:, centroid], kind="stable")[: gem_config(cfg).eigen_top]
            assert node.meta["members"] == sorted(chunks[i].id for i in nearest)
            assert "eigenvalue" not in node.meta
        hits = mem.retrieve(summaries[0].text, 2)
        assert hits[0].kind == "summary" and hits[0].meta["members"] == summaries[0].meta["members"]


def test_fused_score_is_the_max_of_the_two_cosines(tmp_path: Path, config: Config) -> None:
    with open_memory(tmp_path / "m", with_gem(config, search="fused")) as mem:
        mem.add_text(DOC_A)
        mem.add_text(DOC_B)
        mem.index()
        question = "Which insects ate the aphids in the greenhouse?"
        hits = mem.retrieve(question, 4)
        # by hand over every node: max(cos(v_p, v_u), max_j cos(v_p, v_uj)), v_uj = (E(q_uj) + v_u) / 2
        emb = HashEmbedder()
        v_p = emb.embed([question])[0]
        nodes = mem.store.nodes()
        v = {n.id: emb.embed([n.text])[0] for n in nodes}
        fused = {}
        for n in nodes:
            best = cos(v[n.id], v_p)
            for _, owner, q in (row for row in mem.store.questions() if row[1] == n.id):
                best = max(best, cos((emb.embed([q])[0] + v[owner]) / 2, v_p))
            fused[n.id] = float(best)
        ranked = sorted(fused, key=lambda i: (-fused[i], i))[:4]
        assert [h.node_id for h in hits] == ranked
        np.testing.assert_allclose([h.score for h in hits], [fused[i] for i in ranked], atol=1e-6)
        assert "ladybirds" in hits[0].text
        assert {h.kind for h in hits} <= {"chunk", "summary"}
        kinds = {n.id: n.kind for n in nodes}
        assert all(h.kind == kinds[h.node_id] for h in hits)  # Table III counts summary hits by kind


def test_fused_without_questions_or_summaries_is_dense(tmp_path: Path, config: Config) -> None:
    cfg = with_gem(config, search="fused", questions=0, eigen=0)
    llm = ScriptedLLM()
    with open_memory(tmp_path / "m", cfg, llm) as mem:
        mem.add_text(DOC_A)
        mem.add_text(DOC_B)
        mem.index()
        mem.index(strategy="dense")
        assert llm.calls == 0 and mem.store.nodes("summary") == []
        for question in ("silver medal for courage", "rain barrel roof water", "puffins"):
            gem = [(h.node_id, round(h.score, 6)) for h in mem.retrieve(question, 3)]
            dense = [(h.node_id, round(h.score, 6)) for h in mem.retrieve(question, 3, strategy="dense")]
            assert gem == dense


def test_no_summaries_with_eigen_zero_for_both_member_methods(tmp_path: Path, config: Config) -> None:
    for members in ("spectral", "kmeans"):
        with open_memory(tmp_path / members, with_gem(config, eigen=0, members=members)) as mem:
            mem.add_text(DOC_A)
            mem.index()
            assert mem.store.nodes("summary") == []
            assert all(h.kind == "chunk" for h in mem.retrieve("lamp lighthouse keeper", 4))


def test_the_old_names_of_gem_config_still_import_with_a_warning() -> None:
    import gemrag.strategies.gem.settings as settings

    with pytest.warns(DeprecationWarning, match="use GemConfig"):
        assert settings.GemSettings is GemConfig
    with pytest.warns(DeprecationWarning, match="use gem_config"):
        assert settings.gem_settings is gem_config
    with pytest.raises(AttributeError):
        settings.NoSuchName  # noqa: B018
