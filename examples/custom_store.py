"""Assembling a memory store from parts: SQLite rows in one directory, the build arrays in another, and a vector
search of our own, each passed as an object (no subclass).

A gemrag memory store is a facade over part objects (``gemrag.store.parts``, drawn in docs/architecture.md): the
database that holds the rows (documents, chunks, questions, edges, caches), where the arrays of each build live, the
vector search over them, and the build lock. ``open_store`` builds the backend's parts and takes others by name
(``parts={"arrays": ..., "vectors": ...}``): each is a function of the parts built so far, returning the object to use.
The built-in SQLite store keeps everything in one directory; this example keeps the SQLite database in ``ROWS`` and
every build's arrays (``dense.g1.vectors.npy``, ...) in ``ARRAYS`` (a faster disk, say), with two parts of its own:

* :class:`gemrag.store.FileArrays` in ``ARRAYS``: build arrays as files, written durably and published atomically
  with the manifest in the database (``ROWS/memory.sqlite``, the build lock ``ROWS/build.lock``);
* :class:`CountingSearch`, a vector search that counts the searches that went through it and hands them to the
  backend's own (any object with the methods of :class:`gemrag.store.parts.VectorSearch`).

The store is used through the public API, ``Memory(store, config)``: it indexes a short text with the ``dense``
strategy (the embedded MiniLM embedder, no LLM) and retrieves with it.

Run it: ``python examples/custom_store.py [ROWS ARRAYS]`` (default: two temporary directories). It prints the best
passage for a question, how many searches the custom part answered, and where each part wrote its files.
``tests/test_examples.py`` runs it.
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
from gemrag.store import FileArrays, MemoryStore, open_store
from gemrag.store.parts import VectorSearch
from gemrag.types import Hit

TEXT = """The lighthouse on Gull Rock was built in 1857 from granite quarried on the island itself.
Its keeper, Ada Morrow, kept a log of every ship that passed for thirty-one years.

The island's puffin colony returns each April and leaves in August, nesting in burrows on the western cliffs.
Visitors may watch them from the path but must not leave it between May and July.

A ferry leaves the harbour at nine every morning in summer; the crossing takes forty minutes and the last boat
back is at five."""

QUESTION = "When do the puffins come back to the island?"


class CountingSearch:
    """A vector-search part that counts the searches (every strategy's nearest-neighbour step comes here) and hands
    them to another vector-search part.

    Args:
        inner: the part that searches (the backend's own: exact numpy, with an HNSW index of large arrays).

    Attributes:
        searches: how many searches went through this part.
    """

    def __init__(self, inner: VectorSearch) -> None:
        self.inner = inner
        self.searches = 0

    def index_vectors(self, strategy: str, generation: int, name: str, vectors: NDArray[np.floating]) -> list[str]:
        """Index a build's search array: the inner part's index (see
        :meth:`gemrag.store.vectors.ExactSearch.index_vectors`)."""
        return self.inner.index_vectors(strategy, generation, name, vectors)

    def nearest(self, *args: Any, **options: Any) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """One search, counted, answered by the inner part (see :meth:`gemrag.store.vectors.ExactSearch.nearest` for
        the arguments)."""
        self.searches += 1
        return self.inner.nearest(*args, **options)


def split_store(rows: Path, arrays: Path) -> MemoryStore:
    """A SQLite memory whose database is in ``rows`` and whose build arrays are files in ``arrays`` (both created
    when missing), searched through a :class:`CountingSearch` (``store.parts.vectors``).

    Raises:
        GemragError: ``rows`` is not a gemrag memory directory.
    """
    parts = {
        "arrays": lambda built: FileArrays(built, arrays),
        "vectors": lambda built: CountingSearch(built.vectors),  # wraps the backend's own vector search
    }
    return open_store(rows, parts=parts)


def run(rows: Path, arrays: Path, embedder: Embedder | None = None) -> tuple[list[Hit], int]:
    """Index :data:`TEXT` into a :func:`split_store` with the ``dense`` strategy and retrieve for :data:`QUESTION`.

    Args:
        rows, arrays: the two directories (see :func:`split_store`).
        embedder: the embedder (default: the configured one, the embedded MiniLM ONNX model).

    Returns:
        ``(hits, searches)``: the two best passages, best first, and how many searches the custom vector-search part
        answered.
    """
    config = Config(strategy="dense")
    config.memory.chunk_tokens = 48  # small chunks, so that the three paragraphs are separate passages
    store = split_store(rows, arrays)
    search = store.parts.vectors  # every strategy's search goes through the part passed in
    assert isinstance(search, CountingSearch)
    with Memory(store, config, embedder=embedder) as memory:  # closes the store on exit
        memory.add_text(TEXT, title="Gull Rock")
        memory.index("dense")
        hits = memory.retrieve(QUESTION, budget=2, strategy="dense")
        return hits, search.searches


def main(argv: list[str]) -> int:
    """``custom_store.py [ROWS ARRAYS]``: run the example and print what it found and wrote."""
    with tempfile.TemporaryDirectory() as tmp:
        rows, arrays = (Path(a) for a in argv[:2]) if len(argv) >= 2 else (Path(tmp) / "rows", Path(tmp) / "arrays")
        hits, searches = run(rows, arrays)
        print(f"{QUESTION}\n  -> {hits[0].text.splitlines()[0]}")
        print(f"{searches} search(es) through the store's vector search part (CountingSearch)")
        print(f"rows:   {rows}: {sorted(p.name for p in rows.iterdir())}")
        print(f"arrays: {arrays}: {sorted(p.name for p in arrays.iterdir())}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
