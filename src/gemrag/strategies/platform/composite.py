"""Strategies over strategies: other strategies reached by name through the registry, and their hits compared.

``fused`` (rank fusion of several parts) and ``iterative`` (several retrievals of one base, merged) both retrieve
through strategies they only know by registered name, so neither imports another method:

* :class:`NamedStrategies`: the named strategies, constructed once each with their own configuration sections
  (:func:`~gemrag.strategies.base.get_strategy`), built in order;
* :func:`hit_key` / :func:`unique_hits`: the identity of a hit across lists, (kind, store node id), so a passage
  two lists both found is one item;
* :data:`PASSAGE_KINDS`: the hit kinds that are passages of the input, as opposed to derived texts (summaries,
  gists, facts).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from gemrag.errors import ConfigError
from gemrag.strategies.base import Strategy, StrategyContext, get_strategy
from gemrag.strategies.platform.planning import PlanWork, StrategyPlan, plan_of
from gemrag.types import Hit

PASSAGE_KINDS = frozenset({"chunk", "verbatim"})
"""Hit kinds that are passages of the input (a chunk, a conversation turn); the others are derived texts."""


BUILT_PARTS = "index:built parts"
"""``ctx.state`` key: the strategies built inside another's build in this ``index`` (:func:`build_part`), for the
memory to record each as built (:func:`gemrag.memory.states.record_parts`)."""


def build_part(ctx: StrategyContext, strategy: Strategy) -> None:
    """Build ``strategy`` as a part of another strategy's build (``fused``'s parts, ``iterative``'s base) and note
    it under :data:`BUILT_PARTS`, so a part that keeps no arrays of its own (``fused`` under ``iterative``) is
    recorded as built like the strategy the index was asked for, and can be asked directly afterwards.

    Raises:
        Whatever the strategy's build raises.
    """
    strategy.build(ctx)
    ctx.state.setdefault(BUILT_PARTS, []).append(strategy)


class NamedStrategies:
    """Registered strategies by name, each constructed once with its own section of the configuration.

    Args:
        names: registered strategy names, in the order they are used.
        setting: how the configuration names them, for error messages (e.g. ``"[fused] parts"``).
    """

    def __init__(self, names: Sequence[str], setting: str) -> None:
        self.names = list(names)
        self.setting = setting
        self._made: dict[str, Strategy] = {}

    def get(self, ctx: StrategyContext) -> list[Strategy]:
        """The strategies of :attr:`names`, in order, constructed on first use with their sections of
        ``ctx.config``.

        Raises:
            ConfigError: a name is not a registered strategy (the message names :attr:`setting`), or a section is
                invalid.
        """
        for name in self.names:
            if name not in self._made:
                try:
                    self._made[name] = get_strategy(name, ctx.config)
                except KeyError as exc:
                    raise ConfigError(f"{self.setting}: {exc.args[0]}") from exc
        return [self._made[n] for n in self.names]

    def made(self, name: str) -> Strategy | None:
        """The strategy ``name`` if :meth:`get` has constructed it, else None (no configuration is read)."""
        return self._made.get(name)

    def build(self, ctx: StrategyContext) -> None:
        """Build each strategy in order (each publishes its own generation; cached model answers make one already
        built cost no LLM call); strategies with nothing to build (``needs_build = False``) are skipped.

        Raises:
            ConfigError: a name is unknown. Whatever a strategy's build raises (e.g. MemoryNotIndexedError).
        """
        for strategy in self.get(ctx):
            if getattr(strategy, "needs_build", True):
                build_part(ctx, strategy)

    def plan(self, ctx: StrategyContext, work: PlanWork, name: str) -> StrategyPlan:
        """The plan of :meth:`build` as the plan of strategy ``name``: each strategy's passes in build order, named
        ``"<strategy>: <pass>"`` (:func:`~gemrag.strategies.platform.planning.plan_of`; a strategy that cannot plan
        makes the whole plan unknown).

        Raises:
            ConfigError: a name is unknown.
        """
        plan = StrategyPlan(name, len(work.new_chunks(ctx, name)))
        for strategy in self.get(ctx):
            if getattr(strategy, "needs_build", True):
                part = plan_of(ctx, strategy, work)
                named = (dataclasses.replace(p, description=f"{strategy.name}: {p.description}") for p in part.passes)
                plan.passes += list(named)
                plan.known = plan.known and part.known
                plan.notes += [f"{strategy.name}: {n}" for n in part.notes]
        return plan


def hit_key(hit: Hit) -> tuple[str, int]:
    """The identity of a hit across ranked lists: ``(kind, store node id)``; a chunk found twice is one item."""
    return (hit.kind, int(hit.node_id))


def unique_hits(hits: Sequence[Hit]) -> list[Hit]:
    """``hits`` without repeats of a node (:func:`hit_key`), the first (best-ranked) occurrence kept, in order."""
    seen: set[tuple[str, int]] = set()
    out = []
    for h in hits:
        if hit_key(h) not in seen:
            seen.add(hit_key(h))
            out.append(h)
    return out
