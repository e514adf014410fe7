"""What an answer is: :class:`Answer`, an answer with its evidence, as :meth:`gemrag.memory.Memory.ask` returns it
(what one ``index()`` run did is :class:`gemrag.memory.indexing.IndexReport`). Re-exported by :mod:`gemrag` and
:mod:`gemrag.memory`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gemrag.models.base import Usage
from gemrag.types import Hit


@dataclass(frozen=True)
class Quote:
    """A sentence the model quoted from a context passage before answering (``[answer] reading = "quote"``,
    :mod:`gemrag.answers.reading`).

    Attributes:
        passage: the 1-based passage number the model named (``hits[passage - 1]``).
        text: the quote as the model wrote it (quotation marks removed).
        start, end: the character span of the quoted text in that hit's text (``hit.text[start:end]``), or None
            when the quote was not found there.
    """

    passage: int
    text: str
    start: int | None = None
    end: int | None = None

    @property
    def verified(self) -> bool:
        """True when the quote was found in the passage it names."""
        return self.start is not None


@dataclass
class Answer:
    """An answer with its evidence.

    Attributes:
        text: the model's answer (for multiple choice: the chosen option's text). A cited answer keeps its markers
            ``[n]`` naming context passages (:func:`gemrag.prompting.parse_citations`; markers naming no passage
            are removed).
        choice: 0-based index of the chosen option (multiple choice), else None.
        hits: the retrieved context nodes, in the order given to the LLM (passage ``[n]`` is ``hits[n - 1]``).
        retrieval_seconds: time to retrieve the context (seconds, without answer generation).
        answer_seconds: time to generate the answer (seconds).
        usage: what this question spent in model calls (cache hits cost nothing).
        cited: the passage numbers ``n`` (1-based into ``hits``) the answer cites, ascending, each once; empty
            when citing is off (``[answer] cite = false``) or the answer cites nothing.
        dropped_citations: how many markers named no context passage (a number outside ``1..len(hits)``); they
            were removed from ``text``.
        quotes: the sentences the model quoted before answering (``reading = "quote"``), each located in its
            passage; the verified ones are the answer's citations.
        reading: how the context was read, for reports: ``form`` (``"plain"``, ``"quote"``, ``"notes"``),
            ``samples`` and, with several, ``votes`` (the sampled answers); with a shaped context ``words_before``,
            ``words_after`` and ``duplicates`` (node ids dropped). Empty for the plain, unshaped, greedy reading.
    """

    text: str
    choice: int | None
    hits: list[Hit]
    retrieval_seconds: float
    answer_seconds: float
    usage: Usage = field(default_factory=Usage)
    cited: list[int] = field(default_factory=list)
    dropped_citations: int = 0
    quotes: list[Quote] = field(default_factory=list)
    reading: dict[str, Any] = field(default_factory=dict)

    @property
    def citations(self) -> list[Hit]:
        """The cited context nodes, in :attr:`cited` order (each with its provenance when retrieved through
        :meth:`gemrag.memory.Memory.retrieve`)."""
        return [self.hits[n - 1] for n in self.cited]
