"""``gemrag mcp``: serve a memory to MCP clients over stdio (registered in :mod:`gemrag.cli.main`).

This module does not import :mod:`gemrag.cli.main` (that module imports this one), so its option types are declared
here. The MCP SDK is imported only when the command runs, so the CLI works without the ``mcp`` extra.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Annotated

import typer

from gemrag.cli.options import memory_target
from gemrag.config import load_config
from gemrag.console import cli_errors, err, fail
from gemrag.errors import GemragError
from gemrag.memory import Memory
from gemrag.store import memory_exists

__all__ = ["mcp_command"]


def mcp_command(
    memory: Annotated[
        str | None,
        typer.Option(
            "--memory",
            "-m",
            help="Memory (created if missing): a directory or a postgresql:// URL (default: GEMRAG_MEMORY).",
        ),
    ] = None,
    strategy: Annotated[
        str | None,
        typer.Option("--strategy", "-s", help="Strategy `remember` builds and the tools use (default: the config's)."),
    ] = None,
    config: Annotated[Path | None, typer.Option("--config", help="TOML config file (default ./gemrag.toml).")] = None,
    wait: Annotated[
        float,
        typer.Option("--wait", min=0.0, help="Seconds `remember` waits while another process builds this memory."),
    ] = 0.0,
) -> None:
    """Serve the memory over MCP on stdin/stdout (Model Context Protocol, stdio transport) with the tools
    `remember` (add a text and index it), `recall` (retrieved nodes with scores and sources), `ask` (an answer
    with its context) and `forget` (delete a document; with purge, erase every copy of its text). Needs gemrag's
    `mcp` extra (the MCP SDK). Only the protocol is written to stdout; errors before serving are one line on stderr
    with exit code 2."""
    try:
        from gemrag.mcp_server import MemoryTools, check_strategy, create_server
    except ImportError as exc:
        fail(GemragError(str(exc)))
    with cli_errors("start the server again"), contextlib.redirect_stdout(sys.stderr):
        if strategy:
            check_strategy(strategy)
        cfg = load_config(config, {"strategy": strategy})
        location = memory_target(memory, cfg, existing=False)
        creating = not memory_exists(location)
        mem = Memory.open(location, cfg)
        if creating:
            err.print(
                f"{mem.store.location} held no memory: created an empty one (`remember` adds to it)", soft_wrap=True
            )
    with mem:
        mem.build_wait = wait
        with cli_errors("start the server again"):
            server = create_server(MemoryTools(mem, strategy))
        server.run("stdio")
