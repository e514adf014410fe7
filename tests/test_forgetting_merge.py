"""A kept node keeps nothing of a removed source (DESIGN.md, "Forgetting"): for every strategy, removing a document
from a memory of documents A, B and C leaves the published structures (store nodes and their texts, meta and
sources, store edges and their weights, every published array, BM25's scores) equal to those of a memory built
from A and C alone with the same (deterministic) test doubles: node texts exactly, arrays and weights within float
tolerance.

Two moments are compared. *At the removal* (``delete``, no LLM call), for every strategy whose published structures
need no LLM call to be remade: the baselines, REMem (facts, entities, synonym edges, the PPR graph), HLGraphRAG
(subjects, relations, events, their wording and weights), UnWeaver (classes and representatives), REMem's
gist strategies (gists are per window of one document); for GEM and RAPTOR the chunk part of their graphs (GEM's
chunk-graph weights, the chunk vectors and questions), since their summaries leave with a member and need the LLM.
*After the next* ``index`` (answered from the LLM cache), every strategy whole."""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from test_strategy_raptor import pca

from backends import MemoryAt
from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.config import Config, load_config
from gemrag.memory.states import StaleStrategyWarning
from gemrag.models.base import Completion, Message
from gemrag.store.graph_rows import INPUTS
from gemrag.strategies import available, get_strategy
from gemrag.strategies.hlgraph.facts import passive_voice
from gemrag.strategies.raptor.strategy import RaptorConfig, RaptorStrategy

DOCS = {
    "a": (
        "Ilse Varga met Tomas Reyes in Valdora. Tomas Reyes sold the old ledger to Mayor Holt. "
        "The harbour of Valdora was quiet that winter, and the fishing boats stayed in port for weeks."
    ),
    "b": (
        "Ilse Varga PAID Mayor Holt. Ilse Varga bribed Valdora. Mayor Holt warned Ilse Varga because the "
        "Kestrel storm came in 1999. The Kestrel ledger listed every payment to the harbour office."
    ),
    "c": (
        "Ilse Varga paid Mayor Holt. Mayor Holt warned Ilse Varga because the harbour vote was near. "
        "Tomas Reyes left Valdora for Quillon, where the markets were larger and the winters milder."
    ),
}
"""B states a relation C states too, first and in other words (``PAID``: a merged relation keeps the first
chunk's label and passive), the one edge between two entities that survive it (``bribed``), and an event C states
too with another why and time frame."""

AT_REMOVAL = ("dense", "bm25", "remem", "remem_gist", "remem_temporal", "hlgraph", "unweaver", "fused", "iterative")
"""Equal to the build without B from the removal on."""
CHUNK_PART_AT_REMOVAL = ("gem", "raptor")
"""Their chunk graph equal from the removal on; their summaries after the next ``index``."""
STRATEGIES = (*AT_REMOVAL, *CHUNK_PART_AT_REMOVAL, "full")

ID_ARRAYS = ("node_ids", "class_ids", "fact_ids", "rel_fact", "node_gist")
"""Arrays whose values are store node ids (-1: none)."""
REF_ARRAYS = ("fact_subject", "fact_object", "rel_src", "rel_dst", "question_owner")
"""Arrays whose values are rows of the ``n`` axis."""
QUESTION_ARRAYS = ("question_ids",)
"""Arrays whose values are store ids of utility questions."""
IGNORED_META = {"pruned_from", "vector_search", "gist_calls", "failed_this_build"}
"""Not structure: the generation a pruned one came from, and what the last build did (LLM calls it asked for, items
that failed in it), which a build answered from artefacts does not repeat."""


@pytest.fixture
def merge_config(config: Config) -> Config:
    return load_config(None, {"memory": {"chunk_tokens": 40}, "gem": {"questions": 2, "eigen": 2, "eigen_top": 3}})


