"""One extraction pipeline for every LLM pass of every strategy.

A build asks the LLM one thing about each of many items — utility questions per chunk (GEM-RAG section III.B.1),
a summary per eigentheme (GEM-RAG III.B.1) or per cluster (RAPTOR section 3), entities, triples or events per
chunk (the strategies that follow). :func:`run_extraction` does it once for all of them:

* for each item, the prompt ``Extraction.prompt(item)`` is sent with the schema and ``max_tokens`` of the pass,
  and the answer validated (pydantic, with repair retries: :func:`gemrag.models.structured.complete_structured_iter`)
  or, for free text, whitespace-normalized (:func:`gemrag.models.structured.validate_text`);
* items go in batches of ``batch_size`` (default :data:`BATCH_SIZE`) through the batch capability of the models
  (:func:`gemrag.models.batch.complete_iter`), so a backend that decodes several sequences at once or keeps
  several HTTP requests in flight serves every pass, and a crash loses at most one batch in flight;
* every answer is in the LLM cache before it is used (:meth:`gemrag.models.cache.CachedLLM.complete_iter`), and
  each item is committed by ``save(item, value)`` as its result arrives (or, with ``in_order=True``, as soon as
  the items before it in its batch are committed, so nodes it creates get ids in item order): killing a build and
  running it again repeats no LLM call;
* an item whose answer stays invalid, or whose request failed, is passed to ``fail(item, error)``, which records
  it (one ``failures`` row per item: never silently dropped); a fatal error (:func:`gemrag.errors.is_fatal`, e.g.
  :class:`~gemrag.errors.ModelCrashError`) stops the pass and the build;
* the progress bar counts items and the completion tokens the LLM generated for them (items/s and tokens/s).

:func:`extract_artifacts` is the pipeline over the store's typed per-node artefacts
(:mod:`gemrag.store.artifacts`): it skips nodes that already have an artefact of the prompt version, saves with
``put_artifact``, records failures per node, and retries a failed node on at most ``retries`` later builds with
new attempt numbers (new temperatures, seeds, hence cache keys), as GEM's utility questions do.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from gemrag import tracing
from gemrag.errors import GemragError
from gemrag.models.base import LLM, Completion, Message
from gemrag.models.batch import CompletionRequest
from gemrag.models.structured import attempt_parameters, complete_validated_iter, validate_json, validate_text
from gemrag.store import NodeRecord
from gemrag.strategies.base import StrategyContext, token_advance
from gemrag.strategies.platform.titles import indexed_nodes

I = TypeVar("I")  # noqa: E741 - an item
R = TypeVar("R")
T = TypeVar("T")

BATCH_SIZE = 16
"""Items in flight at once: enough for a backend's parallel slots or HTTP concurrency, few enough that a crash
loses little and the progress bar moves."""

RETRIES = 2
"""Later builds that retry a node whose artefact failed (:func:`extract_artifacts`), as GEM's utility questions."""


@dataclass(frozen=True)
class Extraction(Generic[I]):
    """What one LLM pass asks of each item.

    Attributes:
        description: the progress bar's label (e.g. ``"utility questions"``).
        prompt: item -> the messages sent for it.
        output_type: the pydantic model an answer must validate against; None: free text (the result is the
            whitespace-normalized text, and an empty text is invalid).
        schema: the JSON schema sent for constrained decoding (default: ``output_type``'s; None for free text).
        max_tokens: completion limit per attempt (tokens).
        attempts: attempts per item per pass (the first greedy, then repair retries; >= 1).
        first_attempt: item -> the number of its first attempt (default 0 for all): a retry of an item that
            failed in an earlier build passes the attempts already spent, so its requests (cache keys) are new.
    """

    description: str
    prompt: Callable[[I], Sequence[Message]]
    output_type: type[BaseModel] | None = None
    schema: dict[str, Any] | None = None
    max_tokens: int = 256
    attempts: int = 3
    first_attempt: Callable[[I], int] | None = None

    def over(self, text_of: Callable[[T], I], first_attempt: Callable[[T], int] | None = None) -> Extraction[T]:
        """This pass over other items: an item ``t`` is asked as ``text_of(t)`` is (e.g. a pass over texts run over
        nodes); its first attempt is ``first_attempt(t)`` (None: this pass's for ``text_of(t)``)."""
        own = self.first_attempt
        if first_attempt is None and own is not None:
            first_attempt = lambda item: own(text_of(item))  # noqa: E731
        return Extraction(
            description=self.description,
            prompt=lambda item: self.prompt(text_of(item)),
            output_type=self.output_type,
            schema=self.schema,
            max_tokens=self.max_tokens,
            attempts=self.attempts,
            first_attempt=first_attempt,
        )

    def first_request(self, item: I, attempt: int = 0) -> CompletionRequest:
        """The request :meth:`results` sends first for ``item`` when its first attempt is number ``attempt`` (its
        messages, schema, ``max_tokens`` and that attempt's temperature and seed: the same LLM cache key), so a cost
        plan (:mod:`gemrag.strategies.platform.planning`) can count its tokens and look it up in the cache."""
        schema = self.schema if self.output_type is None else self.schema or self.output_type.model_json_schema()
        temperature, seed = attempt_parameters(attempt)
        return CompletionRequest(self.prompt(item), schema, self.max_tokens, temperature, seed)

    def results(
        self, llm: LLM, items: Sequence[I], observe: Callable[[int, Completion], None] | None = None
    ) -> Generator[tuple[int, Any], None, None]:
        """Ask for every item at once: ``(index into items, validated value or GemragError)`` in completion order
        (:func:`~gemrag.models.structured.complete_validated_iter`).

        Raises:
            GemragError: a fatal one (the build must stop).
        """
        prompts = [self.prompt(item) for item in items]
        first = [self.first_attempt(item) for item in items] if self.first_attempt is not None else 0
        if self.output_type is None:
            validate: Callable[[Completion], Any] = validate_text
            schema = self.schema
        else:  # as complete_structured_iter
            validate, schema = validate_json(self.output_type), self.schema or self.output_type.model_json_schema()
        return complete_validated_iter(
            llm,
            prompts,
            validate,
            schema=schema,
            max_tokens=self.max_tokens,
            attempts=self.attempts,
            first_attempt=first,
            observe=observe,
        )


