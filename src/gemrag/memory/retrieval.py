"""The read path: retrieving from a strategy's last published generation, without repeated texts, checked on
its inputs; and the untimed warm-up of ``gemrag eval``.

Used by :meth:`gemrag.memory.Memory.retrieve` (:func:`retrieve`). A retrieval reads the strategy's last *published*
generation, also while another process builds the next one (a generation replaced while it is read is read again,
:func:`read_published`); no retrieval returns a hit resting on removed text
(:func:`~gemrag.strategies.platform.forgetting.check_inputs` in :func:`retrieve_published`); and a retrieval never
puts two nodes with the same text into one context (:func:`retrieve_published`): the best-ranked is kept and the
budget is filled with the next hits.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Protocol

from gemrag import tracing
from gemrag.answers.provenance import with_provenance
from gemrag.errors import DamagedMemoryError, StaleGenerationError
from gemrag.memory.handle import MemoryHandle
from gemrag.memory.states import StateStore, check_ready
from gemrag.store.parts import NodeRows
from gemrag.strategies.base import WARM_UP, Strategy, StrategyContext, warm_strategy
from gemrag.strategies.platform.forgetting import check_inputs
from gemrag.types import SAME_TEXT, Hit, provenance_nodes

FILL_ROUNDS = 3
"""Retrievals at most per question when repeated texts are dropped (:func:`retrieve_published`): the first, then up
to two with a budget grown by the number of repeats, to fill the context with the next hits."""


class RetrievalStore(StateStore, NodeRows, Protocol):
    """What retrieval uses of a store: the build states (to check the strategy is ready), the published generation,
    the database's retrieval scope and the node rows that give the hits their provenance."""


def distinct_texts(hits: Sequence[Hit]) -> list[Hit]:
    """``hits`` without any hit whose text an earlier (better-ranked) hit already has, ranks renumbered 0, 1, ...

    Two nodes with the same text (the same passage stored under two documents, a summary repeating a passage) would
    take two places in a context for one piece of information; every retrieval goes through this
    (:func:`retrieve_published`), whatever the strategy. The kept hit lists the dropped ones' nodes in
    ``meta[SAME_TEXT]`` (:data:`gemrag.types.SAME_TEXT`), so its provenance keeps their sources
    (:func:`gemrag.answers.provenance.with_provenance`)."""
    first: dict[str, int] = {}
    out: list[Hit] = []
    for h in hits:
        at = first.get(h.text)
        if at is not None:
            kept = out[at]
            same = [*_same_text(kept), *provenance_nodes(h), *_same_text(h)]
            out[at] = dataclasses.replace(kept, meta={**kept.meta, SAME_TEXT: list(dict.fromkeys(same))})
            continue
        first[h.text] = len(out)
        out.append(h if h.rank == len(out) else dataclasses.replace(h, rank=len(out)))
    return out


def _same_text(hit: Hit) -> list[int]:
    """The nodes a hit already stands for beside its own (``meta[SAME_TEXT]``)."""
    named = hit.meta.get(SAME_TEXT)
    return [int(i) for i in named] if isinstance(named, list) else []


def retrieve_published(
    ctx: StrategyContext, strategy: Strategy, question: str, budget: int, attempts: int = 3
) -> list[Hit]:
    """``strategy.retrieve`` on its last published generation (:func:`read_published`), without repeated texts
    (:func:`distinct_texts`): when some were dropped and the strategy filled its budget, it is asked again with the
    budget grown by the number dropped (at most :data:`FILL_ROUNDS` retrievals in all), so the context keeps as
    many hits as the strategy first gave (fewer only when the memory holds fewer distinct texts).

    Raises:
        DamagedMemoryError: the published generation's files are missing or mismatched and no newer one exists.
        StaleGenerationError: generations kept changing for all ``attempts``.
        ForgottenTextError: a hit rests on removed text
            (:func:`~gemrag.strategies.platform.forgetting.check_inputs`): nothing is returned.
    """
    asked = budget
    hits = read_published(ctx, strategy, question, asked, attempts)
    wanted = len(hits)
    unique = distinct_texts(hits)
    for _ in range(FILL_ROUNDS - 1):
        if len(unique) >= wanted or len(unique) == len(hits) or len(hits) < asked:
            break
        asked += len(hits) - len(unique)
        hits = read_published(ctx, strategy, question, asked, attempts)
        unique = distinct_texts(hits)
    check_inputs(ctx.store, unique[:wanted])
    return unique[:wanted]


