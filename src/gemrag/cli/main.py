"""The ``gemrag`` application: it creates :data:`app` and registers the commands, one module each.

Commands: ``index``, ``ask``, ``info``, ``demo``, ``eval``, ``config``, ``delete``, ``erase``, ``copy``, ``chat``,
``mcp``, ``view``, ``serve``, ``doctor`` and the ``pg`` group. ``--set section.key=value`` (any setting, including a
strategy's own section such as ``raptor.summary_tokens=200`` or ``gem.questions=3``) overrides the model and endpoint
flags, which override ``GEMRAG_*`` environment variables, which override the config file (see :mod:`gemrag.config`).
"""

from __future__ import annotations

from typing import Annotated

import typer

from gemrag.cli.ask import ask_command
from gemrag.cli.chat import chat_command
from gemrag.cli.config import config_command
from gemrag.cli.copy import copy_command
from gemrag.cli.delete import delete_command
from gemrag.cli.demo import demo_command
from gemrag.cli.doctor import doctor_command
from gemrag.cli.erase import erase_command
from gemrag.cli.eval import eval_command
from gemrag.cli.index import index_command
from gemrag.cli.info import info_command
from gemrag.cli.mcp import mcp_command
from gemrag.cli.pg import pg_app
from gemrag.cli.serve import serve_command
from gemrag.cli.view import view_command
from gemrag.console import OneLineErrors
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


app.command("index", short_help="Add documents and build the memory (prints the cost plan first).")(index_command)
app.command("ask", short_help="Answer a question from the memory, citing the passages used.")(ask_command)
app.command("info", short_help="Show what a memory holds and what building it cost.")(info_command)
app.command("demo", short_help="Index the shipped story and answer its questions (a demo).")(demo_command)
app.command("eval", short_help="Compare strategies side by side on a dataset.")(eval_command)
app.command("config", short_help="Print the effective settings and where they came from.")(config_command)
app.command("delete", short_help="Delete a document and everything made from it.")(delete_command)
app.command("erase", short_help="Erase every byte of text no current document states.")(erase_command)
app.command("copy", short_help="Copy a memory between SQLite and PostgreSQL.")(copy_command)
app.command("chat", short_help="Chat with a character that remembers (a memory).")(chat_command)
app.command("mcp", short_help="Serve a memory to MCP clients on stdin/stdout.")(mcp_command)
app.command("view", short_help="Write a memory's graph as one offline HTML page.")(view_command)
app.command("serve", short_help="Serve memories over HTTP (REST API and a web page).")(serve_command)
app.command("doctor", short_help="Check the install, the models and this CPU.")(doctor_command)
app.add_typer(pg_app, name="pg", short_help="Run a local PostgreSQL + pgvector for a memory.")
