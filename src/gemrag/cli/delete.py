"""``gemrag delete``: remove a document from a memory (registered in :mod:`gemrag.cli.main`).

The options every command that opens a memory shares (``--memory``, ``--config``, ``--set``, the model flags,
``--wait``) come from :mod:`gemrag.cli.options`; its own are declared here.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

from gemrag.cli.erase import INCOMPLETE_EXIT, purge_lines
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

__all__ = ["delete_command"]


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
            help="Then erase every copy of text no current document states, as `gemrag erase` does: the LLM and "
            "embedding cache entries that held it, kept versions' text, and the bytes left in the files (VACUUM).",
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
    --history`). Every chat exchange whose reply recalled one of its chunks is withdrawn with it. A document
    several sources hold (the same text at two paths) loses only the source named and
    stays while another source holds it; its id deletes it whole. Strategies become stale; the next `gemrag index`
    recomputes what depended on the document, with LLM calls only for what changed (cached answers stay), or
    `--rebuild` does it at once (with the models of the configuration and the model flags). `--purge` then runs
    `gemrag erase` (every copy of the text besides) and prints what it erased; it exits with code 1 while another
    process still reads old bytes. The memory must exist."""
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
        _print_purge(report.purge)
        return
    out.print(
        f"deleted document {doc['id']} ({doc['title']}, from {doc['source']}): {report.chunks} chunks, "
        f"{report.derived_nodes} derived nodes, in {report.seconds:.2f} s; LLM calls {report.llm_calls}"
    )
    if report.dependents:
        titles = ", ".join(str(d["title"]) for d in report.dependents)
        out.print(f"withdrew {len(report.dependents)} chat exchanges resting on it: {titles}")
    if report.rebuilt:
        spent = ", ".join(f"{name} ({calls} LLM calls)" for name, calls in report.rebuilt.items())
        out.print(f"rebuilt: {spent}")
    dropped = [name for name in report.withdrawn if name not in report.rebuilt]
    if dropped:
        out.print(f"[yellow]dropped builds (rebuild with gemrag index --strategy NAME):[/] {', '.join(dropped)}")
    for name, state in states.items():
        if state.state != "never built":
            out.print(f"  {name}: {state.describe()}")
    _print_purge(report.purge)


def _print_purge(purge: PurgeReport | None) -> None:
    """The erase's lines (:func:`gemrag.cli.erase.purge_lines`); exit code 1 when it is incomplete."""
    if purge is None:
        return
    for line in purge_lines(purge):
        out.print(line)
    if not purge.erasure.complete:
        raise typer.Exit(INCOMPLETE_EXIT)
