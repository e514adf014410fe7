"""Cost plans: what a build will cost before it runs ("the cost before the work").

A strategy may have a method ``plan(ctx, work) -> StrategyPlan``: for each LLM pass its build would run now, the
calls it would make (the items the LLM cache does not answer), their prompt tokens and their completion tokens. The
prompts are the pass's real ones (:meth:`gemrag.strategies.platform.extraction.Extraction.first_request`) applied to
the actual chunk texts, counted with the model's tokenizer where the memory has one (:class:`PlanModel`), and looked
up in the LLM cache by their keys; completion tokens are the mean the memory recorded for that pass's prompt
(:func:`signature`) when it has some, else the pass's typical completion (a named constant beside each method's
plan, from the runs in docs/results.md). :func:`estimate_pass` does this for one pass.

Calls are first attempts, plus the repairs the model needed for the pass before: a structured answer that fails
validation is asked again with its error (up to :data:`~gemrag.strategies.platform.extraction.RETRIES` more calls),
which no plan can foresee item by item; where the memory (or this machine) recorded the pass's answers, the plan adds
its recorded rate of repair calls per first attempt (the 0.5B needed 4 repairs for 18 LoCoMo gist windows). A pass whose
items depend on earlier answers (GEM's eigentheme summaries, RAPTOR's clusters, UnWeaver's shortenings, a REMem triple
prompt whose entities are not extracted yet) is estimated and marked ``exact=False``; a plan with such a pass is an
upper bound or an estimate, and says so. A strategy without ``plan`` gets :func:`unknown_plan` (its cost unknown),
one without LLM passes :func:`no_llm_plan`.

The minutes are not here: :mod:`gemrag.memory.index_plan` turns tokens into time with the model's measured rates.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from gemrag.models.base import Message
from gemrag.models.batch import CompletionRequest
from gemrag.store import NodeRecord
from gemrag.strategies.base import StrategyContext
from gemrag.strategies.platform.extraction import RETRIES, Extraction, failed_tries
from gemrag.strategies.platform.titles import UNTITLED

__all__ = [
    "PassPlan",
    "PlanModel",
    "PlanWork",
    "StrategyPlan",
    "artifact_pass",
    "artifact_todo",
    "estimate_pass",
    "no_llm_plan",
    "plan_of",
    "signature",
    "unknown_plan",
]

MIN_RECORDED = 3
"""Recorded answers of a pass needed before their mean completion replaces the pass's typical completion."""
REPAIR_MESSAGE_TOKENS = 60
"""Prompt tokens a repair adds besides the rejected answer: the message naming the validation error (a typical
length; the error's text varies)."""


@dataclass
class PassPlan:
    """One LLM pass of a planned build.

    Attributes:
        description: the pass (its progress bar's label, e.g. ``"utility questions"``).
        items: items the pass asks about (cache hits included).
        calls: LLM calls it makes: the items the LLM cache does not answer (first attempts), plus the repairs expected
            at the rate recorded for the pass (see the module).
        prompt_tokens: prompt tokens of those calls (tokens of the model's tokenizer, chat template included).
        completion_tokens: their completion tokens (an estimate: recorded mean, else typical; see the module).
        reused_prompt_tokens: of ``prompt_tokens``, those a llama.cpp slot keeps from its previous call (the prefix
            consecutive prompts share), which cost no prompt processing.
        exact: False when the items or their prompts depend on earlier answers (an estimate or an upper bound).
        note: how the estimate was made, when it is not exact.
    """

    description: str
    items: int
    calls: int
    prompt_tokens: int
    completion_tokens: int
    reused_prompt_tokens: int = 0
    exact: bool = True
    note: str = ""


@dataclass
class StrategyPlan:
    """The planned cost of building one strategy now.

    Attributes:
        strategy: its name.
        chunks: chunks its build will process (new and changed: not covered by its published build).
        passes: its LLM passes, in build order (empty: no LLM call).
        known: False when the strategy cannot plan (no ``plan`` method): its LLM cost is unknown.
        notes: what the numbers leave out or assume, one sentence each.
    """

    strategy: str
    chunks: int
    passes: list[PassPlan] = field(default_factory=list)
    known: bool = True
    notes: list[str] = field(default_factory=list)

    @property
    def calls(self) -> int:
        """LLM calls of every pass."""
        return sum(p.calls for p in self.passes)

    @property
    def prompt_tokens(self) -> int:
        """Prompt tokens of every pass."""
        return sum(p.prompt_tokens for p in self.passes)

    @property
    def completion_tokens(self) -> int:
        """Completion tokens of every pass (estimated)."""
        return sum(p.completion_tokens for p in self.passes)

    @property
    def exact(self) -> bool:
        """True when every pass is exact (the calls are then exact, up to repairs of invalid answers)."""
        return self.known and all(p.exact for p in self.passes)


