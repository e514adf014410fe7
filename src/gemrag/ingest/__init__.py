"""Reading documents and splitting them into chunks of T tokens."""

from gemrag.ingest.chunker import Chunk, chunk_text, normalize_chunk, rechunk_text, split_sentences
from gemrag.ingest.loader import SUPPORTED_SUFFIXES, Document, expand_paths, read_document, read_stdin
from gemrag.ingest.spans import locate_chunks
from gemrag.ingest.tokenizer import minilm_tokenizer

__all__ = [
    "SUPPORTED_SUFFIXES",
    "Chunk",
    "Document",
    "chunk_text",
    "expand_paths",
    "locate_chunks",
    "normalize_chunk",
    "read_document",
    "read_stdin",
    "rechunk_text",
    "split_sentences",
    "minilm_tokenizer",
]
