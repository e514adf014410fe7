"""A strategy's published structures in a form comparable across memories, for "removal equals a build without the
document" (DESIGN.md, "Forgetting"): store nodes with their texts, meta and sources' texts, store edges and their
weights, every published array (free of store ids and row order), BM25's scores; and their differences (node texts
exactly, arrays and weights within float tolerance). Used by tests/test_forgetting_merge.py and, with the test
doubles, by benchmarks/forgetting.py (its ``merged_relation`` and ``edge_only`` scenarios)."""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from fakes import pca
from gemrag import Memory
from gemrag.memory.states import StaleStrategyWarning
from gemrag.store.graph_rows import INPUTS
from gemrag.strategies.raptor.strategy import RaptorConfig, RaptorStrategy

AT_REMOVAL = ("dense", "bm25", "remem", "remem_gist", "remem_temporal", "hlgraph", "unweaver", "fused", "iterative")
"""Equal to the build without B from the removal on."""
CHUNK_PART_AT_REMOVAL = ("gem", "raptor")
"""Their chunk graph equal from the removal on; their summaries after the next ``index``."""
ID_ARRAYS = ("node_ids", "class_ids", "fact_ids", "rel_fact", "node_gist")
"""Arrays whose values are store node ids (-1: none)."""
REF_ARRAYS = ("fact_subject", "fact_object", "rel_src", "rel_dst", "question_owner")
"""Arrays whose values are rows of the ``n`` axis."""
QUESTION_ARRAYS = ("question_ids",)
"""Arrays whose values are store ids of utility questions."""
IGNORED_META = {"pruned_from", "vector_search", "gist_calls", "failed_this_build"}
"""Not structure: the generation a pruned one came from, and what the last build did (LLM calls it asked for, items
that failed in it), which a build answered from artefacts does not repeat."""


MERGE_OVERRIDES = {"memory": {"chunk_tokens": 40}, "gem": {"questions": 2, "eigen": 2, "eigen_top": 3}}
"""The configuration of the three-document comparisons: small chunks (one or two sentences each), few questions."""


def deterministic_raptor(mem: Memory) -> Memory:
    """``mem`` with RAPTOR reducing by PCA (:func:`fakes.pca`) instead of UMAP: deterministic, no numba compile."""
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


def built(mem: Memory, *, chunks_only: Sequence[str] = ()) -> dict[str, dict[str, Any]]:
    """The published structures of every strategy built in the memory (a composite's parts included); those named
    in ``chunks_only`` by their chunk part."""
    names = sorted(mem.store.published_generations())
    return {n: published(mem, n, chunks_only=n in chunks_only) for n in names}


def differences(got: dict[str, Any], want: dict[str, Any], what: str) -> list[str]:
    """How one strategy's :func:`published` structures ``got`` differ from ``want`` (empty: equal)."""
    out = []
    for part, name in (("nodes", "node texts, meta or sources"), ("meta", "build meta"), ("bm25", "BM25 scores")):
        if got[part] != want[part]:
            out.append(f"{what}: {name} differ")
    if got["edges"].keys() != want["edges"].keys():
        out.append(f"{what}: store edges differ")
    out += [f"{what}: edge {k} weighs {got['edges'][k]}, not {w}" for k, w in want["edges"].items()
            if k in got["edges"] and not math.isclose(got["edges"][k], w, abs_tol=1e-6)]  # fmt: skip
    if got["arrays"].keys() != want["arrays"].keys():
        return [*out, f"{what}: arrays differ"]
    for k, w in want["arrays"].items():
        g = got["arrays"][k]
        if isinstance(w, dict):  # a matrix over two axes
            if g.keys() != w.keys():
                out.append(f"{what}: array {k} has other entries")
            out += [f"{what}: {k}{e} = {g[e]}, not {v}" for e, v in w.items()
                    if e in g and not math.isclose(g[e], v, abs_tol=1e-5)]  # fmt: skip
        elif g[0] != w[0]:
            out.append(f"{what}: rows of axis {k} differ")
        elif not all(np.allclose(a, b, atol=1e-5) for a, b in zip(g[1], w[1], strict=True)):
            out.append(f"{what}: values of axis {k} differ")
    return out


def build_differences(got: dict[str, Any], want: dict[str, Any], what: str) -> list[str]:
    """How the :func:`built` structures ``got`` of a memory differ from ``want`` (empty: equal)."""
    if got.keys() != want.keys():
        return [f"{what}: other strategies built ({sorted(got)}, not {sorted(want)})"]
    return [d for name in want for d in differences(got[name], want[name], f"{name} {what}")]
