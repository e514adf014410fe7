"""``gemrag index``'s cost plan on the command line: the plan table
(:class:`gemrag.memory.index_plan.IndexPlan`), and the question asked on a terminal before a build planned to take
longer than :data:`~gemrag.memory.index_plan.CONFIRM_MINUTES` minutes."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from gemrag.memory.index_plan import CONFIRM_MINUTES, IndexPlan

__all__ = ["confirm_plan", "minutes_text", "print_plan"]


def minutes_text(minutes: float | None) -> str:
    """Minutes for people: ``"?"`` when unknown, one decimal below 10, whole minutes above."""
    if minutes is None:
        return "?"
    return f"{minutes:.1f}" if minutes < 10 else f"{minutes:,.0f}"


def print_plan(console: Console, plan: IndexPlan) -> None:
    """Print ``plan``: one line on the memory and its sources, a table of the passes (``~``: an estimate), the
    total, where the minutes come from and the notes."""
    for s in plan.strategies:
        sources = ", ".join(f"{n} {status}" for status, n in plan.sources.items())
        console.print(
            f"[bold]plan[/] {escape(s.strategy)} in {escape(plan.memory)}: {plan.documents} document(s), "
            f"{plan.chunks} chunks, {s.chunks} to process (new or changed)"
            + (f"; sources: {sources}" if sources else "")
        )
        if not s.known:
            for note in s.notes:
                console.print(f"  [yellow]{escape(note)}[/]")
            continue
        if not s.passes:
            console.print("  no LLM call: nothing to wait for but embeddings")
            continue
        table = Table("LLM pass", "items", "calls", "prompt tokens", "completion tokens", "minutes")
        for p in s.passes:
            mark = "" if p.exact else " ~"
            table.add_row(
                escape(p.description) + mark,
                f"{p.items:,}",
                f"{p.calls:,}",
                f"{p.prompt_tokens:,}",
                f"{p.completion_tokens:,}",
                minutes_text(p.minutes),
            )
        table.add_row(
            "[bold]total[/]" + ("" if s.exact else " ~"),
            "",
            f"[bold]{s.calls:,}[/]",
            f"{s.prompt_tokens:,}",
            f"{s.completion_tokens:,}",
            f"[bold]{minutes_text(s.minutes)}[/]",
        )
        console.print(table)
        for note in s.notes:
            console.print(f"  {escape(note)}")
    if plan.calls:
        console.print(f"  model {escape(plan.model or '?')}; minutes: {escape(plan.rates.detail)}")
        what = "exact" if plan.exact else "an estimate where marked ~"
        console.print(
            f"  first attempts are {what}; calls add the repairs of invalid answers at the rate this model needed "
            "for the pass before; completion tokens are estimated (the mean this model wrote for the pass before, "
            "else a typical answer)"
        )


def confirm_plan(
    plan: IndexPlan, *, yes: bool, interactive: bool, ask: Callable[[str], bool], limit: float = CONFIRM_MINUTES
) -> bool:
    """Whether to go on with the build: always with ``yes`` or when not ``interactive`` (a script never blocks), or
    when the plan takes at most ``limit`` minutes (unknown minutes included); else what ``ask`` answers (the
    question names the plan's minutes)."""
    if yes or not interactive or not plan.needs_confirmation(limit):
        return True
    return ask(f"This build is planned to take about {minutes_text(plan.minutes)} minutes. Proceed?")
