"""``gemrag index``: add documents and build the memory, after printing the build's cost plan (registered in
:mod:`gemrag.cli.main`).

A strategy's own settings are ``--set`` items like every other setting (``--set gem.questions=3``); the flags
``--questions``, ``--eigen`` and ``--eigen-top`` of earlier releases are hidden and deprecated: they become the same
``--set gem.*`` items, with a warning.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from gemrag.cli.erase import INCOMPLETE_EXIT, purge_lines
from gemrag.cli.options import (
    NO_MODEL_FLAGS,
    ConfigFile,
    MemoryOpt,
    ModelOptions,
    Quiet,
    SetOpt,
    StrategyOpt,
    Wait,
    build_config,
    deprecated_sets,
    memory_target,
    model_options,
    open_memory,
)
from gemrag.cli.plan import confirm_plan, print_plan
from gemrag.config import Config
from gemrag.console import cli_errors, err
from gemrag.errors import InputError
from gemrag.memory import Memory
from gemrag.memory.index_plan import CONFIRM_MINUTES, IndexPlan, plan_index
from gemrag.memory.sources import read_sources, synced_directories
from gemrag.progress import rich_progress

__all__ = ["index_command", "planned"]

out = Console()


@model_options()
def index_command(
    memory: MemoryOpt = None,
    paths: Annotated[
        list[str] | None,
        typer.Argument(help=".txt/.md files or directories; '-' reads standard input; none: rebuild only."),
    ] = None,
    doc_id: Annotated[
        str | None,
        typer.Option(
            "--id",
            help="The identity of the one document given (default: a file's resolved path; standard input: none). "
            "Indexing another text under the same identity replaces the document.",
        ),
    ] = None,
    sync: Annotated[
        bool,
        typer.Option(
            "--sync", help="Keep the given directories in step: also remove the documents whose files are gone."
        ),
    ] = False,
    keep_versions: Annotated[
        bool,
        typer.Option(
            "--keep-versions",
            help="Keep the text of replaced and removed versions in the history (`gemrag info --history SOURCE`).",
        ),
    ] = False,
    chunk_tokens: Annotated[
        int | None, typer.Option(min=1, help="T: tokens per chunk (memory.chunk_tokens, default 100).")
    ] = None,
    # Deprecated, hidden (and without a help text, as the help shows none): --set gem.questions/eigen/eigen_top.
    questions: Annotated[int | None, typer.Option(min=0, hidden=True)] = None,
    eigen: Annotated[int | None, typer.Option(min=0, hidden=True)] = None,
    eigen_top: Annotated[int | None, typer.Option(min=1, hidden=True)] = None,
    strategy: StrategyOpt = None,
    set_: SetOpt = None,
    config: ConfigFile = None,
    models: ModelOptions = NO_MODEL_FLAGS,
    quiet: Quiet = False,
    wait: Wait = 0.0,
    ray: Annotated[str | None, typer.Option(help="LLM calls on Ray actors: auto, ADDRESS or local (llm.ray).")] = None,
    plan: Annotated[
        bool,
        typer.Option(
            "--plan", help="Print what the build would cost (LLM calls, tokens, minutes) and stop: nothing is written."
        ),
    ] = False,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help=f"Do not ask before a build planned over {CONFIRM_MINUTES:g} minutes.")
    ] = False,
    recalibrate: Annotated[
        bool, typer.Option("--recalibrate", help="Measure the model's speed on this machine again for the plan.")
    ] = False,
    purge: Annotated[
        bool,
        typer.Option(
            "--purge",
            help="Then erase every copy of text no current document states (what an edit or --sync removed), "
            "as `gemrag erase` does.",
        ),
    ] = False,
) -> None:
    """Read documents, chunk them and build the strategy's index: for the default, fused, MiniLM embeddings and a
    BM25 index (no LLM call); for gem, utility questions, embeddings, the graph and the eigentheme summary nodes
    (GEM-RAG section III.B.1); every strategy's build is on its page of the documentation. A document is identified
    by its source (a file's resolved path, or --id): a source whose text changed replaces its previous version (only
    its changed chunks cost LLM calls), an unchanged one costs nothing; a source whose text another document already
    holds becomes another source of it ("same content as ...": no chunk, no LLM call), and with --sync a moved or
    renamed file is a move (its document stays); prints the added / updated / unchanged (and with --sync removed)
    counts. Resumable: interrupt with Ctrl-C (or kill it) and run it again. One process builds a memory at a time:
    another one gets a one-line error (exit code 2) unless --wait.

    Before any LLM call it prints the build's cost plan: the chunks to process and, per LLM pass, the calls, prompt
    and completion tokens and minutes on this machine (the model's speed is measured once per machine; an
    endpoint's from its recorded calls). On a terminal it asks before a plan over 10 minutes (--yes does not ask; a
    script is never asked); --plan prints the plan and stops, writing nothing. A strategy's own settings are
    `--set` items: `--set gem.questions=3 --set gem.eigen=4`. Text an edit or --sync removed leaves retrieval at
    once; --purge then erases its every copy (`gemrag erase`; exit code 1 while another process reads old bytes)."""
    old = {"questions": questions, "eigen": eigen, "eigen_top": eigen_top}
    with cli_errors(), deprecated_sets("gem", old) as old_sets:
        if not paths and (doc_id is not None or sync or keep_versions):
            raise InputError("--id, --sync and --keep-versions apply to the documents given: name them (PATHS)")
        if sync and not synced_directories(paths or []):
            raise InputError("--sync keeps directories in step with the memory: give a directory")
        cfg = build_config(
            config,
            strategy=strategy,
            sets=old_sets + (set_ or []),
            models=models,
            memory={"chunk_tokens": chunk_tokens},
            ray=ray,
        )
        location = memory_target(memory, cfg, existing=False)
        sources = read_sources(paths, key=doc_id, sync=sync) if paths else []  # every file checked first
        directories = synced_directories(paths or []) if sync else []
        if plan:
            print_plan(out, planned(location, cfg, sources, directories, recalibrate))
            return
        with open_memory(location, cfg, None if quiet else rich_progress(err)) as mem, mem.building(wait):
            # MemoryBusyError (another builder) is a GemragError: one line, exit code 2, before any plan is printed
            mem.build_wait = wait
            cost = plan_index(mem, sources=sources, sync=directories, recalibrate=recalibrate, announce=_calibrating)
            print_plan(err, cost)
            if not confirm_plan(cost, yes=yes, interactive=_interactive(), ask=typer.confirm):
                err.print("not indexed: nothing was changed (--yes skips the question)")
                raise typer.Exit(1)
            if paths:
                added = mem.put(sources, sync=directories, keep_versions=keep_versions)
                err.print(f"{len(sources)} document(s) read: {added.describe(removed=sync)}")
                for note in filter(None, (c.note() for c in added.changes)):
                    err.print(note, markup=False, highlight=False)
            report = mem.index()
            erased = mem.erase() if purge else None
    u = report.usage
    out.print(
        f"indexed {report.documents} document(s): {report.chunks} chunks ({report.new_chunks} new), "
        f"{report.summary_nodes} summary nodes in {report.seconds:.1f} s; LLM calls {report.llm_calls}, "
        f"tokens {u.prompt_tokens} prompt + "
        f"{u.completion_tokens} completion, {u.embedding_tokens} embedding tokens, {u.cached} cache hits"
        + (f"; [yellow]{report.failures} recorded failure(s)[/] (see gemrag info)" if report.failures else "")
    )
    if erased is not None:
        for line in purge_lines(erased):
            out.print(line)
        if not erased.erasure.complete:
            raise typer.Exit(INCOMPLETE_EXIT)


def _interactive() -> bool:
    """Whether standard input is a terminal (a person can answer a question)."""
    return sys.stdin.isatty()


def _calibrating(model: str) -> None:
    err.print(f"measuring the speed of {model} on this machine for the plan (once per model and machine)")


def planned(location: str, cfg: Config, sources: list[Any], sync: list[str], recalibrate: bool) -> IndexPlan:
    """``gemrag index --plan``: the plan of indexing ``sources`` into the memory at ``location``, which is only read
    (a directory that does not exist yet is planned as a new, empty memory in a temporary directory)."""
    opened = location
    with contextlib.ExitStack() as stack:
        if not location.startswith(("postgresql://", "postgres://")) and not Path(location, "memory.sqlite").exists():
            opened = str(Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="gemrag-plan-"))) / "m")
        mem = stack.enter_context(Memory.open(opened, cfg))
        cost = plan_index(mem, sources=sources, sync=sync, recalibrate=recalibrate, announce=_calibrating)
    return cost.model_copy(update={"memory": location})
