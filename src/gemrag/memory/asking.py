"""Asking a memory: retrieve the context, then answer from it with the memory's LLM, whole or streamed.

The bodies of :meth:`gemrag.memory.Memory.ask`, :meth:`~gemrag.memory.Memory.ask_stream` and
:meth:`~gemrag.memory.Memory.answer` (the facade keeps their documentation). The answer itself (the prompt, the
choice among options, citations) is :mod:`gemrag.answers.answering`'s (streamed: :mod:`gemrag.answers.streaming`'s);
this module adds what the memory owns: its LLM, meter, store and ``[answer]`` settings, the ``query`` usage an answer
reports (retrieval and answer together), the check of each answer sentence against its citations (``[answer]
verify``, :func:`verified`; a streamed answer is checked when its stream ends, and its final Answer carries the checks)
and the ``gemrag.ask`` / ``gemrag.answer`` spans (:mod:`gemrag.tracing`).
"""

from __future__ import annotations

import time
from collections.abc import Generator, Iterator, Sequence
from typing import Protocol

from gemrag import tracing
from gemrag.answers.answer import Answer
from gemrag.answers.answering import answer_question
from gemrag.answers.choices import LETTERS
from gemrag.answers.dates import dated_context
from gemrag.answers.dates.chunks import DatingStore
from gemrag.answers.demonstrations import DEMONSTRATIONS, Demonstration, load_demonstrations
from gemrag.answers.reading import Reading
from gemrag.answers.shaping import Shaping
from gemrag.answers.streaming import answer_stream
from gemrag.answers.verification import verify_answer
from gemrag.config import AnswerSettings
from gemrag.memory.choice_queries import retrieve_for_choices
from gemrag.memory.handle import MemoryHandle
from gemrag.models.base import Usage
from gemrag.store.parts import Caches, Database
from gemrag.types import Hit


class AskStore(Database, Caches, DatingStore, Protocol):
    """What asking uses of a store: its location (for traces), the caches the answer's model calls use, and the
    chunks' dates (:class:`~gemrag.answers.dates.chunks.DatingStore`)."""


class Asker(MemoryHandle[AskStore], Protocol):
    """What asking needs of a memory (:class:`gemrag.memory.Memory` is one): its retrieval and its answer from a
    given context, so that an ask goes through the same (overridable) methods a caller uses."""

    def retrieve(
        self, question: str, budget: int | None = None, strategy: str | None = None, *, build: bool = False
    ) -> list[Hit]: ...

    def answer(
        self,
        question: str,
        hits: Sequence[Hit],
        choices: Sequence[str] | None = None,
        retrieval_seconds: float = 0.0,
        *,
        abstain: bool = False,
        short: bool = False,
    ) -> Answer: ...


def reading_of(settings: AnswerSettings) -> Reading:
    """The :class:`~gemrag.answers.reading.Reading` the ``[answer]`` settings ask for: the form, the shaping when
    ``shape`` is on, the self-consistency samples, the abstention threshold, the multiple-choice option orders,
    whether list questions are asked for every item, whether hypothetical questions are asked for a guess, how
    a multiple-choice option is chosen, whether an answer whose form does not fit its question is asked again,
    whether the question is also shown before the context, and the worked examples shown before it
    (``demonstrations``: :data:`gemrag.answers.demonstrations.DEMONSTRATIONS`, or those of ``demonstrations_file``
    read now by :func:`gemrag.answers.demonstrations.load_demonstrations`).

    Raises:
        ConfigError: ``demonstrations_file`` cannot be read as worked examples (missing, not UTF-8, malformed, an
            example incomplete or citing a passage it does not have).
    """
    shaping = (
        Shaping(
            dedupe=settings.shape_dedupe,
            trim=settings.shape_trim,
            keep_min=settings.shape_keep_min,
            trim_margin=settings.shape_margin,
            order=settings.shape_order,
        )
        if settings.shape
        else None
    )
    return Reading(
        settings.reading,
        shaping,
        settings.samples,
        settings.sample_temperature,
        settings.abstain_below,
        settings.option_orders,
        lists=settings.lists == "auto",
        hypotheticals=settings.hypotheticals == "auto",
        choice_scoring=settings.choice_scoring,
        repair=settings.repair == "auto",
        question_first=settings.question_first,
        demonstrations=examples_of(settings),
    )


