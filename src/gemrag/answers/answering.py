"""Answering a question from retrieved context: the answer prompt (GEM-RAG section III.B.2: "The LLM is then
given this context, followed by the question"), the multiple-choice schema, :func:`answer_question`, which
:meth:`gemrag.memory.Memory.answer` calls, and :func:`answer_stream`, its streamed form
(:meth:`gemrag.memory.Memory.ask_stream`).

Cited answers (``cite=True``; the setting ``[answer] cite``, on by default): the context passages are numbered
``[1]..[n]`` as always (:func:`gemrag.prompting.format_context`) and the prompt asks the model to name the passages it
uses with ``[n]`` markers (free form), or to list their numbers in a ``passages`` field next to the option letter
(multiple choice); :func:`gemrag.prompting.parse_citations` reads them, and the answer carries the cited numbers and
the count of markers that named no passage (:class:`~gemrag.answers.answer.Answer`). A streamed answer is cited the same
way: its pieces show the markers as the model writes them, and its final Answer is read from the whole completion
(dropped markers removed from its text, and counted). An answer that is only markers (a small model's ``"[2]"``)
is asked once more without citing (:func:`markers_only`). With ``cite=False`` every prompt is the one of earlier
releases, so their LLM cache keys hold.

Follow-ups (self-ask, Press et al. 2023, section 3: the final answer composed from the intermediate answers): a
retrieval that decomposed the question may give its sub-questions and their answers in a hit's
``meta["follow_ups"]`` (``iterative`` with ``answer_from = "steps"``); every answer prompt then shows them, unnumbered,
before the numbered passages (:func:`follow_ups_text`), so citations still name passages only. Without them every
prompt is unchanged."""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any

from gemrag.answers.answer import Answer, Quote
from gemrag.answers.choices import LETTERS, ChoiceAnswer, choice_schema
from gemrag.answers.consistency import most_consistent
from gemrag.answers.reading import (
    NOT_FOUND,
    READING_MAX_TOKENS,
    Reading,
    aid_prompt,
    read_quotes,
    reading_aid,
    reading_prompt,
    split_answer,
)
from gemrag.answers.shaping import evidence_score, shape_context
from gemrag.errors import StructuredOutputError
from gemrag.models.base import LLM, Completion, Embedder, Message, Usage
from gemrag.models.meter import UsageMeter
from gemrag.models.streaming import complete_stream, pieces
from gemrag.models.structured import complete_structured
from gemrag.prompting import CITE_INSTRUCTION, format_context, parse_citations, strip_citations
from gemrag.store.parts import Caches
from gemrag.types import Hit

#: Last instruction of a free-form answer prompt; with ``abstain=True`` the model may decline instead of guessing.
GUESS = "If the context does not contain the answer, give your best guess."
ABSTAIN = "If the context does not contain the answer, say that it is not mentioned."


FollowUps = Sequence[Mapping[str, str | None]]
"""Self-ask's follow-up questions and intermediate answers: ``[{"question": str, "answer": str | None}]``, in the
order they were asked (``answer`` None where none was read)."""


def follow_ups_text(follow_ups: FollowUps) -> str:
    """The follow-ups as the answer prompt shows them, before the context: self-ask's ``Follow up:`` and
    ``Intermediate answer:`` lines (Press et al. 2023, section 3, Figure 3), the latter only where an answer was
    read; ``""`` for none."""
    lines = []
    for f in follow_ups:
        lines.append(f"Follow up: {f['question']}")
        if f.get("answer"):
            lines.append(f"Intermediate answer: {f['answer']}")
    body = "\n".join(lines)
    return f"Follow-up questions asked while searching:\n{body}\n\n" if lines else ""