def warm_published(memory: MemoryHandle[RetrievalStore], strategy: str | None, budget: int) -> None:
    """Load what ``strategy``'s retrieval reads on its published generation (arrays; for ``iterative`` and the REMem
    strategies also the LLM, with no call), so that the next retrieval times retrieval alone: ``gemrag eval``'s
    untimed warm-up (:func:`~gemrag.strategies.base.warm_strategy`, ``budget`` in nodes), in the read scope of
    :meth:`gemrag.memory.Memory.retrieve`.

    Raises:
        MemoryNotIndexedError: the strategy has not been built. DamagedMemoryError: its files do not match its
            manifest. StaleGenerationError: another process published a newer generation while it loaded (not
            retried: the next retrieval reads the newer one).
    """
    chosen = memory.get_strategy(strategy)
    embedder = memory.embedder
    with memory.ctx.meter.phase("query"), memory.store.retrieval((embedder.model_id, [embedder.key(WARM_UP)])):
        check_ready(memory, chosen, build=False)
        warm_strategy(memory.ctx, chosen, budget)


def read_published(
    ctx: StrategyContext, strategy: Strategy, question: str, budget: int, attempts: int = 3
) -> list[Hit]:
    """``strategy.retrieve`` on its last published generation; when a newer generation is published while it is
    read (the old generation's files removed: :class:`~gemrag.errors.StaleGenerationError`), read the newer one,
    up to ``attempts`` times in all.

    Raises:
        DamagedMemoryError: the published generation's files are missing or mismatched and no newer one exists.
        StaleGenerationError: generations kept changing for all ``attempts``.
    """
    for attempt in range(attempts):
        try:
            return strategy.retrieve(ctx, question, budget)
        except StaleGenerationError as exc:  # a newer generation was published while reading: read it
            if ctx.store.published_generation(exc.strategy or strategy.name) == exc.generation:
                raise DamagedMemoryError(
                    f"the memory {ctx.store.location} is damaged: {exc}, yet no newer generation exists; "
                    "run `gemrag index` again to rebuild it"
                ) from exc
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


def retrieve(
    memory: MemoryHandle[RetrievalStore],
    question: str,
    budget: int | None,
    strategy: str | None,
    *,
    build: bool,
    attempts: int,
) -> list[Hit]:
    """The body of :meth:`gemrag.memory.Memory.retrieve`: at most ``budget`` hits for ``question`` (default: the
    strategy's ``default_budget`` if it has one, else ``config.memory.budget``) from ``strategy`` (default: the
    configured one), read from its last published generation (:func:`retrieve_published`, up to ``attempts`` reads
    when generations change under it) in the store's read scope, after :func:`~gemrag.memory.states.check_ready`
    (``build``: build a strategy never built, before the read scope), each hit with its provenance
    (:func:`gemrag.answers.provenance.with_provenance`). Traced as a ``gemrag.retrieve`` span.

    Raises:
        MemoryNotIndexedError: the strategy has not been built (and ``build`` is False).
        DamagedMemoryError: the published generation's files are missing or do not match its manifest.
        ValueError: empty question or budget < 1.
    """
    if not question.strip():
        raise ValueError("the question is empty")
    ctx = memory.ctx
    chosen = memory.get_strategy(strategy)
    if budget is None:
        budget = getattr(chosen, "default_budget", None) or ctx.config.memory.budget
    if budget < 1:
        raise ValueError("budget must be >= 1")
    if build:
        check_ready(memory, chosen, build=True)  # may index: before the read scope
    store = memory.store
    attributes = {"gemrag.strategy": chosen.name, "gemrag.memory": store.location, "gemrag.budget": budget}
    question_vector = (memory.embedder.model_id, [memory.embedder.key(question)])  # read with the state (PostgreSQL)
    with (
        tracing.span("gemrag.retrieve", attributes) as span,
        ctx.meter.phase("query"),
        store.retrieval(question_vector),
    ):
        check_ready(memory, chosen, build=False)
        hits = with_provenance(store, retrieve_published(ctx, chosen, question, budget, attempts))
        span.set_attributes({"gemrag.hits": len(hits), "gemrag.hits.summary": sum(h.kind != "chunk" for h in hits)})
        return hits
