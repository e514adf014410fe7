"""``iterative``: retrieval in steps over any strategy, a small LLM reasoning between the retrievals.

Not a seed paper's method: the field's standard forms of multi-hop retrieval at query time, over any memory.

* ``mode = "ircot"`` (Trivedi et al. 2023, "Interleaving Retrieval with Chain-of-Thought Reasoning for
  Knowledge-Intensive Multi-Step Questions", ACL, section 3): retrieve for the question; the LLM reads the
  passages and its chain of thought so far (``chain = "grow"``) and writes the chain's next thought and the next
  query (the bridge entity, the next hop), or says they are enough; retrieve again.
* ``mode = "decompose"`` (default; self-ask, Press et al. 2023, "Measuring and Narrowing the Compositionality Gap
  in Language Models", EMNLP Findings, section 3): the LLM splits the question into sub-questions up front; each is
  retrieved in order, a ``#k`` in it filled with the answer the LLM reads from sub-question k's passages. With
  ``answer_from = "steps"`` the final answer also reads the sub-questions and their answers (self-ask's
  composition): every hit carries them in ``meta["follow_ups"]``, which :mod:`gemrag.answers.answering` shows before the
  passages.
* ``rerank = true`` (RankGPT, Sun et al. 2023, "Is ChatGPT Good at Search?", EMNLP, section 3.2): the LLM orders
  the base's top ``rerank_depth`` for the question in sliding windows, before the steps read it
  (:mod:`~gemrag.strategies.iterative.rerank`).

The steps' ranked lists are merged into one context of the same budget B, a passage once
(:mod:`~gemrag.strategies.iterative.merge`); the call budget is :mod:`~gemrag.strategies.iterative.steps`'. The base
is any registered strategy, reached by name through the registry (``[iterative] base``, with its own section), so
``iterative`` imports no other method. Building ``iterative`` builds the base. Every LLM pass is a structured call
through the memory's cached LLM: the same question twice costs no new model call. Settings:
:class:`IterativeConfig`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from gemrag.errors import ConfigError
from gemrag.strategies.base import Strategy, StrategyContext, available, register, warm_strategy
from gemrag.strategies.iterative.merge import Step, merge_steps
from gemrag.strategies.iterative.rerank import STEP, WINDOW, rerank_first
from gemrag.strategies.iterative.steps import Chain, FollowUp, Search, decompose, ircot, step_records
from gemrag.strategies.platform.composite import NamedStrategies
from gemrag.strategies.platform.planning import PlanWork, StrategyPlan
from gemrag.types import Hit

NAME = "iterative"
_RUNNING = threading.local()
"""Whether an ``iterative`` build or retrieval runs on this thread: entering another one means the base's chain of
strategies (e.g. ``fused`` with ``iterative`` as a part) leads back to ``iterative``, which would never end."""


@contextmanager
def _no_loop() -> Iterator[None]:
    """Run the block as this thread's one ``iterative`` build or retrieval.

    Raises:
        ConfigError: one is already running on this thread (the base leads back to ``iterative``).
    """
    if getattr(_RUNNING, "on", False):
        raise ConfigError("[iterative] base: the strategies it retrieves with lead back to iterative")
    _RUNNING.on = True
    try:
        yield
    finally:
        _RUNNING.on = False


class IterativeConfig(BaseModel):
    """The ``[iterative]`` configuration section.

    Attributes:
        base: the strategy retrieved at every step, by registered name (default ``"fused"``: over it decompose
            reached HotpotQA Recall@5 90.0 against 84.5 over dense, p 0.008, and was level on MuSiQue, 72.4 against
            74.0, p 0.50, 100 questions each, docs/results.md; ``dense``, ``remem``, ... or a user's own; not
            ``iterative``). It uses its own section.
        mode: ``"decompose"`` (default: the LLM splits the question into sub-questions up front) or ``"ircot"``
            (the LLM writes each next query from the passages so far). Decompose is the default because it measured
            better with the embedded 1.5B: MuSiQue dev, 100 questions, Recall@5 +7.3 points over IRCoT (p 0.008) and
            +9.2 over dense (p < 0.001) at 1.6 LLM calls per question (docs/results.md, the multi-hop section).
        max_steps: LLM passes per question the mode may spend (>= 0, default 2; :mod:`~.steps` defines what counts):
            ``"ircot"`` at most ``max_steps`` next-query passes (so at most ``max_steps + 1`` retrievals);
            ``"decompose"`` the decomposition into at most ``max_steps + 1`` sub-questions plus the sub-answer
            passes, ``max_steps`` in all. 0: the base's ranking (reranked if ``rerank``).
        min_steps: IRCoT mode: in the first ``min_steps`` next-query passes (0 to ``max_steps``, default 1) the model's
            "enough" is overruled and its query, or its thought, retrieved (:func:`~.steps.ircot`): small models
            say "enough" after one read (the 0.5B in 29 of 30 MuSiQue questions). 0 trusts every "enough".
        chain: IRCoT mode: what each next-query pass reads besides the question and the passages: ``"grow"``
            (default; IRCoT's chain of thought, section 3: the thoughts of the passes before it, and the searches
            made) or ``"queries"`` (the searches made only, the form of the first multi-hop measurements, whose
            1.5B ended 67 to 76 of 100 loops on a repeated query).
        read: passages of each step the LLM reads (>= 1, default 5), independent of the budget, so the first k
            hits of a K-hit retrieval are the k-hit retrieval (with ``merge = "interleave"`` and a nested base).
        merge: how the steps' lists become one context: ``"interleave"`` (default: round-robin by rank over the
            steps, so each later step's best new passage gets into the budget) or ``"rrf"`` (reciprocal-rank fusion
            of the steps' lists); :mod:`~gemrag.strategies.iterative.merge`.
        rerank: reorder the base's top ``rerank_depth`` for the question before the steps (RankGPT), one LLM pass
            per sliding window, none counted in ``max_steps`` (default False).
        rerank_depth: N, the passages the rerank orders (2 to 50, default 10).
        rerank_window: passages per rerank pass (2 to 50, default 20, RankGPT's window); a deeper rerank slides the
            window from the back of the list to the front (:func:`~.rerank.sliding_windows`), and a window whose
            prompt does not fit the LLM's context has its passages cut to fit, said in the trace and warned
            (:func:`~.rerank.fitted`).
        rerank_step: ranks between one window and the next (1 to ``rerank_window - 1``, default 10, RankGPT's step).
        follow_up: decompose mode: whether a decomposition of one sub-question is retrieved: ``"always"`` (default:
            the sub-question, usually a paraphrase of a one-fact question, is retrieved and merged with the question's
            own list) or ``"needed"`` (self-ask, section 3: "Are follow up questions needed here: No" answers from
            the question alone, so one sub-question means no follow-up and the context is the question's own
            retrieval, step 1). Not yet measured: on LoCoMo's dev conversations (497 questions, 1.5B, over ``fused``)
            a single sub-question came in 18; the evidence recall lost there came from the 346 decompositions that
            needed no sub-answer, mostly two sub-questions (67.6 with ``fused`` alone against 63.7; docs/results.md).
        answer_from: what the final answer reads: ``"passages"`` (default: the merged context, as every strategy) or
            ``"steps"`` (decompose mode only: the sub-questions as retrieved and the sub-answers read, before the
            passages, as self-ask composes its answer from its intermediate answers, section 3; the passages keep
            their numbers, so citations name passages only). The retrieval itself is the same.
        attempts: attempts per pass (>= 1, default 1: a malformed answer is a recorded failure, not a second call).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    base: str = "fused"
    mode: Literal["ircot", "decompose"] = "decompose"
    max_steps: int = Field(2, ge=0, le=8)
    min_steps: int = Field(1, ge=0, le=8)
    chain: Chain = "grow"
    read: int = Field(5, ge=1, le=20)
    merge: Literal["interleave", "rrf"] = "interleave"
    rerank: bool = False
    rerank_depth: int = Field(10, ge=2, le=50)
    rerank_window: int = Field(WINDOW, ge=2, le=50)
    rerank_step: int = Field(STEP, ge=1, le=49)
    follow_up: FollowUp = "always"
    answer_from: Literal["passages", "steps"] = "passages"
    attempts: int = Field(1, ge=1, le=5)

    @field_validator("base")
    @classmethod
    def _registered(cls, base: str) -> str:
        if base == NAME:
            raise ValueError("iterative cannot be its own base: name the strategy it retrieves with")
        if base not in available():
            raise ValueError(f"unknown strategy {base!r}; choose one of {', '.join(available())}")
        return base

    @model_validator(mode="after")
    def _consistent(self) -> IterativeConfig:
        if self.rerank_step >= self.rerank_window:
            raise ValueError(
                f"rerank_step ({self.rerank_step}) must be below rerank_window ({self.rerank_window}): the windows "
                "overlap so a passage can climb from one window into the next"
            )
        if self.answer_from == "steps" and self.mode != "decompose":
            raise ValueError('answer_from = "steps" reads the sub-answers of mode = "decompose": set that mode')
        return self


@register(NAME)
class IterativeStrategy:
    """Retrieval in steps over a base strategy (IRCoT or self-ask decomposition, optional RankGPT rerank), the
    steps' hits merged into one context.

    Args:
        config: the ``[iterative]`` section (default: decomposition over dense, 2 passes, interleaved).
    """

    name = NAME
    config_model = IterativeConfig

    def __init__(self, config: IterativeConfig | None = None) -> None:
        self.config = config or IterativeConfig()
        self._base = NamedStrategies([self.config.base], "[iterative] base")

    @property
    def nested(self) -> bool:
        """Whether the first k of a K-node retrieval are the k-node retrieval (k < K): with ``merge = "interleave"``
        when the base's are (the LLM reads ``read`` passages per step whatever the budget); False until the base is
        constructed. ``gemrag eval`` reads Recall@k from one ranking either way
        (:func:`gemrag.eval.metrics.first_passages`)."""
        made = self._base.made(self.config.base)
        return self.config.merge == "interleave" and made is not None and bool(getattr(made, "nested", True))

    def base(self, ctx: StrategyContext) -> Strategy:
        """The base strategy, constructed once with its section of ``ctx.config``.

        Raises:
            ConfigError: the base is not registered, or its section is invalid.
        """
        return self._base.get(ctx)[0]

    def plan(self, ctx: StrategyContext, work: PlanWork) -> StrategyPlan:
        """What building now would cost: its base's plan (``iterative`` calls the LLM only when it retrieves).

        Raises:
            ConfigError: the base is unknown, or its chain of strategies leads back to ``iterative``.
        """
        with _no_loop():
            return self._base.plan(ctx, work, self.name)

    def build(self, ctx: StrategyContext) -> None:
        """Build the base (its own generation); ``iterative`` keeps no arrays of its own and spends no LLM call.

        Raises:
            ConfigError: the base is unknown, or its chain of strategies leads back to ``iterative``. Whatever the
                base's build raises.
        """
        with _no_loop():
            self._base.build(ctx)

    def retrieve(self, ctx: StrategyContext, question: str, budget: int) -> list[Hit]:
        """The merged context of the steps for ``question``.

        Returns:
            At most ``budget`` hits best first, a node once; each is the base's hit with ``rank`` renumbered,
            ``score`` the merged score, ``meta["iterative"]`` = ``{"step", "query", "steps"}`` (the step that placed
            it, that step's query, every step's 1-based rank of it) and ``meta["trace"]`` the retrieval's trace
            (the same dict on every hit): ``mode``, ``base``, ``merge``, ``calls`` (passes against ``max_steps``),
            ``rerank_calls`` (one per rerank window), ``stop``, ``steps`` (``[{"step", "query", "hits": node ids,
            ...}]``), ``failures`` (``[{"pass", "step", "error"}]``), ``rerank_fit`` when a rerank window was cut to
            fit the context window, ``chain`` in ``"ircot"`` mode and, in ``"decompose"`` mode, ``subquestions`` and
            ``answers``. With ``answer_from = "steps"`` (and a decomposition made) every hit also carries
            ``meta["follow_ups"]`` = ``[{"question": sub-question as retrieved, "answer": its answer or None}]``,
            which the final answer reads before the passages (:func:`gemrag.answers.prompts.follow_ups_text`).

        Warns:
            RerankFitWarning: a rerank window did not fit the LLM's context window (:func:`~.rerank.rerank_first`).

        Raises:
            ConfigError: the base is unknown, or its chain of bases leads back to ``iterative``.
            MemoryNotIndexedError: the base was not built. GemragError: a fatal model error.
        """
        with _no_loop():
            return self._retrieve(ctx, question, budget)

    def warm(self, ctx: StrategyContext, budget: int) -> None:
        """Warm the base (:func:`~gemrag.strategies.base.warm_strategy` with ``budget`` nodes) and load the LLM,
        spending no LLM call: a warm-up question through the steps would cost a full run of LLM passes, once per
        memory (``gemrag eval --per-question-corpus``: once per question).

        Raises:
            ConfigError: the base is unknown, or its chain of bases leads back to ``iterative``.
            MemoryNotIndexedError: the base was not built. GemragError: the LLM failed to load.
        """
        with _no_loop():
            warm_strategy(ctx, self.base(ctx), max(budget, self.config.read))
        ctx.get_llm()

    def _retrieve(self, ctx: StrategyContext, question: str, budget: int) -> list[Hit]:
        cfg = self.config
        depth = max(budget, cfg.read, cfg.rerank_depth if cfg.rerank else 1)
        search = Search(
            ctx, self.base(ctx), depth, cfg.read, cfg.max_steps, cfg.attempts, min(cfg.min_steps, cfg.max_steps)
        )
        first = Step(question, list(search.retrieve(question)))
        if cfg.rerank:
            rerank_first(search, question, first, cfg.rerank_depth, cfg.rerank_window, cfg.rerank_step)
        if cfg.mode == "ircot":
            steps = ircot(search, question, first, cfg.chain)
        else:
            steps = decompose(search, question, first, cfg.follow_up)
        trace: dict[str, Any] = {"mode": cfg.mode, "base": cfg.base, "merge": cfg.merge, **search.trace}
        trace |= {"chain": cfg.chain} if cfg.mode == "ircot" else {}
        trace |= {"calls": search.calls, "rerank_calls": search.rerank_calls, "failures": search.failures}
        trace["steps"] = step_records(steps)
        merged = merge_steps(steps, budget, cfg.merge)
        follow_ups = _follow_ups(steps, search.trace) if cfg.answer_from == "steps" else []
        for h in merged:
            h.meta["trace"] = trace
            if follow_ups:
                h.meta["follow_ups"] = follow_ups
        return merged

    def report(self, ctx: StrategyContext) -> dict[str, Any]:
        """The settings, with the base's own report."""
        base = self.base(ctx)
        return {**self.config.model_dump(), "base_report": base.report(ctx)}


def _follow_ups(steps: list[Step], trace: dict[str, Any]) -> list[dict[str, str | None]]:
    """Self-ask's follow-ups and intermediate answers (Press et al. 2023, section 3) for the final answer
    (``answer_from = "steps"``): each sub-question as retrieved (its ``#k`` filled) and the answer read for it, or
    None where no pass read one (the last sub-question's, and those the budget did not reach); ``[]`` when the
    decomposition failed or was not made."""
    answers: dict[int, str] = trace.get("answers", {})
    if "subquestions" not in trace:
        return []
    return [{"question": s.query, "answer": answers.get(i)} for i, s in enumerate(steps[1:], start=1)]
