"""The cost before the work: what an ``index`` will cost, computed before any LLM call of the build.

:func:`plan_index` (``Memory.plan_index``, ``gemrag index --plan``, the server's index jobs) prices the build of one
strategy: the chunks it will process (new and changed only), and per LLM pass its calls, prompt and completion
tokens and minutes on this machine. It writes nothing: documents not chunked yet are chunked in memory, and sources
not put yet (``gemrag index PATHS``) are put in preview (:func:`gemrag.memory.sources.preview_put`).

* **Calls and tokens** come from each strategy's ``plan`` (:mod:`gemrag.strategies.platform.planning`): its real
  prompts on the actual chunk texts, counted with the model's tokenizer (llama.cpp: the chat template applied;
  otherwise the chars-per-token ratio of the model's recorded calls, the backend's ``count_tokens``, or 4
  characters a token), looked up in the LLM cache (a cached answer costs no call). Calls are first attempts plus
  the repairs (an answer that fails validation is asked again, up to twice) at the rate recorded for the pass.
  Completion tokens are the mean the model wrote for the pass in this memory, else in the other memories of this
  machine (:mod:`gemrag.memory.answer_lengths`), else the pass's typical answer.
* **Minutes** come from the model's measured rates (:mod:`gemrag.models.rates`): the rates of its calls this memory
  recorded (the builds' own model-seconds, once there are enough of them; ``recalibrate`` skips them), else a short
  calibration of a model run here (cached per model and machine, measured again when the load average moved since,
  never kept when made on a busy machine), else unknown (None: never a guess presented as a measurement). They count the
  LLM's time only (embedding and graph work are not in them).

``gemrag index`` prints the plan first and, on a terminal, asks before a plan over :data:`CONFIRM_MINUTES`.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from pydantic import BaseModel, Field

from gemrag.config import Config
from gemrag.ingest import chunk_text, minilm_tokenizer, normalize_chunk
from gemrag.memory.answer_lengths import RECORDED, machine_key, machine_lengths, model_cache_dir, pass_means
from gemrag.memory.handle import MemoryHandle
from gemrag.memory.sources import PutPreview, Source, SourcesStore, preview_put
from gemrag.models.base import LLM, Message
from gemrag.models.batch import CompletionRequest
from gemrag.models.cache import INPUT_KEY
from gemrag.models.rates import UNKNOWN, Rates, cached_calibration, calibrate, describe, recorded_rates, runs_here
from gemrag.store import NodeRecord
from gemrag.store.parts import Caches
from gemrag.strategies.platform.common import document_order
from gemrag.strategies.platform.extraction import RETRIES
from gemrag.strategies.platform.planning import MIN_RECORDED, PlanWork, StrategyPlan, plan_of

__all__ = ["CONFIRM_MINUTES", "IndexPlan", "PassEstimate", "RatesOut", "StrategyEstimate", "plan_index"]

CONFIRM_MINUTES = 10.0
"""``gemrag index`` asks before a plan longer than this on a terminal (minutes)."""
MIN_RATIO = 20
"""Recorded answers (with their input) needed before their chars-per-token ratio counts prompt tokens."""


class PassEstimate(BaseModel):
    """One LLM pass of the plan (:class:`~gemrag.strategies.platform.planning.PassPlan` with its minutes)."""

    description: str
    items: int = Field(description="Items the pass asks about, cache hits included.")
    calls: int = Field(description="LLM calls (items the LLM cache does not answer; first attempts).")
    prompt_tokens: int
    completion_tokens: int = Field(description="Estimated: the pass's recorded mean, else its typical answer.")
    reused_prompt_tokens: int = Field(0, description="Prompt tokens a llama.cpp slot keeps from its previous call.")
    minutes: float | None = Field(None, description="LLM minutes on this machine; None: rates unknown.")
    exact: bool = Field(True, description="False: the items depend on earlier answers (an estimate).")
    note: str = ""


class StrategyEstimate(BaseModel):
    """The plan of one strategy's build."""

    strategy: str
    chunks: int = Field(description="Chunks its build processes: new and changed (not covered by its last build).")
    calls: int
    prompt_tokens: int
    completion_tokens: int
    minutes: float | None = Field(None, description="LLM minutes; None: rates unknown, or the strategy cannot plan.")
    exact: bool = Field(description="True when every pass's calls are exact (up to repairs of invalid answers).")
    known: bool = Field(True, description="False: the strategy has no plan method (its LLM cost is unknown).")
    passes: list[PassEstimate] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