def answer_prompt(
    question: str,
    context: Sequence[str],
    choices: Sequence[str] | None = None,
    *,
    abstain: bool = False,
    cite: bool = False,
    follow_ups: FollowUps = (),
    aside: str = "",
) -> list[Message]:
    """Messages with the retrieved context followed by the question (and lettered options, if any).

    ``abstain`` (free-form only): tell the model to say the answer is not mentioned when the context lacks it,
    instead of guessing — for datasets with unanswerable questions (LoCoMo category 5, Maharana et al. 2024).
    ``cite``: ask for ``[n]`` markers naming the passages used (free form), or for their numbers in the JSON's
    ``passages`` (multiple choice). ``follow_ups``: the retrieval's sub-questions and answers, shown before the
    context (:func:`follow_ups_text`). ``aside``: the quotes or notes of a multiple-choice reading's first call
    (:func:`gemrag.answers.reading.reading_aid`), shown after the passages. The default prompt is unchanged, so the
    LLM cache keys of other evaluations stay the same.
    """
    system = "Answer questions about a document using the context passages retrieved from it."
    user = f"{follow_ups_text(follow_ups)}Context:\n{format_context(context)}\n\n{aside}Question: {question}\n"
    if choices:
        options = "\n".join(f"{LETTERS[i]}. {c}" for i, c in enumerate(choices))
        letters = ", ".join(LETTERS[: len(choices)])
        cited = ' and whose "passages" lists the numbers of the context passages it rests on' if cite else ""
        user += (
            f"Options:\n{options}\n\nWhich option is correct according to the context? Think about each "
            f'option, then reply with JSON whose "answer" is one letter from {letters}{cited}.'
        )
    else:
        user += f"\nAnswer briefly. {CITE_INSTRUCTION + ' ' if cite else ''}{ABSTAIN if abstain else GUESS}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


SHORT_INSTRUCTION = (
    "Answer with a short phrase of a few words, not a sentence, using the exact words of the context whenever possible."
)
#: Completion limit of a free-form answer (tokens; part of its cache key, so streamed and whole answers share it).
ANSWER_MAX_TOKENS = 256
SHORT_CITE = "After the phrase, cite the passages it comes from by their numbers in brackets, e.g. [2]."
"""What the short answer prompt asks when citing (``cite=True``)."""
#: Completion limit of a short answer (tokens); a longer completion is cut to its answer by :func:`short_form`.
SHORT_MAX_TOKENS = 48
#: An agent's answer longer than this (words) is shortened by one extraction call in the short form.
SHORT_WORDS = 6


