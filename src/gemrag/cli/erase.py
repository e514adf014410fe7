"""``gemrag erase``: erase every byte of text no current document states (registered in :mod:`gemrag.cli.main`),
and the report lines ``delete --purge`` and ``index --purge`` print after their erase."""

from __future__ import annotations

import typer
from rich.console import Console

from gemrag.cli.options import (
    NO_MODEL_FLAGS,
    ConfigFile,
    MemoryOpt,
    ModelOptions,
    SetOpt,
    Wait,
    build_config,
    memory_target,
    model_options,
    open_memory,
)
from gemrag.console import cli_errors
from gemrag.store.erase import PurgeReport

out = Console()

__all__ = ["INCOMPLETE_EXIT", "erase_command", "purge_lines"]

INCOMPLETE_EXIT = 1
"""Exit code of an erase that could not finish while another process read old bytes (bad input exits with 2)."""


@model_options()
def erase_command(
    memory: MemoryOpt = None,
    config: ConfigFile = None,
    wait: Wait = 0.0,
    set_: SetOpt = None,
    models: ModelOptions = NO_MODEL_FLAGS,
) -> None:
    """Erase every byte of text no current document states: what `gemrag delete`, an edited file re-indexed and
    `index --sync` removed since the last erase, from the LLM and embedding caches, the kept versions, the failure
    messages, unpublished array files and the database's free pages, write-ahead log and dead rows (SQLite VACUUM and
    WAL truncation; PostgreSQL VACUUM FULL). No LLM call; prints what it erased. Runs at any time and again: exits
    with code 1 while another process still reads old bytes (the message names the file or tables; run it again once
    that process is done), 2 on an error (e.g. another process is building: --wait). Copies made by `gemrag view`
    and `gemrag copy`, and traces already exported to a collector, are outside the memory: erase them yourself. The
    embedder of the configuration and the model flags names the embedding-cache entries of the texts kept. The memory
    must exist."""
    with cli_errors():
        cfg = build_config(config, sets=set_, models=models)
        location = memory_target(memory, cfg, existing=True)
    with cli_errors("run `gemrag erase` again: it finishes what is left"), open_memory(location, cfg, None) as mem:
        report = mem.erase(wait=wait)
    for line in purge_lines(report):
        out.print(line)
    if not report.erasure.complete:
        raise typer.Exit(INCOMPLETE_EXIT)


def purge_lines(purge: PurgeReport) -> list[str]:
    """What an erase erased, for people (:class:`~gemrag.store.erase.PurgeReport`): the cache entries, embeddings,
    version texts, failures and bytes, one line each; an incomplete erase last, in yellow.
    """
    p, e = purge.purged, purge.erasure
    unverifiable = f" and {p.llm_unverifiable} unverifiable ones (cached before inputs were recorded)"
    lines = [
        f"erased {p.llm_entries} LLM cache entries holding removed text{unverifiable if p.llm_unverifiable else ''}; "
        f"{p.llm_kept} kept",
        f"erased {p.embeddings} embedding cache entries ({p.embeddings_kept} of texts still in the memory kept)",
        f"cleared {p.versions} kept version texts; deleted {p.failures} failure messages and {p.meta} meta entries",
    ]
    lines.append(
        f"erased: {e.detail}; {e.bytes_before:,} -> {e.bytes_after:,} bytes, {e.files_removed} stale files removed "
        f"({purge.fragments} marks of removed text erased of {purge.quarantined} left by removals; "
        f"{purge.seconds:.2f} s)"
    )
    if not e.complete:
        lines.append("[yellow]the erase is incomplete (see above): run `gemrag erase` again once no one reads[/]")
    return lines
