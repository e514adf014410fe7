"""``gemrag delete``: remove a document from a memory (registered in :mod:`gemrag.cli.main`).

The options every command that opens a memory shares (``--memory``, ``--config``, ``--set``, the model flags,
``--wait``) come from :mod:`gemrag.cli.options`; its own are declared here.
"""

from __future__ import annotations

from typing import Annotated

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

__all__ = ["delete_command", "purge_lines"]


@model_options()
def delete_command(
    document: Annotated[
        str, typer.Argument(help="The document's id, source path or title, as `gemrag info` lists them.")
    ],
    memory: MemoryOpt = None,
    config: ConfigFile = None,
    wait: Wait = 0.0,
    purge: Annotated[
        bool,
        typer.Option(
            "--purge",
            help="Also erase its text: the LLM and embedding cache entries that held it, its kept versions' text, "
            "the chat exchanges that quoted it, and the bytes left in the files (VACUUM).",
        ),
    ] = False,
    rebuild: Annotated[
        bool,
        typer.Option("--rebuild", help="Rebuild the strategies it changed now (default: at the next `gemrag index`)."),
    ] = False,
    set_: SetOpt = None,
    models: ModelOptions = NO_MODEL_FLAGS,
) -> None:
    """Delete DOCUMENT: its chunks, their utility questions and artefacts, the strategies' nodes made from it only,
    and their edges, in one atomic step (no LLM call); the deletion is recorded in the history (`gemrag info
    --history`). A document several sources hold (the same text at two paths) loses only the source named and
    stays while another source holds it; its id deletes it whole. Strategies become stale; the next `gemrag index`
    recomputes what depended on the document, with LLM calls only for what changed (cached answers stay), or
    `--rebuild` does it at once (with the models of the configuration and the model flags). `--purge` erases every
    copy of the text besides and prints what it erased. The memory must exist."""
    with cli_errors():
        cfg = build_config(config, sets=set_, models=models)
        location = memory_target(memory, cfg, existing=True)
    with cli_errors(), open_memory(location, cfg, None) as mem:
        mem.build_wait = wait
        report = mem.delete(document, purge=purge, rebuild=rebuild)
        states = mem.strategy_states()
    doc = report.document
    if report.kept_by:
        out.print(
            f"deleted source {doc['source']} of document {doc['id']} ({doc['title']}); the document stays, held by "
            f"{', '.join(report.kept_by)}: 0 chunks deleted, LLM calls {report.llm_calls}"
        )
        for line in purge_lines(report.purge) if report.purge is not None else []:
            out.print(line)
        return
    out.print(
        f"deleted document {doc['id']} ({doc['title']}, from {doc['source']}): {report.chunks} chunks, "
        f"{report.derived_nodes} derived nodes, in {report.seconds:.2f} s; LLM calls {report.llm_calls}"
    )
    if report.purge is not None:
        for line in purge_lines(report.purge):
            out.print(line)
    if report.rebuilt:
        spent = ", ".join(f"{name} ({calls} LLM calls)" for name, calls in report.rebuilt.items())
        out.print(f"rebuilt: {spent}")
    dropped = [name for name in report.withdrawn if name not in report.rebuilt]
    if dropped:
        out.print(f"[yellow]dropped builds (rebuild with gemrag index --strategy NAME):[/] {', '.join(dropped)}")
    for name, state in states.items():
        if state.state != "never built":
            out.print(f"  {name}: {state.describe()}")


def purge_lines(purge: PurgeReport) -> list[str]:
    """What a purge erased, for people (:class:`~gemrag.store.erase.PurgeReport`): the cache entries, embeddings,
    version texts, chat exchanges, failures and bytes, one line each; an incomplete erase last, in yellow."""
    p, e = purge.purged, purge.erasure
    unverifiable = f" and {p.llm_unverifiable} unverifiable ones (cached before inputs were recorded)"
    lines = [
        f"purged {p.llm_entries} LLM cache entries holding the text{unverifiable if p.llm_unverifiable else ''}; "
        f"{p.llm_kept} kept",
        f"purged {p.embeddings} embedding cache entries ({p.embeddings_kept} of texts still in the memory kept)",
        f"cleared {p.versions} kept version texts; deleted {p.failures} failure messages and {p.meta} meta entries",
    ]
    if purge.exchanges:
        titles = ", ".join(str(d["title"]) for d in purge.exchanges)
        lines.append(f"deleted {len(purge.exchanges)} chat exchanges quoting it: {titles}")
    lines.append(
        f"erased: {e.detail}; {e.bytes_before:,} -> {e.bytes_after:,} bytes, {e.files_removed} stale files removed "
        f"({purge.fragments} text fragments searched for)"
    )
    if not e.complete:
        lines.append("[yellow]the erase is incomplete: see above[/]")
    return lines
