"""``gemrag copy SRC DST``: copy a memory between locations and backends (registered in :mod:`gemrag.cli.main`)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from gemrag.cli.options import memory_target
from gemrag.console import cli_errors, fail
from gemrag.errors import GemragError
from gemrag.store.copy import copy_memory

out = Console()

__all__ = ["copy_command"]


def copy_command(
    source: Annotated[str, typer.Argument(help="The memory to copy: a directory or a postgresql:// URL.")],
    target: Annotated[str, typer.Argument(help="Where to create the copy: a new directory or a postgresql:// URL.")],
) -> None:
    """Copy the memory SOURCE to TARGET, SQLite -> PostgreSQL or back (or between two of one kind): every row with
    its id, the LLM and embedding caches, and every published build (arrays, artefacts, vector indexes), so the copy
    answers as the original without an LLM call. Prints the rows per table on both sides; an error when they
    differ (exit code 2)."""
    with cli_errors():
        memory_target(source, None, existing=True, hint="give a memory to copy")
        memory_target(target, None, existing=False)
        before, after = copy_memory(source, target, progress=lambda m: out.print(f"copying {m}"))
    table = Table("table", "source rows", "copied rows")
    for name, count in before.items():
        table.add_row(name, str(count), str(after.get(name)))
    out.print(table)
    if before != after:
        fail(GemragError("the copy's row counts differ from the source's (see the table)"))
    out.print(f"copied {source} -> {target}: {sum(before.values())} rows, {before['builds']} published builds")
