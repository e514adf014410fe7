"""Streaming an answer: :func:`answer_stream`, :func:`gemrag.answers.answering.answer_question` as a stream of the
answer's text in pieces as the LLM writes them, then the :class:`~gemrag.answers.answer.Answer`
(:meth:`gemrag.memory.Memory.ask_stream`, ``gemrag ask`` on a terminal, the server's ``"stream": true``).

A free-form answer is streamed under the prompt, limit and sampling of the whole answer, hence its LLM cache key
(:mod:`gemrag.answers.prompts`); every other answer (multiple choice, an agent's, a reading other than the plain one)
is answered whole and yielded once. Cited answers and follow-ups: :mod:`gemrag.answers.answering`."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import replace
from functools import partial

from gemrag.answers.again import Asked, repaired, without_examples
from gemrag.answers.answer import Answer
from gemrag.answers.answering import agent_answer, answer_question, follow_ups_of
from gemrag.answers.dates.completion import complete_dates
from gemrag.answers.demonstrations import copied_example
from gemrag.answers.prompts import ANSWER_MAX_TOKENS, answer_prompt
from gemrag.answers.question_forms import QuestionForm
from gemrag.answers.reading import Reading
from gemrag.answers.replies import markers_only
from gemrag.models.base import LLM, Completion, Embedder, Usage
from gemrag.models.meter import UsageMeter
from gemrag.models.streaming import complete_stream, pieces
from gemrag.prompting import parse_citations
from gemrag.store.parts import Caches
from gemrag.types import Hit


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

    The final answer's dates over a dated context (a missing year, a day the context gives only as a week) are
    completed as :func:`answer_question` completes them (in the Answer's ``text`` and
    ``reading["dates_completed"]``; the streamed pieces are the model's). A list question under ``reading.lists`` and a
    hypothetical question under ``reading.hypotheticals`` are streamed with :func:`answer_question`'s prompt for
    them (:meth:`~gemrag.answers.reading.Reading.question_form`; ``reading["list_cue"]``,
    ``reading["hypothetical_cue"]`` set). Under ``reading.repair`` a streamed answer whose form does not fit its
    question (:mod:`gemrag.answers.repair`) is asked again as :func:`answer_question` asks it (the same prompt, hence
    cache key), not streamed: when the second answer is kept it is yielded whole after a line break, and the Answer
    is it, with ``reading["repair"]`` set. Under ``reading.demonstrations`` the prompt carries the worked examples
    (:mod:`gemrag.answers.demonstrations`); a streamed answer that copied one
    (:func:`gemrag.answers.demonstrations.copied_example`) is asked again without them, yielded whole after a line
    break, with ``reading["example_copied"]`` set.

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
    if choices is not None or agent_answer(hits) is not None or (reading is not None and not reading.plain):
        answer = answer_question(
            llm, meter, store, question, hits, choices, retrieval_seconds, abstain=abstain, cite=cite,
            temperature=temperature, seed=seed, reading=reading, embedder=embedder,
        )  # fmt: skip
        if answer.text:
            yield answer.text
        yield answer
        return
    cite = cite and bool(hits)
    steps = follow_ups_of(hits)
    asked = reading.question_form(question) if reading is not None else QuestionForm()
    abstain, instruction = asked.abstains(abstain), asked.instruction
    first = reading is not None and reading.question_first  # the question also shown before the context
    shown = reading.demonstrations if reading is not None else ()  # worked examples before the question
    ask = partial(answer_prompt, question_first=first, demonstrations=shown)
    messages = ask(
        question, [h.text for h in hits], abstain=abstain, cite=cite, follow_ups=steps, instruction=instruction
    )
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
        uncited = ask(question, [h.text for h in hits], abstain=abstain, follow_ups=steps, instruction=instruction)
        with meter.phase("query"):
            text = llm().complete(uncited, max_tokens=ANSWER_MAX_TOKENS, temperature=temperature, seed=seed).text
        if text.strip():
            yield "\n" + text.strip()
        spent = meter.totals.get("query", Usage()) - before
    asking = Asked(
        llm(), question, hits, [h.text for h in hits], False, cite, abstain, steps, instruction, temperature, seed,
        question_first=first, demonstrations=shown,
    )  # fmt: skip
    copied = copied_example(text, asking.texts, question, shown) if shown else None
    if copied is not None:  # the answer names a worked example's name: asked again without the examples
        with meter.phase("query"):
            text, cited, dropped, _ = without_examples(asking)
        if text.strip():
            yield "\n" + text.strip()
        spent = meter.totals.get("query", Usage()) - before
        asking = replace(asking, demonstrations=())
    note = None
    if reading is not None and reading.repair:  # an answer whose form does not fit its question, asked again
        with meter.phase("query"):
            (text, cited, dropped, _), note = repaired(asking, (text.strip(), cited, dropped, []))
        if note is not None and note["kept"] == "second":
            yield "\n" + text.strip()
        spent = meter.totals.get("query", Usage()) - before
    text, completed = complete_dates(text.strip(), hits, question)  # its dates completed (years, said-on, periods)
    seconds = time.perf_counter() - t1
    info: dict[str, object] = {"dates_completed": completed} if completed else {}
    info.update(asked.cues)
    if first:
        info["question_first"] = True
    if shown:
        info["demonstrations"] = True
    if copied is not None:
        info["example_copied"] = copied
    if note is not None:
        info["repair"] = note
    yield Answer(text, None, list(hits), retrieval_seconds, seconds, spent, cited, dropped, reading=info)
