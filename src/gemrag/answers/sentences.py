"""The sentences of an answer and the edits verification makes to its text.

:func:`answer_sentences` splits an answer into sentences with the passages each cites; :func:`add_citations` adds
the markers of post-hoc citations (ALCE, Gao et al., EMNLP 2023, section 4) to the text, :func:`is_reference` tells
a sentence that only names where the answer comes from ("This information is found in passage [1].") from a claim,
and :func:`drop_unsupported` removes the sentences their citations do not support (``[answer] verify = "drop"``). The
checks themselves are :mod:`gemrag.answers.verification`'s, which re-exports these names.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from gemrag.answers.answer import Answer, SentenceCheck
from gemrag.prompting import parse_citations, replace_citations, strip_citations

__all__ = [
    "Sentence",
    "add_citations",
    "answer_sentences",
    "drop_unsupported",
    "is_reference",
    "reference_words_only",
]

# A sentence ends at . ! ? (closing quotes or brackets allowed), followed by any citation markers, before white space
# or the end; or at a line break. Markers on the lines after the stop are its sentence's only when their line ends after
# them ("... genome.\n[1]"); followed by words they open the next sentence ("... genome.\n\n[1] states that ...").
_MARKER = r"\[[^\[\]\n]{1,40}\]"
_END = re.compile(rf"[.!?][\"'\u201d\u2019)]*(?:(?:\s*{_MARKER})+(?=[ \t]*(?:\n|$))|(?:[ \t]*{_MARKER})*)(?=\s|$)|\n")
# A full stop that ends an abbreviation or an initial (no citation marker after it)
_ABBREVIATION = re.compile(r"(?:\b(?:e\.g|i\.e|etc|vs|cf|al|approx|Dr|Mr|Mrs|Ms|Prof|St|No|Fig)|(?<![\w.])[A-Z])\.$")
# "no." before a code or a number ("accession no. KU886219", "no. 5"): an abbreviation, not an answer of "no"
_NUMBER_SIGN = re.compile(r"\bno\.$", re.IGNORECASE)
_CODE = re.compile(r"\s+[A-Za-z]{0,4}\d")
# A list item's number at the start of a line ("1.", "2)"), with any citation markers after it: it begins a sentence
_LIST_NUMBER = re.compile(r"\d{1,3}[.)](?:\s*\[[^\[\]\n]{1,40}\])*")


@dataclass(frozen=True)
class Sentence:
    """One sentence of an answer: ``text`` is ``answer[start:end]`` (markers included), ``cited`` the passage numbers
    its own markers name (1-based, ascending; empty: uncited)."""

    text: str
    start: int
    end: int
    cited: list[int]


def _list_number(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is only a numbered list item's number ("1.", "2. [3]") at the start of its line."""
    line = text.rfind("\n", 0, start) + 1
    return not text[line:start].strip() and _LIST_NUMBER.fullmatch(text[start:end].strip()) is not None


def answer_sentences(text: str, n_passages: int) -> list[Sentence]:
    """The sentences of an answer with the passages each cites (:func:`gemrag.prompting.parse_citations` on each).

    Args:
        text: the answer's text (with its ``[n]`` markers).
        n_passages: how many context passages the answer was given (markers outside ``1..n_passages`` name none).

    Returns:
        The sentences in order, white space trimmed, empty ones (only markers or punctuation) left out.
    """
    spans: list[tuple[int, int]] = []
    pos = 0
    for m in _END.finditer(text):
        if m.group(0).endswith(".") and _ABBREVIATION.search(text, 0, m.end()):
            continue  # "e.g." or "Dr." or an initial ends no sentence
        if _NUMBER_SIGN.search(text, 0, m.end()) and _CODE.match(text, m.end()):
            continue  # "accession no. KU886219" goes on
        if m.group(0) != "\n" and _list_number(text, pos, m.end()):
            continue  # "1." or "2. [3]" opening a numbered list's item ends no sentence: the item is one
        spans.append((pos, m.start() if m.group(0) == "\n" else m.end()))
        pos = m.end()
    spans.append((pos, len(text)))
    out = []
    for s, e in spans:
        piece = text[s:e]
        if not strip_citations(piece).strip(" \t\n.,;:!?\"'*-"):
            continue
        s += len(piece) - len(piece.lstrip())
        e -= len(piece) - len(piece.rstrip())
        out.append(Sentence(text[s:e], s, e, parse_citations(text[s:e], n_passages).cited))
    return out


