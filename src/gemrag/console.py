"""Shared terminal output for the CLI commands: the stderr console and uniform error/interrupt handling.

The CLI's contract (tested as a whole by ``tests/test_cli_contract.py``): a bad value of any command or option is
ONE line ``error: <what was wrong and what is accepted>`` on stderr with exit code 2, a warning is ONE line
``warning: ...``, and no Python traceback is ever printed for a user's mistake.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer
from rich.console import Console
from rich.text import Text
from typer.core import TyperGroup

from gemrag import tracing
from gemrag.errors import GemragError

# click's exception classes, found through typer's public BadParameter (typer vendors click in recent versions)
_USAGE_CLASSES = {c.__name__: c for c in typer.BadParameter.__mro__}
ClickException: type[Exception] = _USAGE_CLASSES["ClickException"]
UsageError: type[Exception] = _USAGE_CLASSES["UsageError"]

err = Console(stderr=True)


def fail(exc: BaseException) -> None:
    """Print ``error: <message>`` on stderr (no traceback) and exit with code 2.

    Raises:
        typer.Exit: always, with code 2.
    """
    err.print(Text.assemble(("error: ", "bold red"), one_line(str(exc))), soft_wrap=True)
    raise typer.Exit(2)


@contextmanager
def cli_errors(
    resume_hint: str = "run the same command again to resume", *, also: tuple[type[Exception], ...] = ()
) -> Iterator[None]:
    """Turn gemrag's errors into exit code 2 with a one-line message, and Ctrl-C into exit code 130 with a
    hint on how to resume (finished work is always saved before an interrupt can lose it).

    That includes :class:`~gemrag.errors.ModelCrashError`: a native crash of the local model is caught by the
    child-process check (:mod:`gemrag.models.llama.probe`) and reported like any other error, never as a bare
    ``Segmentation fault``.

    Args:
        resume_hint: what to tell the user after Ctrl-C.
        also: further exception types reported like :class:`~gemrag.errors.GemragError` (e.g. ValueError).

    Raises:
        typer.Exit: code 2 on an error, 130 on KeyboardInterrupt.
    """
    handled: tuple[type[Exception], ...] = (GemragError, *also)
    try:
        yield
    except KeyboardInterrupt:
        err.print(f"[yellow]interrupted:[/] finished work is saved; {resume_hint}.", soft_wrap=True)
        raise typer.Exit(130) from None
    except handled as exc:
        fail(exc)


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (newlines included) made one space."""
    return " ".join(str(text).split())


def show_warning(
    message: Warning | str, category: type[Warning], filename: str, lineno: int, file: Any = None, line: Any = None
) -> None:
    """A ``warnings.showwarning`` that prints ``warning: <message>`` on one line of stderr (no source line)."""
    err.print(Text.assemble(("warning: ", "bold yellow"), one_line(str(message))), soft_wrap=True)


def given_value(args: Any, opts: list[str]) -> str | None:
    """The value given on the command line ``args`` to the option named ``opts`` (the last one), if any."""
    words = [str(a) for a in (args if args is not None else sys.argv[1:])]
    found = None
    for i, word in enumerate(words):
        for opt in opts:
            if word == opt and i + 1 < len(words):
                found = words[i + 1]
            elif word.startswith(opt + "="):
                found = word[len(opt) + 1 :]
    return found


def usage_message(exc: Exception, args: Any = None) -> str:
    """One line for a command-line usage error (a click exception): the command, click's message, the value
    given (for a bad option value), and for an unknown command the commands there are."""
    message = one_line(exc.format_message())  # type: ignore[attr-defined]
    ctx = getattr(exc, "ctx", None)
    if isinstance(exc, UsageError) and ctx is not None and message.startswith("No such command"):
        command = ctx.command
        if hasattr(command, "list_commands"):
            message += f" Commands: {', '.join(command.list_commands(ctx))}."
    param = getattr(exc, "param", None)
    value = given_value(args, list(getattr(param, "opts", []))) if param is not None else None
    if value is not None and repr(value) not in message:
        message = message.rstrip(".") + f" (got {value!r})."
    where = f"{ctx.command_path}: " if ctx is not None and ctx.command_path else ""
    return where + message


class OneLineErrors(TyperGroup):
    """The ``gemrag`` command group: usage errors (an unknown command or option, a value of the wrong type or out
    of range, a missing argument) print one ``error:`` line on stderr with exit code 2 instead of a framed usage
    panel, and Python warnings print as one ``warning:`` line (:func:`show_warning`). Each command runs in a
    ``gemrag <command>`` trace span (:meth:`invoke`)."""

    UNTRACED = frozenset({"serve", "mcp"})
    """Commands that serve until stopped: no span of their own (each request of ``serve`` has its span)."""

    def invoke(self, ctx: Any) -> Any:
        """Run the command named on the command line in a ``gemrag <command>`` span (:mod:`gemrag.tracing`; its
        ``gemrag.exit_code`` when it exits with one), after setting up the exporters the ``OTEL_*`` environment
        variables name (:func:`gemrag.tracing.configure_from_env`; a bad one is a one-line warning, and the command
        runs without traces).

        Raises:
            typer.Exit: the command's exit (code 2 for a gemrag error, 130 on Ctrl-C; 0 is re-raised after the
                span ends without an error).
        """
        try:
            tracing.configure_from_env()
        except ValueError as exc:
            warnings.warn(f"traces are off: {exc}", stacklevel=1)
        name = self._command_name(ctx)
        if name is None or name in self.UNTRACED:
            return super().invoke(ctx)
        done: typer.Exit | None = None
        with tracing.span(f"gemrag {name}", {"gemrag.command": name}) as span:
            try:
                return super().invoke(ctx)
            except typer.Exit as exc:
                span.set_attribute("gemrag.exit_code", exc.exit_code)
                if exc.exit_code:
                    raise
                done = exc
        raise done

    def _command_name(self, ctx: Any) -> str | None:
        """The name of the command the command line invokes (None: none, or not one of this group's)."""
        protected = getattr(ctx, "_protected_args", None)  # click >= 8.2; before it, the public attribute
        words = [*(protected if protected is not None else getattr(ctx, "protected_args", [])), *ctx.args]
        command = self.get_command(ctx, words[0]) if words else None
        return command.name if command is not None else None

    def main(  # type: ignore[override]
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """Run the command line (see the class docstring); ``standalone_mode=False`` behaves as click's.

        Raises:
            SystemExit: always in standalone mode: 0 on success, 2 for a usage or gemrag error, 130 on Ctrl-C.
        """
        with warnings.catch_warnings():
            warnings.showwarning = show_warning
            if not standalone_mode:
                return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
            try:
                code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
            except ClickException as exc:
                if type(exc).__name__ == "NoArgsIsHelpError":  # `gemrag` alone: typer printed the help
                    sys.exit(getattr(exc, "exit_code", 2))
                err.print(Text.assemble(("error: ", "bold red"), usage_message(exc, args)), soft_wrap=True)
                sys.exit(2)
            except typer.Abort:
                err.print("aborted")
                sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)
