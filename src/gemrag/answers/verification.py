"""Verified citations: each sentence of an answer checked against the passages it cites.

The check follows the citation recall of ALCE (Gao et al., EMNLP 2023, "Enabling Large Language Models to Generate
Text with Citations", section 2.3 "Citation quality"): a statement is supported when the concatenation of the passages
it cites entails it, judged by a natural-language-inference model (ALCE's TRUE, a T5-11B NLI model). Here the judge is
the memory's own LLM, asked one yes/no question per sentence with a JSON schema (:func:`entailment_prompt`, structured
output through :func:`gemrag.models.structured.complete_structured_iter`, cached and metered like every call); a short
or extractive sentence is checked without a model call, by how many of its own words the cited passages contain
(:func:`overlap_support`), as extractive answers are scored by token overlap (SQuAD's token recall).

Rules (the product's, documented in docs/verification.md):

* Sentences are split at ``.``, ``!``, ``?`` followed by white space (citation markers right after the full stop
  belong to the sentence before, a marker opening a line with words after it to that line) and at line breaks
  (:func:`answer_sentences`).
* A sentence is checked against the passages its own ``[n]`` markers name. When no sentence has a marker, every
  sentence is checked against the passages the answer cites as a whole (its ``cited``: the quote reading's quoted
  passages, :mod:`gemrag.answers.reading`), which become its ``cited``; and when the answer cites nothing at all
  (citing off, an agent's answer, a model that wrote no marker), against the whole context, its ``cited`` left empty.
* A sentence without a marker in an answer whose other sentences have markers is *uncited*. Under ``verify_uncited
  = "cite"`` (the default) it is cited after the answer was written, ALCE's post-hoc citation (Gao et al. 2023,
  section 4 "post-hoc cite": each statement gets the retrieved passage that best matches it): the passage of the
  context that matches it best (:func:`post_hoc_citations`) is checked as a cited passage would be (overlap or one
  entailment call), and when the embedder matched it with a passage that does not support it, the passage holding
  most of its words once more; if one supports the sentence, its marker is added to the answer's text after the
  sentence (ALCE adds it too) and the check records it as ``added_citation``; if not, the sentence stays *uncited*
  and unsupported.
  Under ``"flag"`` it is unsupported without a check, as in ALCE's citation recall (a statement without citations
  has recall 0).
* A sentence of at most ``overlap_words`` words (markers removed), or any sentence of an extractive (short-form)
  answer, is checked by overlap; the others by entailment. Under ``overlap_first`` (``[answer] verify_overlap_first``,
  the default) a longer sentence is checked by overlap first: one whose own words the cited passages do not contain
  is unsupported without a model call (recorded as checked by overlap), and only the others go to the model
  (:mod:`gemrag.answers.sentence_checks`; measured on hand-labelled sentences in docs/verification.md).
* A sentence that quotes, in double quotes and six words or more, text that none of the passages it is checked
  against holds is unsupported without a model call (method ``"quote"``,
  :func:`~gemrag.answers.sentence_checks.misquotes`): a quotation is checked by its text, whatever its other words
  match. A miscited quotation is then re-cited to the passage holding it (below).
* A sentence that only names where the answer comes from, citing a passage ("This information is found in passage
  [1].", :func:`gemrag.answers.sentences.is_reference`), claims that its passages support the sentence before it: the
  sentence before it is checked against the reference's passages (overlap or entailment, as above), and the verdict
  is the reference's. First in the answer, it is checked as written.
* A sentence its own markers do not support is *miscited* when another passage of the context does: the small
  reader often copies a passage's words and names another's number. Under ``verify_miscited = "recite"`` (the
  default) the passage it did not cite that matches it best (:func:`post_hoc_citations`, as for an uncited sentence)
  is checked as a cited one would be; if it supports the sentence, that passage's marker replaces the sentence's own
  in the text, and the check records both (``added_citation``, ``recited_from``). ALCE's post-hoc citation applied to
  a wrong marker, not only a missing one. Under ``"flag"``, or when no other passage supports it, the sentence stays
  unsupported with its own markers. A reference sentence and an answer whose text has no marker are not re-cited.
* A multiple-choice answer (its text is the chosen option) is not checked.
* A verdict the model could not give as valid JSON after its retries counts as unsupported and is recorded as a
  ``query/verify`` failure (``gemrag info``).

``verify = "drop"`` removes the unsupported sentences from the answer's text, and with them the citations only they
made (:func:`drop_unsupported`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Literal

from gemrag.answers.answer import Answer, SentenceCheck
from gemrag.answers.evidence import best_sentence_cosines
from gemrag.answers.sentence_checks import (
    OVERLAP_MIN,
    OVERLAP_WORDS,
    check_method,
    check_sentences,
    entailment_prompt,
    overlap_support,
)
from gemrag.answers.sentences import (
    Sentence,
    add_citations,
    answer_sentences,
    drop_unsupported,
    is_reference,
)
from gemrag.models.base import LLM, Embedder, Usage
from gemrag.models.meter import UsageMeter
from gemrag.prompting import parse_citations, strip_citations
from gemrag.store.parts import Caches

__all__ = [
    "OVERLAP_MIN",
    "OVERLAP_WORDS",
    "Sentence",
    "MiscitedMode",
    "UncitedMode",
    "VerifyMode",
    "add_citations",
    "answer_sentences",
    "check_sentences",
    "drop_unsupported",
    "entailment_prompt",
    "is_reference",
    "overlap_support",
    "post_hoc_citations",
    "verify_answer",
]

VerifyMode = Literal["flag", "drop", "off"]
"""``[answer] verify``: flag unsupported sentences, drop them from the text, or check nothing."""
UncitedMode = Literal["cite", "flag"]
"""``[answer] verify_uncited``: cite an uncited sentence after the answer (post-hoc) and check it, or flag it
unchecked."""
MiscitedMode = Literal["recite", "flag"]
"""``[answer] verify_miscited``: look for another passage of the context that supports a sentence its own markers do
not support and cite it instead, or flag the sentence as it is."""


def post_hoc_citations(
    question: str,
    sentences: Sequence[str],
    passages: Sequence[str],
    methods: Sequence[Literal["entailment", "overlap"]],
    embedder: Embedder | None = None,
) -> list[int]:
    """The passage each uncited sentence is cited with after the answer was written: ALCE's post-hoc citation (Gao
    et al., EMNLP 2023, section 4, "post-hoc cite": each statement gets the retrieved passage that best matches it;
    ALCE matches with its retriever, GTR, here the memory's embedder).

    A sentence checked by overlap gets the passage holding the largest share of its own words
    (:func:`overlap_support`: the passage its check would pass with, if any does); a sentence checked by entailment
    gets the passage with the highest cosine between the sentence and one of the passage's sentences
    (:func:`gemrag.answers.evidence.best_sentence_cosines`, one embedder call for all of them), or without an
    embedder the one with the largest overlap. Ties go to the earlier passage (the better ranked).

    Args:
        question: the question answered (its words earn no overlap).
        sentences: the uncited sentences' texts.
        passages: the context passages' texts; passage ``[n]`` is ``passages[n - 1]`` (at least one).
        methods: how each sentence will be checked (``"overlap"`` or ``"entailment"``), one per sentence.
        embedder: the memory's embedder (rows L2-normalized), or None.

    Returns:
        One 1-based passage number per sentence, in order.

    Raises:
        ValueError: no passage, or ``methods`` not one per sentence.
    """
    if not passages:
        raise ValueError("a post-hoc citation needs at least one context passage")
    if len(methods) != len(sentences):
        raise ValueError(f"{len(methods)} methods for {len(sentences)} sentences")
    by_cosine = [i for i, m in enumerate(methods) if m == "entailment"] if embedder is not None else []
    cosines = (
        best_sentence_cosines([strip_citations(sentences[i]) for i in by_cosine], passages, embedder)
        if (by_cosine and embedder is not None)
        else None
    )
    out: list[int] = []
    for i, sentence in enumerate(sentences):
        if cosines is not None and i in by_cosine:
            scores = [float(x) for x in cosines[by_cosine.index(i)]]
        else:
            scores = [overlap_support(sentence, p, question) for p in passages]
        out.append(max(range(len(passages)), key=lambda j: (scores[j], -j)) + 1)
    return out


def verify_answer(
    llm: Callable[[], LLM],
    meter: UsageMeter,
    store: Caches,
    question: str,
    answer: Answer,
    mode: VerifyMode = "flag",
    *,
    extractive: bool = False,
    overlap_words: int = OVERLAP_WORDS,
    overlap_first: bool = True,
    uncited: UncitedMode = "cite",
    miscited: MiscitedMode = "recite",
    embedder: Embedder | None = None,
) -> Answer:
    """The answer with each sentence checked against its citations (``verification``), and under ``"drop"`` without
    the unsupported ones (:func:`drop_unsupported`); unchanged under ``"off"``, for a multiple-choice answer and for
    an abstention (``answer.reading["abstained"]``: "Not found in the memory." claims nothing to check).

    Under ``uncited = "cite"`` each uncited sentence (no marker, in an answer citing elsewhere) is cited after the
    answer (:func:`post_hoc_citations`) and checked against that passage: supported, its marker is added to the text
    (:func:`add_citations`) and to ``cited``, its check records ``added_citation``; else its check is ``uncited``.
    That costs at most one entailment call per uncited sentence (none for one checked by overlap) and one embedder
    call for all of them. Under ``"flag"`` an uncited sentence is unsupported without a check (no call).

    Under ``miscited = "recite"`` each marked sentence its markers do not support (not a reference sentence) is
    checked against the passage it did not cite that matches it best (:func:`post_hoc_citations` over the others):
    supported, that passage's marker replaces its own (:func:`add_citations`), its check records ``added_citation``
    and ``recited_from``, and ``cited`` is the passages the new text's markers name. At most one more check per such
    sentence (an entailment call only where the sentence is checked by entailment) and one embedder call for each
    such sentence checked by entailment.

    The checks' model calls (and the post-hoc citations' embedder call) run in the meter's ``query`` phase; what they
    spent is the answer's ``verification_usage`` and is added to its ``usage``, their wall time to its
    ``answer_seconds``.

    Args:
        llm: returns the memory's (cached, metered) LLM; called only when a sentence needs an entailment check.
        meter: the usage meter.
        store: records a ``query/verify`` failure for a verdict that stayed invalid.
        question: the question answered.
        answer: the answer (its ``text``, ``hits`` and ``cited``).
        mode: ``"flag"``, ``"drop"`` or ``"off"``.
        extractive, overlap_words, overlap_first: as :func:`check_sentences`.
        uncited: ``"cite"`` or ``"flag"`` (``[answer] verify_uncited``).
        miscited: ``"recite"`` or ``"flag"`` (``[answer] verify_miscited``).
        embedder: the memory's embedder, to match uncited sentences checked by entailment with a passage (None:
            matched by token overlap).

    Raises:
        ValueError: an unknown ``mode`` or ``uncited``.
        GemragError: a fatal backend error.
    """
    if mode not in ("flag", "drop", "off"):
        raise ValueError(f"verify must be 'flag', 'drop' or 'off' (got {mode!r})")
    if uncited not in ("cite", "flag"):
        raise ValueError(f"verify_uncited must be 'cite' or 'flag' (got {uncited!r})")
    if miscited not in ("recite", "flag"):
        raise ValueError(f"verify_miscited must be 'recite' or 'flag' (got {miscited!r})")
    if mode == "off" or answer.choice is not None or not answer.text.strip() or answer.reading.get("abstained"):
        return answer  # an abstention ("Not found in the memory.") claims nothing about the context
    before = meter.totals.get("query", Usage())
    t0 = time.perf_counter()
    passages = [h.text for h in answer.hits]
    sentences = answer_sentences(answer.text, len(answer.hits))
    unmarked = not any(s.cited for s in sentences)
    if unmarked and answer.cited:  # citations made outside the text (the quote reading's quoted passages)
        sentences = [replace(s, cited=list(answer.cited)) for s in sentences]
    bare = [] if unmarked else [i for i, s in enumerate(sentences) if not s.cited]  # uncited sentences
    with meter.phase("query"):
        added: dict[int, int] = {}
        if bare and passages and uncited == "cite":
            methods = [check_method(sentences[i].text, extractive, overlap_words) for i in bare]
            found = post_hoc_citations(question, [sentences[i].text for i in bare], passages, methods, embedder)
            added = dict(zip(bare, found, strict=True))
            sentences = [replace(s, cited=[added[i]]) if i in added else s for i, s in enumerate(sentences)]
        checks = check_sentences(
            llm,
            question,
            sentences,
            passages,
            whole_context=unmarked and not answer.cited,
            extractive=extractive,
            overlap_words=overlap_words,
            overlap_first=overlap_first,
            on_failure=lambda message: store.record_failure("query/verify", None, message),
        )
        if embedder is not None:  # the embedder's match did not support it: the passage holding most of its words
            failed = [i for i in added if not checks[i].supported]
            added |= _match_by_overlap(
                llm, question, sentences, checks, failed, passages, added, extractive, overlap_words, overlap_first,
                store,
            )  # fmt: skip
        if miscited == "recite" and not unmarked:
            wrong = [
                i for i, c in enumerate(checks)
                if i not in bare and not c.supported and not is_reference(sentences[i])
                and len(sentences[i].cited) < len(passages)
            ]  # fmt: skip
            _recite(
                llm, question, sentences, checks, wrong, passages, extractive, overlap_words, overlap_first, embedder,
                store,
            )  # fmt: skip
    for i in bare:
        if i in added and checks[i].supported:
            checks[i].added_citation = added[i]
        else:
            checks[i].cited, checks[i].supported, checks[i].uncited = [], False, True
    text, checks = add_citations(answer.text, checks)
    spent = meter.totals.get("query", Usage()) - before
    added_now = {c.added_citation for c in checks if c.added_citation is not None}
    recited = any(c.recited_from for c in checks)
    checked = replace(
        answer,
        text=text,
        cited=parse_citations(text, len(passages)).cited if recited else sorted({*answer.cited, *added_now}),
        verification=checks,
        verification_usage=spent,
        usage=answer.usage + spent,
        answer_seconds=answer.answer_seconds + time.perf_counter() - t0,
    )
    return drop_unsupported(checked) if mode == "drop" else checked


def _check_against(
    llm: Callable[[], LLM],
    question: str,
    sentences: Sequence[Sentence],
    candidates: dict[int, int],
    passages: Sequence[str],
    extractive: bool,
    overlap_words: int,
    overlap_first: bool,
    store: Caches,
) -> dict[int, tuple[int, SentenceCheck]]:
    """Check sentence ``i`` against passage ``candidates[i]`` alone, for each, as :func:`check_sentences` checks a
    cited sentence (overlap, or one entailment call; one batch); the second chances of :func:`_match_by_overlap` and
    :func:`_recite`. None of them may be a reference (checked alone, it would take another sentence as its claim).

    Returns:
        ``{i: (passage, check)}`` for the sentences that passage supports.
    """
    items = list(candidates.items())
    again = check_sentences(
        llm,
        question,
        [replace(sentences[i], cited=[n]) for i, n in items],
        passages,
        extractive=extractive,
        overlap_words=overlap_words,
        overlap_first=overlap_first,
        on_failure=lambda message: store.record_failure("query/verify", None, message),
    )
    return {i: (n, check) for (i, n), check in zip(items, again, strict=True) if check.supported}


def _match_by_overlap(
    llm: Callable[[], LLM],
    question: str,
    sentences: Sequence[Sentence],
    checks: list[SentenceCheck],
    failed: Sequence[int],
    passages: Sequence[str],
    matched: dict[int, int],
    extractive: bool,
    overlap_words: int,
    overlap_first: bool,
    store: Caches,
) -> dict[int, int]:
    """Check each uncited sentence of ``failed`` (indices into ``sentences``/``checks``), which the passage the
    embedder matched it with (``matched``) does not support, once more against the passage holding the largest share
    of its own words (:func:`post_hoc_citations` by overlap), when that is another passage. Where it supports the
    sentence, the check is replaced in place by that one (supported, citing it). At most one more check per such
    sentence (by overlap, or one entailment call, as :func:`check_sentences` runs them); a reference ("This is stated
    in the passage.") gets none, as it gets no re-citation.

    The embedder compares meanings, and a small model's sentence ("Caroline joined the group on Tuesday, July 18,
    2023.") may be closest to a passage about the same people that does not hold its fact; the passage holding its
    words is the other natural candidate.

    Returns:
        ``{sentence index: passage number}`` for the sentences now supported.
    """
    alternatives = {
        i: n
        for i in failed
        if not is_reference(sentences[i])
        and (n := post_hoc_citations(question, [sentences[i].text], passages, ["overlap"])[0]) != matched[i]
    }
    if not alternatives:
        return {}
    found = _check_against(
        llm, question, sentences, alternatives, passages, extractive, overlap_words, overlap_first, store
    )
    for i, (_, check) in found.items():
        checks[i] = check
    return {i: n for i, (n, _) in found.items()}


def _recite(
    llm: Callable[[], LLM],
    question: str,
    sentences: Sequence[Sentence],
    checks: list[SentenceCheck],
    wrong: Sequence[int],
    passages: Sequence[str],
    extractive: bool,
    overlap_words: int,
    overlap_first: bool,
    embedder: Embedder | None,
    store: Caches,
) -> None:
    """Re-cite the miscited sentences ``wrong`` (indices into ``sentences``/``checks``; no reference among them) in
    place: each is checked against the passage it did not cite that matches it best (:func:`post_hoc_citations`), and
    where that passage supports it its check becomes supported, cited with that passage (``added_citation``,
    ``cited``) and records its own markers' passages in ``recited_from``. The checks run as :func:`check_sentences`
    runs them, with the answer's ``extractive``, ``overlap_words`` and ``overlap_first``."""
    if not wrong:
        return
    others = [[n for n in range(1, len(passages) + 1) if n not in sentences[i].cited] for i in wrong]
    methods = [check_method(sentences[i].text, extractive, overlap_words) for i in wrong]
    best = {
        i: others[k][post_hoc_citations(question, [sentences[i].text], [passages[n - 1] for n in others[k]],
                                        [methods[k]], embedder)[0] - 1]
        for k, i in enumerate(wrong)
    }  # fmt: skip
    found = _check_against(llm, question, sentences, best, passages, extractive, overlap_words, overlap_first, store)
    for i, (n, check) in found.items():
        checks[i] = checks[i].model_copy(
            update={"cited": [n], "supported": True, "method": check.method, "added_citation": n,
                    "recited_from": list(sentences[i].cited)}
        )  # fmt: skip
