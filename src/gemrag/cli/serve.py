"""``gemrag serve``: the HTTP server (:mod:`gemrag.server`) under uvicorn (registered in :mod:`gemrag.cli.main`).

Needs the ``serve`` extra (FastAPI, uvicorn, python-multipart). The options every command that opens a memory shares
(``--memory``, ``--config``, ``--set``, the model flags) come from :mod:`gemrag.cli.options`, so the served memories
are opened with them; the server's own options are declared here.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import socket
from pathlib import Path
from typing import Annotated

import typer

from gemrag.cli.options import (
    NO_MODEL_FLAGS,
    ConfigFile,
    MemoryOpt,
    ModelOptions,
    SetOpt,
    build_config,
    check_settings,
    model_options,
)
from gemrag.config import DEFAULT_STRATEGY, memory_location
from gemrag.console import cli_errors, err
from gemrag.errors import ConfigError, GemragError
from gemrag.store import Location, as_location, memory_exists, memory_root

__all__ = ["serve_command"]


def is_loopback(host: str) -> bool:
    """True when ``host`` names only this machine (``localhost``, 127.0.0.0/8, ``::1``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def served_root(location: str) -> Location:
    """The root of the served namespaces at ``location`` (``--memory``, or the configured memory): a directory or a
    PostgreSQL URL whose schema prefixes the namespaces' schemas.

    Raises:
        ConfigError: ``location`` is malformed or a file, or a directory that is itself a memory (its namespaces
            would be nested inside that memory's directory).
    """
    root = as_location(location)
    try:
        memory_root(root)
    except GemragError as exc:
        raise ConfigError(f"--memory {exc}") from None
    if isinstance(root, Path) and memory_exists(root):
        raise ConfigError(
            f"--memory {location} is a memory itself; gemrag serve keeps one memory per namespace under it "
            "(DIR/NAMESPACE/): give a directory to hold them"
        )
    return root


def check_port(host: str, port: int) -> None:
    """Check that this process could listen on ``host:port`` (bind a socket as uvicorn does, then close it), so a port
    in use is a one-line error before anything starts.

    Raises:
        ConfigError: the host does not resolve, or the address cannot be bound (in use, or not this machine's).
    """
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        raise ConfigError(f"--host {host!r} does not resolve to an address of this machine ({exc.strerror})") from None
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn: a TIME_WAIT port is free
        try:
            probe.bind(address)
        except OSError as exc:
            raise ConfigError(
                f"cannot listen on {host}:{port} ({exc.strerror}): another process may be using the port; "
                "choose another --port"
            ) from None


@model_options()
def serve_command(
    memory: MemoryOpt = None,
    host: Annotated[str, typer.Option(help="Interface to listen on (default loopback only).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.", min=1, max=65535)] = 8765,
    api_key: Annotated[
        str | None,
        typer.Option("--api-key", help="One key allowed on every namespace (a key file keeps keys out of `ps`)."),
    ] = None,
    api_keys: Annotated[
        Path | None,
        typer.Option("--api-keys", help='JSON or TOML file mapping keys to namespaces: {"KEY": ["ns1", "ns2"]}.'),
    ] = None,
    allow_open: Annotated[
        bool,
        typer.Option(
            "--allow-open", help="Serve a non-loopback host without API keys (anyone reaching it can use it)."
        ),
    ] = False,
    config: ConfigFile = None,
    strategy: Annotated[
        str | None, typer.Option(help=f"Default strategy of every namespace (default {DEFAULT_STRATEGY}).")
    ] = None,
    set_: SetOpt = None,
    models: ModelOptions = NO_MODEL_FLAGS,
) -> None:
    """Serve the memories under --memory over HTTP (FastAPI; OpenAPI at /openapi.json, docs at /docs; a web page
    to work with them at /): add documents, background index jobs with progress, retrieve, ask, stats, delete.
    Each namespace is its own memory: DIR/NAMESPACE/ under a directory (created if missing, and not itself a
    memory), or the schema NAME_NAMESPACE of a postgresql://...?schema=NAME URL, shared by every server given the
    URL. Every namespace's memory is opened with the configuration, --set items and model flags given here. An API
    key reaches only the namespaces it is given. Without keys the server only listens on loopback unless
    --allow-open."""
    with cli_errors(resume_hint="start the server again"):
        try:
            import uvicorn

            if importlib.util.find_spec("python_multipart") is None:  # FastAPI's file uploads; it raises
                raise ImportError("No module named 'python_multipart'")  # a RuntimeError at app creation
            from gemrag.server import KeyRing, create_app, load_key_file
        except ImportError as exc:
            raise ConfigError(f"gemrag serve needs the serve extra: pip install 'gemrag[serve]' ({exc})") from None
        cfg = build_config(config, strategy=strategy, sets=set_, models=models)
        check_settings(cfg)  # the namespaces' memories are opened later, at their first request
        root = served_root(memory_location(memory, cfg))
        grants: dict[str, list[str]] = load_key_file(api_keys) if api_keys else {}
        if api_key is not None and not api_key.strip():
            raise ConfigError("--api-key is empty; give a key (or none, for a loopback server without keys)")
        if api_key:
            grants[api_key] = ["*"]
        keys = KeyRing(grants) if grants else None
        if keys is None and not is_loopback(host) and not allow_open:
            raise ConfigError(
                f"refusing to serve {host} without API keys: pass --api-key/--api-keys, or --allow-open to "
                "let anyone who can reach it read and write every namespace"
            )
        check_port(host, port)
        app = create_app(root, cfg, keys=keys)
    if keys is None:
        err.print(
            f"[yellow]no API keys configured:[/] anyone who can reach {host}:{port} can use every namespace"
            + (" (listening on loopback only)" if is_loopback(host) else ""),
            soft_wrap=True,
        )
    else:
        err.print(f"{len(keys)} API key(s) configured; each reaches only its namespaces")
    err.print(f"serving the memories under {root} on http://{host}:{port} (web page at /, API docs at /docs)")
    uvicorn.run(app, host=host, port=port, log_level="info")