def examples_of(settings: AnswerSettings) -> tuple[Demonstration, ...]:
    """The worked examples ``[answer]`` asks for: none when ``demonstrations`` is off, the user's own when
    ``demonstrations_file`` is set (read now; :func:`gemrag.answers.demonstrations.load_demonstrations`, which raises
    :class:`~gemrag.errors.ConfigError` for a file it cannot read), else the library's
    (:data:`gemrag.answers.demonstrations.DEMONSTRATIONS`)."""
    if not settings.demonstrations:
        return ()
    if settings.demonstrations_file is not None:
        return load_demonstrations(settings.demonstrations_file)
    return DEMONSTRATIONS


def _query_usage(memory: MemoryHandle[AskStore]) -> Usage:
    """The memory's ``query`` usage so far (what its meter counted for retrievals and answers)."""
    return memory.ctx.meter.totals.get("query", Usage())


def read_as(memory: MemoryHandle[AskStore], question: str, hits: Sequence[Hit]) -> list[Hit]:
    """The hits as the answer reads them: the reading settings of ``[answer]`` applied to the retrieved context.

    Time-aware reading (``[answer] dates``, :func:`gemrag.answers.dates.dated_context`): a dated, chronological
    context for time-anchored questions; ``"off"`` (the default) returns the hits unchanged.
    """
    # --- time-aware reading: the one place it joins the answer path (gemrag.answers.dates) ---
    return dated_context(memory.store, question, hits, memory.ctx.config.answer.dates)


def context(
    memory: Asker, question: str, choices: Sequence[str] | None, budget: int | None, strategy: str | None, build: bool
) -> tuple[Usage, list[Hit], float]:
    """The start of an answer: the query usage before it, the retrieved hits and the retrieval's seconds. A
    multiple-choice question is retrieved for as ``[answer] choice_retrieval`` says
    (:func:`gemrag.memory.choice_queries.retrieve_for_choices`).

    Raises:
        MemoryNotIndexedError: the strategy has not been built (and ``build`` is False).
        ValueError: empty question, or fewer than 2 or more than 10 choices.
    """
    if choices is not None and not 2 <= len(choices) <= len(LETTERS):
        raise ValueError(f"give between 2 and {len(LETTERS)} choices")
    before = _query_usage(memory)
    t0 = time.perf_counter()
    mode = memory.ctx.config.answer.choice_retrieval  # multiple choice: the options may join the query

    def retrieve(query: str) -> list[Hit]:
        return memory.retrieve(query, budget, strategy, build=build)

    hits = retrieve_for_choices(retrieve, question, choices, mode)
    return before, hits, time.perf_counter() - t0


def ask(
    memory: Asker,
    question: str,
    choices: Sequence[str] | None,
    budget: int | None,
    strategy: str | None,
    build: bool,
) -> Answer:
    """Retrieve (:func:`context`) and answer (``memory.answer``) in one ``gemrag.ask`` span; the answer's usage is
    the retrieval's and the answer's together.

    Raises:
        MemoryNotIndexedError, ValueError: as :func:`context`.
    """
    with tracing.span("gemrag.ask", {"gemrag.memory": memory.store.location}) as span:
        before, hits, seconds = context(memory, question, choices, budget, strategy, build)
        answer = memory.answer(question, hits, choices, seconds)
        answer.usage = _query_usage(memory) - before  # retrieval + answer
        span.set_attributes(tracing.usage_attributes(answer.usage))
    return answer


