"""The ``gemrag`` command line: a thin layer over :class:`gemrag.memory.Memory`.

Commands: ``index``, ``ask``, ``info``, ``demo``, ``doctor``, ``eval``, ``delete``, ``chat``, ``mcp``, ``view``,
``serve``. ``--set section.key=value`` (any setting, including a strategy's own section such as
``raptor.summary_tokens=200``) overrides the model and endpoint flags, which override ``GEMRAG_*`` environment
variables, which override the config file (see :mod:`gemrag.config`).
"""

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from gemrag.answers.answer import Answer
from gemrag.answers.answering import LETTERS
from gemrag.answers.provenance import cited_sources, describe_answer, describe_hits, source_label
from gemrag.cli.chat import chat_command
from gemrag.cli.config import config_command
from gemrag.cli.copy import copy_command
from gemrag.cli.delete import delete_command
from gemrag.cli.doctor import doctor_command
from gemrag.cli.info import info_command
from gemrag.cli.mcp import mcp_command
from gemrag.cli.options import (
    ConfigFile,
    EmbModel,
    EmbProvider,
    EmbUrl,
    ExistingMemory,
    LLMModel,
    LLMProvider,
    LLMUrl,
    MemoryDir,
    Quiet,
    SetOpt,
    StrategyOpt,
    Wait,
    build_config,
    memory_target,
)
from gemrag.cli.pg import pg_app
from gemrag.cli.plan import confirm_plan, print_plan
from gemrag.cli.serve import serve_command
from gemrag.cli.view import view_command
from gemrag.config import Config
from gemrag.console import OneLineErrors, cli_errors, err
from gemrag.errors import GemragError, InputError
from gemrag.eval.cli import eval_command
from gemrag.memory import Memory
from gemrag.memory.index_plan import CONFIRM_MINUTES, IndexPlan, plan_index
from gemrag.memory.sources import read_sources, synced_directories
from gemrag.models.factory import check_model_settings
from gemrag.progress import rich_progress
from gemrag.strategies import check_config
from gemrag.version import package_version

app = typer.Typer(
    help="gemrag: long-term graph memory for LLMs (GEM-RAG). Index documents, then ask questions.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    cls=OneLineErrors,
    # Help paragraphs are wrapped by typer to the terminal (rich markup mode keeps a docstring's line breaks in the
    # command list, and takes "[hlgraph]" for a style); markdown mode also shows ``code`` as code. A literal
    # "<name>" would be read as HTML: help texts write placeholders in capitals (DIR/NAMESPACE/).
    rich_markup_mode="markdown",
)
out = Console()


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"gemrag {package_version()}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print gemrag's version and exit."),
    ] = False,
) -> None:
    """gemrag: long-term graph memory for LLMs (GEM-RAG). Index documents, then ask questions."""


def _open(memory: str, config: Config, quiet: bool) -> Memory:
    return Memory.open(memory, config, progress=None if quiet else rich_progress(err))


@app.command(short_help="Add documents and build the memory (prints the cost plan first).")
def index(
    memory: MemoryDir = None,
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
    questions: Annotated[int | None, typer.Option(min=0, help="m: utility questions per chunk (default 5).")] = None,
    eigen: Annotated[int | None, typer.Option(min=0, help="k: eigenvectors summarized (default 2).")] = None,
    eigen_top: Annotated[int | None, typer.Option(min=1, help="e: top components per eigenvector (default 5).")] = None,
    strategy: StrategyOpt = None,
    set_: SetOpt = None,
    config: ConfigFile = None,
    llm_provider: LLMProvider = None,
    llm_model: LLMModel = None,
    llm_base_url: LLMUrl = None,
    embedder_provider: EmbProvider = None,
    embedder_model: EmbModel = None,
    embedder_base_url: EmbUrl = None,
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
) -> None:
    """Read documents, chunk them, write utility questions, embed, build the graph and the eigentheme
    summary nodes (GEM-RAG section III.B.1). A document is identified by its source (a file's resolved path, or
    --id): a source whose text changed replaces its previous version (only its changed chunks cost LLM calls), an
    unchanged one costs nothing; a source whose text another document already holds becomes another source of it
    ("same content as ...": no chunk, no LLM call), and with --sync a moved or renamed file is a move (its
    document stays); prints the added / updated / unchanged (and with --sync removed) counts.
    Resumable: interrupt with Ctrl-C (or kill it) and run it again. One process builds a memory at a time:
    another one gets a one-line error (exit code 2) unless --wait.

    Before any LLM call it prints the build's cost plan: the chunks to process and, per LLM pass, the calls, prompt
    and completion tokens and minutes on this machine (the model's speed is measured once per machine; an
    endpoint's from its recorded calls). On a terminal it asks before a plan over 10 minutes (--yes does not ask; a
    script is never asked); --plan prints the plan and stops, writing nothing."""
    gem = {"questions": questions, "eigen": eigen, "eigen_top": eigen_top}
    with cli_errors():
        if not paths and (doc_id is not None or sync or keep_versions):
            raise InputError("--id, --sync and --keep-versions apply to the documents given: name them (PATHS)")
        if sync and not synced_directories(paths or []):
            raise InputError("--sync keeps directories in step with the memory: give a directory")
        cfg = build_config(
            config,
            gem,
            strategy,
            set_,
            llm_provider=llm_provider,
            llm_model=llm_model,
            llm_base_url=llm_base_url,
            embedder_provider=embedder_provider,
            embedder_model=embedder_model,
            embedder_base_url=embedder_base_url,
            llm_ray=ray,
            memory_overrides={"chunk_tokens": chunk_tokens},
        )
        location = memory_target(memory, cfg, existing=False)
        sources = read_sources(paths, key=doc_id, sync=sync) if paths else []  # every file checked first
        directories = synced_directories(paths or []) if sync else []
        if plan:
            print_plan(out, planned(location, cfg, sources, directories, recalibrate))
            return
        with _open(location, cfg, quiet) as mem, mem.building(wait):
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
    u = report.usage
    out.print(
        f"indexed {report.documents} document(s): {report.chunks} chunks ({report.new_chunks} new), "
        f"{report.summary_nodes} summary nodes in {report.seconds:.1f} s; LLM calls {report.llm_calls}, "
        f"tokens {u.prompt_tokens} prompt + "
        f"{u.completion_tokens} completion, {u.embedding_tokens} embedding tokens, {u.cached} cache hits"
        + (f"; [yellow]{report.failures} recorded failure(s)[/] (see gemrag info)" if report.failures else "")
    )


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


