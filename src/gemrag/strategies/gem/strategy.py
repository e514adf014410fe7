"""GEM-RAG: Graphical Eigen Memories (Rappazzo et al.; seeds gem-rag-paper-v1/v2, section III.B).

Build (section III.B.1):
  1. utility questions: m per chunk, Q(CHUNK_i, m), as structured output (``utility_questions.py``);
  2. embeddings: v_i = E(CHUNK_i), v_ij = (E(q_ij) + v_i) / 2;
  3. weighted complete graph: s_tv = Σ_i SIM(v_ti, v_v);
  4. eigenthemes: L = D^-1/2 (S − I) D^-1/2, eigenpairs by non-increasing |λ|; the top e components of
     each of the top k eigenvectors (``gem.skip_trivial``: skipping λ1 = 1, the Perron vector) are summarized
     by the LLM into a summary node, which gets utility questions, embeddings and edges like every other node
     (``summaries.py``). S and the eigenpairs are computed once per build, dense or, above
     ``gem.sparse_above`` chunks, as a kNN graph with Lanczos (``graph.py``);
  5. the spectrum report (Remarks 2 and 3).
  Steps 1 and 2 read a chunk as its text alone, as the paper's Q(CHUNK_i, m) and E(CHUNK_i); ``gem.read_titles =
  true`` reads ``title\ntext`` instead (:mod:`gemrag.strategies.platform.titles`), and a change of that choice
  regenerates the utility questions, as a change of m does.
Retrieve (section III.B.2, Algorithm 1): embed the prompt, q* = argmax_q SIM(v_p, v_q), then best-first
search from q*'s node until the budget B is filled (``search="best_first"``), or the literal Algorithm 1
ranking (``search="rank"``).
Ablations (Table I last row, Figure 2): ``members="kmeans"`` picks summary members by k-means instead of the
eigenvectors (``summaries.py``); ``search="fused"`` ranks nodes by max(cos(v_p, v_u), max_j cos(v_p, v_uj))
without walking the graph (:func:`gemrag.strategies.gem.search.fused_ranking`); ``questions=0`` and ``eigen=0`` need
no special code.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from gemrag.errors import MemoryNotIndexedError
from gemrag.graph.ann import coarse_partition, list_count
from gemrag.graph.laplacian import adjacency_matrix
from gemrag.graph.similarity import extend_similarity, utility_question_vectors
from gemrag.store import Published
from gemrag.store.parts import BuildReads
from gemrag.store.publish import Publication
from gemrag.strategies.base import StrategyContext, Themes, register
from gemrag.strategies.gem.ann_search import AnnPreparedGraph
from gemrag.strategies.gem.graph import Matrix, chunk_graph, eigen_selection, graph_mode
from gemrag.strategies.gem.plan import plan_gem
from gemrag.strategies.gem.search import PreparedGraph, top_k_edges
from gemrag.strategies.gem.settings import GemConfig
from gemrag.strategies.gem.summaries import MIN_NODES, build_eigentheme_summaries
from gemrag.strategies.gem.themes import gem_themes
from gemrag.strategies.gem.utility_questions import generate_utility_questions, nodes_needing_questions
from gemrag.strategies.platform.common import (
    document_order,
    embed_node_ids,
    load_published,
    nearest,
    not_indexed,
    prompt_vector,
    publish_arrays,
)
from gemrag.strategies.platform.incremental import referencing_prune
from gemrag.strategies.platform.planning import PlanWork, StrategyPlan
from gemrag.strategies.platform.titles import memory_titles, strategy_reads_titles
from gemrag.types import Hit

EDGES_PER_NODE = 10
NOT_INDEXED = "this memory has no GEM graph yet: run `gemrag index` first"
QUESTION_BLOCK = 65536
"""Utility questions embedded and turned into question vectors at a time (:func:`node_graph_inputs`)."""

QUESTION_DTYPE: np.dtype[np.floating[Any]] = np.dtype(np.float16)
"""The dtype GEM keeps and publishes its question vectors ``v_ij`` in: float16 (half precision), so a
1M-chunk build holds 3.9 GB of them instead of 7.7 GB at m = 5, d = 384. Every consumer reads them one block of rows
at a time in float32 (or converts small ones whole), and a memory published with float32 ones is read alike. Not a
setting: a knob for measurements only (``benchmarks/bench_gem_build.py --question-dtype float32`` sets it to float32
before a build to measure what half precision saves); :func:`node_graph_inputs` and :meth:`GemGraph.publish` read it
when they run."""

QUESTIONS_TITLES_META = "gem_questions_titles"
"""The memory's ``meta`` key recording whether the stored utility questions were written from ``title\ntext`` (absent:
written before GEM chose, so as the memory's ``chunk_titles`` record)."""