def open_memory(location: str | Path, config: Config, llm: ScriptedLLM | None = None) -> Memory:
    mem = Memory.open(location, config, llm=llm or ScriptedLLM(), embedder=HashEmbedder())
    mem._strategies["raptor"] = RaptorStrategy(RaptorConfig(reducer=pca, reduction_dim=3, max_clusters=6))
    return mem


Key = tuple[str, str]


def node_keys(mem: Memory, ids: Sequence[int]) -> dict[int, Key]:
    """A store id's identity across memories: (kind, text)."""
    rows = mem.store.nodes_by_id([int(i) for i in ids if int(i) >= 0])
    return {i: (r.kind, r.text) for i, r in rows.items()}


def strategy_nodes(mem: Memory, name: str) -> list[tuple[Any, ...]]:
    """The strategy's published nodes: kind, text, meta (without the input count) and their sources' texts."""
    nodes = mem.store.nodes(strategy=name)
    sources = mem.store.node_sources([n.id for n in nodes])
    texts = node_keys(mem, sorted({s for ids in sources.values() for s in ids}))
    members = node_keys(mem, sorted({int(i) for n in nodes for i in n.meta.get("members", [])}))
    out = []
    for n in nodes:
        meta = {k: v for k, v in n.meta.items() if k != INPUTS}
        if "members" in meta:  # a gist's turns, by store id
            meta["members"] = [members[int(i)] for i in meta["members"]]
        if isinstance(meta.get("gist"), int):  # a gist fact's gist
            meta["gist"] = node_keys(mem, [meta["gist"]]).get(meta["gist"])
        out.append((n.kind, n.text, json.dumps(meta, sort_keys=True), sorted(texts[s] for s in sources[n.id])))
        assert n.meta.get(INPUTS, len(sources[n.id])) == len(sources[n.id]), (n.kind, n.text)
    return sorted(out, key=repr)


def strategy_edges(mem: Memory, name: str) -> dict[tuple[str, Key, Key], float]:
    edges = mem.store.edge_list(name)
    keys = node_keys(mem, sorted({e[1] for e in edges} | {e[2] for e in edges}))
    return {(kind, keys[a], keys[b]): float(w) for kind, a, b, w in edges}


def array_records(mem: Memory, name: str, chunks_only: bool) -> dict[str, Any]:
    """Every published array in a form free of store ids and row order: per axis, its rows as (discrete part,
    float part) sorted; matrices over two axes as ``{(row, column): value}``."""
    published = mem.store.load_published(name, mmap=False)
    manifest = mem.store.manifest(name)
    if published is None or manifest is None:
        return {}
    axes = {k: e.axes or ("_" + k,) for k, e in manifest.arrays.items()}
    arrays = {k: sp.csr_matrix(a) if sp.issparse(a) else np.asarray(a) for k, a in published.arrays.items()}
    ids = sorted({int(v) for k in ID_ARRAYS if k in arrays for v in np.asarray(arrays[k]).ravel()})
    keys = node_keys(mem, ids)

    questions = {qid: text for qid, _, text in mem.store.questions()} if "question_ids" in arrays else {}

    def column(k: str) -> list[Any]:
        a = np.asarray(arrays[k])
        if k in QUESTION_ARRAYS:
            return [questions[int(v)] for v in a]
        if k in ID_ARRAYS:
            return [keys.get(int(v)) for v in a]
        if k in REF_ARRAYS:
            n_ids = np.asarray(arrays["node_ids"])
            return [keys[int(n_ids[int(v)])] for v in a]
        return a.tolist()

    row_axes = sorted({ax[0] for ax in axes.values()})
    labels: dict[str, list[Any]] = {}  # per axis, each row's discrete identity
    out: dict[str, Any] = {}
    for axis in row_axes:
        one_d = sorted(k for k, ax in axes.items() if ax == (axis,))
        named = (*ID_ARRAYS, *REF_ARRAYS, *QUESTION_ARRAYS)
        discrete = [k for k in one_d if k in named or arrays[k].dtype.kind in "iub"]
        floats = [k for k in one_d if k not in discrete] + sorted(k for k, ax in axes.items() if ax == (axis, "d"))
        n = next(arrays[k].shape[0] for k, ax in axes.items() if ax[0] == axis)
        cols = {k: column(k) for k in discrete}
        rows = [tuple((k, cols[k][i]) for k in discrete) for i in range(n)]
        labels[axis] = rows
        values = [np.concatenate([np.ravel(arrays[k][i]).astype(np.float64) for k in floats] or [np.zeros(0)])
                  for i in range(n)]  # fmt: skip
        keep = [i for i in range(n) if not chunks_only or _is_chunk_row(rows[i])]
        order = sorted(keep, key=lambda i: (repr(rows[i]), np.round(values[i], 4).tolist()))
        out[axis] = ([rows[i] for i in order], [values[i] for i in order])
    for k, ax in axes.items():
        if len(ax) == 2 and ax[1] != "d":
            m = sp.coo_matrix(arrays[k])
            entries = {}
            for i, j, v in zip(m.row.tolist(), m.col.tolist(), m.data.tolist(), strict=True):
                a, b = labels[ax[0]][i], labels[ax[1]][j]
                if chunks_only and not (_is_chunk_row(a) and _is_chunk_row(b)):
                    continue
                if v != 0:
                    entries[(repr(a), repr(b))] = entries.get((repr(a), repr(b)), 0.0) + v
            out[k] = entries
    return out


