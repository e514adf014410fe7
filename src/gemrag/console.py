"""Shared terminal output for the CLI commands: the stderr console and uniform error/interrupt handling."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import typer
from rich.console import Console
from rich.text import Text

from gemrag.errors import GemragError

err = Console(stderr=True)


def fail(exc: BaseException) -> None:
    """Print ``error: <message>`` on stderr (no traceback) and exit with code 2.

    Raises:
        typer.Exit: always, with code 2.
    """
    err.print(Text.assemble(("error: ", "bold red"), str(exc)), soft_wrap=True)
    raise typer.Exit(2)


@contextmanager
def cli_errors(
    resume_hint: str = "run the same command again to resume", *, also: tuple[type[Exception], ...] = ()
) -> Iterator[None]:
    """Turn gemrag's errors into exit code 2 with a one-line message, and Ctrl-C into exit code 130 with a
    hint on how to resume (finished work is always saved before an interrupt can lose it).

    That includes :class:`~gemrag.errors.ModelCrashError`: a native crash of the local model is caught by the
    child-process check (:mod:`gemrag.models.probe`) and reported like any other error, never as a bare
    ``Segmentation fault``.

    Args:
        resume_hint: what to tell the user after Ctrl-C.
        also: further exception types reported like :class:`~gemrag.errors.GemragError` (e.g. ValueError).

    Raises:
        typer.Exit: code 2 on an error, 130 on KeyboardInterrupt.
    """
    try:
        yield
    except KeyboardInterrupt:
        err.print(f"[yellow]interrupted:[/] finished work is saved; {resume_hint}.", soft_wrap=True)
        raise typer.Exit(130) from None
    except (GemragError, *also) as exc:
        fail(exc)
