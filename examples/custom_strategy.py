"""Your own retrieval strategy: registered by name, with its own settings section, built and searched over the
memory's chunks through the strategy platform.

A strategy is any class with a ``name``, ``build(ctx)``, ``retrieve(ctx, question, budget)`` and ``report(ctx)``
(:class:`gemrag.strategies.Strategy`), registered with :func:`gemrag.strategies.register` before a memory is opened.
``ctx`` (:class:`gemrag.strategies.StrategyContext`) holds the memory's store, its embedder and LLM (cached and
metered), the configuration and a progress factory. The platform helpers of
:mod:`gemrag.strategies.platform.common` do the memory's side of the work, the same for every built-in method:

* ``chunk_nodes(ctx)``: every chunk of the memory, in reading order;
* ``ctx.store.begin_build(name)`` and ``publish_arrays(ctx, name, generation, arrays, axes=...)``: the build's arrays
  (numpy or scipy.sparse) published atomically as a new generation, with the chunks it covers. Naming each array's
  chunk axis ``"n"`` lets the platform prune the rows of a deleted document's chunks: ``Memory.delete`` forgets them
  without rebuilding, and ``gemrag info`` shows the strategy as stale until the next ``index``;
* ``load_published(ctx, name, make)``: the last published build, loaded once per generation;
* ``chunk_hits(ctx, node_ids, scores)``: hits for ranked chunks; ``Memory.retrieve`` adds each hit's provenance.

:class:`WordOverlap` scores a chunk by the question's words it contains, each weighted by its inverse document
frequency (words hashed into ``buckets`` columns of a sparse chunk x word matrix, so no vocabulary is stored). Its
``[overlap]`` section (:class:`OverlapConfig`) is validated like a built-in one: ``--set overlap.min_length=4``,
``GEMRAG_OVERLAP__MIN_LENGTH=4`` or ``[overlap] min_length = 4`` in ``gemrag.toml`` reach its constructor.

Run it: ``python examples/custom_strategy.py [MEMORY]`` (default: a temporary directory). It indexes a short text
with the strategy (no LLM; the memory chunks the text with the embedded MiniLM tokenizer), retrieves for a question,
deletes one paragraph's document and retrieves again. ``tests/test_examples.py`` runs it.
"""

from __future__ import annotations

import re
import sys
import tempfile
import warnings
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from pydantic import BaseModel, Field

from gemrag import Memory
from gemrag.config import Config
from gemrag.strategies import StrategyContext, register
from gemrag.strategies.platform.common import chunk_hits, chunk_nodes, load_published, publish_arrays
from gemrag.types import Hit

DOCUMENTS = {
    "lighthouse": "The lighthouse on Gull Rock was built in 1857 from granite quarried on the island itself. Its "
    "keeper, Ada Morrow, kept a log of every ship that passed for thirty-one years.",
    "puffins": "The island's puffin colony returns each April and leaves in August, nesting in burrows on the western "
    "cliffs. Visitors may watch them from the path but must not leave it between May and July.",
    "ferry": "A ferry leaves the harbour at nine every morning in summer; the crossing takes forty minutes and the "
    "last boat back is at five.",
}

QUESTION = "Who kept a log of the ships passing the island?"

WORD = re.compile(r"[a-z0-9]+")


class OverlapConfig(BaseModel):
    """The ``[overlap]`` section.

    Attributes:
        min_length: the shortest word counted (letters); shorter ones ("the", "of") are ignored.
        buckets: columns of the hashed chunk x word matrix.
    """

    min_length: int = Field(3, ge=1)
    buckets: int = Field(2**16, ge=16)