# Words a sentence that only says where the answer comes from is made of ("This information is found in passage [1].",
# "According to the context [2].", "This is mentioned in [2, 3].", "The passages that support these findings are [1]
# and [3].").
# fmt: off
_REFERENCE_WORDS = frozenset({
    "passage", "passages", "source", "sources", "context", "document", "documents", "text", "excerpt", "excerpts",
    "abstract", "introduction", "conclusion", "study", "paper", "article", "section",
    "this", "that", "these", "it", "the", "a", "above", "previous", "information", "info", "answer", "details",
    "detail", "fact", "facts", "statement", "claim", "finding", "findings", "is", "are", "was", "were", "be", "can",
    "found", "in", "from", "stated", "mentioned", "given", "provided", "described", "shown", "seen", "indicated",
    "noted", "discussed", "supported", "support", "supports", "taken", "comes", "come", "according", "to", "as", "see",
    "on", "based", "per", "cited", "within", "of", "and", "which", "first", "second", "third",
})
# fmt: on


def is_reference(sentence: Sentence) -> bool:
    """Whether ``sentence`` only names where the answer comes from (``"This information is found in passage [1]."``,
    ``"According to the context [2]."``, ``"This is mentioned in [2, 3]."``) rather than claiming anything itself: it
    cites a passage, and its words, the markers removed, are only words of reference (this, information, found, in,
    passage, ...). Verification checks such a sentence as what it asserts: that its passages support the claim before
    it (:func:`gemrag.answers.sentence_checks.check_sentences`)."""
    return bool(sentence.cited) and reference_words_only(sentence)


def reference_words_only(sentence: Sentence) -> bool:
    """Whether ``sentence``'s words, its markers removed, are only words of reference (``"This is stated in."``,
    ``"This information is found in passage [1]."``): in an answer checked against its whole context (it cites no
    passage) such a sentence, even without a marker, says only that the context supports the claim before it."""
    words = re.findall(r"[a-z0-9]+", strip_citations(sentence.text).lower())
    return bool(words) and set(words) <= _REFERENCE_WORDS


# The end of a sentence a marker goes before: its final . ! ? with any closing quotes or brackets after it
_TAIL = re.compile(r"[.!?][\"'\u201d\u2019)]*$")


def add_citations(text: str, checks: Sequence[SentenceCheck]) -> tuple[str, list[SentenceCheck]]:
    """The answer's text with the marker of each post-hoc citation (``check.added_citation``) added to its sentence,
    as ALCE adds them: ``[n]`` before the sentence's final ``.``, ``!`` or ``?`` (``"... in 1990 [2]."``), or at its
    end when it has none; and the checks with their sentences and spans in the new text. In a re-cited sentence
    (``check.recited_from``: its own markers did not support it) ``[n]`` replaces its first marker where it stands
    and the others are removed (:func:`gemrag.prompting.replace_citations`: ``"... in 1990 [3]."`` becomes ``"... in
    1990 [1]."``, ``"Passage [3] states that ..."`` becomes ``"Passage [1] states that ..."``).

    Args:
        text: the answer's text; each check's ``sentence`` is ``text[start:end]``.
        checks: the answer's checks, in order (non-overlapping spans).

    Returns:
        ``(new_text, new_checks)``; the text unchanged when no check has an ``added_citation``.
    """
    if not any(c.added_citation is not None for c in checks):
        return text, list(checks)
    out, pos, new = "", 0, []
    for c in checks:
        out += text[pos : c.start]
        pos = c.end
        sentence = c.sentence
        if c.added_citation is not None and c.recited_from:
            sentence = replace_citations(sentence, c.added_citation)
        elif c.added_citation is not None:
            tail = _TAIL.search(sentence)
            cut = tail.start() if tail else len(sentence)
            sentence = f"{sentence[:cut].rstrip()} [{c.added_citation}]{sentence[cut:]}"
        new.append(c.model_copy(update={"sentence": sentence, "start": len(out), "end": len(out) + len(sentence)}))
        out += sentence
    return out + text[pos:], new


def drop_unsupported(answer: Answer) -> Answer:
    """The answer without its unsupported sentences (``verify = "drop"``).

    The text loses each unsupported sentence (with the white space before it, or after it when it comes first), its
    ``cited`` becomes the passages the remaining markers name, ``verification`` holds the kept sentences with their
    spans in the new text, and ``dropped_sentences`` the removed ones, in order. ``dropped_citations`` (markers that
    named no passage) is unchanged.
    """
    kept: list[SentenceCheck] = []
    dropped: list[str] = []
    out = ""
    pos = 0
    gap: str | None = None  # the white space before the run of dropped sentences ending here
    for check in answer.verification:
        before = answer.text[pos : check.start]
        pos = check.end
        if not check.supported:
            dropped.append(check.sentence)
            gap = before if gap is None else gap
            continue
        out += (gap if gap is not None else before) if out else ""
        gap = None
        kept.append(check.model_copy(update={"start": len(out), "end": len(out) + len(check.sentence)}))
        out += check.sentence
    if not dropped:
        return answer
    text = (out + answer.text[pos:]).strip() if kept else ""
    cited = parse_citations(text, len(answer.hits)).cited
    return replace(answer, text=text, cited=cited, verification=kept, dropped_sentences=dropped)