class RatesOut(BaseModel):
    """The rates the minutes come from (:class:`gemrag.models.rates.Rates`)."""

    source: str = Field(description="calibration, recorded or unknown")
    prompt_per_second: float | None = None
    completion_per_second: float | None = None
    concurrency: int = 1
    reuses_prefix: bool = False
    detail: str = ""


class IndexPlan(BaseModel):
    """What an ``index`` will cost, before any LLM call (module docstring). JSON-serializable
    (``plan.model_dump(mode="json")``).

    Attributes:
        memory: the memory's location. model: the LLM's id (None when no call is planned and none was loaded).
        documents, chunks: the memory's documents and chunks when the build starts.
        sources: the outcomes of the sources put first (``{"added": 2, "unchanged": 1}``; empty without sources).
        strategies: the plan of the strategy built (one). rates: where the minutes come from.
        calls, prompt_tokens, completion_tokens, minutes (None: unknown), exact: over the strategies.
    """

    memory: str
    model: str | None = None
    documents: int
    chunks: int
    sources: dict[str, int] = Field(default_factory=dict)
    strategies: list[StrategyEstimate]
    rates: RatesOut
    calls: int
    prompt_tokens: int
    completion_tokens: int
    minutes: float | None
    exact: bool

    def needs_confirmation(self, limit: float = CONFIRM_MINUTES) -> bool:
        """Whether the build is planned to take longer than ``limit`` minutes (unknown minutes: False)."""
        return self.minutes is not None and self.minutes > limit

    def summary(self) -> dict[str, Any]:
        """The totals alone: calls, prompt and completion tokens, minutes, exact, and the rates' source."""
        keys = ("calls", "prompt_tokens", "completion_tokens", "minutes", "exact")
        return {k: getattr(self, k) for k in keys} | {"rates": self.rates.source}


class PlanStore(SourcesStore, Caches, Protocol):
    """What a cost plan reads of a store: what a put would change (:class:`~gemrag.memory.sources.SourcesStore`), the
    chunks and the LLM cache's recorded answers."""


class Memory(MemoryHandle[PlanStore], Protocol):
    """What a plan needs of a memory (:class:`gemrag.memory.Memory` is one)."""

    config: Config

    def llm(self) -> LLM: ...