class PlanModel(Protocol):
    """What a plan asks of the memory's LLM and its caches (:mod:`gemrag.memory.index_plan` provides it)."""

    def prompt_tokens(self, messages: Sequence[Message]) -> int:
        """Tokens of ``messages`` as the model reads them (chat template included)."""
        ...

    def cached(self, requests: Sequence[CompletionRequest]) -> list[dict[str, Any] | None]:
        """The LLM cache's answer to each request (its stored response: ``text``, ``parsed``, tokens), or None."""
        ...

    def recorded_completion(self, key: str) -> tuple[int, float]:
        """``(answers, mean completion tokens)`` the memory recorded for prompts of :func:`signature` ``key``."""
        ...

    def recorded_repairs(self, key: str) -> float:
        """Repair calls per first attempt recorded for the pass of :func:`signature` ``key`` (from the same answers
        as :meth:`recorded_completion`; 0.0 when none were recorded)."""
        ...


@dataclass
class PlanWork:
    """The chunks a build would see, as the strategies' ``plan`` methods read them.

    Attributes:
        chunks: every chunk the memory will hold when the build starts, in document order; chunks not stored yet
            (documents not chunked yet, or sources not put yet) have negative ids and documents.
        titles: document id -> title, for every document of ``chunks``.
        virtual: the ids of the chunks not stored yet.
        gone: stored chunk ids that leave before the build (an updated or removed source's), absent from ``chunks``.
        model: the LLM, its tokenizer and caches.
    """

    chunks: list[NodeRecord]
    titles: dict[int, str]
    virtual: frozenset[int]
    gone: frozenset[int]
    model: PlanModel

    def stored(self) -> list[NodeRecord]:
        """The chunks already in the store (which may have artefacts, questions or failures)."""
        return [c for c in self.chunks if c.id not in self.virtual]

    def new_chunks(self, ctx: StrategyContext, strategy: str) -> list[NodeRecord]:
        """The chunks ``strategy``'s published build does not cover (all of them when never built), in order."""
        covered = ctx.store.covered_chunks(strategy)
        return list(self.chunks) if covered is None else [c for c in self.chunks if c.id not in covered]

    def changed(self, ctx: StrategyContext, strategy: str) -> bool:
        """Whether the chunks ``strategy``'s published build covers differ from :attr:`chunks` (never built: True)."""
        covered = ctx.store.covered_chunks(strategy)
        if covered is None:
            return True
        ids = {c.id for c in self.chunks}
        return bool(self.new_chunks(ctx, strategy)) or any(i not in ids for i in covered)

    def text_of(self, node: NodeRecord, titles: bool) -> str:
        """``node``'s indexed text (:func:`~gemrag.strategies.platform.titles.indexed_text_of`): with ``titles``, its
        document's title, a newline and its text (an untitled document: its text)."""
        title = self.titles.get(node.doc_id, "") if titles and node.doc_id is not None else ""
        return node.text if title in UNTITLED else f"{title}\n{node.text}"


def signature(messages: Sequence[Message]) -> str:
    """What identifies a pass's prompts among the memory's cached answers: the first message's first 200 characters
    (every pass opens with its own system message) and the number of messages (a repair conversation is longer)."""
    first = str(messages[0]["content"])[:200] if messages else ""
    return f"{len(messages)}|{first}"


def _identity(request: CompletionRequest) -> str:
    """What makes two requests the same call (their LLM cache key's inputs)."""
    return json.dumps(
        [list(request.messages), request.schema, request.max_tokens, request.temperature, request.seed],
        sort_keys=True,
        default=str,
    )


def _rendered(messages: Sequence[Message]) -> str:
    return "\x00".join(f"{m['role']}\x01{m['content']}" for m in messages)


