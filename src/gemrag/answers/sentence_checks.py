"""How one answer sentence is checked against its passages: by token overlap (:func:`overlap_support`, no model call)
or by the LLM's entailment verdict (:func:`entailment_prompt`, one short structured call), and the batch of an
answer's checks (:func:`check_sentences`). A sentence that quotes a passage is first checked for its quotation
(:func:`misquotes`): a quotation the cited passages do not hold makes it unsupported, with no model call. ALCE's
citation recall (Gao et al., EMNLP 2023, section 2.3): a statement is supported when the concatenation of the passages
it cites entails it; the judge here is the memory's own LLM.
Which passages a sentence is checked against, and what happens to the answer, is :mod:`gemrag.answers.verification`'s.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel

from gemrag.answers.answer import SentenceCheck
from gemrag.answers.reading import locate_quote
from gemrag.answers.sentences import Sentence, is_reference, reference_words_only
from gemrag.answers.words import content_words, stems, without_frame
from gemrag.errors import GemragError
from gemrag.models.base import LLM, Message
from gemrag.models.structured import complete_structured_iter
from gemrag.prompting import strip_citations

__all__ = [
    "ENTAILMENT_SCHEMA",
    "OVERLAP_MIN",
    "OVERLAP_WORDS",
    "QUOTE_WORDS",
    "VERDICT_MAX_TOKENS",
    "Entailment",
    "check_method",
    "check_sentences",
    "entailment_prompt",
    "misquotes",
    "overlap_support",
]

#: A sentence of at most this many words (citation markers removed) is checked by overlap (``[answer]
#: verify_overlap_words``' default): the short-answer length of :data:`gemrag.answers.answering.SHORT_WORDS`.
OVERLAP_WORDS = 6
#: Share of a sentence's own content words the cited passages must contain for the overlap check to pass.
OVERLAP_MIN = 2 / 3
#: Completion limit of one entailment verdict (tokens): ``{"supported": false}`` is about 6.
VERDICT_MAX_TOKENS = 16
#: A quotation of at least this many words in an answer sentence is checked against the passages it cites
#: (:func:`misquotes`); a shorter one ("the "main cause" of death") may be a phrase of the writer's own.
QUOTE_WORDS = 6
_QUOTATION = re.compile(r'["\u201c]([^"\u201c\u201d]+)["\u201d]')


def misquotes(sentence: str, passages: Sequence[str], question: str = "") -> bool:
    """Whether the sentence quotes, in double quotes and in at least :data:`QUOTE_WORDS` words, text that none of
    ``passages`` holds (:func:`gemrag.answers.reading.locate_quote`: the exact text, case and spacing aside, or a
    passage sentence holding 80 % of its words, as a small model miscopies a word). A small reader often copies a
    passage's sentence and names another passage's number ("This can be inferred from the passage [3], which states:
    "..."" with the quoted sentence in passage [2]); its words then match the topic of the passage it names, and an
    entailment judge passes it. A quotation is checkable by its text alone (this library's rule: ALCE's judge, Gao et
    al., EMNLP 2023, section 2.3, reads the whole statement; docs/papers.md V6).

    Args:
        sentence: the answer sentence (with or without its markers).
        passages: the texts of the passages it cites (the whole context for an answer citing nothing).
        question: the question answered: a quotation of it ("The answer to "Which species ..."") quotes no passage
            and is not looked for.

    Returns:
        True when a long enough quotation is in none of ``passages``; False otherwise (no such quotation, or all found).
    """
    quotes = [q for q in _QUOTATION.findall(strip_citations(sentence)) if len(q.split()) >= QUOTE_WORDS]
    quotes = [q for q in quotes if not question or locate_quote(q, question) is None]
    return any(all(locate_quote(q, p) is None for p in passages) for q in quotes)


def overlap_support(sentence: str, premise: str, question: str = "") -> float:
    """Share of the sentence's own content words that the premise contains (a token recall, no model call).

    The sentence's own words are its content words (stop words removed, plurals folded, a capitalized weekday or
    month abbreviation read as its full name: :func:`gemrag.answers.words.content_words`), compared by their stems
    (:func:`gemrag.answers.words.stems`: "detected" is "detection"), that the question does not
    already contain, so that restating the question earns nothing; when every word is in the question, all its
    content words count. Its reading frame ("Based on the context,", "according to passage [2]": the words that refer
    to the context, :func:`gemrag.answers.words.without_frame`) is not part of what it claims and is left out.

    Args:
        sentence: the answer sentence (markers and its reading frame are removed here).
        premise: the cited passages' text.
        question: the question answered (may be empty).

    Returns:
        A share in [0, 1]; 0.0 for a sentence without content words.
    """
    words = stems(set(content_words(strip_citations(without_frame(sentence)))))
    own = words - stems(set(content_words(question))) or words
    if not own:
        return 0.0
    return len(own & stems(set(content_words(premise)))) / len(own)


class Entailment(BaseModel):
    """The entailment verdict: whether the passages support the sentence."""

    supported: bool


ENTAILMENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"supported": {"type": "boolean"}},
    "required": ["supported"],
}
"""The JSON schema of a verdict (constrained decoding where the backend supports it)."""


def entailment_prompt(question: str, sentence: str, passages: Sequence[str]) -> list[Message]:
    """The entailment check of one answer sentence against the passages it cites (ALCE's citation recall, asked of
    an LLM): the passages, the question (so that a sentence such as "He did." can be read), the sentence without its
    markers, and a yes/no question answered as ``{"supported": true|false}``.

    Args:
        question: the question the answer replies to.
        sentence: the sentence (markers are removed here).
        passages: the cited passages' texts, in citation order (the whole context for an answer citing nothing).
    """
    system = (
        "You check whether a sentence of an answer is supported by the passages it cites. It is supported (true) "
        "only if the passages state everything the sentence says, or it follows directly from them. If any part of "
        "the sentence is missing from the passages or contradicts them, it is not supported (false). Reply with "
        "JSON only."
    )
    text = "\n\n".join(passages)
    user = (
        f"Passages:\n{text}\n\nQuestion: {question}\nAnswer sentence: {strip_citations(sentence)}\n\n"
        'Do the passages support everything the answer sentence says? JSON: {"supported": true} or '
        '{"supported": false}'
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def check_method(sentence: str, extractive: bool, overlap_words: int) -> Literal["entailment", "overlap"]:
    """How a sentence is checked: by overlap in an extractive answer or when it has at most ``overlap_words`` words
    (markers removed), else by entailment."""
    return "overlap" if extractive or len(strip_citations(sentence).split()) <= overlap_words else "entailment"


def check_sentences(
    llm: Callable[[], LLM],
    question: str,
    sentences: Sequence[Sentence],
    passages: Sequence[str],
    *,
    whole_context: bool = False,
    extractive: bool = False,
    overlap_words: int = OVERLAP_WORDS,
    overlap_first: bool = True,
    on_failure: Callable[[str], None] | None = None,
) -> list[SentenceCheck]:
    """Check each sentence against the passages it cites (rules: the module docstring).

    Args:
        llm: returns the judging LLM (called only when a sentence needs an entailment check; all of them go to it as
            one batch, :func:`gemrag.models.structured.complete_structured_iter`).
        question: the question answered.
        sentences: the answer's sentences (:func:`answer_sentences`).
        passages: the context passages' texts; passage ``[n]`` is ``passages[n - 1]``.
        whole_context: the answer cites nothing: check every sentence against all ``passages``.
        extractive: an extractive (short-form) answer: every sentence is checked by overlap.
        overlap_words: sentences of at most this many words (markers removed) are checked by overlap (0: none).
        overlap_first: a longer sentence whose words the cited passages do not contain (overlap below
            :data:`OVERLAP_MIN`) is unsupported without a model call; False sends every longer sentence to the model.
        on_failure: called with a message for each verdict that stayed invalid after its retries.

    Returns:
        One :class:`~gemrag.answers.answer.SentenceCheck` per sentence, in order.

    Raises:
        GemragError: a fatal backend error (the model process died).
    """
    checks: list[SentenceCheck] = []
    pending: list[tuple[int, list[Message]]] = []
    for i, s in enumerate(sentences):
        numbers = list(range(1, len(passages) + 1)) if whole_context else s.cited
        reference = is_reference(s) or (whole_context and reference_words_only(s))  # "This is stated in."
        claim = sentences[i - 1].text if i > 0 and reference else s.text  # a reference asserts the claim before
        method = check_method(claim, extractive, overlap_words)
        check = SentenceCheck(
            sentence=s.text, start=s.start, end=s.end, cited=list(s.cited), supported=False, method=method
        )
        premise = [passages[n - 1] for n in numbers]
        covered = bool(premise) and overlap_support(claim, "\n".join(premise), question) >= OVERLAP_MIN
        if premise and misquotes(s.text, premise, question):  # its own quotation is not in what it cites
            check.method = "quote"
        elif premise and (method == "overlap" or (overlap_first and not covered)):
            check.method, check.supported = "overlap", covered
        elif premise:
            pending.append((i, entailment_prompt(question, claim, premise)))
        checks.append(check)
    if pending:
        results = complete_structured_iter(
            llm(), [p for _, p in pending], Entailment, schema=ENTAILMENT_SCHEMA, max_tokens=VERDICT_MAX_TOKENS
        )
        for j, result in results:
            i = pending[j][0]
            if isinstance(result, GemragError):
                if on_failure is not None:
                    on_failure(f"{question[:60]} / {sentences[i].text[:80]}: {result}")
                continue
            checks[i].supported = result.supported
    return checks