class _MemoryModel:
    """The :class:`~gemrag.strategies.platform.planning.PlanModel` of a memory: its LLM's cache keys and tokenizer,
    its cache and its recorded answers (read once, lazily)."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self._llm: Any = None
        self._recorded: list[dict[str, Any]] | None = None
        self._means: dict[str, tuple[int, float]] | None = None
        self._machine: dict[str, tuple[int, float]] | None = None
        self._count: Any = None

    @property
    def llm(self) -> Any:
        if self._llm is None:
            self._llm = self.memory.llm()  # the cached LLM: no weights are loaded by it
        return self._llm

    def responses(self) -> list[dict[str, Any]]:
        if self._recorded is None:
            self._recorded = self.memory.store.recent_llm_responses(self.llm.model_id, RECORDED)
        return self._recorded

    def cached(self, requests: Sequence[CompletionRequest]) -> list[dict[str, Any] | None]:
        keys = [
            self.llm.key(r.messages, schema=r.schema, max_tokens=r.max_tokens, temperature=r.temperature, seed=r.seed)
            for r in requests
        ]
        found = self.memory.store.cached_llm(keys)
        return [found.get(k) for k in keys]

    def _source(self, key: str) -> tuple[dict[str, tuple[int, float]], str]:
        """Where pass ``key``'s answers are read: the memory's own when it has :data:`MIN_RECORDED` of them, else
        this model's in the memories of this machine (:mod:`gemrag.memory.answer_lengths`, keyed by a hash); with
        the key to read there."""
        if self._means is None:
            self._means = pass_means(self.responses())
        if self._means.get(key, (0, 0.0))[0] >= MIN_RECORDED:
            return self._means, key
        if self._machine is None:
            self._machine = machine_lengths(model_cache_dir(self.memory.config), self.llm.model_id)
        return self._machine, machine_key(key)

    def recorded_completion(self, key: str) -> tuple[int, float]:
        """``(answers, mean completion tokens)`` of pass ``key`` (:meth:`_source`: the memory's, else the
        machine's)."""
        table, k = self._source(key)
        return table.get(k, (0, 0.0))

    def recorded_repairs(self, key: str) -> float:
        """Repair calls per first attempt of pass ``key``: its repair conversations (the same first message, two
        and four messages longer) over its first attempts, read where :meth:`recorded_completion` reads."""
        table, first_key = self._source(key)
        n = table.get(first_key, (0, 0.0))[0]
        if n == 0:
            return 0.0
        count, first = key.split("|", 1)
        repairs = [f"{int(count) + 2 * k}|{first}" for k in range(1, RETRIES + 1)]
        if table is not self._means:
            repairs = [machine_key(r) for r in repairs]
        return sum(table.get(r, (0, 0.0))[0] for r in repairs) / n

    def prompt_tokens(self, messages: Sequence[Message]) -> int:
        if self._count is None:
            self._count = self._counter()
        return int(self._count(messages))

    def _counter(self) -> Any:
        """The most faithful token count available (module docstring)."""
        backend = getattr(self.llm, "inner", self.llm)
        exact = getattr(backend, "count_prompt_tokens", None)
        if callable(exact):
            return exact
        with_input = [r for r in self.responses() if r.get(INPUT_KEY) and r.get("prompt_tokens")]
        if len(with_input) >= MIN_RATIO:
            chars = sum(_chars(r[INPUT_KEY]) for r in with_input)
            ratio = sum(int(r["prompt_tokens"]) for r in with_input) / max(chars, 1)
            return lambda messages: round(_chars(messages) * ratio)
        count = getattr(backend, "count_tokens", None)
        if callable(count):
            return lambda messages: sum(int(count(str(m["content"]))) + 4 for m in messages)
        return lambda messages: _chars(messages) // 4 + 4 * len(messages)


def _chars(messages: Sequence[Any]) -> int:
    return sum(len(str(m.get("content") or "")) for m in messages)


def _chunked(text: str, doc_id: int, chunk_tokens: int, ids: list[int]) -> list[NodeRecord]:
    """``text`` cut as :func:`gemrag.memory.documents.chunk_pending` would, as chunks not stored yet (ids from
    ``ids``)."""
    out = []
    for ord_, c in enumerate(chunk_text(text, minilm_tokenizer(), chunk_tokens)):
        ids[0] -= 1
        out.append(NodeRecord(ids[0], "chunk", doc_id, ord_, normalize_chunk(c.text), c.n_tokens, 0, {}))
    return out


def _work(memory: Memory, preview: PutPreview | None, model: _MemoryModel) -> tuple[PlanWork, int]:
    """The chunks the build would see and the number of documents: the stored chunks less those the put deletes,
    each document the put changes cut as it would be, and the documents not chunked yet cut in memory (chunks not
    stored yet get negative ids, new documents negative ids after the stored ones)."""
    store = memory.store
    chunk_tokens = int(store.get_meta("chunk_tokens") or memory.config.memory.chunk_tokens)
    gone = frozenset(preview.gone) if preview else frozenset()
    groups: dict[int, list[NodeRecord]] = defaultdict(list)
    for c in sorted(store.nodes("chunk"), key=document_order):
        if c.id not in gone and c.doc_id is not None:
            groups[c.doc_id].append(c)
    stored_documents = store.documents()
    titles = {int(d["id"]): str(d["title"] or "") for d in stored_documents}
    ids = [0]  # the last id given to a chunk not stored yet (counting down)
    pending = dict(store.unchunked_documents())
    new_doc = 0
    for doc in preview.documents if preview else []:
        if doc.doc_id is None:
            new_doc -= 1
            doc_id = new_doc
        else:
            doc_id = doc.doc_id
            pending.pop(doc_id, None)
        titles[doc_id] = doc.title
        if doc.chunks is None:
            groups[doc_id] = _chunked(doc.text, doc_id, chunk_tokens, ids)
            continue
        kept = store.nodes_by_id([i for i, _, _ in doc.chunks if i is not None])
        placed = []
        for ord_, (i, text, n) in enumerate(doc.chunks):
            if i is not None and i in kept:
                placed.append(dataclasses.replace(kept[i], ord=ord_))
            else:
                ids[0] -= 1
                placed.append(NodeRecord(ids[0], "chunk", doc_id, ord_, text, n, 0, {}))
        groups[doc_id] = placed
    for doc_id, text in pending.items():
        groups[doc_id] = _chunked(text, doc_id, chunk_tokens, ids)
    order = sorted(d for d in groups if d > 0) + sorted((d for d in groups if d < 0), reverse=True)
    chunks = [c for d in order for c in groups[d]]
    virtual = frozenset(c.id for c in chunks if c.id < 0)
    documents = len(stored_documents) - (len(preview.removed) if preview else 0) - new_doc
    return PlanWork(chunks, titles, virtual, gone, model), documents


def _rates(
    memory: Memory, model: _MemoryModel, calibrating: bool, refresh: bool, announce: Callable[[str], None] | None
) -> Rates:
    """The rates of the memory's LLM (module docstring): the model's calls this memory recorded (its builds' own
    model-seconds) first, unless ``refresh``; else a calibration (cached, or measured when ``calibrating``)."""
    backend = getattr(model.llm, "inner", model.llm)
    here = runs_here(backend)
    if not refresh:
        concurrency = 1 if here else int(getattr(backend, "concurrency", 1) or 1)
        found = recorded_rates(model.responses(), concurrency=concurrency, model=model.llm.model_id)
        if found is not None:
            return found
    if here:
        cache_dir = model_cache_dir(memory.config)
        if calibrating or refresh:
            return calibrate(backend, cache_dir, refresh=refresh, announce=announce)
        return cached_calibration(backend, cache_dir) or UNKNOWN
    return UNKNOWN


def _estimate(plan: StrategyPlan, rates: Rates) -> StrategyEstimate:
    passes = []
    for p in plan.passes:
        seconds = rates.seconds(p.prompt_tokens, p.completion_tokens, p.reused_prompt_tokens) if p.calls else 0.0
        passes.append(PassEstimate(**vars(p), minutes=None if seconds is None else seconds / 60))
    unknown = not plan.known or any(p.minutes is None for p in passes)
    return StrategyEstimate(
        strategy=plan.strategy,
        chunks=plan.chunks,
        calls=plan.calls,
        prompt_tokens=plan.prompt_tokens,
        completion_tokens=plan.completion_tokens,
        minutes=None if unknown else sum(p.minutes or 0.0 for p in passes),
        exact=plan.exact,
        known=plan.known,
        passes=passes,
        notes=list(plan.notes),
    )


def plan_index(
    memory: Memory,
    strategy: str | None = None,
    *,
    sources: Sequence[Source] = (),
    sync: Sequence[str] = (),
    calibrate: bool = True,
    recalibrate: bool = False,
    announce: Callable[[str], None] | None = None,
) -> IndexPlan:
    """The plan of ``memory.index(strategy)`` after putting ``sources`` (module docstring); writes nothing to the
    memory (a calibration writes its file under the model cache directory).

    Args:
        memory: the memory.
        strategy: the strategy to build (default: the configured one).
        sources: sources that would be put first (``gemrag index PATHS``), with ``sync`` directories.
        calibrate: calibrate a model run here when no calibration of it is cached (seconds; the model is loaded);
            False: cached calibration, else recorded rates, else unknown minutes.
        recalibrate: measure the model again even when a calibration is cached.
        announce: called with the model's id before a calibration measures it (a CLI prints a line).

    Raises:
        UnknownStrategyError: no such strategy. ConfigError: its section is invalid.
        GemragError: the model could not be loaded (for its tokenizer or a calibration).
    """
    chosen = memory.get_strategy(strategy)
    preview = preview_put(memory, sources, sync=sync) if sources or sync else None
    model = _MemoryModel(memory)
    work, documents = _work(memory, preview, model)
    plan = plan_of(memory.ctx, chosen, work)
    if plan.calls or recalibrate:
        rates = _rates(memory, model, calibrate, recalibrate, announce)
    else:
        rates = Rates("unknown", detail="no LLM call planned")
    estimate = _estimate(plan, rates)
    return IndexPlan(
        memory=memory.store.location,
        model=model.llm.model_id if model._llm is not None else None,
        documents=documents,
        chunks=len(work.chunks),
        sources=dict(preview.statuses) if preview else {},
        strategies=[estimate],
        rates=RatesOut(**describe(rates)),
        calls=estimate.calls,
        prompt_tokens=estimate.prompt_tokens,
        completion_tokens=estimate.completion_tokens,
        minutes=estimate.minutes,
        exact=estimate.exact,
    )
