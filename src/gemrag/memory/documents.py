"""A memory's documents and chunks: chunking the documents not chunked yet, and checking that a memory's chunks
were made and embedded the way this configuration would (chunk size, embedder).

Used by :class:`gemrag.memory.Memory`. A chunk is ~``chunk_tokens`` MiniLM tokens cut at sentence boundaries
(:func:`gemrag.ingest.chunk_text`; GEM-RAG section III.B.1 chunks a document into passages of T tokens). A chunk's
stored text is the passage itself; whether its document's title is available to the strategies
(``memory.chunk_titles``) is recorded once per memory (:func:`record_titles`), and each strategy decides whether it
reads it (:mod:`gemrag.strategies.platform.titles`).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Protocol

from gemrag.errors import IncompatibleMemoryError
from gemrag.ingest import chunk_text, minilm_tokenizer, normalize_chunk, rechunk_text
from gemrag.memory_settings import MemorySettings
from gemrag.store.parts import Database, DocumentChunks, MetaRows, NodeRows
from gemrag.strategies.platform.titles import TITLES_META


class ChunkStore(Database, MetaRows, DocumentChunks, NodeRows, Protocol):
    """What chunking and the memory's recorded settings use of a store: its meta, documents and chunks, in the
    database's transactions."""


def chunk_pending(store: ChunkStore, chunk_tokens: int) -> int:
    """Chunk every stored document that has no chunks yet (one transaction per document), each chunk stored with
    its character span in the document's text (as the chunker cut it).

    Args:
        chunk_tokens: the chunk size T (MiniLM tokens).

    Returns:
        The number of chunks created.
    """
    pending = store.unchunked_documents()
    if not pending:
        return 0
    store.set_meta("chunk_tokens", chunk_tokens)
    tokenizer = minilm_tokenizer()
    created = 0
    for doc_id, text in pending:
        chunks = chunk_text(text, tokenizer, chunk_tokens)
        store.add_chunks(
            doc_id, [(normalize_chunk(c.text), c.n_tokens) for c in chunks], [(c.start, c.end) for c in chunks]
        )
        created += len(chunks)
    return created


def chunk_new_version(text: str, chunk_tokens: int, keep: Collection[str]) -> list[tuple[str, int]]:
    """The chunks ``(text, n_tokens)`` of a document's new version, keeping the previous version's chunk texts
    ``keep`` wherever they still occur (:func:`gemrag.ingest.rechunk_text`), as the memory stores them.

    Args:
        chunk_tokens: the chunk size T (MiniLM tokens) the memory was chunked with.
    """
    chunks = rechunk_text(text, minilm_tokenizer(), chunk_tokens, keep)
    return [(normalize_chunk(c.text), c.n_tokens) for c in chunks]


def check_compatible(store: ChunkStore, embedder_id: str, memory: MemorySettings) -> None:
    """Refuse a memory built with another embedder or chunk size; record the embedder of a new memory and whether
    its chunks have their document's title available to the strategies (unless the store is read-only; see
    :func:`record_titles`).

    Args:
        memory: the memory's settings (``[memory]``), whose ``chunk_tokens`` and ``chunk_titles`` (None: the
            memory's record) apply.

    Raises:
        IncompatibleMemoryError: the memory records another embedder, has chunks of another size, or was chunked
            with the other ``chunk_titles`` value than the one given.
    """
    chunk_tokens = memory.chunk_tokens
    record_titles(store, memory.chunk_titles)
    recorded = store.get_meta("embedder")
    if recorded is None:
        if not store.readonly:
            store.set_meta("embedder", embedder_id)
    elif recorded != embedder_id:
        raise IncompatibleMemoryError(
            f"this memory was built with the embedder {recorded!r}, not {embedder_id!r}; "
            "open it with the same embedder or index into a new memory directory"
        )
    chunked = store.get_meta("chunk_tokens")
    if chunked is not None and chunked != chunk_tokens and store.nodes("chunk"):
        raise IncompatibleMemoryError(
            f"this memory was chunked with {chunked} tokens per chunk, not {chunk_tokens}; "
            "use the same --chunk-tokens or a new memory directory"
        )


def record_titles(store: ChunkStore, titles: bool | None) -> None:
    """Record ``chunk_titles`` in the memory (:data:`~gemrag.strategies.platform.titles.TITLES_META`): a memory
    without chunks takes ``titles`` (None: True); a memory with chunks keeps what it records, and one chunked before
    the setting existed (nothing recorded) records False, so its embeddings, indexes and cached LLM calls stay valid.
    A read-only store records nothing (absent reads as False).

    Raises:
        IncompatibleMemoryError: ``titles`` is given (not None) and the memory's chunks were recorded with the other
            value.
    """
    recorded = store.get_meta(TITLES_META)
    if store.chunk_signature()[0] > 0:
        kept = bool(recorded)
        if titles is not None and kept != titles:
            raise IncompatibleMemoryError(
                f"this memory's chunks were recorded {'with' if kept else 'without'} their document titles, but "
                f"memory.chunk_titles={str(titles).lower()} was given; drop the setting or use a new memory directory"
            )
        if recorded is None and not store.readonly:
            store.set_meta(TITLES_META, False)
        return
    wanted = True if titles is None else titles
    if recorded != wanted and not store.readonly:
        store.set_meta(TITLES_META, wanted)


def chunk_titles(store: ChunkStore) -> bool:
    """Whether this memory's chunks have their document's title available to the strategies (what
    :func:`record_titles` recorded)."""
    return bool(store.get_meta(TITLES_META, False))
