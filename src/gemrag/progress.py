"""Progress bars for long work (rich), as a factory the strategies call: ``progress(description, total)``.

The bar's ``advance(n=1, *, tokens=0)`` (:class:`gemrag.strategies.base.Advance`) counts items and the LLM tokens
they made generate, so an LLM pass (:mod:`gemrag.strategies.platform.extraction`) shows items/s and tokens/s; a bar that
never gets tokens shows no token rate. ``advance(n, note="F1 43.2 · EvR 61.0")`` shows a status text after the
bar (``gemrag eval``'s running averages, see :func:`gemrag.strategies.base.note_advance`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text


class RateColumn(ProgressColumn):
    """Average rate since the task started: items/s (``field=None``: completed items) or a counter kept in the
    task's fields (``field="tokens"``) per second; blank before the first second or while the counter is 0.

    Args:
        unit: the label after the number (``"it/s"``, ``"tok/s"``).
        field: the task field counted, or None for the completed items.
    """

    def __init__(self, unit: str, field: str | None = None) -> None:
        super().__init__()
        self.unit = unit
        self.field = field

    def render(self, task: Task) -> Text:
        """The rate as ``"12.3 it/s"`` (blank when unknown)."""
        count = task.completed if self.field is None else task.fields.get(self.field, 0)
        elapsed = task.elapsed or 0.0
        if not count or elapsed <= 0.0:
            return Text("")
        return Text(f"{count / elapsed:.1f} {self.unit}", style="progress.data.speed")


def rich_progress(console: Console | None = None):  # noqa: ANN201 - returns a ProgressFactory
    """A progress factory drawing one rich bar per task on ``console`` (stderr by default), with items/s and,
    when ``advance`` gets token counts, tokens/s."""
    console = console or Console(stderr=True)

    @contextmanager
    def factory(description: str, total: int) -> Iterator:
        with Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            RateColumn("it/s"),
            RateColumn("tok/s", "tokens"),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[note]}"),
            console=console,
            transient=False,
        ) as bar:
            task = bar.add_task(description, total=total, tokens=0, note="")
            spent = [0]  # tokens so far

            def advance(n: int = 1, *, tokens: int = 0, note: str | None = None) -> None:
                spent[0] += tokens
                if note is None:
                    bar.update(task, advance=n, tokens=spent[0])
                else:
                    bar.update(task, advance=n, tokens=spent[0], note=note)

            yield advance

    return factory
