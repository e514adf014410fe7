"""``bm25``: lexical retrieval with Okapi BM25 (Robertson & Zaragoza 2009), a baseline for the graph methods.

Chunks (their indexed text: by default the document's title, then the text, ``bm25.read_titles``:
:mod:`gemrag.strategies.platform.titles`) and questions are
tokenized with ``bm25s.tokenize`` (lower case, the scikit-learn word pattern ``\\b\\w\\w+\\b``, bm25s' English
stopword list, no stemming) and scored with ``bm25s.BM25`` (settings: the ``[bm25]`` section, :class:`BM25Config`;
default bm25s' Lucene variant, k1 = 1.5, b = 0.75). Retrieval returns
the top-B chunks by BM25 score.

Each build is a generation (:mod:`gemrag.store.publish`): bm25s saves its index in its own format in the
directory ``<memory>/bm25.g<generation>.index/``, the chunk id of each indexed document is the array
``node_ids``, and both are published together, so an interrupted build leaves the previous index (or none)
but never a half-written one, and a reader keeps the index it loaded. Re-run ``index`` for this strategy
after adding documents. Needs the ``bm25s`` package (``pip install 'gemrag[eval]'``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import ConfigDict, Field

from gemrag.config import ReadTitles
from gemrag.store import NodeRecord, Published
from gemrag.store.publish import KEEP_COVERS, Publication
from gemrag.strategies.base import StrategyContext, register
from gemrag.strategies.platform.common import (
    chunk_hits,
    chunk_nodes,
    load_published,
    top_k,
    write_publication,
)
from gemrag.strategies.platform.planning import PlanWork, StrategyPlan, no_llm_plan
from gemrag.strategies.platform.titles import indexed_text_of, strategy_reads_titles
from gemrag.types import Hit

if TYPE_CHECKING:
    import bm25s

INDEX_DIR = "index"
"""Name of the published artefact holding bm25s' files (``bm25.g<generation>.index/``)."""
STOPWORDS = "en"


def tokenize(texts: list[str]) -> list[list[str]]:
    """bm25s' tokenizer with English stopwords: one list of lower-case word tokens per text."""
    import bm25s

    return bm25s.tokenize(texts, stopwords=STOPWORDS, return_ids=False, show_progress=False)


class BM25Config(ReadTitles):
    """The ``[bm25]`` configuration section: Okapi BM25's free parameters (Robertson & Zaragoza 2009, "The
    Probabilistic Relevance Framework: BM25 and Beyond", section 3, the BM25 weight), defaults as bm25s'.

    Attributes:
        k1: term-frequency saturation; default 1.5 (bm25s; Robertson & Zaragoza report values of 1.2-2.0).
        b: document-length normalization, 0 (none) to 1 (full); default 0.75 (the usual value).
        method: bm25s' variant of the formula: ``lucene`` (default), ``robertson``, ``atire``, ``bm25l`` or
            ``bm25+`` (Kamphuis et al. 2020, "Which BM25 Do You Mean?").
        read_titles: index a chunk with its document's title (:class:`~gemrag.config.ReadTitles`; default: yes).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    k1: float = Field(1.5, ge=0.0)
    b: float = Field(0.75, ge=0.0, le=1.0)
    method: Literal["lucene", "robertson", "atire", "bm25l", "bm25+"] = "lucene"


@register("bm25")
class BM25Strategy:
    """Top-B chunks by BM25 score of the question's words (bm25s).

    Args:
        config: the ``[bm25]`` section (default: bm25s' k1 = 1.5, b = 0.75, Lucene).
    """

    name = "bm25"
    config_model = BM25Config
    reads_titles = True
    """Indexes ``title\ntext`` by default (measured with and without titles: docs/results.md, "Chunk titles and
    ``fused``")."""

    def __init__(self, config: BM25Config | None = None) -> None:
        self.config = config or BM25Config()

    def plan(self, ctx: StrategyContext, work: PlanWork) -> StrategyPlan:
        """What building now would cost: no LLM call (:func:`~gemrag.strategies.platform.planning.no_llm_plan`)."""
        return no_llm_plan(ctx, work, self.name)

    def build(self, ctx: StrategyContext) -> None:
        """Tokenize every chunk, build the BM25 index and publish it as a new generation.

        Raises:
            MemoryNotIndexedError: the memory holds no chunks.
        """
        chunks = chunk_nodes(ctx)
        generation = ctx.store.begin_build(self.name)
        ctx.store.publish_many([self._write(ctx, generation, chunks, covers=None)])

    def _write(
        self, ctx: StrategyContext, generation: int, chunks: list[NodeRecord], covers: Literal["keep"] | None
    ) -> Publication:
        """Index ``chunks`` and write generation ``generation`` (not yet published)."""
        import bm25s

        retriever = bm25s.BM25(k1=self.config.k1, b=self.config.b, method=self.config.method)
        text_of = indexed_text_of(ctx, titles=strategy_reads_titles(ctx, self.name))
        retriever.index(tokenize([text_of(c) for c in chunks]), show_progress=False)
        path = ctx.store.artifact_path(self.name, generation, INDEX_DIR)
        path.mkdir()
        retriever.save(str(path), show_progress=False)
        ctx.store.sync_path(path)
        ids = np.array([c.id for c in chunks], dtype=np.int64)
        return write_publication(
            ctx, self.name, generation, {"node_ids": ids}, axes={"node_ids": ("n",)}, paths=[INDEX_DIR], covers=covers
        )

    def prune(self, ctx: StrategyContext, gone: set[int], generation: int) -> Publication | None:
        """The index over the published chunks minus ``gone``, as generation ``generation`` (re-indexing costs no
        model call); None when nothing would be left."""
        published = ctx.store.load_published(self.name, mmap=False)
        if published is None:
            return None
        ids = [int(i) for i in np.asarray(published.arrays["node_ids"]).tolist() if int(i) not in gone]
        if not ids:
            return None
        return self._write(ctx, generation, [ctx.store.node(i) for i in ids], covers=KEEP_COVERS)

    def _load(self, ctx: StrategyContext) -> tuple[bm25s.BM25, np.ndarray]:
        def make(published: Published) -> tuple[bm25s.BM25, np.ndarray]:
            import bm25s

            retriever = bm25s.BM25.load(str(published.paths[INDEX_DIR]), show_progress=False)
            return retriever, np.asarray(published.arrays["node_ids"])

        return load_published(ctx, self.name, make, mmap=False)

    def retrieve(self, ctx: StrategyContext, question: str, budget: int) -> list[Hit]:
        """The ``budget`` chunks with the highest BM25 score for ``question``.

        Returns:
            At most ``budget`` chunk hits, best first; ``score`` = the BM25 score (float >= 0, 0 when no
            question word occurs in the chunk); ties go to the earlier chunk, so a question sharing no
            word with the memory gets its first ``budget`` chunks with score 0.

        Raises:
            MemoryNotIndexedError: the strategy was not built in this memory.
        """
        retriever, node_ids = self._load(ctx)
        token_ids = retriever.get_tokens_ids(tokenize([question])[0])  # words not in the index are dropped
        scores = np.asarray(retriever.get_scores_from_ids(token_ids), dtype=np.float64)
        order = top_k(scores, budget)
        return chunk_hits(ctx, node_ids[order].tolist(), scores[order].tolist())

    def report(self, ctx: StrategyContext) -> dict[str, Any]:
        """Number of indexed chunks (0 before ``index``)."""
        manifest = ctx.store.manifest(self.name)
        return {"chunks": 0 if manifest is None else manifest.arrays["node_ids"].shape[0]}
