"""A memory's documents and chunks: chunking the documents not chunked yet, and checking that a memory's chunks
were made and embedded the way this configuration would (chunk size, embedder).

Used by :class:`gemrag.memory.Memory`. A chunk is ~``chunk_tokens`` MiniLM tokens cut at sentence boundaries
(:func:`gemrag.ingest.chunk_text`; GEM-RAG section III.B.1 chunks a document into passages of T tokens).
"""

from __future__ import annotations

from gemrag.errors import IncompatibleMemoryError
from gemrag.ingest import chunk_text, minilm_tokenizer
from gemrag.store import MemoryStore


def chunk_pending(store: MemoryStore, chunk_tokens: int) -> int:
    """Chunk every stored document that has no chunks yet (one transaction per document).

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
        store.add_chunks(doc_id, [(" ".join(c.text.split()), c.n_tokens) for c in chunks])
        created += len(chunks)
    return created


def check_compatible(store: MemoryStore, embedder_id: str, chunk_tokens: int) -> None:
    """Refuse a memory built with another embedder or chunk size; record the embedder of a new memory (unless
    the store is read-only).

    Raises:
        IncompatibleMemoryError: the memory records another embedder, or has chunks of another size.
    """
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
