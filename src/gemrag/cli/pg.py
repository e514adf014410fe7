"""``gemrag pg``: a local PostgreSQL (with pgvector) for trying a PostgreSQL memory without installing a server.

It runs the PostgreSQL 16 that the ``pgserver`` wheel ships (``pip install pgserver``), as any user (root included:
pgserver then runs it as an unprivileged user), listening on a Unix socket in its data directory only (no TCP
port, no network). ``gemrag pg start`` starts it (or finds it running) and prints the memory URL to use;
``gemrag pg stop`` stops it. The data directory defaults to ``<cache>/postgres`` (``~/.cache/gemrag/postgres``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from gemrag.console import cli_errors
from gemrag.errors import GemragError
from gemrag.models.llama.weights import default_cache_dir

out = Console()
pg_app = typer.Typer(help="A local PostgreSQL + pgvector (the pgserver wheel) for a PostgreSQL memory.")

DataDir = Annotated[
    Path | None,
    typer.Option(
        "--dir", help="PostgreSQL's data directory (default: postgres/ in the cache, ~/.cache/gemrag/postgres)."
    ),
]
Schema = Annotated[str, typer.Option("--schema", help="The memory's schema in the printed URL.")]


def _server(directory: Path | None, *, keep: bool) -> Any:
    """The pgserver server of ``directory`` (started when not running).

    Raises:
        GemragError: pgserver is not installed, or ``directory`` is a file.
    """
    data = directory or default_cache_dir().parent / "postgres"
    if data.exists() and not data.is_dir():
        raise GemragError(f"--dir {data} is not a directory; give PostgreSQL's data directory")
    try:
        import pgserver
    except ImportError as exc:
        raise GemragError("gemrag pg needs the pgserver wheel: pip install pgserver") from exc
    data.mkdir(parents=True, exist_ok=True)
    return pgserver.get_server(data, cleanup_mode=None if keep else "stop")


def memory_url(server_uri: str, schema: str) -> str:
    """The memory URL for ``schema`` on a pgserver server (its URI names the socket directory as ``host=``)."""
    return f"{server_uri.replace('postgres:@', 'postgres@', 1)}&schema={schema}"


@pg_app.command("start")
def start(directory: DataDir = None, schema: Schema = "gemrag") -> None:
    """Start the local PostgreSQL (or find it running) and print the memory URL: pass it as --memory or export it
    as GEMRAG_MEMORY. It keeps running after this command; `gemrag pg stop` stops it."""
    with cli_errors():
        server = _server(directory, keep=True)
        out.print(memory_url(server.get_uri(), schema), soft_wrap=True)


@pg_app.command("stop")
def stop(directory: DataDir = None) -> None:
    """Stop the local PostgreSQL started by `gemrag pg start` (its data stays in the data directory)."""
    with cli_errors():
        server = _server(directory, keep=False)
        server.cleanup()
        out.print("stopped")
