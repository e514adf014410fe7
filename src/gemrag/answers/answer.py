"""What an answer is: :class:`Answer`, an answer with its evidence, as :meth:`gemrag.memory.Memory.ask` returns it
(what one ``index()`` run did is :class:`gemrag.memory.indexing.IndexReport`). Re-exported by :mod:`gemrag` and
:mod:`gemrag.memory`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field

from gemrag.models.base import Usage
from gemrag.types import Hit


@dataclass(frozen=True)
class Quote:
    """A sentence the model quoted from a context passage before answering (``[answer] reading = "quote"``), or the
    words it copied as its answer (``reading = "span"``) (:mod:`gemrag.answers.reading`).

    Attributes:
        passage: the 1-based passage number the model named (``hits[passage - 1]``); under the span reading, the
            passage the words were found in (the named one first).
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


class QuotedSpan(BaseModel):
    """A :class:`Quote` as the JSON surfaces give it (``gemrag ask --json``, MCP ``ask``, the server's answers).

    Attributes:
        passage: the 1-based context number (``context[passage - 1]``).
        text: the quote or span as the model wrote it.
        start, end: its character span in that passage's text, or None when it was not found there.
        verified: True when it was found there.
    """

    passage: int
    text: str
    start: int | None = None
    end: int | None = None
    verified: bool

    @classmethod
    def of(cls, quote: Quote) -> QuotedSpan:
        """The quote as a JSON model."""
        return cls(passage=quote.passage, text=quote.text, start=quote.start, end=quote.end, verified=quote.verified)


class ScoredOption(BaseModel):
    """One option of a multiple-choice answer chosen by likelihood or by its letter's probability (``[answer]
    choice_scoring``; :mod:`gemrag.answers.likelihood`, :mod:`gemrag.answers.letter_probability`), as
    ``Answer.reading["option_scores"]`` records it and the JSON surfaces give it (``gemrag ask --json``, the server's
    answers).

    Attributes:
        tokens: the option's length in the model's tokenizer (tokens); None for ``"letter_probability"`` (its
            letter is scored, not its text).
        logprob: the sum of its tokens' log-probabilities given the context and the question (natural log); for
            ``"letter_probability"`` its letter's log-probability in the original order, normalized over the letters.
        unconditional: the same after the answer line alone (``"calibrated"``), else None.
        score: what the choice compared: ``logprob / tokens`` (``"likelihood"``), ``logprob - unconditional``
            (``"calibrated"``) or the log of its letter's probability averaged over the option orders
            (``"letter_probability"``); the chosen option has the highest.
    """

    tokens: int | None = None
    logprob: float
    unconditional: float | None = None
    score: float

    @classmethod
    def listed(cls, reading: dict[str, Any]) -> list[ScoredOption]:
        """The options an answer's ``reading`` records (``[]`` for an answer not chosen by likelihood)."""
        return [cls(**o) for o in reading.get("option_scores", [])]


class SentenceCheck(BaseModel):
    """One sentence of an answer checked against the passages it cites (:mod:`gemrag.answers.verification`).

    Attributes:
        sentence: the sentence, ``Answer.text[start:end]`` (its ``[n]`` markers included).
        start, end: its character span ``[start, end)`` in the answer's text.
        cited: the passages it was checked against (1-based, ascending): those its own markers name; in an answer
            whose text has no marker, those the answer cites as a whole (the quote reading's quoted passages); for a
            sentence cited after the answer, its :attr:`added_citation`; empty: uncited, or an answer citing nothing
            (checked against the whole context).
        supported: whether the cited passages support it (in an answer citing nothing: whether the whole context
            does).
        method: ``"entailment"`` (the LLM judged it), ``"overlap"`` (token overlap, no model call) or ``"quote"``
            (it quotes, in six words or more, text the passages it cites do not hold: unsupported, no model call;
            :func:`gemrag.answers.sentence_checks.misquotes`).
        added_citation: the passage cited after the answer was written (ALCE's post-hoc citation, Gao et al. 2023,
            section 4): the sentence had no marker in an answer citing elsewhere, this passage of the context
            matched it best and supports it, and its marker ``[n]`` was added to the text (``[answer]
            verify_uncited = "cite"``); None otherwise.
        uncited: the sentence has no marker in an answer citing elsewhere and no passage was found to support it
            (under ``verify_uncited = "flag"`` none is looked for): not supported because it claims no source, as
            opposed to a sentence its own citations do not support.
        recited_from: the passages the sentence's own markers named when they do not support it and another passage
            of the context does (``[answer] verify_miscited = "recite"``): that passage is :attr:`added_citation`,
            its marker replaced the sentence's own in the text, and :attr:`cited` is it. Empty otherwise.
    """

    sentence: str
    start: int
    end: int
    cited: list[int]
    supported: bool
    method: Literal["entailment", "overlap", "quote"]
    added_citation: int | None = None
    uncited: bool = False
    recited_from: list[int] = Field(default_factory=list)


@dataclass
class Answer:
    """An answer with its evidence.

    Attributes:
        text: the model's answer (for multiple choice: the chosen option's text). A cited answer keeps its markers
            ``[n]`` naming context passages (:func:`gemrag.prompting.parse_citations`; markers naming no passage
            are removed). Under ``[answer] verify = "drop"`` the unsupported sentences are removed from it.
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
            passage; the verified ones are the answer's citations. Under ``reading = "span"``, the one span the answer
            is, located in its passage (none when the model named no passage and its words are in none).
        reading: how the context was read, for reports: ``form`` (``"plain"``, ``"quote"``, ``"notes"``, ``"span"``),
            ``samples`` and, with several, ``votes`` (the sampled answers); with a shaped context ``words_before``,
            ``words_after`` and ``duplicates`` (node ids dropped); over a dated context, ``dates_completed`` (the
            answer's dates given their year or put back as the week the context gives,
            :mod:`gemrag.answers.dates.completion`); for a list question read as one (``[answer] lists``),
            ``list_cue`` (the words that made it one, :func:`gemrag.answers.lists.list_cue`); for a hypothetical
            question read as one (``[answer] hypotheticals``), ``hypothetical_cue`` (the word that made it one,
            :func:`gemrag.answers.hypotheticals.hypothetical_cue`). Empty for the plain, unshaped, greedy reading
            that completed no date and read no list or hypothetical question.
        verification: each sentence of ``text`` checked against the passages it cites, in order
            (``[answer] verify``, :mod:`gemrag.answers.verification`); empty when verifying is off, for a
            multiple-choice answer, or for an answer not given through the memory's ``ask``/``answer``.
        dropped_sentences: under ``verify = "drop"``, the unsupported sentences removed from ``text``, in order.
        verification_usage: what the checks spent in model calls (also counted in ``usage``).
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
    verification: list[SentenceCheck] = field(default_factory=list)
    dropped_sentences: list[str] = field(default_factory=list)
    verification_usage: Usage = field(default_factory=Usage)

    @property
    def unsupported(self) -> list[SentenceCheck]:
        """The checked sentences that their citations do not support (under ``"drop"``: none are left)."""
        return [c for c in self.verification if not c.supported]

    @property
    def citations(self) -> list[Hit]:
        """The cited context nodes, in :attr:`cited` order (each with its provenance when retrieved through
        :meth:`gemrag.memory.Memory.retrieve`)."""
        return [self.hits[n - 1] for n in self.cited]
