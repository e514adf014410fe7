"""How the model reads the retrieved context: the reading forms of an answer (``[answer] reading``) and their parsing.

Retrieval finds the evidence; a small reader loses much of it (on LoCoMo the embedded 1.5B's evidence recall is far
above its answer F1). The reading forms change what the model writes before its answer, the same for every retrieval
strategy:

* ``"plain"`` (default): the answer prompt of :mod:`gemrag.answers.prompts`, unchanged (its LLM cache keys hold).
* ``"quote"``, quote then answer: the model first copies the sentence(s) it uses from the numbered passages, each as
  ``[n] "sentence"``, then writes ``Answer: ...``. The quotes are checked against the passages they name
  (:func:`locate_quote`) and the verified ones become the answer's citations, with their character spans. This is
  the "extract, then answer" reading of evidence-first QA (Gao et al., 2023, ALCE, section 4's "Summ"/"Snippet"
  readers, which answer from extracted passages) in its simplest form for a small model: the extraction and the
  answer are one completion.
* ``"notes"``, chain-of-note (Yu et al., 2023, "Chain-of-Note: Enhancing Robustness in Retrieval-Augmented Language
  Models", section 3.1): a short reading note per passage on what it says about the question (or that it is
  irrelevant), then the answer built on the notes.
* ``"span"``, extractive reading: the model copies the words of the context that answer the question, and nothing
  else; the answer is those words as the passage writes them (located by :func:`locate_span`, that passage cited
  with their character span). This is the answer form of extractive QA,
  where "the answer to every question is a segment of text, or span, from the corresponding reading passage"
  (Rajpurkar et al., 2016, SQuAD, section 1), asked of a generative model; it is scored by the same token F1 and exact
  match. A span has no meaning for a letter, so multiple-choice questions read plainly under it.

A multiple-choice question reads in two calls under ``quote`` / ``notes``: the quotes or notes first (free text),
then the choice prompt with them shown after the passages (:func:`reading_aid`), so the option letter is still
decoded under its JSON schema.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from gemrag.answers.answer import Quote
from gemrag.answers.choices import ChoiceScoring
from gemrag.answers.demonstrations import Demonstration
from gemrag.answers.question_forms import QuestionForm, question_form
from gemrag.answers.shaping import Shaping
from gemrag.ingest.chunker import split_sentences
from gemrag.models.base import Message
from gemrag.prompting import format_context

ReadingForm = Literal["plain", "quote", "notes", "span"]
READING_FORMS: tuple[str, ...] = ("plain", "quote", "notes", "span")

QUOTE_INSTRUCTION = (
    "First copy, word for word, the one sentence of the context that answers the question (two only if the answer "
    'needs both), each on its own line as [n] "sentence" where n is the number of its passage. Then write a line '
    'that starts with "Answer:".'
)
NOTES_INSTRUCTION = (
    "First write a short note for each passage, one per line, as [n] Note: what the passage says about the "
    'question, or "nothing relevant". Then write a line that starts with "Answer:".'
)
SPAN_INSTRUCTION = (
    "Copy from the context the exact words that answer the question, as the context writes them: a phrase with its "
    "numbers, units and qualifiers, no more than the answer needs, not a whole sentence."
)
#: Completion limit of a span reading (tokens): the copied words.
SPAN_MAX_TOKENS = 96
#: The answer of a question the memory abstains from (``abstain_below``): nothing in the context supports one.
NOT_FOUND = "Not found in the memory."
#: Completion limit of a quote or notes reading (tokens): the quotes or notes, then the answer.
READING_MAX_TOKENS = 320


def reading_prompt(
    question: str,
    texts: Sequence[str],
    form: ReadingForm,
    *,
    short: bool,
    abstain: bool,
    preface: str = "",
    last: str = "",
) -> list[Message]:
    """Messages of a quote or notes reading of a free-form question: the numbered passages, the question, the
    reading instruction, and how to answer (``short``: a phrase in the words of the context, as
    :func:`gemrag.answers.prompts.short_answer_prompt` asks; else briefly). The span form asks only for the copied
    words, short or not (:data:`SPAN_INSTRUCTION`). ``preface``: text shown before the
    context (self-ask's follow-ups). ``last``: the guess-or-decline sentence (``abstain``).

    Raises:
        ValueError: ``form`` is ``"plain"`` (that prompt is :mod:`gemrag.answers.prompts`'s).
    """
    if form == "plain":
        raise ValueError("the plain reading uses the answer prompt")
    system = "Answer questions about a document using the context passages retrieved from it."
    if form == "span":
        user = f"{preface}Context:\n{format_context(texts)}\n\nQuestion: {question}\n\n{SPAN_INSTRUCTION} {last}"
        return [{"role": "system", "content": system}, {"role": "user", "content": f"{user.rstrip()}\nCopied words:"}]
    instruction = QUOTE_INSTRUCTION if form == "quote" else NOTES_INSTRUCTION
    how = (
        "After Answer:, give a short phrase of a few words, not a sentence, using the exact words of the context."
        if short
        else "After Answer:, answer briefly."
    )
    user = f"{preface}Context:\n{format_context(texts)}\n\nQuestion: {question}\n\n{instruction} {how} {last}".rstrip()
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def aid_prompt(question: str, texts: Sequence[str], form: ReadingForm, preface: str = "") -> list[Message]:
    """The first call of a multiple-choice quote or notes reading: the quotes or notes alone, without options (so
    the reading is the same whatever the options are), ending before the answer.

    Raises:
        ValueError: ``form`` is ``"plain"`` or ``"span"`` (multiple choice reads those plainly).
    """
    if form in ("plain", "span"):
        raise ValueError(f"the {form} reading has no reading aid")
    instruction = (QUOTE_INSTRUCTION if form == "quote" else NOTES_INSTRUCTION).split(" Then write")[0]
    system = "Answer questions about a document using the context passages retrieved from it."
    user = f"{preface}Context:\n{format_context(texts)}\n\nQuestion: {question}\n\n{instruction}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def reading_aid(form: ReadingForm, text: str) -> str:
    """The quotes or notes of a first call as the choice prompt shows them, after the passages: a heading and the
    lines (an ``Answer:`` line, if the model wrote one anyway, cut off); ``""`` when there are none."""
    body = split_answer(text)[0].strip()
    if not body:
        return ""
    heading = "Sentences quoted from the context" if form == "quote" else "Reading notes on the passages"
    return f"{heading}:\n{body}\n\n"


_ANSWER_LINE = re.compile(r"^\s*(?:\*\*)?(?:final |short )?answer\s*(?:\*\*)?\s*:", re.IGNORECASE | re.MULTILINE)


def split_answer(text: str) -> tuple[str, str]:
    """A reading's completion split at its last ``Answer:`` line: ``(reading, answer)``, the answer stripped of the
    label. Without such a line the whole text is the reading and the answer is its last non-empty line that is not a
    quote or note (``""`` if none)."""
    marks = list(_ANSWER_LINE.finditer(text))
    if marks:
        m = marks[-1]
        return text[: m.start()], text[m.end() :].strip().strip("*").strip()
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    rest = [line for line in lines if not _QUOTE_LINE.match(line)]
    return text, (rest[-1] if rest else "")


_QUOTE_LINE = re.compile(r"^\s*[-*]?\s*\[(\d+)\]\s*(?:note\s*:)?\s*[:\-]?\s*(.+?)\s*$", re.IGNORECASE)
_QUOTES = "\"'“”‘’«»`"


def parse_quotes(reading: str, n_passages: int) -> list[tuple[int, str]]:
    """The ``[n] "sentence"`` lines of a quote reading: ``(n, sentence)`` pairs, in order, quotation marks removed;
    lines naming no passage in ``1..n_passages`` or with fewer than 3 characters are skipped."""
    out: list[tuple[int, str]] = []
    for line in reading.splitlines():
        m = _QUOTE_LINE.match(line)
        if not m:
            continue
        n, body = int(m.group(1)), m.group(2).strip().strip(_QUOTES).strip()
        if 1 <= n <= n_passages and len(body) >= 3:
            out.append((n, body))
    return out


_WORD = re.compile(r"\w+")


def _norm(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def locate_quote(quote: str, passage: str, min_overlap: float = 0.8) -> tuple[int, int] | None:
    """The character span of ``quote`` in ``passage``: the exact text if it is there (case and spacing aside), else
    the passage's sentence (:func:`gemrag.ingest.chunker.split_sentences`) sharing the most words with it, when at
    least ``min_overlap`` of the quote's words are in that sentence (a small model drops or changes a word while
    copying); None when neither holds (the quote is not in the passage).

    Returns:
        ``(start, end)`` character offsets into ``passage``, or None.
    """
    if not quote.strip():
        return None
    at = passage.lower().find(quote.strip().lower())
    if at >= 0:
        return at, at + len(quote.strip())
    words = _norm(quote).split()
    if not words:
        return None
    best: tuple[float, tuple[int, int]] | None = None
    for s, e in split_sentences(passage):
        have = set(_norm(passage[s:e]).split())
        overlap = sum(1 for w in words if w in have) / len(words)
        if best is None or overlap > best[0]:
            best = (overlap, (s, e))
    return best[1] if best is not None and best[0] >= min_overlap else None


def locate_span(words: str, passages: Sequence[str], named: int) -> tuple[int, int, int] | None:
    """Where a span reading's copied ``words`` are: ``(passage, start, end)``, ``passage`` numbered from 1 and
    ``start:end`` the character offsets of the words in it. The passage the reading named (``named``, 1-based) is
    searched first, then the others in order (0 or a number out of range: all in order); the match ignores
    case and runs of whitespace but nothing else, so words the passage does not hold are not located (None) and the
    answer stays as the model wrote it, uncited.
    """
    parts = words.split()
    if not parts:
        return None
    pattern = re.compile(r"\s+".join(re.escape(p) for p in parts), re.IGNORECASE)
    order = [named] + [n for n in range(1, len(passages) + 1) if n != named] if 1 <= named <= len(passages) else []
    for n in order or range(1, len(passages) + 1):
        m = pattern.search(passages[n - 1])
        if m:
            return n, m.start(), m.end()
    return None


_SPAN_LABEL = re.compile(r"^\s*(?:\*\*)?(?:copied words|short answer|answer)\s*(?:\*\*)?\s*:\s*", re.IGNORECASE)
_MARKER = re.compile(r"\s*\[(\d+)\]\s*")


def read_span(reply: str, passages: Sequence[str]) -> tuple[str, Quote | None]:
    """A span reading's reply read into its answer and the quote that locates it. The copied words are the reply's
    first non-empty line, a leading label (``Copied words:``), ``[n]`` markers, wrapping quotation marks and a final
    full stop removed; they are looked up in the passages (:func:`locate_span`; a passage the reply names by ``[n]``
    first). Found: the words as the passage writes them and a verified :class:`~gemrag.answers.answer.Quote` of that
    passage; not found: the words as the model wrote them, with an unverified quote of the passage it named, or
    None when it named none. ``passages[n - 1]`` is passage ``n``; ``("", None)`` for an empty reply."""
    lines = [line.strip() for line in reply.strip().splitlines() if line.strip()]
    if not lines:
        return "", None
    line = _SPAN_LABEL.sub("", lines[0])
    named = next((int(m.group(1)) for m in _MARKER.finditer(line)), 0)
    words = _MARKER.sub(" ", line).strip().strip(_QUOTES).strip()
    if words.endswith(".") and not words.endswith(".."):
        words = words[:-1].rstrip()
    at = locate_span(words, passages, named)
    if at is None:
        return words, (Quote(named, words, None, None) if 1 <= named <= len(passages) else None)
    n, start, end = at
    return passages[n - 1][start:end], Quote(n, words, start, end)


def read_quotes(reading: str, passages: Sequence[str]) -> list[Quote]:
    """The quotes of a quote reading, each located in the passage it names (:func:`locate_quote`; ``passages[n -
    1]`` is passage ``n``)."""
    quotes = []
    for n, text in parse_quotes(reading, len(passages)):
        span = locate_quote(text, passages[n - 1])
        quotes.append(Quote(n, text, *(span if span else (None, None))))
    return quotes


@dataclass(frozen=True)
class Reading:
    """How an answer reads its context (built from the ``[answer]`` settings).

    Attributes:
        form: ``"plain"``, ``"quote"``, ``"notes"`` or ``"span"`` (module docstring).
        shaping: the context shaping to apply first (:mod:`gemrag.answers.shaping`), or None for none.
        samples: free-form answers sampled for self-consistency (:mod:`gemrag.answers.consistency`); 1 = greedy.
        temperature: the sampling temperature when ``samples`` > 1.
        abstain_below: answer :data:`NOT_FOUND` without an LLM call when the context's evidence score
            (:func:`gemrag.answers.shaping.evidence_score`, the best question-sentence cosine) is below this; None
            never abstains. Free-form questions only (multiple choice must choose).
        option_orders: multiple choice only: the choice is asked under this many cyclic orders of the options
            and voted (:func:`gemrag.answers.choices.vote_orders`; at most one order per option); 1 asks once, in
            the original order.
        lists: a list question (:func:`gemrag.answers.lists.list_cue`) answered in the plain form is asked for
            every item the context names (:data:`gemrag.answers.lists.LIST_INSTRUCTION`); other questions, and
            every question when False, are asked as written.
        hypotheticals: a hypothetical question (:func:`gemrag.answers.hypotheticals.hypothetical_cue`) answered in
            the plain form is asked for what the context points to ("Likely yes" or "Likely no" and why, to a
            yes-or-no one) and is never declined
            (:func:`gemrag.answers.hypotheticals.hypothetical_instruction`).
        choice_scoring: multiple choice only: ``"letter"`` asks the model for a letter; ``"likelihood"`` and
            ``"calibrated"`` score every option as the answer's text and keep the most likely
            (:mod:`gemrag.answers.likelihood`; the options are not shown, and ``option_orders`` does not apply);
            ``"letter_probability"`` reads every letter's probability instead of decoding one, averaged over the
            ``option_orders`` (:mod:`gemrag.answers.letter_probability`).
        repair: a plain free-form answer (one greedy answer) whose form does not fit its question (it restates the
            question, or says yes or no to a question offering alternatives; :mod:`gemrag.answers.repair`) is asked
            once more with a sentence saying what the answer must be
            (:func:`gemrag.answers.again.repaired`); every other answer is unchanged.
        question_first: every answer prompt (plain, quote, notes, span; free form and lettered multiple choice)
            also shows the question before the context, as well as after it (query-aware contextualization, Liu et
            al., "Lost in the Middle", TACL 2024, section 4.2; :func:`gemrag.answers.prompts.question_lead`). The
            likelihood scoring of options keeps its prompt.
        demonstrations: the worked examples a plain free-form answer (the sentence or the short form) is asked
            after, shown as earlier turns of the chat (:data:`gemrag.answers.demonstrations.DEMONSTRATIONS` or a
            user's own, :func:`gemrag.answers.demonstrations.load_demonstrations`; few-shot prompting, Brown et al.
            2020, section 2); ``()`` (default) shows none. Multiple choice and the quote, notes and span readings
            keep their prompts.
    """

    form: ReadingForm = "plain"
    shaping: Shaping | None = None
    samples: int = 1
    temperature: float = 0.7
    abstain_below: float | None = None
    option_orders: int = 1
    lists: bool = False
    hypotheticals: bool = False
    choice_scoring: ChoiceScoring = "letter"
    repair: bool = False
    question_first: bool = False
    demonstrations: tuple[Demonstration, ...] = ()

    def question_form(self, question: str) -> QuestionForm:
        """What ``question``'s form adds to the plain prompt under the :attr:`lists` and :attr:`hypotheticals`
        settings (:func:`gemrag.answers.question_forms.question_form`; the empty form when both are off). The one
        rule :func:`gemrag.answers.answering.answer_question` and :func:`gemrag.answers.streaming.answer_stream`
        both follow."""
        return question_form(question, lists=self.lists, hypotheticals=self.hypotheticals)

    @property
    def plain(self) -> bool:
        """True for today's answer path: the plain form, no shaping, one greedy answer, no abstention, the options
        in one order and chosen by letter."""
        return (
            self.form == "plain"
            and self.shaping is None
            and self.samples == 1
            and self.abstain_below is None
            and self.option_orders == 1
            and self.choice_scoring == "letter"
        )
