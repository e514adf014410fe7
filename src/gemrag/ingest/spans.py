"""Finding stored chunks in their document again: the character span ``[start, end)`` of each chunk.

A memory stores a chunk's text with whitespace runs collapsed (:func:`gemrag.ingest.chunker.normalize_chunk`), so
``normalize_chunk(document[start:end]) == chunk.text`` is the relation between a document version's text and the
span of one of its chunks. The chunker knows the spans when it cuts (:class:`~gemrag.ingest.chunker.Chunk`); for
chunks made before spans were stored, or kept from a previous version of their document, :func:`locate_chunks`
finds them again from the texts alone (no model call).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

Span = tuple[int, int]
"""A character span ``[start, end)`` in a text (int offsets)."""

_WORD = re.compile(r"\S+")


def collapse_whitespace(text: str) -> tuple[str, list[int]]:
    """``text`` with whitespace runs collapsed to one space (ends trimmed), and for each of its characters the offset
    of the original character it stands for (a collapsed space: the first whitespace of its run)."""
    parts: list[str] = []
    where: list[int] = []
    for m in _WORD.finditer(text):
        if parts:
            parts.append(" ")
            where.append(where[-1] + 1)
        parts.append(m.group(0))
        where.extend(range(m.start(), m.end()))
    return "".join(parts), where


def locate_chunks(document: str, chunks: Sequence[str]) -> list[Span | None]:
    """Character spans ``[start, end)`` in ``document`` of ``chunks`` (texts in document order).

    A chunk is matched with whitespace runs collapsed on both sides (the store's chunk texts are collapsed), as an
    exact substring searched from the end of the previous located chunk, so repeated paragraphs map to successive
    occurrences; a chunk not found there is searched from the start. A chunk found nowhere (it was made from
    another text) gets ``None``. Every span found starts and ends on a non-whitespace character, so
    ``" ".join(document[start:end].split()) == " ".join(chunk.split())``.

    Args:
        document: the document version's text.
        chunks: the chunk texts, in document order.

    Returns:
        One span (or None) per chunk, offsets into ``document``.
    """
    flat, where = collapse_whitespace(document)
    spans: list[Span | None] = []
    pos = 0
    for text in chunks:
        needle = " ".join(text.split())
        if not needle:
            spans.append(None)
            continue
        at = flat.find(needle, pos)
        if at < 0:
            at = flat.find(needle)
        if at < 0:
            spans.append(None)
            continue
        end = at + len(needle)
        spans.append((where[at], where[end - 1] + 1))
        pos = end
    return spans