@dataclass
class GemGraph:
    """The arrays retrieval needs, as published in the memory directory (``gem.g<generation>.<name>.npy``).

    Attributes:
        node_ids: (N,) int64 store ids of chunk and summary nodes, in matrix order.
        node_vectors: (N, d) float32 v_i = E(text_i), unit rows.
        question_vectors: (M, d) v_ij = (E(q_ij) + v_i) / 2 (not unit norm), float16 (:data:`QUESTION_DTYPE`;
            published in half precision, read one block at a time; a memory built before kept float32, read alike).
        question_owner: (M,) int64 index into ``node_ids`` of each question's node.
        question_ids: (M,) int64 store ids of the questions.
        weights: (N, N) float64 W, the symmetric non-negative edge weights (symmetric part of S, negatives
            clipped, zero diagonal) the best-first search walks on: a dense array (``gem.graph = "dense"``,
            stored as ``weights``) or a scipy.sparse CSR matrix of the kNN graph (``"sparse"``, stored as
            ``weights_data``/``weights_indices``/``weights_indptr``).
        question_list: (M,) int32 inverted list of each question, or None: built from ``gem.ann_above`` chunks on,
            so retrieval scans the best-matching lists instead of every question (:mod:`.ann_search`).
        list_centroids: (L, d) float32 unit centroids of those lists, or None.
    """

    node_ids: np.ndarray
    node_vectors: np.ndarray
    question_vectors: np.ndarray
    question_owner: np.ndarray
    question_ids: np.ndarray
    weights: Matrix
    question_list: np.ndarray | None = None
    list_centroids: np.ndarray | None = None

    NAMES = ("node_ids", "node_vectors", "question_vectors", "question_owner", "question_ids")
    AXES = {
        "node_ids": ("n",),
        "node_vectors": ("n", "d"),
        "question_vectors": ("m", "d"),
        "question_owner": ("m",),
        "question_ids": ("m",),
        "weights": ("n", "n"),
        "question_list": ("m",),
        "list_centroids": ("l", "d"),
    }
    """Named dimensions, checked by readers: n nodes, m questions, d embedding dimensions."""

    def publish(
        self,
        ctx: StrategyContext,
        generation: int,
        meta: dict[str, Any],
        edges: tuple[np.ndarray, np.ndarray, np.ndarray],
    ) -> None:
        """Write every array of ``generation`` (W dense as ``.npy`` or sparse as ``.npz``) and publish it with its
        metadata and ``similarity`` edges, atomically."""
        arrays = {name: getattr(self, name) for name in self.NAMES} | {"weights": self.weights}
        arrays["question_vectors"] = np.asarray(self.question_vectors, dtype=QUESTION_DTYPE)  # half precision stored
        if self.question_list is not None and self.list_centroids is not None:
            arrays |= {"question_list": self.question_list, "list_centroids": self.list_centroids}
        publish_arrays(
            ctx,
            "gem",
            generation,
            arrays,
            axes=self.AXES,
            meta=meta,
            edges={"similarity": edges},
            search=[] if self.question_list is not None else ["question_vectors"],  # the lists find q* above ann_above
        )

    @classmethod
    def from_published(cls, published: Published) -> GemGraph:
        """The graph of a published generation (memory-mapped arrays)."""
        fields: dict[str, np.ndarray] = {name: published.arrays[name] for name in cls.NAMES}
        return cls(
            **fields,
            weights=published.arrays["weights"],
            question_list=published.arrays.get("question_list"),
            list_centroids=published.arrays.get("list_centroids"),
        )


