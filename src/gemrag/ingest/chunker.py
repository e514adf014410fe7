"""Token-based chunking at sentence boundaries (GEM-RAG section III.B.1, "Chunking"; T = 100, section IV.E).

The corpus is split into chunks of at most T tokens. Tokens are counted with the embedder's tokenizer
(all-MiniLM-L6-v2 WordPiece by default), so a chunk always fits the embedder. Sentences are packed greedily;
a chunk ends at a sentence boundary unless one sentence alone is longer than T, in which case it is cut at
token boundaries.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

# A sentence ends at . ! ? (optionally followed by closing quotes/brackets) before whitespace, or at a
# blank line. Abbreviations such as "Mr." occasionally split early; that only shortens a chunk.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'\u201d\u2019)\]]*\s+|\n\s*\n")


class Tokenizer(Protocol):
    """What the chunker needs from a ``tokenizers.Tokenizer``."""

    def encode_batch(self, inputs: list[str], /, *, add_special_tokens: bool = ...) -> list[Any]: ...


@dataclass(frozen=True)
class Chunk:
    """A chunk: its ``text``, its length ``n_tokens`` and its character span ``[start, end)`` in the source."""

    text: str
    n_tokens: int
    start: int
    end: int


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Character spans ``(start, end)`` of the sentences of ``text``, whitespace trimmed, in order."""
    spans: list[tuple[int, int]] = []
    pos = 0
    for m in _SENTENCE_END.finditer(text):
        spans.append((pos, m.start() + len(m.group(0).rstrip())))
        pos = m.end()
    spans.append((pos, len(text)))
    out = []
    for s, e in spans:
        seg = text[s:e]
        if not seg.strip():
            continue
        s += len(seg) - len(seg.lstrip())
        e -= len(seg) - len(seg.rstrip())
        out.append((s, e))
    return out


def _pieces(text: str, tokenizer: Tokenizer, max_tokens: int) -> list[tuple[int, int, int]]:
    """``(start, end, n_tokens)`` of the sentences of ``text``, a sentence longer than ``max_tokens`` cut into
    windows of ``max_tokens`` tokens (each piece has at most ``max_tokens``)."""
    spans = split_sentences(text)
    if not spans:
        return []
    encodings = tokenizer.encode_batch([text[s:e] for s, e in spans], add_special_tokens=False)
    pieces: list[tuple[int, int, int]] = []
    for (s, e), enc in zip(spans, encodings, strict=True):
        n = len(enc.ids)
        if n <= max_tokens:
            pieces.append((s, e, n))
            continue
        offsets = enc.offsets
        for i in range(0, n, max_tokens):
            window = offsets[i : i + max_tokens]
            pieces.append((s + window[0][0], s + window[-1][1], len(window)))
    return pieces


def _pack(text: str, pieces: Sequence[tuple[int, int, int]], max_tokens: int) -> list[Chunk]:
    """Pack consecutive pieces greedily into chunks of at most ``max_tokens`` tokens."""
    if not pieces:
        return []
    chunks: list[Chunk] = []
    cur_s, cur_e, cur_n = pieces[0]
    for s, e, n in pieces[1:]:
        if cur_n + n <= max_tokens:
            cur_e, cur_n = e, cur_n + n
        else:
            chunks.append(Chunk(text[cur_s:cur_e], cur_n, cur_s, cur_e))
            cur_s, cur_e, cur_n = s, e, n
    chunks.append(Chunk(text[cur_s:cur_e], cur_n, cur_s, cur_e))
    return chunks


def chunk_text(text: str, tokenizer: Tokenizer, max_tokens: int = 100) -> list[Chunk]:
    """Split ``text`` into chunks of at most ``max_tokens`` tokens, cut at sentence boundaries where possible.

    Args:
        text: the document.
        tokenizer: a ``tokenizers.Tokenizer`` (counts tokens without special tokens).
        max_tokens: T, the chunk size in tokens (> 0).

    Returns:
        Chunks in document order; their spans do not overlap and together cover every sentence.

    Raises:
        ValueError: ``max_tokens`` < 1.
    """
    if max_tokens < 1:
        raise ValueError("max_tokens must be >= 1")
    return _pack(text, _pieces(text, tokenizer, max_tokens), max_tokens)


def normalize_chunk(text: str) -> str:
    """A chunk's text as the memory stores it: runs of whitespace made one space, none at the ends."""
    return " ".join(text.split())


def rechunk_text(text: str, tokenizer: Tokenizer, max_tokens: int, keep: Collection[str]) -> list[Chunk]:
    """Chunk a new version of a document so that the previous version's chunks ``keep`` survive wherever their text
    still occurs: gemrag's rule for updating a source (not in GEM-RAG, whose corpus does not change).

    Greedy packing (:func:`chunk_text`) is position-dependent: a sentence that grows or shrinks early in a document
    can move every later chunk boundary, so an edit of one paragraph would give the rest of the document new chunk
    texts and new LLM calls. Here, scanning the new version's sentences from the start, a run of consecutive
    sentences whose text (whitespace normalized, :func:`normalize_chunk`) equals a chunk in ``keep`` becomes that
    chunk again (the longest such run at each position); the sentences between kept chunks, the changed stretch,
    are packed greedily on their own. With nothing kept this is :func:`chunk_text`; a changed paragraph costs new
    chunks for that stretch only (a short one may give a chunk shorter than a fresh chunking would).

    Args:
        text: the new version. tokenizer, max_tokens: as for :func:`chunk_text`.
        keep: the previous version's chunk texts, normalized as the memory stores them.

    Returns:
        Chunks in document order, each of at most ``max_tokens`` tokens, together covering every sentence.

    Raises:
        ValueError: ``max_tokens`` < 1.
    """
    if max_tokens < 1:
        raise ValueError("max_tokens must be >= 1")
    pieces = _pieces(text, tokenizer, max_tokens)
    wanted = set(keep)
    chunks: list[Chunk] = []
    gap: list[tuple[int, int, int]] = []
    i = 0
    while i < len(pieces):
        match, n = None, 0
        for j in range(i, len(pieces)):
            n += pieces[j][2]
            if n > max_tokens:
                break
            if normalize_chunk(text[pieces[i][0] : pieces[j][1]]) in wanted:
                match = (j, n)
        if match is None:
            gap.append(pieces[i])
            i += 1
            continue
        chunks += _pack(text, gap, max_tokens)
        gap = []
        j, n = match
        chunks.append(Chunk(text[pieces[i][0] : pieces[j][1]], n, pieces[i][0], pieces[j][1]))
        i = j + 1
    return chunks + _pack(text, gap, max_tokens)


def count_tokens(texts: Sequence[str], tokenizer: Tokenizer) -> list[int]:
    """Token counts (no special tokens) of ``texts``."""
    return [len(e.ids) for e in tokenizer.encode_batch(list(texts), add_special_tokens=False)]
