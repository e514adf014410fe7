"""``gemrag view``: write a memory's graph as one self-contained offline HTML page (registered in
:mod:`gemrag.cli.main`; the page is built by :mod:`gemrag.view`).

The options every command that opens a memory shares (``--memory``, ``--config``, ``--set``, the model flags) come
from :mod:`gemrag.cli.options`; its own are declared here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from gemrag.cli.options import (
    NO_MODEL_FLAGS,
    ConfigFile,
    MemoryOpt,
    ModelOptions,
    SetOpt,
    build_config,
    check_settings,
    memory_target,
    model_options,
    open_memory,
)
from gemrag.console import cli_errors
from gemrag.errors import ConfigError, InputError
from gemrag.store import location_name, open_store
from gemrag.strategies import available
from gemrag.view import RetrievalPath, retrieval_path, view_data, write_html

out = Console()

__all__ = ["view_command"]


@model_options()
def view_command(
    memory: MemoryOpt = None,
    output: Annotated[Path, typer.Option("--output", "-o", help="The HTML file to write.")] = Path("memory.html"),
    question: Annotated[
        str | None, typer.Option("--question", "-q", help="Highlight the path this question's retrieval takes.")
    ] = None,
    strategy: Annotated[
        str | None, typer.Option("--strategy", "-s", help="Whose graph to show (default: the configured strategy).")
    ] = None,
    min_weight: Annotated[
        float | None,
        typer.Option(
            "--min-weight",
            min=0.0,
            help="Draw the edges of at least this weight (default: the strongest 3 per node on average, plus "
            "each node's strongest edge).",
        ),
    ] = None,
    budget: Annotated[int | None, typer.Option("--budget", "-b", min=1, help="Nodes the retrieval returns.")] = None,
    config: ConfigFile = None,
    set_: SetOpt = None,
    models: ModelOptions = NO_MODEL_FLAGS,
) -> None:
    """Write the memory graph of a strategy as one offline HTML page (no network needed to open it): chunk nodes
    coloured by their dominant eigentheme, summary nodes distinct, edges above a weight threshold, a search box, a
    node's text and utility questions on click, and GEM's spectrum (eigenvalues, Remark 2 estimate, Lambda).
    With --question, the retrieval's path is highlighted (q*, the visited nodes in order); that needs the
    embedder only (no LLM call for gem). The memory must exist; it is opened read-only and not changed."""
    with cli_errors():
        cfg = build_config(config, sets=set_, models=models)
        check_settings(cfg)  # also when no --question opens the memory with them
        location = memory_target(memory, cfg, existing=True)
    with cli_errors(also=(ValueError, KeyError)):
        if output.is_dir() or not output.parent.is_dir():
            what = "is a directory" if output.is_dir() else f"needs the directory {output.parent}, which does not exist"
            raise InputError(f"--output {output} {what}; give the HTML file to write")
        if question is not None and not question.strip():
            raise ValueError("--question is empty; give the question whose retrieval path to show")
        name = strategy or cfg.strategy
        if name not in available():
            raise ConfigError(f"unknown strategy {name!r}; choose one of {', '.join(available())}")
        path: RetrievalPath | None = None
        store = open_store(location, readonly=True)
        try:
            chunked = store.get_meta("chunk_tokens")
            if question is not None:
                # nothing is chunked here: the memory's own chunk size, so no --config is needed just for it
                if chunked is not None:
                    cfg = cfg.model_copy(update={"memory": cfg.memory.model_copy(update={"chunk_tokens": chunked})})
                with open_memory(location, cfg, None, readonly=True) as mem:
                    name = mem.get_strategy(name).name
                    path = retrieval_path(question, name, mem.retrieve(question, budget, strategy=name))
            data = view_data(store, name, min_weight=min_weight, config=cfg, path=path)
        finally:
            store.close()
        target = write_html(
            data,
            output,
            f"gemrag memory · {location_name(location)} · {name}",
        )
    out.print(
        f"wrote {target}: {len(data.nodes)} nodes, {len(data.edges)} of {data.edges_total} edges "
        f"(weight >= {data.threshold:.3f})" + (f"; path of {len(path.steps)} nodes" if path else "")
    )
    if data.message:
        out.print(f"[yellow]{data.message}[/]")