@dataclass
class LoadedGem:
    """One published generation ready for retrieval: the graph, its prepared form and its questions' texts."""

    graph: GemGraph
    prepared: PreparedGraph
    question_text: dict[int, str]
    generation: int = 0


def node_graph_inputs(
    ctx: StrategyContext, node_ids: list[int], build: tuple[str, int] | None = None, *, titles: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Embeddings for the given nodes and their utility questions.

    Args:
        ctx: the strategy context.
        node_ids: store ids of the nodes, in matrix order.
        build: the builder's view ``(strategy, generation)`` whose new nodes' questions count (None: published).
        titles: embed a chunk as its document's title and its text (``gem.read_titles``); else its text, v_i =
            E(CHUNK_i) of section III.B.1.

    Returns:
        ``(node_vectors (N,d) float32, question_vectors (M,d) float16 = v_ij, owner (M,) int64,
        question_ids (M,) int64)``. The question vectors are computed in float32 one block of
        :data:`QUESTION_BLOCK` questions at a time and kept in half precision (:data:`QUESTION_DTYPE`; every
        consumer reads them one block at a time in float32, or converts small ones whole): at 1M chunks and m = 5
        they are 3.9 GB, not 7.7 GB.
    """
    index = {nid: i for i, nid in enumerate(node_ids)}
    node_vectors = embed_node_ids(ctx, node_ids, titles=titles)
    rows = [(qid, index[nid], text) for qid, nid, text in ctx.store.questions(build=build) if nid in index]
    owner = np.array([r[1] for r in rows], dtype=np.int64)
    question_ids = np.array([r[0] for r in rows], dtype=np.int64)
    questions = np.empty((len(rows), node_vectors.shape[1]), dtype=QUESTION_DTYPE)
    for lo in range(0, len(rows), QUESTION_BLOCK):
        part = rows[lo : lo + QUESTION_BLOCK]
        q_emb = ctx.embedder.embed([r[2] for r in part])
        questions[lo : lo + len(part)] = utility_question_vectors(q_emb, node_vectors, owner[lo : lo + len(part)])
    return node_vectors, questions, owner, question_ids


@register("gem", config=GemConfig)
class GemStrategy:
    """GEM-RAG as a :class:`~gemrag.strategies.base.Strategy` (paper section III.B, Algorithm 1), constructed with
    its validated ``[gem]`` section (:class:`~gemrag.strategies.gem.settings.GemConfig`) like every method."""

    name = "gem"
    reads_titles = False
    """Questions and vectors of the chunk alone by default (section III.B.1: Q(CHUNK_i, m), E(CHUNK_i))."""
    retrieval_settings = frozenset({"search"})
    """The settings that change retrieval alone (:func:`gemrag.strategies.base.retrieval_settings`): the search."""

    def __init__(self, config: GemConfig | None = None) -> None:
        self.config = config or GemConfig()

    def build(self, ctx: StrategyContext) -> None:
        """Generate utility questions, build the graph and the eigentheme summary nodes, publish generation g.

        Resumable: questions are committed per chunk and every LLM answer is cached, so an interrupted
        build repeats no LLM call. Re-running after adding documents regenerates only what changed (new
        chunks' questions; summary nodes whose member texts changed). Atomic: the new summary nodes, arrays and
        edges become visible together when the generation is published; until then readers use the previous
        one (:mod:`gemrag.store.publish`).

        Raises:
            MemoryNotIndexedError: the memory holds no chunks.
        """
        cfg = self.config
        timings: dict[str, float] = dict(ctx.store.get_meta("gem_phase_seconds", {}))
        titles = strategy_reads_titles(ctx, self.name)
        self._keep_questions(ctx, cfg.questions, titles)

        chunks = sorted(ctx.store.nodes("chunk"), key=document_order)  # reading order, also after an update
        if not chunks:
            raise MemoryNotIndexedError("the memory holds no text: add documents first")
        generation = ctx.store.begin_build(self.name)
        view = (self.name, generation)
        t0 = time.perf_counter()
        generate_utility_questions(
            ctx, nodes_needing_questions(ctx, chunks), cfg.questions, titles=titles, dedupe=cfg.dedupe_questions
        )
        timings["utility_questions"] = timings.get("utility_questions", 0.0) + time.perf_counter() - t0

        t0 = time.perf_counter()
        chunk_ids = [n.id for n in chunks]
        vectors, qvectors, owner, _ = node_graph_inputs(ctx, chunk_ids, view, titles=titles)
        timings["embed"] = timings.get("embed", 0.0) + time.perf_counter() - t0

        t0 = time.perf_counter()
        mode = graph_mode(cfg, len(chunk_ids))
        S, L, eigen, report = chunk_graph(vectors, qvectors, owner, mode, cfg)
        spectral = cfg.members == "spectral" and len(chunk_ids) >= MIN_NODES
        selection = eigen_selection(eigen[0], cfg) if spectral else None
        timings["graph"] = timings.get("graph", 0.0) + time.perf_counter() - t0

        t0 = time.perf_counter()
        build_eigentheme_summaries(
            ctx,
            L,
            chunk_ids,
            k=cfg.eigen,
            top_e=cfg.eigen_top,
            chunk_vectors=vectors,
            generation=generation,
            eigen=eigen,
            settings=cfg,
        )
        timings["summaries"] = timings.get("summaries", 0.0) + time.perf_counter() - t0
        del L, eigen

        t0 = time.perf_counter()
        all_ids = chunk_ids + [n.id for n in ctx.store.nodes("summary", strategy=self.name, build=view)]
        vectors, qvectors, owner, qids = node_graph_inputs(ctx, all_ids, view, titles=titles)
        # S over all nodes = the chunk block computed above + the summary nodes' rows and columns.
        S = extend_similarity(
            S,
            vectors,
            qvectors,
            owner,
            k=cfg.knn if mode == "sparse" else None,
            low_memory=len(chunk_ids) >= cfg.ann_above,
        )
        W = adjacency_matrix(S, diagonal="zero")  # the symmetric part of S, negatives clipped, zero diagonal
        del S
        graph = GemGraph(np.array(all_ids, dtype=np.int64), vectors, qvectors, owner, qids, W)
        if mode == "sparse" and len(chunk_ids) >= cfg.ann_above and len(qids):
            graph.list_centroids, graph.question_list = coarse_partition(qvectors, list_count(len(qids)))
        src, dst, weight = top_k_edges(W, min(EDGES_PER_NODE, max(len(all_ids) - 1, 0)))
        ids = graph.node_ids
        graph.publish(
            ctx,
            generation,
            {"spectrum": report.as_dict(), "questions_m": cfg.questions, "graph": mode, "eigen_selection": selection},
            (ids[src], ids[dst], weight),
        )
        timings["graph"] += time.perf_counter() - t0
        ctx.store.set_meta("gem_phase_seconds", timings)

    def plan(self, ctx: StrategyContext, work: PlanWork) -> StrategyPlan:
        """What building now would cost (:func:`gemrag.strategies.gem.plan.plan_gem`): utility-question calls per
        pending chunk, the eigentheme summaries and their questions; writes nothing."""
        titles = strategy_reads_titles(ctx, self.name)
        return plan_gem(
            ctx, work, self.config, titles=titles, reset=self._stale_questions(ctx, self.config.questions, titles)
        )

    @staticmethod
    def _stale_questions(ctx: StrategyContext, m: int, titles: bool) -> bool:
        """Whether the stored utility questions were written for another m or from the other input."""
        asked_titles = ctx.store.get_meta(QUESTIONS_TITLES_META)
        if asked_titles is None:
            asked_titles = memory_titles(ctx.store)
        asked_m = ctx.store.get_meta("gem_questions_m")
        return asked_m is not None and (asked_m != m or asked_titles != titles)

    @staticmethod
    def _keep_questions(ctx: StrategyContext, m: int, titles: bool) -> None:
        """Forget the stored utility questions when they were written for another m or from the other input
        (with or without titles), and record what the questions to come are written for."""
        asked_titles = ctx.store.get_meta(QUESTIONS_TITLES_META)
        if asked_titles is None:
            asked_titles = memory_titles(ctx.store)
        asked_m = ctx.store.get_meta("gem_questions_m")
        if asked_m == m and asked_titles == titles and ctx.store.get_meta(QUESTIONS_TITLES_META) is not None:
            return
        with ctx.store.transaction():
            if GemStrategy._stale_questions(ctx, m, titles):
                ctx.store.reset_questions()
            ctx.store.set_meta("gem_questions_m", m)
            ctx.store.set_meta(QUESTIONS_TITLES_META, titles)

    def prune(self, ctx: StrategyContext, gone: set[int], generation: int) -> Publication | None:
        """The published graph without the nodes in ``gone`` (a deleted document's chunks and every summary node
        with one of them among its members: :mod:`gemrag.strategies.platform.forgetting`; the next build
        regenerates them), as generation ``generation``, not yet published: the rows of ``node_ids``,
        ``node_vectors`` and W lose the deleted nodes, the utility questions (axis ``"m"``) lose the deleted nodes'
        ones, and ``question_owner`` is re-indexed
        (:func:`gemrag.strategies.platform.incremental.referencing_prune`). None: no published graph."""
        return referencing_prune(ctx, self.name, gone, generation, axis="m", references=("question_owner",))

    def _loaded(self, ctx: StrategyContext) -> LoadedGem:
        """The published generation, validated and normalized once per generation (not per question)."""

        def make(published: Published) -> LoadedGem:
            g = GemGraph.from_published(published)
            prepared: PreparedGraph
            if g.question_list is not None and g.list_centroids is not None and sp.issparse(g.weights):
                prepared = AnnPreparedGraph.prepare_ann(
                    g.question_vectors, g.question_owner, g.node_vectors, g.weights, g.list_centroids, g.question_list
                )
            else:
                prepared = PreparedGraph.prepare(g.question_vectors, g.question_owner, g.node_vectors, g.weights)
            return LoadedGem(g, prepared, {qid: text for qid, _, text in ctx.store.questions()}, published.generation)

        return load_published(ctx, self.name, make, message=NOT_INDEXED)

    def retrieve(self, ctx: StrategyContext, question: str, budget: int) -> list[Hit]:
        """Algorithm 1 / best-first search (section III.B.2) for ``question`` with a budget of B nodes.

        Returns:
            At most ``budget`` hits, in retrieval order; ``score`` depends on ``gem.search`` (see
            :class:`gemrag.types.Hit`): ``"best_first"``: the walk priority that picked the node, rel(u) ·
            max_c W[c,u] / max(W) for a node reached over an edge, rel(u) for the start node and restarts (not
            rel(u) itself, so scores need not decrease); ``"rank"``: rel(u) = max_j SIM(v_p, v_uj), the
            prompt's cosine to the node's best utility question; ``"fused"``: max(cos(v_p, v_u), rel(u)).
            ``meta["matched_question"]`` names the best question. With ``"best_first"``, ``meta["via"]`` is the
            store id of the retrieved node whose edge led the walk to this one (None for the start node, the
            owner of q*, and for restarts): the hits in order with their ``via`` are the path of the walk.

        Raises:
            MemoryNotIndexedError: no graph has been built.
            StaleGenerationError: a newer generation replaced the one being read (the caller retries).
        """
        if ctx.store.published_generation(self.name) is None:
            raise not_indexed(ctx, self.name, NOT_INDEXED)
        v_p = prompt_vector(ctx, question)  # before the snapshot: it may write the embedding cache
        with ctx.store.snapshot():  # the arrays and the node rows of one generation
            loaded = self._loaded(ctx)
            if len(loaded.graph.node_ids) == 0:
                return []
            prepared = loaded.prepared
            search = self.config.search
            if search == "fused":
                order, scores = prepared.fused(v_p, budget)
            elif search == "rank":
                order, scores = prepared.rank(v_p, budget)
            else:
                if isinstance(prepared, AnnPreparedGraph):  # its coarse lists find q* (graph/ann.py)
                    order, scores, via = prepared.search_path(v_p, budget)
                else:
                    order, scores, via = prepared.search_path(v_p, budget, self._start(ctx, loaded, v_p))
                hits = self._hits(ctx, loaded, order, scores, v_p)
                for hit, came_from in zip(hits, via.tolist(), strict=True):
                    hit.meta["via"] = int(loaded.graph.node_ids[came_from]) if came_from >= 0 else None
                return hits
            return self._hits(ctx, loaded, order, scores, v_p)

    def _start(self, ctx: StrategyContext, loaded: LoadedGem, v_p: np.ndarray) -> int | None:
        """The walk's start node, the owner of ``q* = argmax_q SIM(v_p, v_q)`` (III.B.2), found by the store's
        nearest-neighbour search over the utility-question vectors (pgvector on PostgreSQL); a node without
        questions whose own cosine beats ``q*`` starts instead (as ``argmax rel``). None: no question at all."""
        g, prepared = loaded.graph, loaded.prepared
        if len(g.question_owner) == 0:
            return None
        build = (self.name, loaded.generation)
        rows, sims = nearest(ctx, build, "question_vectors", g.question_vectors, v_p, 1, unit=prepared.unit_questions)
        start, best = int(prepared.owner[rows[0]]), float(sims[0])
        if prepared.no_questions.any():
            alone = np.flatnonzero(prepared.no_questions)
            own = prepared.unit_nodes[alone] @ (v_p / np.linalg.norm(v_p))
            if float(own.max()) > best:
                start = int(alone[int(np.argmax(own))])
        return start

    def _hits(
        self,
        ctx: StrategyContext,
        loaded: LoadedGem,
        order: np.ndarray,
        scores: np.ndarray,
        v_p: np.ndarray,
    ) -> list[Hit]:
        g, prepared, qtext = loaded.graph, loaded.prepared, loaded.question_text
        hits = []
        nodes = ctx.store.nodes_by_id([int(g.node_ids[i]) for i in order.tolist()])
        for rank, (idx, score) in enumerate(zip(order.tolist(), scores.tolist(), strict=True)):
            node = nodes[int(g.node_ids[idx])]
            meta: dict[str, Any] = {}
            best = prepared.best_question(idx, v_p)
            if best is not None:
                meta["matched_question"] = qtext.get(int(g.question_ids[best]), "")
            if node.kind == "summary":
                meta["members"] = node.meta.get("members", [])
            hits.append(Hit(node.id, node.kind, float(score), node.text, rank, meta))  # type: ignore[arg-type]
        return hits

    def report(self, ctx: StrategyContext) -> dict[str, Any]:
        """Spectrum report (Remarks 2, 3), summary nodes, questions and phase timings for ``gemrag info`` (of
        the published generation; empty figures before ``index``).

        ``eigen_selection`` (None before ``index``, or with ``members="kmeans"``) names the eigenvectors that
        became summary nodes: ``selected_eigenvalues`` (and their 0-based ``selected_indices`` in the |lambda|
        order), ``skip_trivial``, ``negative_selected`` (negative eigenvalues among them) and
        ``negative_in_top_k`` (negative eigenvalues among the top k by |lambda|, the paper's choice); ``graph``
        is ``"dense"`` or ``"sparse"``.
        """
        manifest = ctx.store.manifest(self.name)
        meta = manifest.meta if manifest else {}
        return {
            "generation": manifest.generation if manifest else None,
            "spectrum": meta.get("spectrum"),
            "eigen_selection": meta.get("eigen_selection"),
            "graph": meta.get("graph"),
            "summary_nodes": len(ctx.store.nodes("summary", strategy=self.name)),
            "utility_questions": len(ctx.store.questions()),
            "phase_seconds": ctx.store.get_meta("gem_phase_seconds", {}),
        }

    def themes(self, store: BuildReads) -> Themes:
        """The eigenthemes of the published build in ``store`` for the memory view: each chunk's dominant eigentheme,
        recomputed with the build's own function and its recorded parameters over these settings
        (:func:`gemrag.strategies.gem.themes.gem_themes`, paper III.B.1).

        Raises:
            ValueError: the published arrays are inconsistent (see :mod:`gemrag.graph`).
        """
        return gem_themes(store, self.config)