@register("overlap", config=OverlapConfig)
class WordOverlap:
    """Top-B chunks by the inverse-document-frequency weight of the question's words they contain.

    Args:
        config: the validated ``[overlap]`` section.
    """

    name = "overlap"

    def __init__(self, config: OverlapConfig) -> None:
        self.config = config

    def columns(self, text: str) -> list[int]:
        """The hashed columns of the words of ``text`` at least ``min_length`` long, each once."""
        words = {w for w in WORD.findall(text.lower()) if len(w) >= self.config.min_length}
        return sorted({zlib.crc32(w.encode()) % self.config.buckets for w in words})

    def build(self, ctx: StrategyContext) -> None:
        """One row per chunk, a 1 in the column of each of its words; published as a new generation."""
        chunks = chunk_nodes(ctx)
        rows = [(r, c) for r, chunk in enumerate(chunks) for c in self.columns(chunk.text)]
        data = np.ones(len(rows), dtype=np.float32)
        index = (np.array([r for r, _ in rows], dtype=np.int64), np.array([c for _, c in rows], dtype=np.int64))
        matrix = sp.csr_matrix((data, index), shape=(len(chunks), self.config.buckets))
        generation = ctx.store.begin_build(self.name)
        publish_arrays(
            ctx,
            self.name,
            generation,
            {"node_ids": np.array([c.id for c in chunks], dtype=np.int64), "words": matrix},
            axes={"node_ids": ("n",), "words": ("n", "v")},  # "n": one row per chunk, pruned with its chunk
        )

    def retrieve(self, ctx: StrategyContext, question: str, budget: int) -> list[Hit]:
        """The ``budget`` best chunks sharing a word with ``question``, best first."""
        arrays = load_published(ctx, self.name, lambda published: published.arrays, mmap=False)
        node_ids, words = np.asarray(arrays["node_ids"]), sp.csr_matrix(arrays["words"])
        asked = self.columns(question)
        if not asked or not len(node_ids):
            return []
        found = words[:, asked]
        idf = np.log((1 + len(node_ids)) / (1 + np.asarray(found.sum(axis=0)).ravel())) + 1.0
        scores = found @ idf
        order = [int(i) for i in np.argsort(-scores, kind="stable")[:budget] if scores[i] > 0]
        return chunk_hits(ctx, node_ids[order].tolist(), scores[order].tolist())

    def report(self, ctx: StrategyContext) -> dict[str, Any]:
        """What ``gemrag info`` and ``Memory.stats()`` show for this strategy."""
        arrays = load_published(ctx, self.name, lambda published: published.arrays, mmap=False)
        return {"chunks": int(len(arrays["node_ids"])), "word_columns_used": int(arrays["words"].nnz)}


def run(directory: Path) -> tuple[list[Hit], list[Hit], dict[str, Any], str]:
    """Index :data:`DOCUMENTS` with ``overlap`` (``min_length = 4``), retrieve for :data:`QUESTION`, delete the
    ``lighthouse`` document, retrieve again and rebuild.

    Returns:
        ``(before, after, report, state)``: the hits before and after the delete, best first, the strategy's report
        and its build state after the delete (``gemrag info`` shows the same).
    """
    config = Config.model_validate({"strategy": "overlap", "overlap": {"min_length": 4}})  # [overlap] min_length = 4
    with Memory.open(directory, config) as memory:  # the strategy is registered above, before the memory opens
        for name, text in DOCUMENTS.items():
            memory.add_text(text, title=name.capitalize(), id=name)
        memory.index()  # the configured strategy: overlap (no LLM call)
        before = memory.retrieve(QUESTION, budget=2)
        report = memory.stats()["strategy_report"]
        memory.delete("lighthouse")  # its chunk's rows leave the published arrays at once, no rebuild needed
        state = memory.stats()["strategies"]["overlap"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a stale strategy warns once: "1 deleted chunk"
            after = memory.retrieve(QUESTION, budget=2)
        memory.index()  # a fresh build over what is left
        return before, after, report, state


def main(argv: list[str]) -> int:
    """``custom_strategy.py [MEMORY]``: run the example and print what it retrieved."""
    with tempfile.TemporaryDirectory() as tmp:
        before, after, report, state = run(Path(argv[0]) if argv else Path(tmp) / "memory")
    print(QUESTION)
    for hit in before:
        title = hit.provenance.passages[0].document.title if hit.provenance else "?"
        print(f"  -> [{title}] {hit.text[:60]}... (score {hit.score:.2f})")
    print(f"report: {report}")
    print(f"after deleting 'lighthouse' ({state}):")
    for hit in after:
        print(f"  -> {hit.text[:60]}... (score {hit.score:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