@dataclass
class ExtractionReport:
    """What a pass did.

    Attributes:
        items: items asked about. saved: items whose result was saved. failed: items recorded as failed.
        completion_tokens: tokens the LLM generated for them (calls actually made; cache hits cost none).
    """

    items: int = 0
    saved: int = 0
    failed: int = 0
    completion_tokens: int = 0


def _in_order(results: Iterable[tuple[int, R]]) -> Iterator[tuple[int, R]]:
    """The pairs of one batch (indices 0..n-1, each once, any order) re-ordered by index, each released as soon
    as all lower indices have been."""
    waiting: dict[int, R] = {}
    following = 0
    for index, result in results:
        waiting[index] = result
        while following in waiting:
            yield following, waiting.pop(following)
            following += 1


def run_extraction(
    ctx: StrategyContext,
    items: Sequence[I],
    extraction: Extraction[I],
    *,
    save: Callable[[I, Any], None],
    fail: Callable[[I, GemragError], None],
    batch_size: int = BATCH_SIZE,
    in_order: bool = False,
) -> ExtractionReport:
    """Run one LLM pass over ``items`` (module docstring): ask, validate, save or record the failure of each.
    Traced (:mod:`gemrag.tracing`) as one ``gemrag.pass <description>`` span over the pass's LLM batches.

    Args:
        ctx: the strategy context (its LLM, loaded only when there are items, and its progress factory).
        items: what to ask about (usually chunk nodes), in order.
        extraction: the prompt, output type, schema and limits of the pass.
        save: ``save(item, value)`` commits one result (a validated ``output_type`` instance, or a ``str`` for
            free text); called once per successful item, as soon as its result is known.
        fail: ``fail(item, error)`` records one failed item (a :class:`~gemrag.errors.StructuredOutputError`
            after the last invalid attempt, or the backend's non-fatal error for that request).
        batch_size: items in flight at once (>= 1).
        in_order: commit the results of a batch in item order (buffering early ones), e.g. when ``save`` creates
            nodes whose ids should follow the items; default: in completion order.

    Returns:
        The counts of the pass; ``saved + failed == items`` unless an exception stopped it.

    Raises:
        GemragError: a fatal one (:func:`~gemrag.errors.is_fatal`): the items committed before it stay committed.
        ValueError: ``batch_size < 1``.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    report = ExtractionReport(items=len(items))
    if not items:
        return report
    llm = ctx.get_llm()
    made = [0]  # completion tokens generated since the last advance

    def observe(index: int, completion: Completion) -> None:
        if not completion.cached:
            made[0] += completion.usage.completion_tokens

    attributes = {"gemrag.pass": extraction.description, "gemrag.items": len(items)}
    with (
        tracing.span(f"gemrag.pass {extraction.description}", attributes) as span,
        ctx.progress(extraction.description, len(items)) as bar,
    ):
        advance = token_advance(bar)
        for start in range(0, len(items), batch_size):
            part = items[start : start + batch_size]
            with closing(extraction.results(llm, part, observe)) as results:  # a stop abandons the batch at once
                for index, result in _in_order(results) if in_order else results:
                    if isinstance(result, GemragError):
                        fail(part[index], result)
                        report.failed += 1
                    else:
                        save(part[index], result)
                        report.saved += 1
                    report.completion_tokens += made[0]
                    advance(1, made[0])
                    made[0] = 0
        span.set_attributes({"gemrag.saved": report.saved, "gemrag.failed": report.failed})
        span.set_attribute("gemrag.completion_tokens.generated", report.completion_tokens)
    return report


def failed_tries(ctx: StrategyContext, phase: str) -> Counter[int]:
    """Failed tries per node id: the ``failures`` rows of ``phase`` that name a node."""
    return Counter(int(f["node_id"]) for f in ctx.store.failures() if f["phase"] == phase and f["node_id"] is not None)


def extract_artifacts(
    ctx: StrategyContext,
    nodes: Sequence[NodeRecord],
    extraction: Extraction[NodeRecord],
    *,
    strategy: str,
    kind: str,
    version: str,
    titles: bool,
    phase: str | None = None,
    retries: int = RETRIES,
    batch_size: int = BATCH_SIZE,
) -> ExtractionReport:
    """Compute the artefact ``(strategy, kind)`` of prompt version ``version`` for the nodes that lack one.

    Nodes with an artefact of this version are skipped (:meth:`~gemrag.store.Store.missing_artifacts`), so an
    interrupted build resumes and a new version recomputes all. Each result is stored with
    :meth:`~gemrag.store.Store.put_artifact` as it arrives; each failure is one ``failures`` row of ``phase`` for
    the node. A node with ``t`` recorded failures is retried while ``t <= retries``, its attempts numbered from
    ``t x extraction.attempts`` (new temperatures and seeds, so cached invalid answers are not replayed).

    Args:
        ctx: the strategy context.
        nodes: the nodes to cover (usually the chunks), in order; the prompt sees each chunk's indexed text
            (:func:`~gemrag.strategies.platform.titles.indexed_nodes`: with ``titles``, its document's title, then its
            text; else its text).
        extraction: the pass; ``output_type`` must be set (artefacts are pydantic values) and its
            ``first_attempt`` is replaced as above.
        strategy: the owning strategy's name. kind: the artefact kind (e.g. ``"triples"``).
        version: the prompt version stamped on each artefact (one version per input: see
            :func:`~gemrag.strategies.platform.titles.title_version`).
        titles: whether the owning strategy reads titles
            (:func:`~gemrag.strategies.platform.titles.strategy_reads_titles`).
        phase: the ``failures`` phase (default ``"index/<strategy>/<kind>@<version>"``: a new version starts
            with fresh tries).
        retries: later builds that retry a failed node (0: never).
        batch_size: items in flight (:func:`run_extraction`).

    Returns:
        The counts of the pass (``items``: the nodes asked about this time).

    Raises:
        ValueError: ``extraction.output_type`` is None, or a bad strategy or kind name.
        GemragError: a fatal one (the build stops; stored artefacts stay).
    """
    if extraction.output_type is None:
        raise ValueError("artefacts are pydantic values: the extraction needs an output_type")
    phase = phase or f"index/{strategy}/{kind}@{version}"
    missing = set(ctx.store.missing_artifacts(strategy, kind, version, [n.id for n in nodes]))
    tries = failed_tries(ctx, phase) if missing else Counter()
    todo = indexed_nodes(ctx, [n for n in nodes if n.id in missing and tries[n.id] <= retries], titles=titles)
    numbered = dataclasses.replace(extraction, first_attempt=lambda n: tries[n.id] * extraction.attempts)
    return run_extraction(
        ctx,
        todo,
        numbered,
        save=lambda n, value: ctx.store.put_artifact(strategy, kind, n.id, value, version),
        fail=lambda n, exc: ctx.store.record_failure(phase, n.id, str(exc)),
        batch_size=batch_size,
    )


def summarize_each(
    ctx: StrategyContext,
    items: Sequence[I],
    description: str,
    prompt: Callable[[I], Sequence[Message]],
    *,
    max_tokens: int,
    save: Callable[[I, str], None],
    phase: str,
    label: Callable[[I], str],
) -> ExtractionReport:
    """A free-text pass: one summary per item (GEM-RAG section III.B.1 eigentheme summaries; RAPTOR section 3
    cluster summaries), one greedy attempt each (the request, hence the cache key, of a plain
    ``llm.complete(prompt, max_tokens=max_tokens, temperature=0)``), committed in item order so the summary nodes
    ``save`` creates get ids in item order whatever order the backend answers in.

    Args:
        ctx: the strategy context. items: what to summarize (themes, clusters), in order.
        description: the progress label. prompt: item -> messages.
        max_tokens: the summary's limit (tokens).
        save: ``save(item, text)`` with the whitespace-normalized summary.
        phase: the ``failures`` phase of an item without a summary (its row names no node: the summary node does
            not exist). label: item -> the text before the error in that row (e.g. ``"eigentheme 2"``).

    Raises:
        GemragError: a fatal one.
    """
    return run_extraction(
        ctx,
        items,
        Extraction(description, prompt, max_tokens=max_tokens, attempts=1),
        save=save,
        fail=lambda item, exc: ctx.store.record_failure(phase, None, f"{label(item)}: {exc}"),
        in_order=True,
    )
