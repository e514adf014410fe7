"""The help a user reads first (issue 41, point 5): typer wraps the command help (no line break kept inside a
sentence), and ``--strategy``'s help names every registered strategy."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from gemrag import cli
from gemrag.cli.options import strategy_help
from gemrag.config import DEFAULT_STRATEGY
from gemrag.strategies import available
from gemrag.strategies.base import _BUILTIN as BUILTIN

runner = CliRunner()


def help_of(*command: str, columns: int = 200) -> str:
    result = runner.invoke(cli.app, [*command, "--help"], env={"COLUMNS": str(columns), "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    return result.output


def flat(text: str) -> str:
    """Help text with the panels' borders and every run of whitespace made one space (wrapping undone)."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())


def test_command_help_is_wrapped_by_typer_not_by_the_docstring() -> None:
    index = help_of("index")
    assert "the graph and the eigentheme summary nodes (GEM-RAG section III.B.1)" in flat(index)
    assert "MiniLM embeddings and a\n" not in index  # a docstring line break, not kept
    assert "the eigentheme\n" not in index


@pytest.mark.parametrize("command", ["ask", "index"])
def test_strategy_help_lists_every_registered_strategy(command: str) -> None:
    # The built-in strategies: the help is built when gemrag.cli is imported, so a strategy a test module registers
    # later (tests/test_memory_lifecycle.py's "keywords") cannot be in it.
    names = [n for n in available() if n in BUILTIN]
    assert len(names) == len(BUILTIN)
    assert "fused" in names
    shown = flat(help_of(command))
    for name in names:
        assert re.search(rf"\b{name}\b", strategy_help())
        assert name in shown
    assert strategy_help().startswith(f"{DEFAULT_STRATEGY} (default), ") and DEFAULT_STRATEGY == "fused"


def _commands(command: Any, path: list[str]) -> Iterator[tuple[Any, list[str]]]:
    yield command, path
    for name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, [*path, name])


def _pairs(text: str) -> set[tuple[str, str]]:
    words = re.findall(r"[A-Za-z0-9]+", text)
    return set(zip(words, words[1:], strict=False))


def test_every_help_text_is_shown_whole() -> None:
    """No word of a command's or an option's help is lost to the help's markup (rich markup took ``[hlgraph]``,
    markdown takes ``<namespace>``): every pair of neighbouring words of each help text is in the shown help."""
    for command, path in _commands(typer.main.get_command(cli.app), []):
        shown = _pairs(flat(help_of(*path, columns=250)))
        texts = [command.help or "", *(getattr(p, "help", None) or "" for p in command.params)]
        lost = [pair for text in texts for pair in _pairs(text.split("\f")[0]) if pair not in shown]
        assert lost == [], f"gemrag {' '.join(path)} --help loses {lost[:5]}"


@pytest.mark.parametrize("columns", [80, 200])
def test_the_command_list_has_one_line_per_command(columns: int) -> None:
    """``gemrag --help`` says what each command does in one line (issue 54, item 5); the detail stays in
    ``gemrag COMMAND --help``."""
    top = help_of(columns=columns)
    panel = top.split("Commands")[1].split("╰")[0]
    rows = [line.strip("│ ").split()[0] for line in panel.splitlines()[1:] if line.strip("│ ")]
    commands = sorted(typer.main.get_command(cli.app).commands)  # type: ignore[attr-defined]
    assert sorted(rows) == commands  # each command once, and no continuation line
    group = typer.main.get_command(cli.app)
    for name in commands:
        short = group.commands[name].get_short_help_str(limit=200)  # type: ignore[attr-defined]
        assert short.endswith(".") and "\n" not in short, (name, short)  # a sentence, not a cut paragraph
    assert "the eigentheme summary nodes" in flat(help_of("index"))  # the whole text, one command down
