"""The memory view's data (issue 13, item 1): the best-first walk's path, eigentheme colours, the edge threshold,
the retrieval path, REMem's graph, strategies without a graph, and the rendered page (scripted LLM, hashing
embedder)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from test_strategy_remem import DOCS as REMEM_DOCS
from typer.testing import CliRunner

from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.cli import app
from gemrag.config import Config, load_config
from gemrag.graph.spectrum import theme_members
from gemrag.store import MemoryStore
from gemrag.strategies import Themes, base, register, strategy_themes
from gemrag.strategies.baselines.dense import DenseConfig, DenseStrategy
from gemrag.strategies.gem.search import PreparedGraph
from gemrag.strategies.gem.settings import gem_config
from gemrag.strategies.gem.themes import chunk_eigenvectors, dominant_themes
from gemrag.view import render_html, retrieval_path, view_data
from gemrag.view.data import auto_threshold, strongest_edges
from gemrag.view.render import spectrum_svg
from test_memory import DOC_A, DOC_B

QUESTION = "Who keeps the lighthouse on Gull Island?"


def build_gem_memory(path: Path, config: Config) -> Memory:
    """DOC_A and DOC_B, GEM-indexed with the scripted LLM and the hashing embedder (2 eigenthemes)."""
    mem = Memory.open(path, config, llm=ScriptedLLM(), embedder=HashEmbedder())
    mem.add_text(DOC_A, "lighthouse")
    mem.add_text(DOC_B, "garden")
    mem.index()
    return mem


@pytest.fixture
def gem_memory(tmp_path: Path, config: Config) -> Memory:
    mem = build_gem_memory(tmp_path / "m", config)
    yield mem
    mem.close()


# -- the walk's path ---------------------------------------------------------------------------------------------
def test_search_path_names_the_edge_each_node_was_reached_over() -> None:
    # a star 0-1, 0-2 and an edge 2-3; node 4 is disconnected (reached by a restart)
    W = np.zeros((5, 5))
    for a, b, w in [(0, 1, 0.5), (0, 2, 1.0), (2, 3, 0.8), (1, 3, 0.2)]:
        W[a, b] = W[b, a] = w
    nodes = np.eye(5)
    rel_vectors = np.array([[1.0, 0, 0, 0, 0], [0.6, 0.8, 0, 0, 0], [0.5, 0, 0.866, 0, 0], [0.9, 0, 0, 0.436, 0]])
    prompt = np.array([1.0, 0, 0, 0, 0])
    for weights in (W, sp.csr_matrix(W)):
        prepared = PreparedGraph.prepare(rel_vectors, np.arange(4), nodes, weights)
        order, priorities, via = prepared.search_path(prompt, 5)
        ref_order, ref_priorities = prepared.search(prompt, 5)
        assert order.tolist() == ref_order.tolist() and np.allclose(priorities, ref_priorities)
        # 0 starts (q* is its question); 2 over 0-2 (0.5·1.0 beats 1 over 0-1: 0.6·0.5); 3 over 2-3 (0.9·0.8), not
        # 1-3; then 1 over 0-1; 4 is a restart
        assert order.tolist() == [0, 2, 3, 1, 4]
        assert via.tolist() == [-1, 0, 2, 0, -1]


def test_gem_hits_carry_the_walk(gem_memory: Memory) -> None:
    hits = gem_memory.retrieve(QUESTION, 5)
    published = gem_memory.store.load_published("gem")
    ids = np.asarray(published.arrays["node_ids"]).tolist()
    W = np.asarray(published.arrays["weights"])
    assert hits[0].meta["via"] is None
    for i, hit in enumerate(hits[1:], start=1):
        earlier = [h.node_id for h in hits[:i]]
        if hit.meta["via"] is None:  # a restart: no edge from the retrieved set
            assert max(W[ids.index(c), ids.index(hit.node_id)] for c in earlier) == 0
            continue
        assert hit.meta["via"] in earlier
        strengths = [W[ids.index(c), ids.index(hit.node_id)] for c in earlier]
        assert W[ids.index(hit.meta["via"]), ids.index(hit.node_id)] == max(strengths)
    path = retrieval_path(QUESTION, "gem", hits)
    assert [s["node"] for s in path.steps] == [h.node_id for h in hits]
    assert path.q_star == hits[0].meta["matched_question"] and path.q_star


# -- eigenthemes -------------------------------------------------------------------------------------------------
def test_dominant_theme_is_the_largest_signed_component() -> None:
    x = np.array([[0.5, 0.1, 0.9], [0.2, -0.8, 0.3], [0.1, 0.6, 0.6]])
    assert dominant_themes(x, [0, 1]).tolist() == [0, 0, 1]
    assert dominant_themes(x, [1, 2]).tolist() == [1, 1, 0]  # ties go to the lower theme
    with pytest.raises(ValueError):
        dominant_themes(x, [])


@pytest.mark.parametrize("graph", ["dense", "sparse"])
def test_chunk_colours_are_the_argmax_eigentheme(tmp_path: Path, config: Config, graph: str) -> None:
    config = config.model_copy(update={"gem": gem_config(config).model_copy(update={"graph": graph, "knn": 4})})
    gem_memory = build_gem_memory(tmp_path / graph, config)
    store = gem_memory.store
    assert store.manifest("gem").meta["graph"] == graph
    # the view recomputes with the build's recorded parameters (knn), whatever the settings it is given
    chunk_ids, vectors, selected = chunk_eigenvectors(store, gem_config(config).model_copy(update={"knn": 9}))
    assert len(selected) == 2 and vectors.shape[0] == len(chunk_ids) == len(store.nodes("chunk"))
    # the recomputed eigenvectors are the build's: their top-e components are the summary nodes' members
    summaries = {n.meta["eigen_index"]: n for n in store.nodes("summary", strategy="gem")}
    members = theme_members(vectors[:, selected], gem_config(config).eigen_top)
    for j, e in enumerate(selected):
        assert sorted(chunk_ids[i] for i in members[j]) == sorted(summaries[e].meta["members"])
    data = view_data(store, "gem", config=config)
    theme = {n["id"]: n["theme"] for n in data.nodes}
    expected = np.argmax(vectors[:, selected], axis=1)
    assert [theme[c] for c in chunk_ids] == expected.tolist()
    assert len(set(expected.tolist())) == 2  # both themes appear
    for j, e in enumerate(selected):
        assert theme[summaries[e].id] == j
        assert data.themes[j]["summary"] == summaries[e].id
    assert data.spectrum is not None and data.spectrum["estimated_themes"] >= 1
    assert len(data.spectrum["top_eigenvalues"]) == min(10, len(chunk_ids))
    gem_memory.close()


# -- edges -------------------------------------------------------------------------------------------------------
def test_edges_above_the_threshold(gem_memory: Memory) -> None:
    store = gem_memory.store
    pairs: dict[tuple[int, int], float] = {}
    for _, a, b, w in store.edge_list("gem"):
        key = (min(a, b), max(a, b))
        pairs[key] = max(pairs.get(key, 0.0), w)
    cut = float(np.median(list(pairs.values())))
    data = view_data(store, "gem", min_weight=cut)
    kept = {(e["from"], e["to"]) for e in data.edges}
    assert kept == {k for k, w in pairs.items() if w >= cut}
    assert data.edges_total == len(pairs) and data.threshold == cut
    # the default: the strongest 3 per node, plus each node's strongest edge, so nobody with an edge is alone
    auto = view_data(store, "gem")
    n = len(auto.nodes)
    assert auto.threshold == auto_threshold(list(pairs.values()), n)
    drawn = {e["from"] for e in auto.edges} | {e["to"] for e in auto.edges}
    assert drawn == {i for pair in pairs for i in pair}
    assert len(auto.edges) <= 3 * n + n


def test_auto_threshold_and_backbone() -> None:
    assert auto_threshold([0.5, 0.9, 0.1, 0.7], 1, per_node=2) == 0.7
    assert auto_threshold([0.5, 0.9], 1, per_node=3) == 0.0
    pairs = {(1, 2): ("s", 0.9), (1, 3): ("s", 0.2), (3, 4): ("s", 0.1)}
    assert strongest_edges(pairs) == {(1, 2), (1, 3), (3, 4)}  # 3's best is (1, 3); 4's only edge is (3, 4)


# -- other strategies' graphs ------------------------------------------------------------------------------------
def test_remem_graph(tmp_path: Path, config: Config) -> None:
    cfg = load_config(None, {"memory": {"chunk_tokens": 40}, "strategy": "remem"})
    with Memory.open(tmp_path / "r", cfg, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
        for doc in REMEM_DOCS:
            mem.add_text(doc)
        mem.index(strategy="remem")
        data = view_data(mem.store, "remem", min_weight=0.0)
        kinds = {n["kind"] for n in data.nodes}
        assert kinds == {"chunk", "entity", "fact"}
        entities = mem.store.nodes("entity", strategy="remem")
        assert sum(n["kind"] == "entity" for n in data.nodes) == len(entities) > 0
        assert {e["kind"] for e in data.edges} >= {"fact", "passage", "source"}
        facts = {n["id"] for n in data.nodes if n["kind"] == "fact"}
        linked = {e["from"] for e in data.edges if e["kind"] == "source"} | {
            e["to"] for e in data.edges if e["kind"] == "source"
        }
        assert facts <= linked  # every fact is drawn next to the passages that stated it
        assert all(n["theme"] is None for n in data.nodes) and data.spectrum is None and not data.message
        hits = mem.retrieve("Where did the father of Alma Reyes die?", 3, strategy="remem")
        path = retrieval_path("q", "remem", hits)
        assert [s["node"] for s in path.steps] == [h.node_id for h in hits] and path.q_star == ""


def test_hlgraph_association_graph(tmp_path: Path) -> None:
    """HLGraphRAG's association graph reaches the view through the same generic path as REMem's: its subject and
    event nodes, and one edge per directed pair whose weight counts the relations on it."""
    from test_strategy_hlgraph import built
    from test_strategy_hlgraph import cfg as hl_cfg

    with built(tmp_path / "h", hl_cfg()) as mem:
        data = view_data(mem.store, "hlgraph", min_weight=0.0)
        by_kind = {k: [n for n in data.nodes if n["kind"] == k] for k in ("subject", "event", "chunk")}
        assert len(by_kind["subject"]) == len(mem.store.nodes("subject", strategy="hlgraph")) > 0
        assert len(by_kind["event"]) == len(mem.store.nodes("event", strategy="hlgraph")) == 1
        assert by_kind["chunk"] and not data.message
        subjects = {n.text: n.id for n in mem.store.nodes("subject", strategy="hlgraph")}
        john_selena = [
            e
            for e in data.edges
            if {e["from"], e["to"]} == {subjects["John"], subjects["Selena"]} and e["kind"] != "source"
        ]
        assert john_selena and max(e["weight"] for e in john_selena) == 2.0  # "pushes" and "loves" on one edge
        hits = mem.retrieve("What did John do to Selena?", 3, strategy="hlgraph")
        path = retrieval_path("q", "hlgraph", hits)
        assert [s["node"] for s in path.steps] == [h.node_id for h in hits]


def test_a_strategy_without_a_graph_shows_chunks_only(tmp_path: Path, config: Config) -> None:
    with Memory.open(tmp_path / "d", config, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
        mem.add_text(DOC_A)
        data = view_data(mem.store, "dense")
        assert "no published build" in data.message
        mem.index(strategy="dense")
        data = view_data(mem.store, "dense")
        assert "publishes no graph" in data.message
        assert {n["kind"] for n in data.nodes} == {"chunk"} and data.edges == []
        assert len(data.nodes) == len(mem.store.nodes("chunk"))
        assert strategy_themes("dense", mem.store) is None and all(n["theme"] is None for n in data.nodes)


def test_the_view_colours_by_the_themes_a_strategy_gives(
    tmp_path: Path, config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The view knows no strategy: any strategy's optional ``themes`` colours the chunks (here a user strategy over
    dense's build, putting every chunk in theme 0)."""
    monkeypatch.setattr(base, "_REGISTRY", dict(base._REGISTRY))

    class Themed(DenseStrategy):
        name = "themed"

        def themes(self, store: MemoryStore) -> Themes:
            return Themes(chunk_theme={n.id: 0 for n in store.nodes("chunk")}, eigen_indices=[7], eigenvalues=[0.5])

    register("themed", config=DenseConfig)(Themed)
    with Memory.open(tmp_path / "t", config, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
        mem.add_text(DOC_A)
        mem.index(strategy="themed")
        data = view_data(mem.store, "themed")
    assert {n["theme"] for n in data.nodes} == {0}
    assert data.themes == [{"index": 0, "eigen_index": 7, "eigenvalue": 0.5, "summary": None}]


# -- the page ----------------------------------------------------------------------------------------------------
def test_page_is_self_contained(gem_memory: Memory, config: Config) -> None:
    hits = gem_memory.retrieve(QUESTION, 4)
    data = view_data(gem_memory.store, "gem", config=config, path=retrieval_path(QUESTION, "gem", hits))
    page = render_html(data, "test </title> <b>")
    assert "<script src" not in page and "<link" not in page and "{{" not in page.split("<script", 1)[0]
    assert "&lt;/title&gt;" in page
    assert "vis-network" in page and "@license" in page  # inlined with its licence header
    blob = re.search(r'<script type="application/json" id="gemrag-data">(.*?)</script>', page, re.S)
    assert blob is not None
    payload = json.loads(blob.group(1))
    assert len(payload["nodes"]) == len(data.nodes) and payload["path"]["q_star"] == data.path.q_star
    assert page.count("<svg") == 1


def test_spectrum_svg_marks_the_selected_eigenvalues() -> None:
    svg = spectrum_svg({"top_eigenvalues": [1.0, 0.4, -0.3]}, [1])
    assert svg.count("<circle") == 3 and svg.count('fill="#4e79a7"') == 1 and svg.count('fill="#999"') == 2
    assert spectrum_svg(None, []) == ""


def test_cli_writes_the_page(gem_memory: Memory, tmp_path: Path) -> None:
    directory = gem_memory.store.database.directory
    gem_memory.close()
    out = tmp_path / "view.html"
    result = CliRunner().invoke(
        app, ["view", "--memory", str(directory), "-s", "gem", "-o", str(out), "--min-weight", "0"]
    )
    assert result.exit_code == 0, result.output
    assert out.exists() and "edges" in result.output
    missing = CliRunner().invoke(app, ["view", "--memory", str(tmp_path / "nothing"), "-o", str(out)])
    assert missing.exit_code == 2 and "not a gemrag memory" in missing.output


def test_cli_question_path_needs_the_embedder_only(tmp_path: Path, config: Config) -> None:
    """`--question` with the real MiniLM embedder (a main dependency) and an LLM that cannot be reached: GEM's
    retrieval calls no LLM, and the page carries the walk."""
    directory = tmp_path / "real"
    with Memory.open(directory, config, llm=ScriptedLLM()) as mem:  # the configured (real) embedder
        mem.add_text(DOC_A, "lighthouse")
        mem.add_text(DOC_B, "garden")
        mem.index()
        expected = [h.node_id for h in mem.retrieve(QUESTION, 3)]
    out = tmp_path / "path.html"
    unreachable = {"GEMRAG_LLM__PROVIDER": "openai", "GEMRAG_LLM__BASE_URL": "http://127.0.0.1:9/v1"}
    args = ["view", "-m", str(directory), "-s", "gem", "-o", str(out), "-q", QUESTION, "-b", "3"]
    result = CliRunner().invoke(app, args, env=unreachable)
    assert result.exit_code == 0, result.output
    assert "path of 3 nodes" in result.output
    blob = re.search(r'<script type="application/json" id="gemrag-data">(.*?)</script>', out.read_text(), re.S)
    path = json.loads(blob.group(1))["path"]
    assert [s["node"] for s in path["steps"]] == expected
    assert path["steps"][0]["via"] is None and path["q_star"]
    fake = build_gem_memory(tmp_path / "fake", config)  # hashing embedder: the configured one does not match
    fake.close()
    wrong = CliRunner().invoke(app, ["view", "-m", str(tmp_path / "fake"), "-s", "gem", "-o", str(out), "-q", QUESTION])
    assert wrong.exit_code == 2 and "error" in wrong.output
