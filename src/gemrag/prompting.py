"""Prompt-building helpers shared by several methods and surfaces: numbered context passages, the citation markers
an answer names them by (:func:`parse_citations`), and the one-shot layout. Changing a text here changes the LLM
cache keys of every prompt built with it."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gemrag.models.base import Message


def format_context(texts: Sequence[str]) -> str:
    """Number the context passages ``[1] ...`` in retrieval order."""
    return "\n\n".join(f"[{i + 1}] {t}" for i, t in enumerate(texts))


def one_shot(system: str, instruction: str, example: str, reply: object, real: str) -> list[Message]:
    """A system message, then the worked example as a user turn and its answer as the assistant's turn, then the
    real request (HippoRAG 2's one-shot form, shared by the REMem prompts: small models copy an example written
    into the instructions)."""
    return [
        {"role": "system", "content": f"{system}\n{instruction}"},
        {"role": "user", "content": example},
        {"role": "assistant", "content": json.dumps(reply, ensure_ascii=False)},
        {"role": "user", "content": real},
    ]


CITE_INSTRUCTION = "Cite the passages you use by their numbers in brackets, e.g. [1] or [2, 3]."
"""What a free-form answer prompt asks when citing is on (``[answer] cite``): markers naming the passages numbered
by :func:`format_context`."""

# [1], [1, 3], [1;3], [1 and 3], [2-4], [passage 2], [Passages 1, 2]: one marker, its numbers in group 1
_MARKER = re.compile(
    r"\[\s*(?:(?:passages?|sources?|context)\s*)?(\d+(?:\s*(?:[,;]|and|[-\u2013])\s*\d+)*)\s*\]", re.IGNORECASE
)
_NUMBER = re.compile(r"(\d+)\s*[-\u2013]\s*(\d+)|(\d+)")
#: A range marker ``[a-b]`` spanning more numbers than this is read as the two numbers ``a`` and ``b``.
MAX_RANGE = 20


@dataclass(frozen=True)
class Citations:
    """An answer's citation markers, read by :func:`parse_citations`.

    Attributes:
        text: the answer with every marker that names no passage removed (a marker naming some valid and some
            invalid numbers keeps the valid ones: ``[1, 9]`` -> ``[1]``); valid markers are kept as written.
        cited: the valid passage numbers (1-based), ascending, each once.
        dropped: how many numbers named no passage (outside ``1..n_passages``), counted per occurrence.
    """

    text: str
    cited: list[int]
    dropped: int


def _numbers(group: str) -> list[int]:
    """The numbers of one marker's group, ranges ``a-b`` (at most :data:`MAX_RANGE` apart) expanded."""
    out: list[int] = []
    for m in _NUMBER.finditer(group):
        if m.group(3) is not None:
            out.append(int(m.group(3)))
            continue
        a, b = int(m.group(1)), int(m.group(2))
        out += list(range(a, b + 1)) if 0 <= b - a <= MAX_RANGE else [a, b]
    return out


def _rewrite(text: str, valid: Callable[[int], bool]) -> tuple[str, list[int], int]:
    """``text`` with each marker keeping only its ``valid`` numbers (removed when none is, with the spaces before it
    unless a word or another marker follows at once), the valid numbers met, and the count of the others."""
    pieces: list[str] = []
    kept: list[int] = []
    dropped, last = 0, 0
    for m in _MARKER.finditer(text):
        numbers = _numbers(m.group(1))
        good = [n for n in numbers if valid(n)]
        dropped += len(numbers) - len(good)
        kept += good
        pieces.append(text[last : m.start()])
        if len(good) == len(numbers):
            pieces.append(m.group(0))
        elif good:
            pieces.append("[" + ", ".join(str(n) for n in dict.fromkeys(good)) + "]")
        elif m.end() == len(text) or not (text[m.end()].isalnum() or text[m.end()] == "["):
            pieces[-1] = pieces[-1].rstrip(" \t")  # "Ansel [9]." -> "Ansel.", "In [2020] he" -> "In he"
        last = m.end()
    pieces.append(text[last:])
    return "".join(pieces).strip(), kept, dropped


def parse_citations(text: str, n_passages: int) -> Citations:
    """Read the citation markers of an answer given ``n_passages`` numbered context passages.

    Markers are bracketed numbers: ``[1]``, ``[1, 3]`` (also ``;`` or ``and`` between numbers), ``[1][2]``,
    ``[2-4]`` (a range), ``[passage 2]``. A number outside ``1..n_passages`` names no passage: it is dropped from
    the text and counted. Bracketed numbers that are not citations (a year such as ``[2020]``) are read as markers
    too, and dropped when out of range.

    Args:
        text: the answer as the model wrote it.
        n_passages: how many passages the context had (>= 0).

    Returns:
        The :class:`Citations`.

    Raises:
        ValueError: ``n_passages`` < 0.
    """
    if n_passages < 0:
        raise ValueError("n_passages must be >= 0")
    cleaned, kept, dropped = _rewrite(text, lambda n: 1 <= n <= n_passages)
    return Citations(cleaned, sorted(set(kept)), dropped)


def strip_citations(text: str) -> str:
    """``text`` without any citation marker (see :func:`parse_citations`), e.g. to score an answer's words."""
    return _rewrite(text, lambda n: False)[0]


def replace_citations(text: str, number: int) -> str:
    """``text`` citing passage ``number`` where it cited others: its first marker replaced by ``[number]`` in place,
    its other markers removed (``"the passage [3], which states ... [3]."`` -> ``"the passage [1], which states
    ..."``; ``"It came monthly [1][3]."`` -> ``"It came monthly [2]."``); ``text`` with ``[number]`` appended when
    it has no marker."""
    first = _MARKER.search(text)
    if first is None:
        return f"{text.rstrip()} [{number}]"
    held = "\x00"  # holds the first marker's place while the others are removed (it is no marker itself)
    return strip_citations(f"{text[: first.start()]}{held}{text[first.end() :]}").replace(held, f"[{number}]")
