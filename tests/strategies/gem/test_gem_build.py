"""GEM build correctness and cost (issue 8, points 5-7): S and the eigendecomposition once per build, the sparse
kNN path (automatic above a chunk count) against the dense reference, bounded retries of failed utility
questions, the skip_trivial option and the report of the selected (and negative) eigenvalues, graph/ purity; the
question vectors' dtype (``QUESTION_DTYPE``, float16, the knob ``benchmarks/bench_gem_build.py`` sets to float32)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.linalg

import gemrag.graph.similarity as similarity
import gemrag.strategies.gem.strategy as gem_strategy
from backends import MemoryAt
from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.config import Config
from gemrag.graph.laplacian import normalized_laplacian, symmetrize
from gemrag.graph.similarity import knn_similarity_matrix, similarity_matrix
from gemrag.graph.spectrum import eigenpairs, select_eigenthemes, spectrum_report
from gemrag.strategies.gem.graph import eigen_selection, graph_mode
from gemrag.strategies.gem.settings import GemConfig, gem_config
from gemrag.strategies.gem.summaries import summary_members
from gemrag.strategies.gem.utility_questions import QUESTION_RETRIES
from paths import REPO
from test_memory import DOC_A, DOC_B

QUESTIONS_PROMPT = "questions that this passage answers"
PROMPTS = [
    "When do the puffins return to nest on the cliffs?",
    "What grows in the garden?",
    "Who keeps the lighthouse?",
]


def with_gem(config: Config, **gem: object) -> Config:
    memory = {k: gem.pop(k) for k in ("chunk_tokens", "budget", "chunk_titles") if k in gem}  # [memory]'s
    gem_part, memory_part = gem_config(config).model_copy(update=gem), config.memory.model_copy(update=memory)
    return config.model_copy(update={"gem": gem_part, "memory": memory_part})


def open_memory(path: str | Path, config: Config, llm: ScriptedLLM | None = None) -> Memory:
    return Memory.open(path, config, llm=llm or ScriptedLLM(), embedder=HashEmbedder())


def build(path: Path, config: Config, llm: ScriptedLLM | None = None) -> Memory:
    """DOC_A and DOC_B in chunks of 16 tokens: more than 11 chunks, so the 10-eigenpair report uses eigsh."""
    mem = open_memory(path, with_gem(config, chunk_tokens=16), llm)
    mem.add_text(DOC_A)
    mem.add_text(DOC_B, "garden")
    mem.index()
    return mem


# -- S and the eigendecomposition once per build ---------------------------------------------------------------
class Counter:
    """Counts the S entries computed (every S block goes through ``similarity._similarity_block``) and the calls
    of the dense and sparse eigensolvers."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.entries = 0
        self.eigh = 0
        self.eigsh = 0
        block, eigh, eigsh = similarity._similarity_block, scipy.linalg.eigh, scipy.sparse.linalg.eigsh

        def counted_block(vn: np.ndarray, qs: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
            self.entries += rows.shape[0] * cols.shape[0]
            return block(vn, qs, rows, cols)

        def counted_eigh(*a: Any, **kw: Any) -> Any:
            self.eigh += 1
            return eigh(*a, **kw)

        def counted_eigsh(*a: Any, **kw: Any) -> Any:
            self.eigsh += 1
            return eigsh(*a, **kw)

        monkeypatch.setattr(similarity, "_similarity_block", counted_block)
        monkeypatch.setattr(scipy.linalg, "eigh", counted_eigh)
        monkeypatch.setattr(scipy.sparse.linalg, "eigsh", counted_eigsh)


@pytest.mark.parametrize("graph", ["dense", "sparse"])
def test_s_and_the_eigendecomposition_are_computed_once(
    memory_at: MemoryAt, config: Config, monkeypatch: pytest.MonkeyPatch, graph: str
) -> None:
    cfg = with_gem(config, graph=graph, knn=4, chunk_tokens=16)
    mem = open_memory(memory_at("m"), cfg)
    mem.add_text(DOC_A)
    mem.add_text(DOC_B, "garden")
    counter = Counter(monkeypatch)
    with mem:
        mem.index()
        n = len(mem.store.nodes("chunk"))
        big_n = n + len(mem.store.nodes("summary"))
    assert n > 11 and big_n == n + gem_config(cfg).eigen  # eigsh (10 eigenpairs < n - 1) is exercised
    # the chunk block once (the kNN path forms S[B, B] and S[B, B]^T of its single block: 2 n^2), then only the
    # summary nodes' rows and columns; the old code formed S again over all N nodes (another N^2)
    chunk_block = n * n if graph == "dense" else 2 * n * n
    assert counter.entries == chunk_block + 2 * (big_n - n) * big_n
    assert counter.eigh + counter.eigsh == 1
    assert counter.eigsh == (1 if graph == "sparse" else 0)


def test_extend_similarity_adds_only_the_new_rows_and_columns() -> None:
    rng = np.random.default_rng(1)
    big_n, n0, d = 40, 35, 8
    V = rng.normal(size=(big_n, d))
    owner = np.repeat(np.arange(big_n), 3)
    owner = owner[owner != 5]  # node 5 has no questions
    Q = rng.normal(size=(owner.shape[0], d))
    old = owner < n0
    full = symmetrize(similarity_matrix(V, Q, owner))
    S0 = symmetrize(similarity_matrix(V[:n0], Q[old], owner[old]))
    np.testing.assert_allclose(similarity.extend_similarity(S0, V, Q, owner), full, atol=1e-12)
    for k in (3, 10, 100):
        ext = similarity.extend_similarity(knn_similarity_matrix(V[:n0], Q[old], owner[old], k), V, Q, owner, k=k)
        fresh = knn_similarity_matrix(V, Q, owner, k).toarray()
        dense_ext = ext.toarray()
        stored = np.zeros_like(dense_ext, dtype=bool)
        stored[ext.nonzero()] = True
        assert stored[fresh != 0].all()  # a superset of the kNN graph built from scratch ...
        np.testing.assert_allclose(dense_ext[stored], full[stored], atol=1e-12)  # ... with the same values
        assert (ext != ext.T).nnz == 0
    with pytest.raises(ValueError, match="needs k"):
        similarity.extend_similarity(knn_similarity_matrix(V[:n0], Q[old], owner[old], 3), V, Q, owner)


# -- sparse kNN path vs the dense reference --------------------------------------------------------------------
def test_sparse_top_eigenpairs_match_dense_with_full_neighbourhoods() -> None:
    rng = np.random.default_rng(3)
    n, d = 60, 16
    V = rng.normal(size=(n, d)) + 2 * np.eye(d)[rng.integers(0, 3, n)]
    owner = np.repeat(np.arange(n), 3)
    Q = V[owner] + 0.5 * rng.normal(size=(owner.shape[0], d))
    L_dense = normalized_laplacian(symmetrize(similarity_matrix(V, Q, owner)), diagonal="zero")
    L_sparse = normalized_laplacian(knn_similarity_matrix(V, Q, owner, n - 1), diagonal="zero")
    assert sp.issparse(L_sparse)
    vals_d, vecs_d = eigenpairs(L_dense, 6, method="dense")
    vals_s, vecs_s = eigenpairs(L_sparse, 6, method="sparse")
    np.testing.assert_allclose(vals_s, vals_d, atol=1e-8)
    np.testing.assert_allclose(np.abs(np.sum(vecs_s * vecs_d, axis=0)), 1.0, atol=1e-6)
    assert vals_d[0] == pytest.approx(1.0)
    # a real kNN graph (k = 5) is a different graph: its spectrum differs
    vals_k, _ = eigenpairs(normalized_laplacian(knn_similarity_matrix(V, Q, owner, 5), diagonal="zero"), 6)
    assert np.abs(vals_k - vals_d).max() > 1e-3


def test_sparse_memory_agrees_with_dense_memory(tmp_path: Path, config: Config) -> None:
    with (
        build(tmp_path / "dense", with_gem(config, graph="dense")) as dense,
        build(tmp_path / "sparse", with_gem(config, graph="sparse", knn=1000)) as sparse,
    ):
        rd, rs = dense.stats()["strategy_report"], sparse.stats()["strategy_report"]
        assert (rd["graph"], rs["graph"]) == ("dense", "sparse")
        np.testing.assert_allclose(
            rs["spectrum"]["top_eigenvalues"], rd["spectrum"]["top_eigenvalues"], rtol=0, atol=1e-8
        )
        members = [[n.meta["members"] for n in m.store.nodes("summary")] for m in (dense, sparse)]
        assert members[0] == members[1] and members[0]
        W_dense = dense.store.load_published("gem").arrays["weights"]
        W_sparse = sparse.store.load_published("gem").arrays["weights"]
        assert not sp.issparse(W_dense) and sp.issparse(W_sparse)  # stored and loaded as a scipy.sparse matrix
        np.testing.assert_allclose(W_sparse.toarray(), W_dense, atol=1e-12)  # k >= n - 1: the same graph
        for search in ("best_first", "rank", "fused"):
            dense.get_strategy("gem").config.search = sparse.get_strategy("gem").config.search = search  # type: ignore[attr-defined]
            for prompt in PROMPTS:
                hd, hs = dense.retrieve(prompt, budget=4), sparse.retrieve(prompt, budget=4)
                assert [h.text for h in hd] == [h.text for h in hs]
                np.testing.assert_allclose([h.score for h in hd], [h.score for h in hs], atol=1e-9)
        assert np.count_nonzero(W_dense) > 0


def test_small_k_sparse_memory_retrieves_over_a_csr_graph(tmp_path: Path, config: Config) -> None:
    with build(tmp_path / "m", with_gem(config, graph="sparse", knn=2)) as mem:
        published = mem.store.load_published("gem")
        n = published.arrays["node_ids"].shape[0]
        W = published.arrays["weights"]
        assert sp.issparse(W) and W.nnz < n * (n - 1)  # not the complete graph
        hits = mem.retrieve(PROMPTS[0], budget=4)
        assert len(hits) == 4 and "puffins" in hits[0].text


def test_auto_picks_sparse_above_the_chunk_count(memory_at: MemoryAt, config: Config) -> None:
    assert graph_mode(GemConfig(), 2000) == "dense" and graph_mode(GemConfig(), 2001) == "sparse"
    assert graph_mode(GemConfig(sparse_above=5), 5) == "dense"
    assert graph_mode(GemConfig(sparse_above=5), 6) == "sparse"
    assert graph_mode(GemConfig(graph="dense", sparse_above=5), 6) == "dense"
    assert graph_mode(GemConfig(graph="sparse"), 3) == "sparse"
    with open_memory(memory_at("m"), with_gem(config, sparse_above=1000)) as mem:
        mem.add_text(DOC_A)
        mem.index()
        n = len(mem.store.nodes("chunk"))
        assert mem.stats()["strategy_report"]["graph"] == "dense"
    with open_memory(memory_at("m"), with_gem(config, sparse_above=n - 1)) as mem:
        mem.index()
        assert mem.stats()["strategy_report"]["graph"] == "sparse"
        assert sp.issparse(mem.store.load_published("gem").arrays["weights"])


# -- failed utility questions are retried, boundedly ----------------------------------------------------------
def test_failed_questions_are_retried_on_later_builds_with_a_bound(memory_at: MemoryAt, config: Config) -> None:
    llm = ScriptedLLM(fail=lambda i, p: "puffins" in p and QUESTIONS_PROMPT in p)
    with open_memory(memory_at("m"), config, llm) as mem:
        mem.add_text(DOC_A)
        attempts = []
        for _ in range(QUESTION_RETRIES + 3):
            before = sum(1 for p in llm.prompts if "puffins" in p and QUESTIONS_PROMPT in p)
            mem.index()
            attempts.append(sum(1 for p in llm.prompts if "puffins" in p and QUESTIONS_PROMPT in p) - before)
        puffin = next(n for n in mem.store.nodes("chunk") if "puffins" in n.text)
        failed = [f for f in mem.store.failures() if f["node_id"] == puffin.id]
    # 3 attempts in the first build and in each of the retries (new seeds: not replayed from the cache), then none
    assert attempts == [3] * (1 + QUESTION_RETRIES) + [0, 0]
    assert len(failed) == 1 + QUESTION_RETRIES and puffin.questions_done == -1


def test_a_failed_chunk_gets_its_questions_on_a_retry(memory_at: MemoryAt, config: Config) -> None:
    broken = {"on": True}
    llm = ScriptedLLM(fail=lambda i, p: broken["on"] and "puffins" in p and QUESTIONS_PROMPT in p)
    with open_memory(memory_at("m"), config, llm) as mem:
        mem.add_text(DOC_A)
        mem.index()
        puffin = next(n for n in mem.store.nodes("chunk") if "puffins" in n.text)
        assert puffin.questions_done == -1
        broken["on"] = False
        seen = len(llm.prompts)
        mem.index()
        puffin = mem.store.node(puffin.id)
        assert puffin.questions_done == 1
        assert any(node == puffin.id for _, node, _ in mem.store.questions())
        chunk_texts = {n.text for n in mem.store.nodes("chunk")}
        asked = [p.split('"""')[1].strip() for p in llm.prompts[seen:] if QUESTIONS_PROMPT in p]
        assert [t for t in asked if t in chunk_texts] == [puffin.text]  # no other chunk was asked again


# -- the first eigenvector and the selection report -------------------------------------------------------------
def test_select_eigenthemes_skips_only_the_trivial_eigenvalue() -> None:
    values = np.array([1.0, -0.9, 0.5, 0.2])
    assert select_eigenthemes(values, 2).tolist() == [0, 1]
    assert select_eigenthemes(values, 2, skip_trivial=True).tolist() == [1, 2]
    assert select_eigenthemes(values, 9, skip_trivial=True).tolist() == [1, 2, 3]
    assert select_eigenthemes(np.array([0.9, 0.5]), 1, skip_trivial=True).tolist() == [0]  # no lambda = 1
    assert select_eigenthemes(values, 0, skip_trivial=True).tolist() == []
    with pytest.raises(ValueError, match="k must be"):
        select_eigenthemes(values, -1)


def test_skip_trivial_drops_the_perron_vector_from_the_summary_members() -> None:
    rng = np.random.default_rng(0)
    groups = np.repeat([0, 1, 2], [6, 4, 2])
    X = np.eye(8)[groups] + 0.3 * rng.normal(size=(12, 8))
    L = normalized_laplacian(symmetrize(similarity_matrix(X, np.zeros((0, 8)), np.zeros(0, np.int64))))
    eigen = eigenpairs(L, 4)
    plain = summary_members(None, None, 2, 3, eigen=eigen)
    skipped = summary_members(None, None, 2, 3, eigen=eigen, skip_trivial=True)
    assert [m["eigen_index"] for _, m in plain] == [0, 1]
    assert [m["eigen_index"] for _, m in skipped] == [1, 2]
    assert plain[0][1]["eigenvalue"] == pytest.approx(1.0)
    assert all(abs(m["eigenvalue"] - 1.0) > 1e-3 for _, m in skipped)
    np.testing.assert_array_equal(skipped[0][0], plain[1][0])  # the rest shifts up by one
    # without eigen, the same selection from L
    assert [i.tolist() for i, _ in summary_members(L, None, 2, 3, skip_trivial=True)] == [
        i.tolist() for i, _ in skipped
    ]


def test_skip_trivial_in_a_memory_and_its_report(tmp_path: Path, config: Config) -> None:
    reports = {}
    for skip in (False, True):
        with build(tmp_path / str(skip), with_gem(config, skip_trivial=skip)) as mem:
            report = mem.stats()["strategy_report"]
            selection = report["eigen_selection"]
            top = report["spectrum"]["top_eigenvalues"]
            indices = [n.meta["eigen_index"] for n in mem.store.nodes("summary")]
            values = [n.meta["eigenvalue"] for n in mem.store.nodes("summary")]
            reports[skip] = (selection, indices, values, top)
    (plain, i0, v0, top), (skipped, i1, v1, _) = reports[False], reports[True]
    assert i0 == plain["selected_indices"] == [0, 1] and v0[0] == pytest.approx(1.0)
    assert i1 == skipped["selected_indices"] == [1, 2]
    assert all(abs(v - 1.0) > 1e-6 for v in v1)
    assert plain["selected_eigenvalues"] == pytest.approx(top[:2])
    assert skipped["selected_eigenvalues"] == pytest.approx(top[1:3])
    assert (plain["skip_trivial"], skipped["skip_trivial"]) == (False, True)
    assert plain["negative_in_top_k"] == [v for v in top[:2] if v < 0]


def test_eigen_selection_reports_negative_eigenvalues() -> None:
    values = np.array([1.0, -0.95, 0.6, -0.4])
    plain = eigen_selection(values, GemConfig(eigen=2))
    assert plain["selected_eigenvalues"] == [1.0, -0.95]
    assert plain["negative_selected"] == [-0.95] and plain["negative_in_top_k"] == [-0.95]
    skipped = eigen_selection(values, GemConfig(eigen=3, skip_trivial=True))
    assert skipped["selected_indices"] == [1, 2, 3]
    assert skipped["negative_selected"] == [-0.95, -0.4] and skipped["negative_in_top_k"] == [-0.95]
    none = eigen_selection(np.array([1.0, 0.7, -0.6]), GemConfig(eigen=2))
    assert none["negative_selected"] == [] and none["negative_in_top_k"] == []


def test_a_bipartite_graph_puts_a_negative_eigenvalue_in_the_top_two() -> None:
    # two groups linked only across: L has eigenvalue -1, tied in magnitude with lambda_1 = 1
    A = np.zeros((6, 6))
    A[:3, 3:] = A[3:, :3] = 1.0
    values, _ = eigenpairs(normalized_laplacian(A, diagonal="zero"), 3)
    assert values[:2].tolist() == pytest.approx([1.0, -1.0])
    assert eigen_selection(values, GemConfig(eigen=2))["negative_in_top_k"] == pytest.approx([-1.0])


def test_spectrum_report_reuses_given_eigenvalues() -> None:
    A = np.ones((5, 5))
    L = normalized_laplacian(A, diagonal="zero")
    values, _ = eigenpairs(L)
    assert spectrum_report(L, top=3, eigenvalues=values).top_eigenvalues.tolist() == pytest.approx(
        spectrum_report(L, top=3).top_eigenvalues.tolist()
    )
    fake = np.array([0.5, 0.25, 0.125])  # used as given, not recomputed
    assert spectrum_report(L, top=3, eigenvalues=fake).top_eigenvalues.tolist() == [0.5, 0.25, 0.125]
    with pytest.raises(ValueError, match="need 3 eigenvalues"):
        spectrum_report(L, top=3, eigenvalues=fake[:2])


# -- graph/ stays pure numpy/scipy ------------------------------------------------------------------------------
def test_question_dtype_is_what_the_build_keeps_publishes_and_retrieves_from(
    tmp_path: Path, config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GEM publishes float16 question vectors by default; with ``QUESTION_DTYPE`` set to float32 (as the benchmark
    does) the same build publishes float32 ones, and both memories retrieve the same nodes for every prompt."""
    hits: dict[str, list[list[int]]] = {}
    for dtype in ("float16", "float32"):
        monkeypatch.setattr(gem_strategy, "QUESTION_DTYPE", np.dtype(dtype))
        with build(tmp_path / dtype, config) as mem:
            published = mem.store.load_published("gem")
            assert published is not None and published.arrays["question_vectors"].dtype == np.dtype(dtype)
            hits[dtype] = [[h.node_id for h in mem.retrieve(p, 4)] for p in PROMPTS]
    assert hits["float16"] == hits["float32"]


def test_graph_package_imports_only_numpy_scipy_and_the_standard_library() -> None:
    # faiss: the approximate nearest-neighbour search of synonym edges (graph/synonyms.py), no model, no storage
    allowed = {"numpy", "scipy", "faiss", "gemrag", "__future__", "dataclasses", "typing", "collections", "math"}
    allowed.add("contextlib")  # graph/ann.py: faiss's thread setting restored by a context manager
    allowed.add("warnings")  # graph/spectrum.py: a capped eigsh handing over to LOBPCG says so
    allowed |= {
        "re",
        "os",
        "unicodedata",
    }  # unicodedata: entity-name normalization (strategies/unweaver/entity_classes.py)
    for path in sorted((REPO / "src" / "gemrag" / "graph").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            for name in names:
                top = name.split(".")[0]
                assert top in allowed, f"{path.name} imports {name}"
                if top == "gemrag":
                    assert name.startswith("gemrag.graph"), f"{path.name} imports {name}"


def test_threadpoolctl_is_a_declared_dependency() -> None:
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    core = text.split("\ndependencies = [", 1)[1].split("\n]", 1)[0]  # [project] dependencies, not an extra
    assert '"threadpoolctl>=' in core
    assert "import threadpoolctl" in (REPO / "src/gemrag/strategies/platform/clustering.py").read_text() or (
        "from threadpoolctl" in (REPO / "src/gemrag/strategies/platform/clustering.py").read_text()
    )