def _is_chunk_row(row: tuple[Any, ...]) -> bool:
    """A row standing for a chunk: of the ``n`` axis, or a question a chunk owns (or a row of another axis)."""
    ids = [v for k, v in row if k in ("node_ids", "question_owner")]
    return not ids or (ids[0] is not None and ids[0][0] == "chunk")


def bm25_scores(mem: Memory) -> dict[str, dict[str, float]]:
    """BM25's score of every chunk for every word of the memory (its statistics: idf, document lengths)."""
    chunks = mem.store.nodes("chunk")
    words = sorted({w.strip(".,").lower() for c in chunks for w in c.text.split()} - {""})
    out = {}
    for w in words:
        hits = mem.retrieve(w, len(chunks), strategy="bm25")
        out[w] = {h.text: round(h.score, 6) for h in hits if h.score > 0}
    return out


def published(mem: Memory, name: str, *, chunks_only: bool = False) -> dict[str, Any]:
    """The strategy's published structures (module docstring), comparable across memories."""
    manifest = mem.store.manifest(name)
    meta = {k: v for k, v in (manifest.meta if manifest else {}).items() if k not in IGNORED_META}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StaleStrategyWarning)
        return {
            "nodes": [] if chunks_only else strategy_nodes(mem, name),
            "edges": {} if chunks_only else strategy_edges(mem, name),
            "meta": {} if chunks_only else meta,
            "arrays": array_records(mem, name, chunks_only),
            "bm25": bm25_scores(mem) if name == "bm25" else {},
        }


def assert_same(got: dict[str, Any], want: dict[str, Any], what: str) -> None:
    assert got["nodes"] == want["nodes"], f"{what}: node texts, meta or sources differ"
    assert got["meta"] == want["meta"], f"{what}: build meta differ"
    assert got["bm25"] == want["bm25"], f"{what}: BM25 scores differ"
    assert got["edges"].keys() == want["edges"].keys(), f"{what}: store edges differ"
    for k, w in want["edges"].items():
        assert got["edges"][k] == pytest.approx(w, abs=1e-6), f"{what}: edge {k} weighs {got['edges'][k]}, not {w}"
    assert got["arrays"].keys() == want["arrays"].keys(), f"{what}: arrays differ"
    for k, w in want["arrays"].items():
        g = got["arrays"][k]
        if isinstance(w, dict):  # a matrix over two axes
            assert g.keys() == w.keys(), f"{what}: array {k} has other entries"
            for e, v in w.items():
                assert g[e] == pytest.approx(v, abs=1e-5), f"{what}: {k}{e} = {g[e]}, not {v}"
        else:
            assert g[0] == w[0], f"{what}: rows of axis {k} differ"
            for a, b in zip(g[1], w[1], strict=True):
                np.testing.assert_allclose(a, b, atol=1e-5, err_msg=f"{what}: axis {k}")


