"""``gemrag mcp``: serve a memory to MCP clients over stdio (registered in :mod:`gemrag.cli.main`).

The options every command that opens a memory shares (``--memory``, ``--config``, ``--set``, the model flags,
``--wait``) come from :mod:`gemrag.cli.options`; its own are declared here. The MCP SDK is imported only when the
command runs, so the CLI works without the ``mcp`` extra.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Annotated

import typer

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
from gemrag.console import cli_errors, err, fail
from gemrag.errors import GemragError
from gemrag.store import memory_exists

__all__ = ["mcp_command"]


@model_options()
def mcp_command(
    memory: MemoryOpt = None,
    strategy: Annotated[
        str | None,
        typer.Option("--strategy", "-s", help="Strategy `remember` builds and the tools use (default: the config's)."),
    ] = None,
    config: ConfigFile = None,
    set_: SetOpt = None,
    models: ModelOptions = NO_MODEL_FLAGS,
    wait: Wait = 0.0,
) -> None:
    """Serve the memory over MCP on stdin/stdout (Model Context Protocol, stdio transport) with the tools
    `remember` (add a text and index it), `recall` (retrieved nodes with scores and sources), `ask` (an answer
    with its context) and `forget` (delete a document; with purge, erase every copy of its text). Needs gemrag's
    `mcp` extra (the MCP SDK). A memory that does not exist yet is created empty; --wait is how long `remember`
    waits while another process builds it. Only the protocol is written to stdout; errors before serving are one
    line on stderr with exit code 2."""
    try:
        from gemrag.mcp_server import MemoryTools, check_strategy, create_server
    except ImportError as exc:
        fail(GemragError(str(exc)))
    with cli_errors("start the server again"), contextlib.redirect_stdout(sys.stderr):
        if strategy:
            check_strategy(strategy)
        cfg = build_config(config, strategy=strategy, sets=set_, models=models)
        location = memory_target(memory, cfg, existing=False)
        creating = not memory_exists(location)
        mem = open_memory(location, cfg, None)
        if creating:
            err.print(
                f"{mem.store.location} held no memory: created an empty one (`remember` adds to it)", soft_wrap=True
            )
    with mem:
        mem.build_wait = wait
        with cli_errors("start the server again"):
            server = create_server(MemoryTools(mem, strategy))
        server.run("stdio")
