"""``raptor``: RAPTOR, the tree baseline of the GEM-RAG paper (Sarthi et al. 2024, "RAPTOR: Recursive
Abstractive Processing for Tree-Organized Retrieval"; GEM-RAG paper section IV, Tables I and II).

Build (RAPTOR section 3, and the authors' ``cluster_tree_builder.py``):
  leaves (layer 0) are the memory's chunks with their embeddings; while a layer has more than
  ``reduction_dim + 1`` nodes (RAPTOR's stop rule) and at most ``max_layers`` times, the layer's vectors
  are clustered (:func:`gemrag.graph.clustering.raptor_clusters`: UMAP, Gaussian mixture with k by BIC,
  soft assignment with threshold 0.1, global then local clustering, re-clustering of clusters whose texts
  exceed the summarizer's context), the LLM summarizes each cluster
  (:func:`gemrag.models.prompts.raptor_summary_prompt`, at most ``summary_tokens`` tokens, cached), and
  the summaries, embedded, form the next layer. Building also stops when clustering cannot reduce a layer.
Retrieve — the collapsed tree (RAPTOR section 3, "Querying"): every node of every layer is ranked by
  cosine similarity to the question and nodes are taken in that order while the running token count
  stays <= ``budget x chunk_tokens`` (the ~400-token context every strategy gets); the first node that
  does not fit ends the selection, as in the authors' ``retrieve_information_collapse_tree``.

Storage — RAPTOR's summaries are *not* rows of the store's ``nodes`` table: GEM's summary nodes are graph
nodes of GEM's build generations. The tree is RAPTOR's own published generation instead
(:mod:`gemrag.store.publish`): the array ``vectors`` ((N, d) float32, chunks first, then summaries layer by
layer, in ``raptor.g<generation>.vectors.npy``) and the manifest's metadata (node ids, layers, MiniLM token
counts, the summaries' texts and children, the parameters and a digest of the vectors), published together.
Chunks keep their store ids; summary ``i`` (0-based, in creation order) has the *virtual* node id ``-(i + 1)``:
a :class:`~gemrag.types.Hit` with a negative ``node_id`` and kind ``"summary"`` is a RAPTOR summary, its
``meta`` holds ``{"strategy": "raptor", "layer": L, "children": [node ids]}`` and ``Store.node`` does not
know it. Rebuilding replaces the whole tree; unchanged clusters cost no LLM call (the LLM cache).

Needs scikit-learn and umap-learn (``pip install 'gemrag[eval]'``).
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from gemrag.errors import DamagedMemoryError, GemragError, is_fatal
from gemrag.graph.clustering import RANDOM_SEED, Reducer, raptor_clusters
from gemrag.models.prompts import raptor_summary_prompt
from gemrag.store import Published
from gemrag.strategies.base import StrategyContext, register
from gemrag.strategies.common import (
    chunk_ids_and_vectors,
    chunk_nodes,
    cosine_scores,
    count_tokens,
    llm_summary,
    load_published,
    prompt_vector,
    publish_arrays,
    require,
)
from gemrag.types import Hit

STRATEGY = "raptor"
PROMPT_OVERHEAD = 64
"""LLM tokens of the summary prompt besides the cluster's texts (instructions and chat template)."""


@dataclass(frozen=True)
class RaptorParams:
    """RAPTOR's parameters, defaults as in the authors' code.

    Attributes:
        reduction_dim: UMAP output dimension; layers of at most ``reduction_dim + 1`` nodes are not
            clustered (10).
        threshold: GMM soft-assignment probability (0.1).
        max_layers: most summary layers built (5).
        cluster_tokens: most LLM tokens of the texts one cluster may hold before it is re-clustered
            (3500); also capped by the LLM's context window minus ``summary_tokens`` and the prompt.
        summary_tokens: ``max_tokens`` of each summary (100).
        max_clusters: most GMM components tried per clustering stage (50).
        random_state: seed of UMAP and the GMMs (224).
        reducer: the dimension reduction; None = UMAP with the cosine metric. Tests inject a cheap one.
    """

    reduction_dim: int = 10
    threshold: float = 0.1
    max_layers: int = 5
    cluster_tokens: int = 3500
    summary_tokens: int = 100
    max_clusters: int = 50
    random_state: int = RANDOM_SEED
    reducer: Reducer | None = field(default=None, compare=False)

    def as_dict(self) -> dict[str, Any]:
        """The parameters as JSON-serializable values (the reducer by name)."""
        out = asdict(self)
        out["reducer"] = "umap" if self.reducer is None else getattr(self.reducer, "__name__", "custom")
        return out


