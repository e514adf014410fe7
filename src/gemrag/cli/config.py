"""``gemrag config``: the effective settings of every section as TOML, optionally with where each value came from
(like ``pip config list``), so a user sees which variant of each method they run without reading the code."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib
from typing import Annotated, Any

import typer
from pydantic import BaseModel

from gemrag.config import Config, find_config_file, load_config, parse_sets
from gemrag.console import cli_errors
from gemrag.memory_settings import deprecated_key
from gemrag.strategies import available
from gemrag.strategies.base import check_config, strategy_config, title_default
from gemrag.strategies.platform.titles import READ_TITLES

ORIGINS = ("default", "gemrag.toml", "GEMRAG_*", "--set")
"""Where a value can come from, lowest precedence first (the file is named by its path in the output)."""


def _toml_value(value: Any) -> str:
    """A value as TOML (strings as JSON strings, which TOML basic strings accept)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, Path):
        return json.dumps(str(value))
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items() if v is not None) + "}"
    if isinstance(value, Sequence):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(str(value))


def _has(tree: Mapping[str, Any], path: Sequence[str]) -> bool:
    node: Any = tree
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True


def _spellings(path: tuple[str, ...]) -> list[tuple[tuple[str, ...], str]]:
    """The keys that set ``path`` in a layer, each with a note: the key itself, then its deprecated old key
    (:func:`gemrag.memory_settings.deprecated_key`), and for ``memory.location`` the shorthand ``memory = "..."``."""
    keys: list[tuple[tuple[str, ...], str]] = [(path, "")]
    old = deprecated_key(path)
    if old is not None:
        keys.append((old, f"deprecated {'.'.join(old)}: use {'.'.join(path)}"))
    if path == ("memory", "location"):
        keys.append((("memory",), ""))
    return keys


def origin_function(
    file_tree: Mapping[str, Any], file_name: str | None, environ: Mapping[str, str], set_tree: Mapping[str, Any]
) -> Callable[[tuple[str, ...]], str]:
    """``origin_of(path) -> str``: where the value of ``path`` came from, the highest layer that set it (``--set``,
    the ``GEMRAG_*`` variable by name, the file, else ``default``), naming a deprecated key when the layer used one
    (``GEMRAG_GEM__BUDGET (deprecated gem.budget: use memory.budget)``)."""
    upper = {name.upper() for name in environ}

    def env_name(key: tuple[str, ...]) -> str:
        return "GEMRAG_" + "__".join(x.upper() for x in key)

    def value_in(tree: Mapping[str, Any], key: tuple[str, ...]) -> bool:
        return _has(tree, key) and not isinstance(_get(tree, key), Mapping)

    layers: list[Callable[[tuple[str, ...]], str | None]] = [
        lambda key: "--set" if value_in(set_tree, key) else None,
        lambda key: env_name(key) if env_name(key) in upper else None,
        lambda key: file_name if file_name is not None and value_in(file_tree, key) else None,
    ]

    def origin_of(path: tuple[str, ...]) -> str:
        for layer in layers:
            for key, note in _spellings(path):
                found = layer(key)
                if found is not None:
                    return found + (f" ({note})" if note else "")
        return "default"

    return origin_of


def _get(tree: Mapping[str, Any], path: Sequence[str]) -> Any:
    node: Any = tree
    for part in path:
        node = node[part]
    return node


def effective_settings(config: Config) -> dict[str, dict[str, Any] | Any]:
    """Every setting in effect: the top-level ones, then the typed sections (memory, llm, embedder, answer), then each
    registered strategy's section validated by its own model (its defaults filled in). Strategies without settings
    are left out.

    Raises:
        ConfigError: a strategy section is invalid or names no registered strategy.
        UnknownStrategyError: ``config.strategy`` is not registered.
    """
    check_config(config)
    out: dict[str, Any] = {k: getattr(config, k) for k in ("strategy", "cache_dir", "progress")}
    for name in ("memory", "llm", "embedder", "answer"):
        out[name] = getattr(config, name).model_dump()
    for name in available():
        if name in out:
            continue
        model = strategy_config(name, config)
        if isinstance(model, BaseModel):
            out[name] = model.model_dump()
    return out


def unset_note(path: tuple[str, ...]) -> str:
    """What an unset (None) setting means, shown in place of its value: for a strategy's ``read_titles``, its paper's
    choice (:func:`gemrag.strategies.base.title_default`); for ``memory.chunk_titles``, the memory's record."""
    if len(path) == 2 and path[1] == READ_TITLES:
        default = title_default(path[0])
        shown = _toml_value(bool(default))
        return f"(unset: {shown}, as the method's paper; an index already built keeps what it read)"
    if path == ("memory", "chunk_titles"):
        return "(unset: what the memory records; true for a new memory)"
    if path == ("memory", "location"):
        return "(unset: give --memory)"
    return "(unset)"


def render(settings: Mapping[str, Any], origin_of: Any = None) -> str:
    """``settings`` (:func:`effective_settings`) as TOML; with ``origin_of(path) -> str`` each line ends with
    ``# <origin>``. A value that is None (unset) is written as a comment saying what it means (:func:`unset_note`),
    so a strategy's ``read_titles`` line says whether the method reads the chunks' titles."""

    def line(key: str, value: Any, path: tuple[str, ...]) -> str:
        text = f"# {key} = {unset_note(path)}" if value is None else f"{key} = {_toml_value(value)}"
        return f"{text}  # {origin_of(path)}" if origin_of else text

    lines = [line(k, v, (k,)) for k, v in settings.items() if not isinstance(v, Mapping)]
    for section, values in settings.items():
        if isinstance(values, Mapping):
            lines += ["", f"[{section}]"] + [line(k, v, (section, k)) for k, v in values.items()]
    return "\n".join(lines) + "\n"


def config_command(
    config: Annotated[Path | None, typer.Option("--config", help="TOML configuration file.")] = None,
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="section.key=value, as for the other commands (repeatable).")
    ] = None,
    origin: Annotated[
        bool,
        typer.Option(
            "--origin", help="End each line with where its value came from: default, the file, GEMRAG_*, --set."
        ),
    ] = False,
) -> None:
    """Print the effective settings of every section as TOML, strategy sections included (``[unweaver]``,
    ``[hlgraph]``, ``[remem]``, ...), each filled with its defaults, so the method variant in use is visible.

    With ``--origin`` every line ends with ``# default``, ``# <file>``, ``# GEMRAG_*`` or ``# --set`` (the highest
    layer that set it, as the configuration's precedence: defaults < file < ``GEMRAG_*`` < ``--set``).
    Exit code 2 with a one-line error for an invalid configuration.
    """
    with cli_errors():
        cfg = load_config(config, None, set_)
        settings = effective_settings(cfg)
        origin_of = None
        if origin:
            path = find_config_file(config)
            file_tree = tomllib.loads(path.read_text(encoding="utf-8")) if path else {}
            origin_of = origin_function(file_tree, str(path) if path else None, os.environ, parse_sets(set_ or []))

        typer.echo(render(settings, origin_of), nl=False)