@app.command(short_help="Answer a question from the memory, citing the passages used.")
def ask(
    question: Annotated[str, typer.Argument(help="The question.")],
    memory: ExistingMemory = None,
    budget: Annotated[
        int | None,
        typer.Option(
            min=1, help="B: context nodes to retrieve (default: memory.budget, 4; for remem: remem.qa_top_k, 5)."
        ),
    ] = None,
    choices: Annotated[str | None, typer.Option(help="Multiple-choice options separated by '|'.")] = None,
    show_context: Annotated[bool, typer.Option("--show-context", help="Print the full context texts.")] = False,
    retrieve_only: Annotated[bool, typer.Option("--retrieve-only", help="Only retrieve; no LLM call.")] = False,
    search: Annotated[
        str | None, typer.Option(help="gem search: best_first (default), rank (Algorithm 1), fused.")
    ] = None,
    strategy: StrategyOpt = None,
    build_missing: Annotated[
        bool, typer.Option("--build-missing", help="Build the strategy first if it was never built in this memory.")
    ] = False,
    set_: SetOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (never streamed).")] = False,
    stream: Annotated[
        bool | None,
        typer.Option(
            "--stream/--no-stream",
            help="Print the answer as the model writes it (default: when standard output is a terminal). "
            "A multiple-choice answer is printed whole.",
        ),
    ] = None,
    config: ConfigFile = None,
    llm_provider: LLMProvider = None,
    llm_model: LLMModel = None,
    llm_base_url: LLMUrl = None,
    embedder_provider: EmbProvider = None,
    embedder_model: EmbModel = None,
    embedder_base_url: EmbUrl = None,
) -> None:
    """Retrieve a context for QUESTION (GEM-RAG section III.B.2, Algorithm 1) and answer it, citing the context
    passages the answer rests on ([n] markers; the sources are listed under the answer; `--set answer.cite=false`
    turns citing off). The context table's source column names where each node comes from: document, chunk number
    and character span [start:end). The memory must exist (`gemrag index` makes it); asking changes nothing but the
    model caches and the usage log.

    On a terminal the answer is printed as the model writes it (--no-stream waits for the whole answer), after the
    retrieval and any build (--build-missing shows its progress bars on standard error first), so a progress bar
    and the answer never share the screen at once. A streamed answer shows its [n] markers as the model writes
    them, also one naming no context passage; the sources under it count such markers as dropped, as they are
    under a whole answer (whose text has them removed)."""
    with cli_errors("ask again", also=(ValueError,)):
        cfg = build_config(
            config,
            {"search": search},
            strategy,
            set_,
            llm_provider=llm_provider,
            llm_model=llm_model,
            llm_base_url=llm_base_url,
            embedder_provider=embedder_provider,
            embedder_model=embedder_model,
            embedder_base_url=embedder_base_url,
            memory_overrides={"budget": budget},
        )
        opts = [c.strip() for c in choices.split("|")] if choices is not None else None
        if opts is not None and not 2 <= len(opts) <= len(LETTERS):
            raise ValueError(
                f"--choices {choices!r} gives {len(opts)} option(s); give 2 to {len(LETTERS)} separated by '|'"
            )
        if as_json and stream:
            raise ValueError("--json prints one JSON document and never streams: give --json or --stream, not both")
        streamed = streams(stream, as_json, out.is_terminal) and opts is None and not retrieve_only
        with _open(memory_target(memory, cfg, existing=True), cfg, not build_missing) as mem:
            if retrieve_only:
                hits, answer = mem.retrieve(question, budget, build=build_missing), None
            elif streamed:
                answer = _print_stream(mem.ask_stream(question, None, budget, build=build_missing))
                hits = answer.hits
            else:
                answer = mem.ask(question, opts, budget, build=build_missing)
                hits = answer.hits
            if as_json:
                name = mem.strategy.name
                payload: dict[str, Any] = (
                    describe_answer(mem.store, answer, name).model_dump(mode="json")
                    if answer is not None
                    else {
                        "answer": None,
                        "choice": None,
                        "retrieval_seconds": None,
                        "strategy": name,
                        "context": [n.model_dump(mode="json") for n in describe_hits(mem.store, hits, name)],
                    }
                )
                out.print_json(json.dumps(payload))
                return
    if answer is not None:
        if not streamed:
            letter = f"({'ABCDEFGHIJ'[answer.choice]}) " if answer.choice is not None else ""
            out.print(f"[bold]answer:[/] {escape(letter + answer.text)}")
        sources = cited_sources(answer)
        if sources:
            out.print("[bold]sources:[/]")
            for line in sources:
                out.print(f"  {escape(line)}")
    table = Table("rank", "id", "kind", "score", "source", "text", title="context")
    for h in hits:
        text = h.text if show_context else (h.text[:100] + ("…" if len(h.text) > 100 else ""))
        table.add_row(
            str(h.rank + 1), str(h.node_id), h.kind, f"{h.score:.3f}", escape(source_label(h.provenance)), escape(text)
        )
    out.print(table)


