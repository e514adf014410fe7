"""``bm25``: lexical retrieval with Okapi BM25 (Robertson & Zaragoza 2009), a baseline for the graph methods.

Chunks and questions are tokenized with ``bm25s.tokenize`` (lower case, the scikit-learn word pattern
``\\b\\w\\w+\\b``, bm25s' English stopword list, no stemming) and scored with ``bm25s.BM25`` (its defaults:
Lucene variant, k1 = 1.5, b = 0.75). Retrieval returns the top-B chunks by BM25 score.

Each build is a generation (:mod:`gemrag.store.publish`): bm25s saves its index in its own format in the
directory ``<memory>/bm25.g<generation>.index/``, the chunk id of each indexed document is the array
``node_ids``, and both are published together, so an interrupted build leaves the previous index (or none)
but never a half-written one, and a reader keeps the index it loaded. Re-run ``index`` for this strategy
after adding documents. Needs the ``bm25s`` package (``pip install 'gemrag[eval]'``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from gemrag.store import Published
from gemrag.strategies.base import StrategyContext, register
from gemrag.strategies.common import chunk_hits, chunk_nodes, load_published, publish_arrays, require, top_k
from gemrag.types import Hit

if TYPE_CHECKING:
    import bm25s

INDEX_DIR = "index"
"""Name of the published artefact holding bm25s' files (``bm25.g<generation>.index/``)."""
STOPWORDS = "en"


def tokenize(texts: list[str]) -> list[list[str]]:
    """bm25s' tokenizer with English stopwords: one list of lower-case word tokens per text."""
    import bm25s

    return bm25s.tokenize(texts, stopwords=STOPWORDS, return_ids=False, show_progress=False)  # type: ignore[return-value]


@register("bm25")
class BM25Strategy:
    """Top-B chunks by BM25 score of the question's words (bm25s)."""

    name = "bm25"

    def build(self, ctx: StrategyContext) -> None:
        """Tokenize every chunk, build the BM25 index and publish it as a new generation.

        Raises:
            MemoryNotIndexedError: the memory holds no chunks.
            GemragError: bm25s is not installed.
        """
        require("bm25s", strategy=self.name)
        import bm25s

        chunks = chunk_nodes(ctx)
        retriever = bm25s.BM25()
        retriever.index(tokenize([c.text for c in chunks]), show_progress=False)
        generation = ctx.store.begin_build(self.name)
        path = ctx.store.artifact_path(self.name, generation, INDEX_DIR)
        path.mkdir()
        retriever.save(str(path), show_progress=False)
        ctx.store.sync_path(path)
        ids = np.array([c.id for c in chunks], dtype=np.int64)
        publish_arrays(ctx, self.name, generation, {"node_ids": ids}, axes={"node_ids": ("n",)}, paths=[INDEX_DIR])

    def _load(self, ctx: StrategyContext) -> tuple[bm25s.BM25, np.ndarray]:
        def make(published: Published) -> tuple[bm25s.BM25, np.ndarray]:
            require("bm25s", strategy=self.name)
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