def ask_stream(
    memory: Asker,
    question: str,
    choices: Sequence[str] | None,
    budget: int | None,
    strategy: str | None,
    build: bool,
) -> Generator[str | Answer, None, None]:
    """Retrieve now (:func:`context`, so a bad question or an unbuilt strategy raises here), then return the
    generator of :func:`gemrag.answers.streaming.answer_stream` (``str`` pieces, then the :class:`Answer`, whose usage
    is set to the retrieval's and the answer's together when the stream ends), each step's model spans under one
    ``gemrag.ask`` span (``gemrag.stream = True``).

    Raises:
        MemoryNotIndexedError, ValueError: as :func:`context`.
        GemragError: the LLM failed (raised by the generator, before or between pieces).
    """
    span = tracing.start_span("gemrag.ask", {"gemrag.memory": memory.store.location, "gemrag.stream": True})
    try:
        with tracing.current(span):  # the retrieval's spans are the ask's children
            before, hits, seconds = context(memory, question, choices, budget, strategy, build)
    except BaseException:
        span.end()
        raise
    ctx = memory.ctx
    hits = read_as(memory, question, hits)
    stream = answer_stream(
        ctx.get_llm, ctx.meter, memory.store, question, hits, choices, seconds, cite=ctx.config.answer.cites(),
        reading=reading_of(ctx.config.answer), embedder=ctx.embedder,
    )  # fmt: skip
    stream = _verified_stream(memory, question, stream)

    def finish(item: str | Answer) -> None:
        if isinstance(item, Answer):
            item.usage = _query_usage(memory) - before  # retrieval + answer
            span.set_attributes(tracing.usage_attributes(item.usage))

    return tracing.each_within(span, stream, finish)  # each step's model spans under the ask


def answer(
    memory: MemoryHandle[AskStore],
    question: str,
    hits: Sequence[Hit],
    choices: Sequence[str] | None,
    retrieval_seconds: float,
    *,
    abstain: bool,
    short: bool,
) -> Answer:
    """:func:`gemrag.answers.answering.answer_question` with the memory's LLM, meter, store and embedder, citing when
    ``config.answer.cites(short=short)`` and reading as the ``[answer]`` settings say (:func:`reading_of`), in one
    ``gemrag.answer`` span.

    Raises:
        ValueError: fewer than 2 or more than 10 choices.
    """
    ctx = memory.ctx
    with tracing.span("gemrag.answer", {"gemrag.memory": memory.store.location, "gemrag.hits": len(hits)}) as span:
        hits = read_as(memory, question, hits)
        answer = answer_question(
            ctx.get_llm,
            ctx.meter,
            memory.store,
            question,
            hits,
            choices,
            retrieval_seconds,
            abstain=abstain,
            short=short,
            cite=ctx.config.answer.cites(short=short),
            reading=reading_of(ctx.config.answer),
            embedder=ctx.embedder,
        )
        answer = verified(memory, question, answer, extractive=short)
        span.set_attributes(tracing.usage_attributes(answer.usage))
        return answer


def _verified_stream(
    memory: MemoryHandle[AskStore], question: str, stream: Iterator[str | Answer]
) -> Generator[str | Answer, None, None]:
    """``stream``'s pieces as they come, then its final Answer checked (:func:`verified`); closing this closes
    ``stream`` (which stops the generation)."""
    try:
        for item in stream:
            yield verified(memory, question, item) if isinstance(item, Answer) else item
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()


def verified(memory: MemoryHandle[AskStore], question: str, answer: Answer, *, extractive: bool = False) -> Answer:
    """The answer checked sentence by sentence against its citations as ``[answer] verify`` says
    (:func:`gemrag.answers.verification.verify_answer` with the memory's LLM, meter, store and embedder, uncited
    sentences cited after the answer or flagged as ``[answer] verify_uncited`` says, miscited ones re-cited or flagged
    as ``[answer] verify_miscited`` says; ``extractive``: a short-form
    answer, checked by token overlap). The one place asking verifies: :func:`answer` (hence :func:`ask`)
    and the end of :func:`ask_stream`.

    Raises:
        GemragError: a fatal backend error during a check.
    """
    settings = memory.ctx.config.answer
    return verify_answer(
        memory.ctx.get_llm,
        memory.ctx.meter,
        memory.store,
        question,
        answer,
        settings.verify,
        extractive=extractive,
        overlap_words=settings.verify_overlap_words,
        overlap_first=settings.verify_overlap_first,
        uncited=settings.verify_uncited,
        miscited=settings.verify_miscited,
        embedder=memory.ctx.embedder,
    )