def short_answer_prompt(
    question: str, context: Sequence[str], *, abstain: bool = False, cite: bool = False, follow_ups: FollowUps = ()
) -> list[Message]:
    """The answer prompt of span-answer benchmarks: the context, the question, and a request for a short phrase in
    the words of the context — the form their official scorers (SQuAD-style EM and token F1) expect. It follows
    LoCoMo's QA prompt (Maharana et al. 2024, ``task_eval``: "write an answer in the form of a short phrase ...
    Answer with exact words from the context whenever possible") and HippoRAG 2's QA reader, which ends with a
    concise ``Answer:``. A separate prompt: :func:`answer_prompt`'s messages, hence its cache keys, are unchanged.

    ``abstain``: say the answer is not mentioned when the context lacks it (LoCoMo category 5's scorer accepts
    "not mentioned"). ``cite``: ask for ``[n]`` markers after the phrase (:data:`SHORT_CITE`). ``follow_ups``: as
    :func:`answer_prompt`.
    """
    system = "Answer questions about a document using the context passages retrieved from it."
    last = ABSTAIN if abstain else GUESS
    if cite:
        last = f"{SHORT_CITE} {last}"
    user = f"{follow_ups_text(follow_ups)}Context:\n{format_context(context)}\n\nQuestion: {question}\n\n"
    user += f"{SHORT_INSTRUCTION} {last}\nShort answer:"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def shorten_prompt(question: str, answer: str, *, abstain: bool = False) -> list[Message]:
    """The final extraction step of the short form, for an answer written elsewhere (REMem's agent writes long
    sentences in ``output_answer``): the question and that answer, and a request for the short phrase in its words."""
    system = "You shorten answers to questions."
    last = " If the answer says the information is not available, reply: not mentioned." if abstain else ""
    user = (
        f"Question: {question}\nLong answer: {answer}\n\nGive the answer as a short phrase of a few words, not a "
        f"sentence, using the long answer's exact words.{last}\nShort answer:"
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


_ANSWER_LABEL = re.compile(r"^\s*(?:\*\*)?(?:short |final )?answer\s*(?:is)?\s*[:\-]\s*(?:\*\*)?\s*", re.IGNORECASE)


def short_form(text: str) -> str:
    """A completion cut to its answer: the text after the last ``Answer:`` label if there is one, else the first
    non-empty line; a leading label, wrapping quotes or ``**`` and a trailing full stop removed. ``""`` for
    ``""``."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    labelled = [line for line in lines if _ANSWER_LABEL.match(line)]
    line = labelled[-1] if labelled else lines[0]
    line = _ANSWER_LABEL.sub("", line).strip().strip("*").strip()
    if len(line) >= 2 and line[0] == line[-1] and line[0] in "\"'`":
        line = line[1:-1].strip()
    return line[:-1].rstrip() if line.endswith(".") and not line.endswith("..") else line


def answer_question(
    llm: Callable[[], LLM],
    meter: UsageMeter,
    store: Caches,
    question: str,
    hits: Sequence[Hit],
    choices: Sequence[str] | None = None,
    retrieval_seconds: float = 0.0,
    *,
    abstain: bool = False,
    short: bool = False,
    cite: bool = False,
    temperature: float = 0.0,
    seed: int | None = None,
    reading: Reading | None = None,
    embedder: Embedder | None = None,
) -> Answer:
    """Answer ``question`` from a given context (the LLM gets the context, then the question).

    With ``choices`` the LLM picks exactly one option letter (structured output; a malformed answer is recorded as
    a ``query/answer`` failure in ``store`` and the answer is empty). ``abstain``: a free-form answer may say the
    answer is not mentioned (see :func:`answer_prompt`). A free-form question whose retrieval already produced an
    answer (a hit's ``meta["agent_answer"]``: REMem's tool-using agent, :mod:`gemrag.strategies.remem.agent`) is
    answered with it, without another LLM call (``llm`` is then never called, so no model is loaded).

    ``short`` (free-form only): the benchmark form for span-answer datasets — :func:`short_answer_prompt`, the
    completion cut to its answer (:func:`short_form`), and an agent's answer longer than :data:`SHORT_WORDS` words
    shortened by one :func:`shorten_prompt` call (the final extraction step).

    Follow-ups in the hits (``meta["follow_ups"]``, module docstring) are shown before the passages in every
    prompt built here.

    ``cite``: a cited answer (module docstring): the prompt asks for the passages used, and the answer's ``cited``
    and ``dropped_citations`` report them (a free-form answer's markers are read from the whole completion, before
    the short form cuts it). Nothing is cited from an empty context or by an agent's answer. A free-form reply
    that is only markers is asked again with the uncited prompt (:func:`markers_only`; two LLM calls for that
    question): its text is the second reply's, its ``cited`` the first reply's.

    Args:
        llm: returns the LLM to answer with (called only when an LLM call is needed).
        meter: the usage meter; the answer's calls are counted in its ``query`` phase.
        retrieval_seconds: the retrieval's wall time (seconds), reported in the answer.
        temperature, seed: sampling of a free-form answer (default greedy: temperature 0, the backend's seed);
            repeated evaluation runs (``gemrag eval --runs N``) sample each run with its own seed. A choice among
            options stays greedy (structured output).
        reading: how the context is read (:class:`~gemrag.answers.reading.Reading`: the quote or notes form, the
            context shaping, self-consistency samples); None is the plain reading, today's prompts exactly. A
            shaped context changes which hits are shown and in what order: the Answer's ``hits`` are the shown ones.
            Self-consistency samples ``reading.samples`` free-form answers at ``reading.temperature`` with seeds
            ``seed + 1 .. seed + k`` (``seed`` 0 when None) and keeps the most consistent one
            (:func:`gemrag.answers.consistency.most_consistent`); its ``reading["votes"]`` lists all of them.
        embedder: the memory's embedder, needed to trim sentences (``reading.shaping.trim``) and to abstain
            (``reading.abstain_below``: below it the answer is :data:`~gemrag.answers.reading.NOT_FOUND`, no LLM call,
            and ``reading["abstained"]`` is True; ``reading["evidence"]`` holds the score either way).

    Raises:
        ValueError: fewer than 2 or more than 10 choices; trimming without an embedder.
    """
    if choices is not None and not 2 <= len(choices) <= len(LETTERS):
        raise ValueError(f"give between 2 and {len(LETTERS)} choices")
    reading = reading or Reading()
    before = meter.totals.get("query", Usage())
    t1 = time.perf_counter()
    agent = _agent_answer(hits)
    steps = _follow_ups(hits)
    cite = cite and bool(hits)
    cited: list[int] = []
    dropped = 0
    quotes: list[Quote] = []
    if agent is not None and not choices and (not short or len(str(agent).split()) <= SHORT_WORDS):
        return Answer(
            short_form(str(agent)) if short else str(agent), None, list(hits), retrieval_seconds, 0.0, Usage()
        )
    hits, texts, info = _shown(question, hits, embedder, reading if agent is None else Reading())
    form = reading.form if agent is None else "plain"
    if reading.abstain_below is not None and agent is None and not choices:
        if embedder is None:
            raise ValueError("abstaining on weak evidence needs the memory's embedder")
        info["evidence"] = score = round(evidence_score(question, texts, embedder), 4)
        if score < reading.abstain_below:
            info.update(form=form, samples=reading.samples, abstained=True)
            seconds = time.perf_counter() - t1
            return Answer(NOT_FOUND, None, hits, retrieval_seconds, seconds, Usage(), reading=info)
    if agent is not None and not choices:
        messages = shorten_prompt(question, str(agent), abstain=abstain)
    elif form != "plain" and not choices:
        last = ABSTAIN if abstain else GUESS
        preface = follow_ups_text(steps)
        messages = reading_prompt(question, texts, form, short=short, abstain=abstain, preface=preface, last=last)
    elif short and not choices:
        messages = short_answer_prompt(question, texts, abstain=abstain, cite=cite, follow_ups=steps)
    else:
        messages = answer_prompt(question, texts, choices, abstain=abstain, cite=cite, follow_ups=steps)
    model = llm()
    with meter.phase("query"):
        if choices and form != "plain":
            first = aid_prompt(question, texts, form, follow_ups_text(steps))
            aid = model.complete(first, max_tokens=READING_MAX_TOKENS)
            quotes = read_quotes(aid.text, [h.text for h in hits]) if form == "quote" else []
            aside = reading_aid(form, aid.text)
            messages = answer_prompt(
                question, texts, choices, abstain=abstain, cite=cite, follow_ups=steps, aside=aside
            )
        if choices:
            n_passages = len(hits) if cite else 0
            try:
                parsed = complete_structured(
                    model,
                    messages,
                    ChoiceAnswer,
                    schema=choice_schema(len(choices), n_passages),
                    max_tokens=16 + 4 * n_passages,
                )
                letter = parsed.answer.strip().upper()[:1]
                choice = LETTERS.index(letter) if letter and letter in LETTERS[: len(choices)] else None
                if cite:
                    cited = sorted({n for n in parsed.passages if 1 <= n <= len(hits)})
                    dropped = sum(1 for n in parsed.passages if not 1 <= n <= len(hits))
            except StructuredOutputError as exc:
                store.record_failure("query/answer", None, f"{question[:80]}: {exc}")
                choice = None
            text = choices[choice] if choice is not None else ""
        else:
            limit = READING_MAX_TOKENS if form != "plain" else SHORT_MAX_TOKENS if short else ANSWER_MAX_TOKENS
            uncited = (short_answer_prompt if short else answer_prompt)(
                question, texts, abstain=abstain, follow_ups=steps
            )
            k = reading.samples if agent is None else 1
            reads = [
                _read(model, messages, uncited, hits, form, short=short, cite=cite, limit=limit,
                      temperature=reading.temperature if k > 1 else temperature,
                      seed=((seed or 0) + i + 1) if k > 1 else seed)
                for i in range(k)
            ]  # fmt: skip
            pick = most_consistent([r[0] for r in reads]) if k > 1 else 0
            text, cited, dropped, quotes = reads[pick]
            choice = None
            if k > 1:
                info["votes"] = [r[0] for r in reads]
    t2 = time.perf_counter()
    spent = meter.totals.get("query", Usage()) - before
    if not reading.plain and agent is None:
        info = {"form": form, "samples": reading.samples, **info}
    return Answer(text, choice, list(hits), retrieval_seconds, t2 - t1, spent, cited, dropped, quotes, info)


def _shown(
    question: str, hits: Sequence[Hit], embedder: Embedder | None, reading: Reading
) -> tuple[list[Hit], list[str], dict[str, Any]]:
    """The hits shown to the model, in the order shown, the text each shows, and what shaping did (for
    ``Answer.reading``): the hits as retrieved when ``reading.shaping`` is None."""
    if reading.shaping is None or not hits:
        return list(hits), [h.text for h in hits], {}
    shaped = shape_context(question, hits, embedder, reading.shaping)
    info = {"words_before": shaped.words_before, "words_after": shaped.words_after, "duplicates": shaped.dropped}
    return shaped.hits, shaped.texts, info


def _read(
    model: LLM,
    messages: list[Message],
    uncited: list[Message],
    hits: Sequence[Hit],
    form: str,
    *,
    short: bool,
    cite: bool,
    limit: int,
    temperature: float,
    seed: int | None,
) -> tuple[str, list[int], int, list[Quote]]:
    """One free-form completion read into ``(text, cited, dropped, quotes)``.

    Plain form: the ``[n]`` markers when citing (a markers-only reply asked again with ``uncited``), the text cut to
    its short form when ``short``. Quote and notes forms: the answer after the ``Answer:`` line
    (:func:`gemrag.answers.reading.split_answer`); under ``quote`` the quotes are located in their passages and the
    verified ones are cited (with any markers the answer line names)."""
    raw = model.complete(messages, max_tokens=limit, temperature=temperature, seed=seed).text
    if form == "plain":
        cited: list[int] = []
        dropped = 0
        if cite:
            found = parse_citations(raw, len(hits))
            raw, cited, dropped = found.text, found.cited, found.dropped
            if markers_only(raw):
                raw = model.complete(uncited, max_tokens=limit, temperature=temperature, seed=seed).text
        return (short_form(raw) if short else raw.strip()), cited, dropped, []
    body, said = split_answer(raw)
    quotes = read_quotes(body, [h.text for h in hits]) if form == "quote" else []
    found = parse_citations(said, len(hits))
    cited = sorted({q.passage for q in quotes if q.verified} | set(found.cited if cite or form == "quote" else []))
    text = short_form(found.text) if short else found.text.strip()
    return text, cited, found.dropped, quotes


def markers_only(text: str) -> bool:
    """True when a cited answer is nothing but its markers (``"[2]"``, ``"[1, 3]."``): small models, asked to cite
    after a short phrase, sometimes write only the marker. Such an answer is asked again with the uncited prompt
    (one more LLM call, cached like any other) and keeps the passages the first reply named; an empty answer is
    not markers-only (nothing was cited)."""
    stripped = strip_citations(text)
    return text.strip() != "" and not stripped.strip(" \t\n.,;:!?\"'*")


def _agent_answer(hits: Sequence[Hit]) -> object | None:
    """The answer a retrieval already produced (a hit's ``meta["agent_answer"]``), or None."""
    return next((h.meta["agent_answer"] for h in hits if h.meta.get("agent_answer")), None)


def _follow_ups(hits: Sequence[Hit]) -> FollowUps:
    """The follow-ups a retrieval gave for the answer (the first hit's ``meta["follow_ups"]`` that has some), or
    ``()``."""
    for h in hits:
        follow_ups = h.meta.get("follow_ups")
        if follow_ups and isinstance(follow_ups, (list, tuple)):
            return follow_ups
    return ()


def answer_stream(
    llm: Callable[[], LLM],
    meter: UsageMeter,
    store: Caches,
    question: str,
    hits: Sequence[Hit],
    choices: Sequence[str] | None = None,
    retrieval_seconds: float = 0.0,
    *,
    abstain: bool = False,
    cite: bool = False,
    temperature: float = 0.0,
    seed: int | None = None,
    reading: Reading | None = None,
    embedder: Embedder | None = None,
) -> Generator[str | Answer, None, None]:
    """:func:`answer_question` as a stream: the answer's text in pieces as the LLM writes them, then the
    :class:`~gemrag.answers.answer.Answer` (contract of the LLM's stream: :mod:`gemrag.models.streaming`).

    A free-form answer is streamed with the prompt, limit and sampling of :func:`answer_question`, hence under
    the same cache key: a cached answer streams at once (its whole text as one piece), and a streamed answer is
    cached for a later :func:`answer_question`. Leading whitespace is not streamed, and the Answer's text is
    stripped as :func:`answer_question` strips it. A multiple-choice answer is not streamed token by token (the
    model writes a JSON letter, which is not the answer a reader wants to watch), nor is an agent's answer
    (no LLM call): the chosen option's text, or the agent's answer, is yielded once, then the Answer.

    Usage is metered when the LLM's stream ends (in the ``query`` phase; each ``next`` on the LLM's stream runs
    in that phase, in whichever thread iterates), and the Answer's ``usage`` is what this answer spent. A stream
    closed before its end (``close()``, ``contextlib.closing``) stops the generation and records nothing.

    ``cite``: as :func:`answer_question`, with the same prompt (hence cache key). The pieces are the model's raw
    text, ``[n]`` markers included as they are written (a marker that names no passage is streamed too); the final
    Answer is read from the whole completion (:func:`gemrag.prompting.parse_citations`): its ``text`` without the
    dropped markers, its ``cited`` and ``dropped_citations`` as :func:`answer_question` gives them.

    A reading other than the plain one (quotes or notes first, a shaped context, several samples) is not streamed
    either: the model's quotes or notes are not the answer, so the answer is yielded once when it is read.

    Args:
        llm, meter, store, question, hits, choices, retrieval_seconds, abstain, cite, temperature, seed, reading,
            embedder: as :func:`answer_question` (no ``short``: the span-answer form of benchmarks is not streamed).

    Yields:
        Non-empty ``str`` pieces, then one :class:`~gemrag.answers.answer.Answer` (``text``: the whole, stripped answer,
        dropped markers removed).

    Raises:
        ValueError: fewer than 2 or more than 10 choices.
        GemragError: the LLM failed (before or between pieces).
    """
    if choices is not None or _agent_answer(hits) is not None or (reading is not None and not reading.plain):
        answer = answer_question(
            llm, meter, store, question, hits, choices, retrieval_seconds, abstain=abstain, cite=cite,
            temperature=temperature, seed=seed, reading=reading, embedder=embedder,
        )  # fmt: skip
        if answer.text:
            yield answer.text
        yield answer
        return
    cite = cite and bool(hits)
    steps = _follow_ups(hits)
    messages = answer_prompt(question, [h.text for h in hits], abstain=abstain, cite=cite, follow_ups=steps)
    before = meter.totals.get("query", Usage())
    t1 = time.perf_counter()
    final: list[Completion] = []
    stream = pieces(
        complete_stream(llm(), messages, max_tokens=ANSWER_MAX_TOKENS, temperature=temperature, seed=seed), final
    )
    started = False
    with contextlib.closing(stream):
        while True:
            with meter.phase("query"):
                piece = next(stream, None)
            if piece is None:
                break
            piece = piece if started else piece.lstrip()
            if piece:
                started = True
                yield piece
    spent = meter.totals.get("query", Usage()) - before
    found = parse_citations(final[0].text, len(hits)) if cite else None
    text, cited, dropped = (found.text, found.cited, found.dropped) if found else (final[0].text, [], 0)
    if cite and markers_only(text):
        uncited = answer_prompt(question, [h.text for h in hits], abstain=abstain, follow_ups=steps)
        with meter.phase("query"):
            text = llm().complete(uncited, max_tokens=ANSWER_MAX_TOKENS, temperature=temperature, seed=seed).text
        if text.strip():
            yield "\n" + text.strip()
        spent = meter.totals.get("query", Usage()) - before
    seconds = time.perf_counter() - t1
    yield Answer(text.strip(), None, list(hits), retrieval_seconds, seconds, spent, cited, dropped)
