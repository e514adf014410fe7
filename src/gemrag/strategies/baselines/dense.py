"""``dense``: the "Embed" baseline of the GEM-RAG paper (section IV, "Baselines"; Tables I and II).

"The standard RAG method, of embedding each chunk of text, and embedding the given prompt, and finding the
most similar chunks to the prompt, up to a specific budget": the top-B chunks by ``cos(E(p), E(CHUNK_i))``.

Build publishes a generation of two arrays, ``node_ids`` ((n,) int64 chunk ids) and ``vectors`` ((n, d)
float32 ``E(CHUNK_i)``), as ``dense.g<generation>.*.npy`` (:mod:`gemrag.store.publish`); the vectors come from
the memory's embedding cache, so a memory GEM already indexed costs no new embedding. Re-run ``index`` for
this strategy after adding documents. A chunk is embedded as its document's title and its text (``title\ntext``,
as HippoRAG 2's dense passage retrieval; ``dense.read_titles``, :mod:`gemrag.strategies.platform.titles`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import ConfigDict

from gemrag.config import ReadTitles
from gemrag.graph.ann import unit_rows32
from gemrag.store import Published
from gemrag.strategies.base import StrategyContext, register
from gemrag.strategies.platform.common import (
    chunk_hits,
    chunk_ids_and_vectors,
    load_published,
    nearest,
    prompt_vector,
    publish_arrays,
)
from gemrag.strategies.platform.planning import PlanWork, StrategyPlan, no_llm_plan
from gemrag.strategies.platform.titles import strategy_reads_titles
from gemrag.types import Hit

PREFIX = "dense"
AXES = {"node_ids": ("n",), "vectors": ("n", "d")}


def _prepared(published: Published) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """``(generation, node_ids (n,) int64, chunk vectors (n, d), unit chunk vectors (n, d) float32)``, normalized
    once per loaded generation (not per query: a float64 copy of every vector per query was 3 GB at 1M chunks)."""
    vectors = published.arrays["vectors"]
    return published.generation, np.asarray(published.arrays["node_ids"]), vectors, unit_rows32(vectors)


class DenseConfig(ReadTitles):
    """The ``[dense]`` configuration section: only ``read_titles`` (:class:`~gemrag.config.ReadTitles`; default:
    read them)."""

    model_config = ConfigDict(frozen=True, extra="forbid")


@register("dense")
class DenseStrategy:
    """Top-B chunks by cosine similarity of the question's embedding to the chunks' (the paper's "Embed").

    Args:
        config: the ``[dense]`` section (default: chunks embedded with their titles).
    """

    name = "dense"
    config_model = DenseConfig
    reads_titles = True
    """Embeds ``title\ntext`` by default, as HippoRAG 2's passages (measured with and without titles:
    docs/results.md, "Chunk titles and ``fused``")."""

    def __init__(self, config: DenseConfig | None = None) -> None:
        self.config = config or DenseConfig()

    def plan(self, ctx: StrategyContext, work: PlanWork) -> StrategyPlan:
        """What building now would cost: no LLM call (:func:`~gemrag.strategies.platform.planning.no_llm_plan`)."""
        return no_llm_plan(ctx, work, self.name)

    def build(self, ctx: StrategyContext) -> None:
        """Embed every chunk (cached) and publish ``node_ids`` / ``vectors`` as a new generation.

        Raises:
            MemoryNotIndexedError: the memory holds no chunks.
        """
        ids, vectors = chunk_ids_and_vectors(ctx, titles=strategy_reads_titles(ctx, self.name))
        generation = ctx.store.begin_build(PREFIX)
        publish_arrays(ctx, PREFIX, generation, {"node_ids": ids, "vectors": vectors}, axes=AXES, search=["vectors"])

    def retrieve(self, ctx: StrategyContext, question: str, budget: int) -> list[Hit]:
        """The ``budget`` chunks most similar to ``question``.

        Returns:
            At most ``budget`` chunk hits, best first; ``score`` = ``cos(E(question), E(chunk))`` in [-1, 1];
            ties go to the earlier chunk.

        Raises:
            MemoryNotIndexedError: the strategy was not built in this memory.
        """
        v_p = prompt_vector(ctx, question)
        with ctx.store.snapshot():
            generation, ids, vectors, unit = load_published(ctx, PREFIX, _prepared)
            order, scores = nearest(ctx, (PREFIX, generation), "vectors", vectors, v_p, budget, unit=unit)
            return chunk_hits(ctx, ids[order].tolist(), scores.tolist())

    def report(self, ctx: StrategyContext) -> dict[str, Any]:
        """Number of indexed chunks (0 before ``index``)."""
        manifest = ctx.store.manifest(PREFIX)
        return {"chunks": 0 if manifest is None else manifest.arrays["node_ids"].shape[0]}