def _shared(a: str, b: str) -> int:
    """Length of the common prefix of ``a`` and ``b`` (characters; binary search over slice comparisons)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def estimate_pass(
    work: PlanWork,
    description: str,
    requests: Sequence[CompletionRequest],
    *,
    typical_completion: float,
    exact: bool = True,
    note: str = "",
    uncached: int | None = None,
    distinct: bool = False,
) -> tuple[PassPlan, list[dict[str, Any] | None]]:
    """Plan one pass of ``requests`` (one per item, as the build would send them first).

    Args:
        work: the chunks and the model.
        description: the pass's label.
        requests: the items' first requests.
        typical_completion: completion tokens of one answer when the memory recorded none for this pass (the
            pass's ``max_tokens`` caps it).
        exact: whether the requests are the ones the build will send (False: stand-ins, e.g. with entities not
            extracted yet); stand-ins are not looked up in the cache.
        note: how stand-ins were made.
        uncached: with stand-ins, how many of them to count as calls (default: all).
        distinct: count identical stand-ins once, as identical real requests always are (stand-ins made from
            the items' own texts); default: each stand-in is a call (stand-ins of items not known yet).

    Returns:
        ``(plan, answers)``: the pass's plan and, per request, the cache's stored answer (None: a call; always None
        for stand-ins), so a later pass can build its prompts from this one's cached answers.
    """
    none: list[dict[str, Any] | None] = [None] * len(requests)
    answers = work.model.cached(requests) if exact and requests else none
    todo = [r for r, a in zip(requests, answers, strict=True) if a is None]
    if exact or distinct:  # identical requests of one pass are sent once (the LLM cache answers the others)
        seen: set[str] = set()
        unique = []
        for r in todo:
            if _identity(r) not in seen:
                seen.add(_identity(r))
                unique.append(r)
        todo = unique
    if not exact and uncached is not None:
        todo = todo[:uncached]
    key = signature(todo[0].messages) if todo else ""
    recorded_n, recorded_mean = work.model.recorded_completion(key) if todo else (0, 0.0)
    each = recorded_mean if recorded_n >= MIN_RECORDED else typical_completion
    rate = work.model.recorded_repairs(key) if recorded_n >= MIN_RECORDED else 0.0
    prompt = completion = reused = 0
    previous = ""
    for r in todo:
        tokens = work.model.prompt_tokens(r.messages)
        text = _rendered(r.messages)
        if previous:
            reused += int(tokens * _shared(previous, text) / max(len(text), 1))
        previous = text
        prompt += tokens
        completion += round(min(each, r.max_tokens))
    repairs = round(len(todo) * rate)
    if repairs:  # each repair re-reads the first prompt with the rejected answer and the error, and answers again
        prompt += round(repairs * (prompt / len(todo) + each + REPAIR_MESSAGE_TOKENS))
        completion += round(repairs * each)
        note = "; ".join(filter(None, [note, f"{repairs} repair call(s) at the rate recorded for this pass"]))
    plan = PassPlan(description, len(requests), len(todo) + repairs, prompt, completion, reused, exact, note)
    return plan, answers


def artifact_todo(
    ctx: StrategyContext,
    work: PlanWork,
    *,
    strategy: str,
    kind: str,
    version: str,
    attempts: int,
    phase: str | None = None,
) -> list[tuple[NodeRecord, int]]:
    """The chunks an artefact pass (:func:`~gemrag.strategies.platform.extraction.extract_artifacts`) would ask about
    now, each with the number of its first attempt: stored chunks without an artefact of ``version`` whose failed
    tries do not exceed :data:`~gemrag.strategies.platform.extraction.RETRIES` (attempt = tries x ``attempts``), then
    the chunks not stored yet (attempt 0), in :attr:`PlanWork.chunks` order."""
    stored = [c.id for c in work.stored()]
    missing = set(ctx.store.missing_artifacts(strategy, kind, version, stored)) if stored else set()
    tries = failed_tries(ctx, phase or f"index/{strategy}/{kind}@{version}") if missing else {}
    return [
        (c, tries.get(c.id, 0) * attempts if c.id in missing else 0)
        for c in work.chunks
        if c.id in work.virtual or (c.id in missing and tries.get(c.id, 0) <= RETRIES)
    ]


def artifact_pass(
    work: PlanWork,
    todo: Sequence[tuple[NodeRecord, int]],
    extraction: Extraction[NodeRecord],
    *,
    titles: bool,
    typical_completion: float,
) -> tuple[PassPlan, list[dict[str, Any] | None]]:
    """:func:`estimate_pass` of an artefact pass over ``todo`` (:func:`artifact_todo`): each chunk's first request
    on its indexed text (with ``titles``: ``title\ntext``, as the build sends it)."""
    requests = [extraction.first_request(dataclasses.replace(c, text=work.text_of(c, titles)), a) for c, a in todo]
    return estimate_pass(work, extraction.description, requests, typical_completion=typical_completion)


def no_llm_plan(ctx: StrategyContext, work: PlanWork, strategy: str) -> StrategyPlan:
    """The plan of a strategy whose build calls no LLM (dense, bm25, full): its new chunks, no pass."""
    return StrategyPlan(strategy, len(work.new_chunks(ctx, strategy)))


def unknown_plan(ctx: StrategyContext, work: PlanWork, strategy: str) -> StrategyPlan:
    """The plan of a strategy that cannot plan (no ``plan`` method): its new chunks, its LLM cost unknown."""
    note = f"strategy {strategy!r} has no plan method: its LLM calls, tokens and minutes are unknown"
    return StrategyPlan(strategy, len(work.new_chunks(ctx, strategy)), known=False, notes=[note])


def plan_of(ctx: StrategyContext, strategy: Any, work: PlanWork) -> StrategyPlan:
    """``strategy.plan(ctx, work)`` when the strategy has that method, else :func:`unknown_plan`."""
    plan = getattr(strategy, "plan", None)
    if not callable(plan):
        return unknown_plan(ctx, work, strategy.name)
    result = plan(ctx, work)
    assert isinstance(result, StrategyPlan), f"{strategy.name}.plan returned {type(result).__name__}"
    return result