@dataclass
class RaptorTree:
    """The collapsed tree, one row per node: chunks (layer 0) first, then summaries layer by layer.

    Attributes:
        node_ids: store id of each chunk; ``-(i + 1)`` for summary ``i``.
        layers: layer of each node (0 = chunk).
        n_tokens: length of each node's text in MiniLM tokens (the budget's unit).
        summaries: per summary ``{"text": str, "layer": int, "children": [node ids]}``.
        vectors: ``(N, d)`` float32 ``E(text)`` of every node.
    """

    node_ids: list[int]
    layers: list[int]
    n_tokens: list[int]
    summaries: list[dict[str, Any]]
    vectors: NDArray[np.float32]

    def publish(self, ctx: StrategyContext, params: RaptorParams) -> None:
        """Publish the tree as a new generation: the array ``vectors`` and the tree as the build's metadata."""
        generation = ctx.store.begin_build(STRATEGY)
        meta = {
            "node_ids": self.node_ids,
            "layers": self.layers,
            "n_tokens": self.n_tokens,
            "summaries": self.summaries,
            "params": params.as_dict(),
            "digest": _digest(self.vectors),
        }
        publish_arrays(ctx, STRATEGY, generation, {"vectors": self.vectors}, axes={"vectors": ("n", "d")}, meta=meta)

    @classmethod
    def from_published(cls, published: Published) -> RaptorTree:
        """The tree of a published generation.

        Raises:
            DamagedMemoryError: the vectors do not match the tree (the files were changed outside gemrag).
        """
        meta, vectors = published.meta, np.asarray(published.arrays["vectors"])
        if meta.get("digest") != _digest(vectors) or len(meta["node_ids"]) != len(vectors):
            raise DamagedMemoryError(
                f"the RAPTOR tree (generation {published.generation}) is damaged: its vectors do not match it; "
                "run `gemrag index` (strategy raptor) again"
            )
        return cls(meta["node_ids"], meta["layers"], meta["n_tokens"], meta["summaries"], vectors)


def _digest(vectors: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(vectors, dtype=np.float32).tobytes()).hexdigest()


@register("raptor")
class RaptorStrategy:
    """RAPTOR: a tree of recursive cluster summaries, searched as a collapsed tree under a token budget.

    Args:
        params: the tree's parameters (default: RAPTOR's).
    """

    name = "raptor"

    def __init__(self, params: RaptorParams | None = None) -> None:
        self.params = params or RaptorParams()

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
        ids, vectors = chunk_ids_and_vectors(ctx, chunks)
        tree = RaptorTree(ids.tolist(), [0] * len(chunks), [c.n_tokens for c in chunks], [], vectors)
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
            written = self._summarize_layer(ctx, layer, [[current[i] for i in c] for c in clusters], tree, texts)
            if not written:
                break
            current = written
        tree.publish(ctx, p)

    def _summarize_layer(
        self, ctx: StrategyContext, layer: int, clusters: list[list[int]], tree: RaptorTree, texts: list[str]
    ) -> list[int]:
        """Summarize each cluster (rows of ``tree``) into a new node of ``layer``; returns the new rows."""
        new_texts: list[str] = []
        with ctx.progress(f"RAPTOR layer {layer} summaries", len(clusters)) as advance:
            for members in clusters:
                try:
                    text = llm_summary(
                        ctx, raptor_summary_prompt([texts[i] for i in members]), self.params.summary_tokens
                    )
                except GemragError as exc:
                    if is_fatal(exc):
                        raise
                    ctx.store.record_failure("index/raptor", None, f"layer {layer}, {len(members)} nodes: {exc}")
                    advance(1)
                    continue
                summary_id = -(len(tree.summaries) + 1)
                children = [tree.node_ids[i] for i in members]
                tree.summaries.append({"text": text, "layer": layer, "children": children})
                tree.node_ids.append(summary_id)
                tree.layers.append(layer)
                tree.n_tokens.append(count_tokens(text))
                texts.append(text)
                new_texts.append(text)
                advance(1)
        if not new_texts:
            return []
        tree.vectors = np.concatenate([tree.vectors, ctx.embedder.embed(new_texts)]).astype(np.float32)
        return list(range(len(texts) - len(new_texts), len(texts)))

    def _tree(self, ctx: StrategyContext) -> RaptorTree:
        return load_published(ctx, self.name, RaptorTree.from_published, mmap=False)

    def retrieve(self, ctx: StrategyContext, question: str, budget: int) -> list[Hit]:
        """Collapsed-tree retrieval under a budget of ``budget x chunk_tokens`` MiniLM tokens.

        Returns:
            Chunk and summary hits by decreasing ``score`` = ``cos(E(question), E(node text))``, their
            token counts summing to at most the budget; selection stops at the first node that does not
            fit. Summary hits have negative virtual ids and ``meta`` ``{"strategy", "layer", "children"}``.

        Raises:
            MemoryNotIndexedError: the tree was not built in this memory.
            DamagedMemoryError: the published tree's vectors do not match it.
        """
        tree = self._tree(ctx)
        scores = cosine_scores(prompt_vector(ctx, question), tree.vectors)
        limit = budget * ctx.config.gem.chunk_tokens
        hits: list[Hit] = []
        total = 0
        for row in np.argsort(-scores, kind="stable").tolist():
            if total + tree.n_tokens[row] > limit:
                break
            total += tree.n_tokens[row]
            node_id, layer = tree.node_ids[row], tree.layers[row]
            if node_id < 0:
                summary = tree.summaries[-node_id - 1]
                meta: dict[str, Any] = {"strategy": self.name, "layer": layer, "children": summary["children"]}
                hits.append(Hit(node_id, "summary", float(scores[row]), summary["text"], len(hits), meta))
            else:
                text = ctx.store.node(node_id).text
                hits.append(Hit(node_id, "chunk", float(scores[row]), text, len(hits), {"layer": 0}))
        return hits

    def report(self, ctx: StrategyContext) -> dict[str, Any]:
        """Nodes per layer (layer 0 = chunks) and the parameters of the saved tree (empty before ``index``)."""
        manifest = ctx.store.manifest(self.name)
        if manifest is None:
            return {}
        meta = manifest.meta
        counts = np.bincount(np.asarray(meta["layers"], dtype=np.int64)).tolist() if meta["layers"] else []
        return {"nodes_per_layer": counts, "summary_nodes": len(meta["summaries"]), "params": meta["params"]}