def build(mem: Memory, docs: Sequence[str], name: str) -> None:
    for d in docs:
        mem.add_text(DOCS[d], d, id=d)
    mem.index(name)


def built(mem: Memory, *, chunks_only: Sequence[str] = ()) -> dict[str, dict[str, Any]]:
    """The published structures of every strategy built in the memory (a composite's parts included); those named
    in ``chunks_only`` by their chunk part."""
    names = sorted(mem.store.published_generations())
    return {n: published(mem, n, chunks_only=n in chunks_only) for n in names}


def assert_same_builds(got: dict[str, Any], want: dict[str, Any], what: str) -> None:
    assert got.keys() == want.keys(), f"{what}: other strategies built"
    for name in want:
        assert_same(got[name], want[name], f"{name} {what}")


def test_every_registered_strategy_is_compared() -> None:
    """A strategy gemrag ships must join the removal-equals-a-build comparison (or say why not); strategies other
    test modules register are not gemrag's."""
    shipped = [n for n in available() if type(get_strategy(n)).__module__.startswith("gemrag.")]
    assert sorted(STRATEGIES) == sorted(shipped)


@pytest.mark.parametrize("name", STRATEGIES)
def test_removal_equals_a_build_without_the_document(name: str, tmp_path: Path, merge_config: Config) -> None:
    with open_memory(tmp_path / "ac", merge_config) as mem:
        build(mem, "ac", name)
        want = built(mem)
        want_chunks = built(mem, chunks_only=CHUNK_PART_AT_REMOVAL)
    with open_memory(tmp_path / "abc", merge_config) as mem:
        build(mem, "abc", name)
        if want:  # B changed what was built: the comparison can fail
            assert built(mem) != want
        mem.delete("b")
        if name in CHUNK_PART_AT_REMOVAL:
            assert_same_builds(
                built(mem, chunks_only=CHUNK_PART_AT_REMOVAL), want_chunks, "(chunk graph) at the removal"
            )
        else:
            assert_same_builds(built(mem), want, "at the removal")
        mem.index(name)
        assert_same_builds(built(mem), want, "after the next index")


class LedgerLLM(ScriptedLLM):
    """The scripted LLM, but HLGraphRAG's extraction of a chunk naming the Kestrel ledger writes its own passive
    voice for the relation, naming the ledger (what an LLM adds that no remaining chunk states)."""

    def complete(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
        done = super().complete(messages, **kwargs)
        system = messages[0]["content"] if messages else ""
        if system.startswith("You build a memory of who did what") and "Kestrel" in str(messages[-1]["content"]):
            parsed = dict(done.parsed or {})
            parsed["relations"] = [
                {**r, "passive": "was paid through the Kestrel offshore ledger by"} for r in parsed["relations"]
            ]
            return Completion(json.dumps(parsed), parsed, done.usage)
        return done


def sentences(mem: Memory, question: str) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StaleStrategyWarning)
        return " ".join(h.text for h in mem.retrieve(question, 3, strategy="hlgraph"))


