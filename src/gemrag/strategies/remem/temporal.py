"""``remem_temporal``: REMem's temporal strategy (seed ``remem-retrieval-strategies.txt``, "Temporal Strategy":
"Temporal fact retrieval: facts with time qualifiers are prioritized; Chronological ordering: results can be
sorted by time").

It reads the same memory as ``remem_gist`` (:mod:`gemrag.strategies.remem.episodic`): verbatim turns, session-window
gists and facts whose time qualifiers were resolved to ISO dates from the session date. Its gist artefacts are
``remem_gist``'s, so building both costs the LLM once. What changes is retrieval:

* a question that asks about time (:func:`is_temporal`: when, what year/month/day/date, how long, before, after,
  since, until, first, last, ago, ...) is answered through ``fact_retrieve`` first — the timed facts —, restricted to
  the period the question names (:func:`question_range`: "in May 2023", "before 8 May 2023", "after 2022"), instead
  of the configured fixed tool;
* with ``chronological`` (``"temporal"`` by default: for temporal questions only; ``"always"``; ``"never"``) the
  retrieved turns or gists are returned in date order (undated ones last, each group in retrieval order), so the
  model reads events in the order they happened.

The seed also names "temporal graph edges"; gemrag does not build them (nothing in the seed says how), see
``docs/papers.md`` (REMem, not implemented; the deviations list).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Literal

from gemrag.strategies.base import StrategyContext, register
from gemrag.strategies.remem.agent import AgentResult, run_agent
from gemrag.strategies.remem.agent_prompts import FACT
from gemrag.strategies.remem.episodic import RememGistConfig, RememGistStrategy
from gemrag.types import Hit

NAME = "remem_temporal"

_TEMPORAL = re.compile(
    r"\b(when|what (?:year|month|day|date|time)|which (?:year|month|day|date)|how long|how many (?:years|months|"
    r"weeks|days)|before|after|since|until|first|last|earlier|later|ago|during|date)\b",
    re.IGNORECASE,
)
_MONTHS = [
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
]  # fmt: skip
_MONTH = "|".join(_MONTHS)
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH}),?\s+(\d{{4}})\b", re.IGNORECASE)
_MONTH_DAY_YEAR = re.compile(rf"\b({_MONTH})\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.IGNORECASE)
_MONTH_YEAR = re.compile(rf"\b({_MONTH})\s+(?:of\s+)?(\d{{4}})\b", re.IGNORECASE)
_YEAR = re.compile(r"\b(1[89]\d\d|20\d\d)\b")
_BEFORE = re.compile(r"\b(before|until|prior to|by)\b", re.IGNORECASE)
_AFTER = re.compile(r"\b(after|since|from)\b", re.IGNORECASE)


def is_temporal(question: str) -> bool:
    """Whether ``question`` asks about time (when, what year, how long, before, after, ...; module docstring) or
    names a date, month or year ("What did Bob sell in June 2023?")."""
    return bool(_TEMPORAL.search(question)) or _period(question) is not None


def _period(question: str) -> tuple[str, str] | None:
    """The first date, month or year named in ``question`` as ``(start, end)`` ISO prefixes (equal strings)."""
    if m := _DAY_MONTH_YEAR.search(question):
        day, month, year = int(m.group(1)), _MONTHS.index(m.group(2).lower()) + 1, m.group(3)
    elif m := _MONTH_DAY_YEAR.search(question):
        month, day, year = _MONTHS.index(m.group(1).lower()) + 1, int(m.group(2)), m.group(3)
    elif m := _MONTH_YEAR.search(question):
        value = f"{m.group(2)}-{_MONTHS.index(m.group(1).lower()) + 1:02d}"
        return value, value
    elif m := _YEAR.search(question):
        return m.group(1), m.group(1)
    else:
        return None
    value = f"{year}-{month:02d}-{day:02d}"
    return value, value


def question_range(question: str) -> tuple[str | None, str | None]:
    """The period ``question`` restricts facts to, as ``fact_retrieve``'s ``(start, end)`` bounds.

    The first full date ("8 May 2023", "May 8, 2023"), month ("May 2023") or year ("2023") it names is the period;
    "before"/"until"/"by" keep only its end bound, "after"/"since"/"from" only its start bound. ``YYYY`` and
    ``YYYY-MM`` bounds cover the whole year or month (:func:`gemrag.strategies.platform.conversation.date_bound`).

    Returns:
        ``(start, end)``, each an ISO ``YYYY[-MM[-DD]]`` string or None (no bound); ``(None, None)`` when the
        question names no date.
    """
    period = _period(question)
    if period is None:
        return None, None
    start, end = period
    if _BEFORE.search(question) and not _AFTER.search(question):
        return None, end
    if _AFTER.search(question) and not _BEFORE.search(question):
        return start, None
    return start, end


class RememTemporalConfig(RememGistConfig):
    """The ``[remem_temporal]`` section: every ``[remem_gist]`` setting, plus

    Attributes:
        chronological: return the hits in date order for temporal questions (``"temporal"``, default), for every
            question (``"always"``) or never (``"never"``).
    """

    chronological: Literal["temporal", "always", "never"] = "temporal"


@register(NAME, config=RememTemporalConfig)
class RememTemporalStrategy(RememGistStrategy):
    """REMem's temporal strategy: timed facts first for questions about time, results in chronological order."""

    name = NAME
    config: RememTemporalConfig

    def __init__(self, config: RememTemporalConfig | None = None) -> None:
        super().__init__(config or RememTemporalConfig())

    def ask_agent(self, ctx: StrategyContext, question: str, budget: int | None = None) -> AgentResult:
        """As ``remem_gist``'s agent, except for a temporal question: in fixed mode the retrieval tool is
        ``fact_retrieve``, and in every mode a ``fact_retrieve`` call without bounds gets the question's period
        (:func:`question_range`).

        Raises:
            MemoryNotIndexedError: the strategy was not built in this memory.
            GemragError: a fatal model error.
        """
        if not is_temporal(question):
            return super().ask_agent(ctx, question, budget)
        cfg = self.config
        g = self._loaded(ctx)
        base = self.tools(ctx, g)
        start, end = question_range(question)

        def tools(tool: str, arguments: dict[str, Any]) -> Any:
            if tool == FACT and arguments.get("start") is None and arguments.get("end") is None:
                arguments = {**arguments, "start": start, "end": end}
            return base(tool, arguments)

        retrieve_only = cfg.agent_fixed_tools and cfg.max_steps == 1
        return run_agent(
            None if retrieve_only else ctx.get_llm(),
            question,
            tools,
            max_steps=cfg.max_steps,
            fixed_tool=FACT if cfg.agent_fixed_tools else None,
            result_chars=cfg.tool_result_chars,
            fixed_arguments={"start": start, "end": end},
            node_budget=self.node_budget(budget),
        )

    def retrieve(self, ctx: StrategyContext, question: str, budget: int) -> list[Hit]:
        """``remem_gist``'s hits (:meth:`RememGistStrategy.retrieve`), in date order when ``chronological``
        applies (module docstring); ranks are renumbered, scores kept.

        Raises:
            MemoryNotIndexedError: the strategy was not built in this memory.
        """
        hits = super().retrieve(ctx, question, budget)
        mode = self.config.chronological
        if mode == "never" or (mode == "temporal" and not is_temporal(question)) or not hits:
            return hits
        g = self._loaded(ctx)
        row = {int(n): r for r, n in enumerate(g.ids)}

        def key(item: tuple[int, Hit]) -> tuple[int, int, int]:
            rank, hit = item
            day = int(g.day[row[hit.node_id]]) if hit.node_id in row else 0
            return (day == 0, day, rank)

        ordered = [hit for _, hit in sorted(enumerate(hits), key=key)]
        return [
            dataclasses.replace(hit, rank=rank, meta={**hit.meta, "chronological": True})
            for rank, hit in enumerate(ordered)
        ]