def streams(flag: bool | None, as_json: bool, terminal: bool) -> bool:
    """Whether ``gemrag ask`` prints its answer as the model writes it: never with ``--json``; else as ``--stream`` /
    ``--no-stream`` say, and without either when standard output is a terminal (``terminal``)."""
    if as_json:
        return False
    return terminal if flag is None else flag


def _print_stream(stream: Iterator[str | Answer]) -> Answer:
    """Print ``answer: `` and each piece of ``stream`` (:meth:`Memory.ask_stream`) on standard output as it comes
    (as plain text: no markup, no highlighting, no wrapping inserted), then a newline; closes the stream (Ctrl-C
    stops the generation). Returns the final Answer.

    Raises:
        GemragError: the LLM failed.
    """
    answer: Answer | None = None
    with contextlib.closing(stream):
        out.print("[bold]answer:[/] ", end="")
        try:
            for item in stream:
                if isinstance(item, str):
                    out.print(item, end="", markup=False, highlight=False, soft_wrap=True)
                else:
                    answer = item
        finally:
            out.print()  # the answer's line ends, also before an error or an interruption is reported
    if answer is None:
        raise GemragError("the answer stream ended without its answer")
    return answer


app.command("info", short_help="Show what a memory holds and what building it cost.")(info_command)


@app.command(short_help="Index the shipped story and answer its questions (a demo).")
def demo(
    memory: Annotated[
        str | None,
        typer.Option("--memory", "-m", help="Where to keep the demo memory: a directory or a postgresql:// URL."),
    ] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Answer only the first N questions.")] = None,
    config: ConfigFile = None,
    llm_model: LLMModel = None,
    set_: SetOpt = None,
    quiet: Quiet = False,
) -> None:
    """The main job on the shipped QuALITY story: index it (cached after the first run), answer all of its
    multiple-choice questions with the embedded models, print each answer and the accuracy."""
    from gemrag.cli.demo import run_demo

    with cli_errors("run `gemrag demo` again to resume"):
        cfg = build_config(config, None, None, set_, llm_model=llm_model)
        check_config(cfg)  # everything checked before the demo memory is created
        check_model_settings(cfg.llm, cfg.embedder)
        if memory is not None:
            memory = memory_target(memory, cfg, existing=False)
        code = run_demo(cfg, memory, limit, out, None if quiet else rich_progress(err))
    raise typer.Exit(code)


app.command("eval", short_help="Compare strategies side by side on a dataset.")(eval_command)
app.command("config", short_help="Print the effective settings and where they came from.")(config_command)
app.command("delete", short_help="Delete a document and everything made from it.")(delete_command)
app.command("copy", short_help="Copy a memory between SQLite and PostgreSQL.")(copy_command)
app.command("chat", short_help="Chat with a character that remembers (a memory).")(chat_command)
app.command("mcp", short_help="Serve a memory to MCP clients on stdin/stdout.")(mcp_command)
app.command("view", short_help="Write a memory's graph as one offline HTML page.")(view_command)
app.command("serve", short_help="Serve memories over HTTP (REST API and a web page).")(serve_command)
app.command("doctor", short_help="Check the install, the models and this CPU.")(doctor_command)
app.add_typer(pg_app, name="pg", short_help="Run a local PostgreSQL + pgvector for a memory.")