def test_a_merged_relation_loses_the_removed_documents_wording(memory_at: MemoryAt, merge_config: Config) -> None:
    with open_memory(memory_at("m"), merge_config, LedgerLLM()) as mem:
        build(mem, "abc", "hlgraph")
        (paid,) = [n for n in mem.store.nodes("relation", strategy="hlgraph") if "paid" in n.text.lower()]
        assert paid.meta["label"] == "PAID" and "Kestrel" in paid.meta["passive"]  # B's wording, B's chunk first
        mem.delete("b")
        (paid,) = [n for n in mem.store.nodes("relation", strategy="hlgraph") if "paid" in n.text.lower()]
        assert (paid.text, paid.meta["label"]) == ("Ilse Varga paid Mayor Holt.", "paid")
        assert paid.meta["passive"] == passive_voice("paid")  # C's: the rule's, as C's answer gave none
        assert len(mem.store.node_sources([paid.id])[paid.id]) == 1
        everything = json.dumps([(n.text, n.meta) for n in mem.store.nodes(strategy="hlgraph")])
        assert "Kestrel" not in everything and "PAID" not in everything and "1999" not in everything
        assert "Kestrel" not in sentences(mem, "Who paid Mayor Holt?")
        (warned,) = [n for n in mem.store.nodes("event", strategy="hlgraph")]  # C states the event too: it stays
        assert warned.meta["why"] == "the harbour vote was near" and warned.meta["time"] == ""


def fact_edge(mem: Memory, a: str, b: str) -> float:
    entities = {n.text: n.id for n in mem.store.nodes("entity", strategy="remem")}
    return sum(w for kind, s, d, w in mem.store.edge_list("remem", "fact") if (s, d) == (entities[a], entities[b]))


def test_an_edge_only_the_removed_document_made_goes_with_it(memory_at: MemoryAt, merge_config: Config) -> None:
    with open_memory(memory_at("m"), merge_config) as mem:
        build(mem, "abc", "remem")
        # triple occurrences counted both ways (HippoRAG 2's weights): "paid" and "warned" in B and in C
        assert fact_edge(mem, "ilse varga", "mayor holt") == 2 * 4
        assert fact_edge(mem, "ilse varga", "valdora") == 2 * 1  # "bribed": B alone
        mem.delete("b")
        assert fact_edge(mem, "ilse varga", "mayor holt") == 2 * 2  # C's share only
        assert fact_edge(mem, "ilse varga", "valdora") == 0.0  # both entities stay (A, C), the edge goes
        facts = {n.text for n in mem.store.nodes("fact", strategy="remem")}
        assert "ilse varga paid mayor holt" in facts and not [f for f in facts if "bribed" in f]
        entities = {n.text: n for n in mem.store.nodes("entity", strategy="remem")}
        sources = mem.store.node_sources([entities["ilse varga"].id])[entities["ilse varga"].id]
        assert entities["ilse varga"].meta["inputs"] == len(sources)  # what it rests on now


def test_unweaver_keeps_an_unchanged_shortening_and_defers_a_changed_one(tmp_path: Path) -> None:
    """A class whose descriptions are too long (here over 100 characters) is shortened by the LLM: at a removal, one
    the removal left unchanged keeps its shortening (no LLM call), one it changed leaves until the next ``index``."""
    cfg = load_config(None, {"memory": {"chunk_tokens": 40}, "unweaver": {"representative_max_chars": 100}})

    def classes(mem: Memory) -> dict[str, dict[str, Any]]:
        return {n.text: n.meta for n in mem.store.nodes("entity", strategy="unweaver")}

    with open_memory(tmp_path / "ac", cfg) as mem:
        build(mem, "ac", "unweaver")
        want = classes(mem)
    llm = ScriptedLLM()
    with open_memory(tmp_path / "abc", cfg, llm) as mem:
        build(mem, "abc", "unweaver")
        before = classes(mem)
        calls = llm.calls
        mem.delete("b")
        assert llm.calls == calls
        after = classes(mem)
        reused = [n for n, m in after.items() if m["shortened"] == "llm"]
        deferred = sorted(set(want) - set(after))
        assert reused and deferred  # the case each way
        for name in reused:  # unchanged by the removal: the same shortening as before and as without B
            assert after[name]["representative"] == before[name]["representative"] == want[name]["representative"]
        for name in deferred:  # changed and too long: its shortening needs the LLM
            assert want[name]["shortened"] == "llm" and name in before
        for name, meta in after.items():  # the others as without B
            assert meta == want[name]
        mem.index("unweaver")
        assert classes(mem) == want
