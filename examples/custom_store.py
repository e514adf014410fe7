"""Assembling a memory store from parts: SQLite rows in one directory, the build arrays in another.

A gemrag memory store is made of parts (``gemrag.store.parts``, drawn in docs/architecture.md): the database that
holds the rows (documents, chunks, questions, edges, caches), where the arrays of each build live, the vector
search over them, and the build lock. The built-in SQLite store keeps everything in one directory; this example
keeps the SQLite database in ``ROWS`` and every build's arrays (``dense.g1.vectors.npy``, ...) in ``ARRAYS`` (a
faster disk, say), by putting two parts together:

* :class:`gemrag.store.SqliteRows`: the SQLite database part (``ROWS/memory.sqlite``, the build lock
  ``ROWS/build.lock``);
* :class:`gemrag.store.FileArraysMixin`: build arrays as files in ``arrays_directory``, written durably and published
  atomically with the manifest in the database.

It also overrides one part, the vector search, to count the searches that went through the store. The store is
used through the public API, ``Memory(store, config)``: it indexes a short text with the ``dense`` strategy (the
embedded MiniLM embedder, no LLM) and retrieves with it.

Run it: ``python examples/custom_store.py [ROWS ARRAYS]`` (default: two temporary directories). It prints the best
passage for a question and where each part wrote its files. ``tests/test_examples.py`` runs it.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from gemrag import Memory
from gemrag.config import Config
from gemrag.models.base import Embedder
from gemrag.store import FileArraysMixin, SqliteRows
from gemrag.types import Hit

TEXT = """The lighthouse on Gull Rock was built in 1857 from granite quarried on the island itself.
Its keeper, Ada Morrow, kept a log of every ship that passed for thirty-one years.

The island's puffin colony returns each April and leaves in August, nesting in burrows on the western cliffs.
Visitors may watch them from the path but must not leave it between May and July.

A ferry leaves the harbour at nine every morning in summer; the crossing takes forty minutes and the last boat
back is at five."""

QUESTION = "When do the puffins come back to the island?"


class SplitStore(FileArraysMixin, SqliteRows):
    """A memory whose SQLite database is in ``rows`` and whose build arrays are files in ``arrays``.

    Args:
        rows: the directory of ``memory.sqlite`` (created when missing).
        arrays: the directory of the build arrays (created when missing).
        readonly: open without writing (both directories must exist).

    Raises:
        GemragError: ``rows`` is not a gemrag memory directory (see :class:`gemrag.store.SqliteRows`).
    """

    def __init__(self, rows: str | Path, arrays: str | Path, *, readonly: bool = False) -> None:
        super().__init__(rows, readonly=readonly)
        self.arrays_directory = Path(arrays)
        if not readonly:
            self.arrays_directory.mkdir(parents=True, exist_ok=True)
        self.searches = 0

    def nearest(
        self,
        strategy: str,
        generation: int,
        name: str,
        vectors: NDArray[np.floating],
        query: NDArray[np.floating],
        k: int,
        **options: Any,
    ) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """The vector search part, counted: every strategy's nearest-neighbour step comes here (then the exact numpy
        search the SQLite store uses; see :meth:`gemrag.store.MemoryStore.nearest` for the arguments)."""
        self.searches += 1
        return super().nearest(strategy, generation, name, vectors, query, k, **options)


def run(rows: Path, arrays: Path, embedder: Embedder | None = None) -> tuple[list[Hit], int]:
    """Index :data:`TEXT` into a :class:`SplitStore` with the ``dense`` strategy and retrieve for :data:`QUESTION`.

    Args:
        rows, arrays: the two directories (see :class:`SplitStore`).
        embedder: the embedder (default: the configured one, the embedded MiniLM ONNX model).

    Returns:
        ``(hits, searches)``: the two best passages, best first, and how many searches the store answered.
    """
    config = Config(strategy="dense")
    config.memory.chunk_tokens = 48  # small chunks, so that the three paragraphs are separate passages
    store = SplitStore(rows, arrays)
    with Memory(store, config, embedder=embedder) as memory:  # closes the store on exit
        memory.add_text(TEXT, title="Gull Rock")
        memory.index("dense")
        hits = memory.retrieve(QUESTION, budget=2, strategy="dense")
        return hits, store.searches


def main(argv: list[str]) -> int:
    """``custom_store.py [ROWS ARRAYS]``: run the example and print what it found and wrote."""
    with tempfile.TemporaryDirectory() as tmp:
        rows, arrays = (Path(a) for a in argv[:2]) if len(argv) >= 2 else (Path(tmp) / "rows", Path(tmp) / "arrays")
        hits, searches = run(rows, arrays)
        print(f"{QUESTION}\n  -> {hits[0].text.splitlines()[0]}")
        print(f"{searches} search(es) through the store's vector search part")
        print(f"rows:   {rows}: {sorted(p.name for p in rows.iterdir())}")
        print(f"arrays: {arrays}: {sorted(p.name for p in arrays.iterdir())}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
