"""``raptor``: RAPTOR, the tree baseline of the GEM-RAG paper (Sarthi et al. 2024, "RAPTOR: Recursive
Abstractive Processing for Tree-Organized Retrieval"; GEM-RAG paper section IV, Tables I and II).

Build (RAPTOR section 3, and the authors' ``cluster_tree_builder.py``):
  leaves (layer 0) are the memory's chunks with their embeddings (of the chunk's text alone, as RAPTOR embeds its
  chunks; ``raptor.read_titles = true``: of its document's title and text, :mod:`gemrag.strategies.platform.titles`;
  the summaries read the chunks' text either way); while a layer has more than
  ``reduction_dim + 1`` nodes (RAPTOR's stop rule) and at most ``max_layers`` times, the layer's vectors
  are clustered (:func:`gemrag.strategies.platform.clustering.raptor_clusters`: UMAP, Gaussian mixture with k by BIC,
  soft assignment with threshold 0.1, global then local clustering, re-clustering of clusters whose texts
  exceed the summarizer's context), the LLM summarizes each cluster
  (:func:`gemrag.strategies.raptor.prompts.raptor_summary_prompt`, at most ``summary_tokens`` tokens, cached), and
  the summaries, embedded, form the next layer. Building also stops when clustering cannot reduce a layer.
Retrieve — the collapsed tree (RAPTOR section 3, "Querying"): every node of every layer is ranked by
  cosine similarity to the question and nodes are taken in that order while the running token count
  stays <= ``budget x chunk_tokens`` (the ~400-token context every strategy gets); the first node that
  does not fit ends the selection, as in the authors' ``retrieve_information_collapse_tree``.

Storage — the tree is RAPTOR's own build generation (:mod:`gemrag.store.publish`): each summary is a node of
the store (strategy ``raptor``, kind ``summary``, ``meta`` ``{"layer": L}``, its sources the chunks under it),
with an edge of kind ``child`` (weight 1) to each node it summarizes; the arrays ``node_ids`` ((N,) int64: the
chunks, then the summaries layer by layer), ``layers`` ((N,) int64, 0 = chunk), ``n_tokens`` ((N,) int64 MiniLM
tokens) and ``vectors`` ((N, d) float32) are published with them in one transaction, so building GEM (or any
other strategy) never touches RAPTOR's nodes and a reader never sees half a tree. Deleting a document removes
every summary with one of its chunks under it (:mod:`gemrag.strategies.platform.forgetting`), keeping only their
ids, layers and children as vacancies (:mod:`gemrag.strategies.raptor.update`). The next ``index`` updates the
tree in place (``raptor.incremental``, :mod:`gemrag.strategies.raptor.update`: new chunks join their nearest
cluster; only changed clusters and their ancestors are summarized again) unless too much changed
(``raptor.rebuild_fraction``), in which case the whole tree is re-clustered; unchanged clusters cost no LLM call
either way (the LLM cache). Each summary records the children it summarized, in prompt order
(``meta["children"]``).

Settings: :class:`RaptorConfig`, the ``[raptor]`` configuration section (``--set raptor.summary_tokens=200``).
Needs scikit-learn and umap-learn (``pip install 'gemrag[eval]'``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray
from pydantic import ConfigDict, Field

from gemrag.config import ReadTitles
from gemrag.store import NodeRecord
from gemrag.store.publish import Publication
from gemrag.strategies.base import StrategyContext, register
from gemrag.strategies.platform.clustering import RANDOM_SEED, Reducer, raptor_clusters
from gemrag.strategies.platform.common import (
    chunk_ids_and_vectors,
    chunk_nodes,
    count_tokens,
    load_published,
    nearest,
    prompt_vector,
    require,
)
from gemrag.strategies.platform.extraction import summarize_each
from gemrag.strategies.platform.incremental import generic_prune
from gemrag.strategies.platform.planning import PlanWork, StrategyPlan
from gemrag.strategies.platform.titles import READ_TITLES, built_titles, strategy_reads_titles
from gemrag.strategies.raptor.plan import plan_raptor
from gemrag.strategies.raptor.prompts import raptor_summary_prompt
from gemrag.strategies.raptor.tree import CHILD, STRATEGY, SUMMARY, RaptorTree
from gemrag.strategies.raptor.update import (
    CHILDREN_KEY,
    VACANCIES,
    TreeState,
    add_vacancies,
    ordered_children,
    should_rebuild,
    update_tree,
    vacancies,
)
from gemrag.types import Hit

PROMPT_OVERHEAD = 64
"""LLM tokens of the summary prompt besides the cluster's texts (instructions and chat template)."""


