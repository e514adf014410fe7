"""``remem``: REMem's default strategy, facts and Personalized PageRank (REMem seed
``remem-retrieval-strategies.txt``, "Default Strategy (OpenIE)"; REMem forks HippoRAG 2, Gutiérrez et al. 2025,
"From RAG to Memory: Non-Parametric Continual Learning for Large Language Models", section 3).

Build (offline indexing):
  1. OpenIE per chunk, two LLM calls: named entities, then triples (:mod:`gemrag.strategies.remem.openie`);
  2. the graph (:mod:`gemrag.strategies.remem.fact_graph`): passage and entity nodes; fact, passage and synonym edges,
     the synonyms found by a nearest-neighbour search over the entity embeddings (:mod:`gemrag.graph.synonyms`,
     exact below ``synonym_exact_below`` entities, HNSW above, so the cost is not quadratic at 100k entities; an
     entity of two or fewer alphanumeric characters looks for none but may be found, ``short_synonyms``);
  3. facts embedded as their own vectors ("subject predicate object").
  OpenIE and the passage vectors read a chunk as its document's title and its text, as HippoRAG 2 indexes
  ``title\ntext`` passages (``remem.read_titles = false``: the text alone; :mod:`gemrag.strategies.platform.titles`).
  Entities and facts become store nodes (kinds ``entity`` and ``fact``, with the chunks they came from as sources,
  so deleting a document deletes what only it said); the arrays (node ids, vectors, the sparse adjacency, the
  facts) are published as one generation. Adding documents costs LLM calls for the new chunks only (the
  artefacts of the others are in the store); the graph is then reassembled from all artefacts without the LLM.
Retrieve (online, the seed's "Retrieval Pipeline" steps 1-3):
  1. query-to-fact scores: cosine of the question to every fact, min-max normalized;
  2. recognition memory: the top ``linking_top_k`` facts go to the LLM, which keeps some (up to all) or none
     (:mod:`gemrag.strategies.remem.recognition`; ``recognition_filter = false`` keeps all of them: HippoRAG 2's
     ablation); no fact left -> dense passage retrieval (DPR) over the chunks;
  3. graph search: Personalized PageRank (``damping``) seeded by the kept facts' entities (the ``linking_top_k``
     largest weights, ``seed_rank``) and by every passage's dense score times ``passage_node_weight``
     (:mod:`gemrag.strategies.remem.fact_seeds`, :mod:`gemrag.graph.ppr`); passages ranked by their PageRank score.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp
from pydantic import ConfigDict, Field

from gemrag.config import ReadTitles
from gemrag.graph.names import alnum_length
from gemrag.graph.ppr import TransitionMatrix
from gemrag.graph.synonyms import synonym_pairs
from gemrag.store import NodeRecord, Published
from gemrag.store.publish import Publication
from gemrag.strategies.base import StrategyContext, register
from gemrag.strategies.platform.common import (
    chunk_hits,
    chunk_ids_and_vectors,
    chunk_nodes,
    cosine_scores,
    load_published,
    nearest,
    not_indexed,
    prompt_vector,
    publish_arrays,
    warm_loaded,
)
from gemrag.strategies.platform.incremental import pruned_publication, rebuild_inputs
from gemrag.strategies.platform.planning import PlanWork, StrategyPlan
from gemrag.strategies.platform.titles import strategy_reads_titles
from gemrag.strategies.remem.fact_graph import EdgeLists, adjacency, fact_graph_edges, index_facts
from gemrag.strategies.remem.fact_seeds import entity_seed_weights, passage_seed_weights, top_indices
from gemrag.strategies.remem.openie import OpenIEResult, plan_openie, run_openie, stored_openie
from gemrag.strategies.remem.recognition import recognize_facts
from gemrag.types import Hit

NAME = "remem"
PASSAGE, ENTITY = 0, 1
"""Values of the ``node_kind`` array."""


class RememConfig(ReadTitles):
    """REMem's settings, the ``[remem]`` configuration section (``GEMRAG_REMEM__<FIELD>``, ``--set remem.<field>=``).
    Names and defaults are the seed's ("Configuration Parameters") and HippoRAG 2's.

    Attributes:
        retrieval_top_k: most passages one retrieval ranks (default 200); a retrieval returns
            ``min(budget, retrieval_top_k)``.
        linking_top_k: facts shown to the recognition filter, most facts it keeps, and entities kept as seeds
            (default 5).
        seed_rank: which ``linking_top_k`` entities of the kept facts seed the walk: ``"weight"`` (default,
            HippoRAG 2's code: the largest seed weights, mean fact score / passages naming the entity) or
            ``"score"`` (gemrag's earlier rule: the highest mean fact scores, so a hub entity of the best fact can
            keep a tiny weight in place of a specific one; :mod:`gemrag.strategies.remem.fact_seeds`). A
            retrieval-time setting: no rebuild.
        damping: probability that the PageRank walk follows an edge rather than restarting at the seeds
            (default 0.5).
        passage_node_weight: factor of the passages' dense scores in the seeds (default 0.05).
        qa_top_k: passages handed to the LLM when ``ask``/``retrieve`` get no budget (default 5).
        recognition_filter: ask the LLM which top facts are relevant (default True); False keeps them all.
        synonymy_edge_sim_threshold: cosine at or above which two entities get a synonym edge (default 0.8).
        synonymy_edge_topk: most synonym neighbours per entity (default 100: HippoRAG 2's configuration says
            2047, but its loop stops after about 100 neighbours).
        synonym_search: ``"auto"`` (exact below ``synonym_exact_below`` entities, else HNSW), ``"exact"`` or
            ``"hnsw"``.
        synonym_exact_below: entities below which the exact (quadratic) search is used (default 20,000).
        short_synonyms: entities of two or fewer alphanumeric characters ("us", "1"): ``"hipporag2"`` (default,
            HippoRAG 2's code: they look for no synonyms, but a longer entity may find one of them as its synonym)
            or ``"none"`` (gemrag's earlier rule: they get no synonym edge at all; :mod:`gemrag.graph.synonyms`).
            A build-time setting.
        require_entity: keep only triples naming one of the chunk's named entities (default True).
        edge_weights: ``"hipporag2"`` (default: fact and synonym edges counted in both directions, as HippoRAG 2's
            code adds them to its undirected graph, so they weigh about twice a passage edge) or ``"once"``
            (gemrag's earlier rule; :mod:`gemrag.strategies.remem.fact_graph`). A build-time setting.
        filter_match: how the recognition filter's returned facts select candidates: ``"snap"`` (default, HippoRAG
            2's code: the closest candidate by difflib) or ``"exact"`` (gemrag's earlier rule: equal normalized
            elements only; :mod:`gemrag.strategies.remem.recognition`).
        filter_prompt: ``"few-shot"`` (default: two worked examples before the question, as HippoRAG 2's filter
            prompt is few-shot; the examples are gemrag's own) or ``"zero-shot"`` (gemrag's earlier prompt).
        read_titles: OpenIE and passage vectors of a chunk's document title and text
            (:class:`~gemrag.config.ReadTitles`; default: yes, as HippoRAG 2's ``title\ntext`` passages).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    retrieval_top_k: int = Field(200, ge=1)
    linking_top_k: int = Field(5, ge=1, le=100)
    seed_rank: Literal["weight", "score"] = "weight"
    damping: float = Field(0.5, ge=0.0, lt=1.0)
    passage_node_weight: float = Field(0.05, ge=0.0)
    qa_top_k: int = Field(5, ge=1, le=200)
    recognition_filter: bool = True
    synonymy_edge_sim_threshold: float = Field(0.8, ge=-1.0, le=1.0)
    synonymy_edge_topk: int = Field(100, ge=0, le=2047)
    synonym_search: Literal["auto", "exact", "hnsw"] = "auto"
    synonym_exact_below: int = Field(20_000, ge=0)
    short_synonyms: Literal["hipporag2", "none"] = "hipporag2"
    require_entity: bool = True
    edge_weights: Literal["hipporag2", "once"] = "hipporag2"
    filter_match: Literal["snap", "exact"] = "snap"
    filter_prompt: Literal["few-shot", "zero-shot"] = "few-shot"


AXES = {
    "node_ids": ("n",),
    "node_kind": ("n",),
    "node_vectors": ("n", "d"),
    "adjacency": ("n", "n"),
    "fact_ids": ("f",),
    "fact_vectors": ("f", "d"),
    "fact_subject": ("f",),
    "fact_object": ("f",),
}
"""Named dimensions of the published arrays: n graph nodes (passages, then entities), f facts, d embedding size.
``fact_subject``/``fact_object`` hold row indices into the ``n`` arrays."""


@dataclass
class LoadedRemem:
    """One published generation, prepared once for retrieval.

    Attributes:
        node_ids: (n,) int64 store ids. passages: (P,) int64 rows of the passage nodes. entities: (E,) int64 rows
        of the entity nodes. passage_vectors: (P, d) float32. fact_ids: (F,) int64. fact_vectors: (F, d) float32.
        fact_subject / fact_object: (F,) int64 entity positions (0..E-1). entity_passages: (E,) int64 passages
        mentioning each entity. transition: the PageRank operator of the adjacency.
    """

    node_ids: np.ndarray
    passages: np.ndarray
    entities: np.ndarray
    passage_vectors: np.ndarray
    fact_ids: np.ndarray
    fact_vectors: np.ndarray
    fact_subject: np.ndarray
    fact_object: np.ndarray
    entity_passages: np.ndarray
    transition: TransitionMatrix
    generation: int = 0

    @classmethod
    def from_published(cls, published: Published) -> LoadedRemem:
        """Prepare a published generation (entity positions, passage counts, the transition matrix)."""
        a = published.arrays
        kind = np.asarray(a["node_kind"])
        passages, entities = np.flatnonzero(kind == PASSAGE), np.flatnonzero(kind == ENTITY)
        position = np.full(kind.shape[0], -1, dtype=np.int64)
        position[entities] = np.arange(entities.size)
        W = sp.csr_matrix(a["adjacency"])
        entity_passages = np.asarray((W[entities][:, passages] > 0).sum(axis=1)).ravel().astype(np.int64)
        return cls(
            node_ids=np.asarray(a["node_ids"]),
            passages=passages,
            entities=entities,
            passage_vectors=np.asarray(a["node_vectors"])[passages],
            fact_ids=np.asarray(a["fact_ids"]),
            fact_vectors=np.asarray(a["fact_vectors"]),
            fact_subject=position[np.asarray(a["fact_subject"])],
            fact_object=position[np.asarray(a["fact_object"])],
            entity_passages=entity_passages,
            transition=TransitionMatrix.from_adjacency(W),
            generation=published.generation,
        )


def fact_text(triple: tuple[str, str, str] | list[str]) -> str:
    """The text a fact is embedded as: ``"subject predicate object"``."""
    return " ".join(triple)


@register(NAME, config=RememConfig)
class RememStrategy:
    """REMem's default (``openie``) strategy: facts, recognition memory and Personalized PageRank."""

    name = NAME
    reads_titles = True
    """OpenIE and passage vectors of ``title\ntext`` by default, as HippoRAG 2 indexes its passages."""
    kept_kinds = frozenset({"entity", "fact"})
    """An entity (its name) and a fact (its triple) are stated by each passage they came from on its own, so removing
    one of those passages keeps them while another states them (:mod:`gemrag.strategies.platform.forgetting`)."""

    def __init__(self, config: RememConfig | None = None) -> None:
        self.config = config or RememConfig()

    @property
    def default_budget(self) -> int:
        """Passages in the context when the caller gives no budget: ``qa_top_k``."""
        return self.config.qa_top_k

    def plan(self, ctx: StrategyContext, work: PlanWork) -> StrategyPlan:
        """What building now would cost: both OpenIE passes for the chunks that lack them
        (:func:`~gemrag.strategies.remem.openie.plan_openie`); writes nothing."""
        passes = plan_openie(ctx, work, titles=strategy_reads_titles(ctx, NAME))
        return StrategyPlan(NAME, len(work.new_chunks(ctx, NAME)), passes)

    def build(self, ctx: StrategyContext) -> None:
        """OpenIE for the chunks that lack it, then the graph over every chunk, published as a new generation.

        Resumable and incremental: each chunk's entities and triples are committed as they arrive (artefacts), so
        an interrupted build or a build after adding documents calls the LLM only for chunks without them.

        Raises:
            MemoryNotIndexedError: the memory holds no chunks.
            GemragError: a fatal model error (the artefacts committed before it stay).
        """
        chunks = chunk_nodes(ctx)
        generation = ctx.store.begin_build(NAME)
        titles = strategy_reads_titles(ctx, NAME)
        openie = run_openie(ctx, chunks, require_entity=self.config.require_entity, titles=titles)
        arrays, meta, edges = self._assemble(ctx, generation, chunks, openie)
        publish_arrays(ctx, NAME, generation, arrays, axes=AXES, meta=meta, edges=edges, search=["fact_vectors"])

    def _assemble(
        self, ctx: StrategyContext, generation: int, chunks: list[NodeRecord], openie: OpenIEResult
    ) -> tuple[dict[str, Any], dict[str, Any], dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]]:
        """The graph over ``chunks`` from their cleaned triples: entity and fact store nodes added to ``generation``,
        and ``(arrays, meta, store edges by kind)`` to publish. No LLM call; the embedder embeds the passages,
        entities and facts (cache hits for texts embedded before)."""
        cfg = self.config
        titles = strategy_reads_titles(ctx, NAME)
        chunk_ids, passage_vectors = chunk_ids_and_vectors(ctx, chunks, titles=titles)
        index = index_facts([openie.triples[int(c)] for c in chunk_ids])
        d = passage_vectors.shape[1]
        entity_vectors = ctx.embedder.embed(index.entities) if index.entities else np.zeros((0, d), np.float32)
        fact_vectors = (
            ctx.embedder.embed([fact_text(f) for f in index.facts]) if index.facts else np.zeros((0, d), np.float32)
        )
        synonyms = None
        if index.entities and cfg.synonymy_edge_topk > 0:
            long = np.array([alnum_length(e) > 2 for e in index.entities])
            synonyms = synonym_pairs(
                entity_vectors,
                cfg.synonymy_edge_sim_threshold,
                cfg.synonymy_edge_topk,
                method=cfg.synonym_search,
                exact_below=cfg.synonym_exact_below,
                eligible=long if cfg.short_synonyms == "none" else None,
                seekers=long,
            )
        edges = fact_graph_edges(index, synonyms, cfg.edge_weights)
        W = adjacency(index.n_nodes, edges)

        p = index.n_passages
        with ctx.store.transaction():
            entity_sources = index.entity_sources()
            entity_ids = [
                ctx.store.add_node(
                    NAME, generation, "entity", name, ord_=i, sources=[int(chunk_ids[s]) for s in entity_sources[i]]
                )
                for i, name in enumerate(index.entities)
            ]
            fact_ids = [
                ctx.store.add_node(
                    NAME,
                    generation,
                    "fact",
                    fact_text(f),
                    ord_=i,
                    meta={"triple": list(f)},
                    sources=[int(chunk_ids[s]) for s in index.fact_passages[i]],
                )
                for i, f in enumerate(index.facts)
            ]
        node_ids = np.concatenate([chunk_ids, np.array(entity_ids, dtype=np.int64)])
        arrays = {
            "node_ids": node_ids,
            "node_kind": np.concatenate([np.zeros(p, np.int8), np.ones(len(entity_ids), np.int8)]),
            "node_vectors": np.concatenate([passage_vectors, entity_vectors]).astype(np.float32),
            "adjacency": W,
            "fact_ids": np.array(fact_ids, dtype=np.int64),
            "fact_vectors": fact_vectors.astype(np.float32),
            "fact_subject": index.fact_subject + p,
            "fact_object": index.fact_object + p,
        }
        meta = {
            "passages": p,
            "entities": len(index.entities),
            "facts": len(index.facts),
            "edges": {kind: int(e[0].size) for kind, e in edges.kinds.items()},
            "extracted_chunks": openie.extracted,
            "dropped_triples": openie.dropped,
        }
        return arrays, meta, _store_edges(edges, node_ids)

    def prune(self, ctx: StrategyContext, gone: set[int], generation: int) -> Publication | None:
        """The published graph as a build without the removed chunks makes it (DESIGN.md, "Forgetting": a kept node
        keeps nothing of a removed source): the graph is reassembled, with no LLM call, from the stored OpenIE
        artefacts of the chunks the build covered that remain (:func:`~gemrag.strategies.remem.openie.stored_openie`,
        :func:`~gemrag.strategies.platform.incremental.remaining_chunks`). So an entity or a fact another passage
        states stays (as a new node of the pruned generation, its sources without the removed chunks); a fact edge
        weighs the triple occurrences of the passages that remain (an edge only the removed passages made is gone,
        and PPR no longer walks it); passage edges, the entities' mention counts and every row of the PPR graph
        arrays are those of the remaining passages; synonym edges are found again among the remaining entities by
        the build's rule (HippoRAG 2, Gutiérrez et al. 2025, section 3, offline indexing: entity pairs whose
        embeddings' cosine reaches ``synonymy_edge_sim_threshold``, at most ``synonymy_edge_topk`` per entity), so
        an entity's neighbour list once capped by a removed entity is the one the smaller graph gives. The
        embedder is asked for the passages', entities' and facts' vectors again (answered by its cache).

        Returns:
            The rebuilt generation, written but not published (its nodes replace the previous generation's);
            None when the strategy has no published build or no chunk of it remains.
        """
        inputs = rebuild_inputs(ctx, NAME, gone)
        if inputs is None:
            return None
        published, chunks = inputs
        titles = strategy_reads_titles(ctx, NAME)
        openie = stored_openie(ctx, chunks, require_entity=self.config.require_entity, titles=titles)
        arrays, meta, edges = self._assemble(ctx, generation, chunks, openie)
        return pruned_publication(ctx, published, generation, arrays, dict(AXES), meta, carry=False, edges=edges)

    def _loaded(self, ctx: StrategyContext) -> LoadedRemem:
        return load_published(ctx, NAME, LoadedRemem.from_published)

    def warm(self, ctx: StrategyContext, budget: int) -> None:
        """Load the published generation's arrays and, with the recognition filter on, the LLM, spending no LLM call
        (:func:`~gemrag.strategies.platform.common.warm_loaded`); ``budget`` is unused.

        Raises:
            MemoryNotIndexedError: the strategy was not built in this memory.
            StaleGenerationError: a newer generation replaced the one being read (the caller retries).
        """
        warm_loaded(ctx, self._loaded, llm=self.config.recognition_filter)

    def retrieve(self, ctx: StrategyContext, question: str, budget: int) -> list[Hit]:
        """Passages for ``question`` by the seed's default strategy (module docstring).

        Returns:
            At most ``min(budget, retrieval_top_k)`` chunk hits, best first. ``score``: the passage's Personalized
            PageRank probability (in (0, 1]); after the DPR fallback, its cosine to the question. ``meta``:
            ``facts`` (the kept facts as [s, p, o] lists), ``candidates`` (the facts shown to the filter),
            ``fallback`` (``"dpr"`` when no fact was kept) and, when the filter's answer was unusable,
            ``recognition_error``.

        Raises:
            MemoryNotIndexedError: the strategy was not built in this memory.
            StaleGenerationError: a newer generation replaced the one being read (the caller retries).
        """
        if ctx.store.published_generation(NAME) is None:
            raise not_indexed(ctx, NAME)
        cfg = self.config
        top = min(budget, cfg.retrieval_top_k)
        v_p = prompt_vector(ctx, question)
        with ctx.store.snapshot():
            g = self._loaded(ctx)
            if g.passages.size == 0:
                return []
            dense = cosine_scores(v_p, g.passage_vectors)
            candidates: list[list[str]] = []
            kept: list[int] = []
            meta: dict[str, Any] = {}
            if g.fact_ids.size:
                fact_scores, shown = self._fact_seeds(ctx, g, v_p)
                candidates = [ctx.store.node(int(g.fact_ids[f])).meta["triple"] for f in shown]
                if cfg.recognition_filter:
                    chosen, error = recognize_facts(
                        ctx, question, candidates, cfg.filter_match, cfg.filter_prompt == "few-shot"
                    )
                    kept = [shown[i] for i in chosen]
                    if error:
                        meta["recognition_error"] = error
                else:
                    kept = shown
            meta["candidates"] = candidates
            meta["facts"] = [candidates[shown.index(f)] for f in kept] if kept else []
            if not kept:
                order = top_indices(dense, top)
                ids = g.node_ids[g.passages[order]]
                return chunk_hits(ctx, ids.tolist(), dense[order].tolist(), {**meta, "fallback": "dpr"})
            reset = np.zeros(g.node_ids.shape[0])
            reset[g.entities] = entity_seed_weights(
                kept, fact_scores, g.fact_subject, g.fact_object, g.entity_passages, cfg.linking_top_k, cfg.seed_rank
            )
            reset[g.passages] = passage_seed_weights(dense, cfg.passage_node_weight)
            ppr = g.transition.pagerank(reset, cfg.damping)
            passage_scores = ppr[g.passages]
            order = top_indices(passage_scores, top)
            ids = g.node_ids[g.passages[order]]
            return chunk_hits(ctx, ids.tolist(), passage_scores[order].tolist(), meta)

    def _fact_seeds(self, ctx: StrategyContext, g: LoadedRemem, v_p: np.ndarray) -> tuple[np.ndarray, list[int]]:
        """The facts shown to the recognition filter (the ``linking_top_k`` nearest to the question) and the facts'
        min-max normalized scores (HippoRAG 2's fact scores), found by the store's nearest-neighbour search (pgvector
        on PostgreSQL): the top facts' cosines, and the lowest cosine of all as the nearest to ``-v_p``.

        Returns:
            ``((F,) float64 normalized scores, set for the shown facts, 0 elsewhere; shown fact rows, best first)``.
        """
        build, k = (NAME, g.generation), self.config.linking_top_k
        rows, sims = nearest(ctx, build, "fact_vectors", g.fact_vectors, v_p, k)
        _, lowest = nearest(ctx, build, "fact_vectors", g.fact_vectors, -v_p, 1)
        low, span = -float(lowest[0]), float(sims[0]) + float(lowest[0])
        scores = np.zeros(g.fact_ids.shape[0])
        scores[rows] = 1.0 if span == 0 else (sims - low) / span
        return scores, [int(r) for r in rows]

    def report(self, ctx: StrategyContext) -> dict[str, Any]:
        """Passages, entities, facts, edges by kind and dropped triples of the published graph (``gemrag info``)."""
        manifest = ctx.store.manifest(NAME)
        meta = manifest.meta if manifest else {}
        keys = ("passages", "entities", "facts", "edges", "extracted_chunks", "dropped_triples")
        return {"generation": manifest.generation if manifest else None, **{k: meta.get(k) for k in keys}}


def _store_edges(edges: EdgeLists, node_ids: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The graph's edges in store node ids, both directions (for ``Store.edges`` and viewers)."""
    out = {}
    for kind, (src, dst, weight) in edges.kinds.items():
        a, b = node_ids[src], node_ids[dst]
        out[kind] = (np.concatenate([a, b]), np.concatenate([b, a]), np.concatenate([weight, weight]))
    return out