class RaptorConfig(ReadTitles):
    """RAPTOR's settings, the ``[raptor]`` configuration section (``GEMRAG_RAPTOR__<FIELD>``,
    ``--set raptor.<field>=...``). Sources: Sarthi et al. 2024, "RAPTOR: Recursive Abstractive Processing for
    Tree-Organized Retrieval" (ICLR 2024), section 3 ("Methods": "Clustering Algorithm", "Model-Based
    Summarization", "Querying"); the numbers are the defaults of the authors' code (github.com/parthsarthi03/
    raptor, ``cluster_tree_builder.py``, ``cluster_utils.py``, ``tree_builder.py``), which the paper does not
    state.

    Attributes:
        reduction_dim: UMAP output dimension before the Gaussian mixture (section 3, "Clustering Algorithm":
            UMAP reduces the embeddings' dimension because GMMs suffer in high dimensions); a layer of at most
            ``reduction_dim + 1`` nodes is not clustered (the code's stop rule). Default 10
            (``reduction_dimension``).
        threshold: soft-assignment probability: a node joins every cluster whose GMM posterior is above it, so
            it can belong to several (section 3, "soft clustering"). Default 0.1 (``threshold``).
        max_layers: most summary layers built above the chunks. Default 5 (``num_layers``).
        cluster_tokens: most LLM tokens of the texts of one cluster; a larger cluster is re-clustered
            (section 3: "if a local cluster's combined context ever exceeds the summarization model's token
            threshold, our algorithm recursively applies clustering within the cluster"); also capped by the
            LLM's context window minus ``summary_tokens`` and the prompt. Default 3500 (``max_length_in_cluster``).
        summary_tokens: ``max_tokens`` of each LLM summary (section 3, "Model-Based Summarization").
            Default 100 (``summarization_length``).
        max_clusters: most GMM components tried per clustering stage; the count is chosen by the Bayesian
            Information Criterion (section 3). Default 50 (``max_clusters`` of ``get_optimal_clusters``).
        random_state: seed of UMAP and the GMMs. Default 224 (``RANDOM_SEED``).
        incremental: update the published tree in place when documents were added or deleted — new chunks join
            their nearest layer-1 cluster and only changed clusters and their ancestors are summarized again
            (:mod:`gemrag.strategies.raptor.update`; not in the paper, which builds the tree once). Default True.
        rebuild_fraction: re-cluster from scratch instead when the chunks added and deleted since the tree's
            build exceed this fraction of the chunks it covers. Default 0.25 (gemrag's choice).
        reducer: Python only (not a configuration key): the dimension reduction; None = UMAP with the cosine
            metric, as the authors' code. Tests inject a cheap one.
        read_titles: embed a chunk as its document's title and its text (:class:`~gemrag.config.ReadTitles`;
            default: its text, as RAPTOR). A change re-clusters the tree.

    The collapsed-tree budget is not a RAPTOR setting: every strategy gets ``budget x memory.chunk_tokens``
    tokens (module docstring).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    reduction_dim: int = Field(10, ge=1, le=512)
    threshold: float = Field(0.1, gt=0.0, le=1.0)
    max_layers: int = Field(5, ge=0, le=100)
    cluster_tokens: int = Field(3500, ge=1)
    summary_tokens: int = Field(100, ge=1, le=8192)
    max_clusters: int = Field(50, ge=1, le=10_000)
    random_state: int = RANDOM_SEED
    incremental: bool = True
    rebuild_fraction: float = Field(0.25, ge=0.0)
    reducer: Reducer | None = Field(None, exclude=True, repr=False)

    def as_dict(self) -> dict[str, Any]:
        """The parameters as JSON-serializable values (the reducer by name)."""
        out = self.model_dump(mode="json")
        out["reducer"] = "umap" if self.reducer is None else getattr(self.reducer, "__name__", "custom")
        return out


def tree_settings(params: dict[str, Any]) -> dict[str, Any]:
    """The settings that shape a tree (:meth:`RaptorConfig.as_dict` without those of incremental updates, and without
    ``read_titles``, whose decision the build's manifest records:
    :func:`~gemrag.strategies.platform.titles.built_titles`)."""
    return {k: v for k, v in params.items() if k not in ("incremental", "rebuild_fraction", READ_TITLES)}


RaptorParams = RaptorConfig
"""The former name of :class:`RaptorConfig` (a dataclass before the ``[raptor]`` section), kept for callers."""


@register("raptor")
class RaptorStrategy:
    """RAPTOR: a tree of recursive cluster summaries, searched as a collapsed tree under a token budget.

    Args:
        config: the ``[raptor]`` section, validated (default: RAPTOR's settings); also as ``params``.
    """

    name = "raptor"
    config_model = RaptorConfig
    reads_titles = False
    """Leaves embedded from the chunk alone by default (section 3: the chunks are embedded with SBERT)."""

    def __init__(self, config: RaptorConfig | None = None) -> None:
        self.config = self.params = config or RaptorConfig()

    def plan(self, ctx: StrategyContext, work: PlanWork) -> StrategyPlan:
        """What building now would cost: an estimate of its summary calls
        (:func:`~gemrag.strategies.raptor.plan.plan_raptor`); writes nothing."""
        p = self.params
        manifest = ctx.store.manifest(STRATEGY)
        same = manifest is not None and tree_settings(manifest.meta.get("params") or {}) == tree_settings(p.as_dict())
        same = same and built_titles(ctx.store, STRATEGY) == strategy_reads_titles(ctx, self.name)
        return plan_raptor(
            ctx,
            work,
            reduction_dim=p.reduction_dim,
            max_layers=p.max_layers,
            summary_tokens=p.summary_tokens,
            incremental=p.incremental and same,
            rebuild_fraction=p.rebuild_fraction,
        )

    def build(self, ctx: StrategyContext) -> None:
        """Build the tree over all chunks and save it (replacing any previous tree).

        A summary the LLM fails to write is recorded as a failure (phase ``index/raptor``) and left out;
        its children then have no parent.

        Raises:
            MemoryNotIndexedError: the memory holds no chunks.
            GemragError: scikit-learn or umap-learn is not installed, or the LLM cannot be loaded.
        """
        p = self.params
        require("sklearn", *(["umap"] if p.reducer is None else []), strategy=self.name)
        chunks = chunk_nodes(ctx)
        titles = strategy_reads_titles(ctx, self.name)
        ids, vectors = chunk_ids_and_vectors(ctx, chunks, titles=titles)
        generation = ctx.store.begin_build(STRATEGY)
        same_input = built_titles(ctx.store, STRATEGY) == titles  # a tree over the other input is re-clustered
        if p.incremental and same_input and self._update(ctx, generation, chunks, vectors):
            return
        generation = ctx.store.begin_build(STRATEGY)  # drops what an abandoned update wrote
        tree = RaptorTree(ids.tolist(), [0] * len(chunks), [c.n_tokens for c in chunks], vectors)
        tree.sources = [{int(i)} for i in ids.tolist()]
        texts = [c.text for c in chunks]
        llm_tokens: dict[int, int] = {}
        current = list(range(len(chunks)))  # rows of the tree in the layer being clustered
        for layer in range(1, p.max_layers + 1):
            if len(current) <= p.reduction_dim + 1:
                break
            llm = ctx.get_llm()  # loaded only when there is something to summarize
            max_cluster = max(1, min(p.cluster_tokens, llm.context_window - p.summary_tokens - PROMPT_OVERHEAD))
            for i in current:
                if i not in llm_tokens:
                    llm_tokens[i] = llm.count_tokens(texts[i])
            lengths = [llm_tokens[i] for i in current]
            clusters = raptor_clusters(
                tree.vectors[current],
                lengths,
                max_cluster,
                dim=p.reduction_dim,
                threshold=p.threshold,
                reducer=p.reducer,
                max_clusters=p.max_clusters,
                random_state=p.random_state,
            )
            if len(clusters) >= len(current):  # clustering cannot reduce this layer
                break
            groups = [[current[i] for i in c] for c in clusters]
            written = [r for r in self._summarize_layer(ctx, (layer, generation), groups, tree, texts) if r is not None]
            if not written:
                break
            current = written
        tree.publish(ctx, generation, p)

    def _summarize_layer(
        self,
        ctx: StrategyContext,
        at: tuple[int, int],
        clusters: list[list[int]],
        tree: RaptorTree,
        texts: list[str],
    ) -> list[int | None]:
        """Summarize each cluster (rows of ``tree``) into a new summary node of layer ``at[0]`` in build
        generation ``at[1]`` (RAPTOR section 3, "Model-Based Summarization"; through the extraction pipeline, so
        the clusters go to the LLM in batches and the nodes are created in cluster order).

        Returns:
            Per cluster, the row of its new summary in ``tree`` (appended), or None when the LLM failed (a
            recorded failure).
        """
        layer, generation = at
        new_texts: list[str] = []
        rows: list[int | None] = [None] * len(clusters)

        def save(item: tuple[int, list[int]], text: str) -> None:
            index, members = item
            sources = set().union(*(tree.sources[i] for i in members))
            n_tokens = count_tokens(text)
            children = [tree.node_ids[i] for i in members]  # in prompt order
            summary_id = ctx.store.add_node(
                STRATEGY,
                generation,
                SUMMARY,
                text,
                n_tokens=n_tokens,
                meta={"layer": layer, CHILDREN_KEY: children},
                ord_=len(tree.node_ids),
                sources=sorted(sources),
            )
            tree.children += [(summary_id, child) for child in children]
            rows[index] = len(tree.node_ids)
            tree.sources.append(sources)
            tree.node_ids.append(summary_id)
            tree.layers.append(layer)
            tree.n_tokens.append(n_tokens)
            texts.append(text)
            new_texts.append(text)

        summarize_each(
            ctx,
            list(enumerate(clusters)),
            f"RAPTOR layer {layer} summaries",
            lambda item: raptor_summary_prompt([texts[i] for i in item[1]]),
            max_tokens=self.params.summary_tokens,
            save=save,
            phase="index/raptor",
            label=lambda item: f"layer {layer}, {len(item[1])} nodes",
        )
        if new_texts:
            tree.vectors = np.concatenate([tree.vectors, ctx.embedder.embed(new_texts)]).astype(np.float32)
        return rows

    def _update(
        self, ctx: StrategyContext, generation: int, chunks: list[NodeRecord], vectors: NDArray[np.float32]
    ) -> bool:
        """Update the published tree in place (:mod:`gemrag.strategies.raptor.update`) and publish it as
        generation ``generation``; False (nothing published) when the tree must be rebuilt from scratch."""
        p = self.params
        published = ctx.store.load_published(STRATEGY, mmap=False)
        if published is None or tree_settings(published.meta.get("params") or {}) != tree_settings(p.as_dict()):
            return False  # never built, or built with other settings
        state = ctx.store.build_state(STRATEGY)
        tree = RaptorTree.from_published(published)
        n_covered = tree.layers.count(0) + state.deleted_chunks
        if should_rebuild(n_covered, state.new_chunks, state.deleted_chunks, p.rebuild_fraction):
            return False
        nodes = [ctx.store.node(i) for i in tree.node_ids]
        summaries = [n for n in nodes if n.kind != "chunk"]
        vacant = list(published.meta.get(VACANCIES, []))  # summaries removed with a chunk (forgetting)
        if not (summaries or vacant) or any(CHILDREN_KEY not in n.meta for n in summaries):
            return False  # no summary layer, or built before summaries recorded their children
        sources = ctx.store.node_sources([n.id for n in summaries])
        tree.sources = [set(sources[n.id]) if n.kind != "chunk" else {n.id} for n in nodes]
        recorded = {n.id: [int(c) for c in n.meta[CHILDREN_KEY]] for n in summaries}
        current: dict[int, set[int]] = {n.id: set() for n in summaries}
        for _, src, dst, _ in ctx.store.edge_list(STRATEGY, CHILD):
            current.setdefault(src, set()).add(dst)
        texts = [n.text for n in nodes]
        update = TreeState(tree, texts, {}, recorded)
        placeholders = add_vacancies(update, current, vacant)
        update.children = ordered_children(recorded, current)
        llm_tokens: dict[str, int] = {}

        def fits(rows: list[int]) -> bool:
            llm = ctx.get_llm()
            limit = max(1, min(p.cluster_tokens, llm.context_window - p.summary_tokens - PROMPT_OVERHEAD))
            for r in rows:
                if texts[r] not in llm_tokens:
                    llm_tokens[texts[r]] = llm.count_tokens(texts[r])
            return sum(llm_tokens[texts[r]] for r in rows) <= limit

        retired = update_tree(
            update,
            chunks,
            vectors,
            lambda layer, clusters: self._summarize_layer(ctx, (layer, generation), clusters, tree, texts),
            fits,
        )
        if retired is None or set(placeholders) & set(tree.node_ids):
            return False  # a vacancy left unfilled (its summary failed): rebuild rather than publish an empty row
        tree.publish(ctx, generation, p, retire=[r for r in retired if r not in placeholders])
        return True

    def prune(self, ctx: StrategyContext, gone: set[int], generation: int) -> Publication | None:
        """The published tree without the nodes in ``gone`` (removed chunks and every summary above one of them:
        :mod:`gemrag.strategies.platform.forgetting`), their ids, layers and children kept as vacancies in its meta
        for the next update to fill (:func:`~gemrag.strategies.raptor.update.vacancies`), no text. Read before the
        nodes' rows are deleted (:func:`gemrag.memory.deletion.remove_chunks`)."""
        published = ctx.store.load_published(STRATEGY, mmap=False)
        if published is None:
            return None
        removed = [i for i in np.asarray(published.arrays["node_ids"]).tolist() if i in gone]
        found = [n for n in ctx.store.nodes_by_id(removed).values() if n.kind != "chunk"] if removed else []
        vacant = vacancies(found, published.meta.get(VACANCIES, []))
        return generic_prune(ctx, STRATEGY, gone, generation, meta={VACANCIES: vacant})

    def _tree(self, ctx: StrategyContext) -> RaptorTree:
        return load_published(ctx, self.name, RaptorTree.from_published, mmap=False)

    def retrieve(self, ctx: StrategyContext, question: str, budget: int) -> list[Hit]:
        """Collapsed-tree retrieval under a budget of ``budget x chunk_tokens`` MiniLM tokens.

        Returns:
            Chunk and summary hits by decreasing ``score`` = ``cos(E(question), E(node text))``, their
            token counts summing to at most the budget; selection stops at the first node that does not
            fit. Summary hits are RAPTOR's summary nodes, ``meta`` ``{"strategy", "layer", "children"}``.

        Raises:
            MemoryNotIndexedError: the tree was not built in this memory.
            StaleGenerationError: a newer tree replaced the one being read (the caller retries).
        """
        v_p = prompt_vector(ctx, question)
        with ctx.store.snapshot():  # the arrays and the node rows of one generation
            return self._collapsed(ctx, v_p, budget)

    def _collapsed(self, ctx: StrategyContext, v_p: np.ndarray, budget: int) -> list[Hit]:
        tree = self._tree(ctx)
        limit = budget * ctx.config.memory.chunk_tokens
        # every node holds at least one token, so at most limit + 1 rows are looked at (the last one does not fit)
        generation = ctx.store.published_generation(self.name) or 0
        rows, sims = nearest(ctx, (self.name, generation), "vectors", tree.vectors, v_p, limit + 1)
        scores = dict(zip(rows.tolist(), sims.tolist(), strict=True))
        hits: list[Hit] = []
        total = 0
        for row in rows.tolist():
            if total + tree.n_tokens[row] > limit:
                break
            total += tree.n_tokens[row]
            node_id, layer = tree.node_ids[row], tree.layers[row]
            if layer > 0:
                node = ctx.store.node(node_id)
                children = [c for c, _ in ctx.store.edges(node_id, self.name, CHILD)]
                meta: dict[str, Any] = {"strategy": self.name, "layer": layer, "children": sorted(children)}
                hits.append(Hit(node_id, "summary", float(scores[row]), node.text, len(hits), meta))
            else:
                text = ctx.store.node(node_id).text
                hits.append(Hit(node_id, "chunk", float(scores[row]), text, len(hits), {"layer": 0}))
        return hits

    def report(self, ctx: StrategyContext) -> dict[str, Any]:
        """Nodes per layer (layer 0 = chunks) and the parameters of the saved tree (empty before ``index``)."""
        manifest = ctx.store.manifest(self.name)
        if manifest is None:
            return {}
        summaries = ctx.store.nodes(SUMMARY, strategy=self.name)
        layers = [0] * manifest.arrays["node_ids"].shape[0] if "node_ids" in manifest.arrays else []
        layers[: len(summaries)] = [int(n.meta.get("layer", 1)) for n in summaries]
        counts = np.bincount(np.asarray(layers, dtype=np.int64)).tolist() if layers else []
        return {"nodes_per_layer": counts, "summary_nodes": len(summaries), "params": manifest.meta.get("params")}
