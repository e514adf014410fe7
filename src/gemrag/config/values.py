"""Values given as text, read with TOML semantics: a ``--set section.key=value`` item (:func:`parse_sets`), a
``GEMRAG_<SECTION>__<KEY>`` variable (:func:`env_sections`), one value (:func:`parse_value`); and a pydantic
validation error as one line per problem (:func:`describe_errors`). :func:`gemrag.config.loading.load_config` merges
what they read with the other layers."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from gemrag.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


def _set_path(target: dict[str, Any], path: Sequence[str], value: Any, origin: str) -> None:
    """Store ``value`` at ``target[path[0]][path[1]]...``.

    Raises:
        ConfigError: a prefix of ``path`` already holds a value that is not a table, or ``path`` a table.
    """
    node = target
    for i, key in enumerate(path[:-1]):
        child = node.setdefault(key, {})
        if not isinstance(child, dict):
            raise ConfigError(f"{origin}: {'.'.join(path[: i + 1])} is already set to a value, not a table")
        node = child
    if isinstance(node.get(path[-1]), dict):
        raise ConfigError(f"{origin}: {'.'.join(path)} is already a table")
    node[path[-1]] = value


def describe_errors(exc: ValidationError, section: str = "") -> str:
    """A pydantic error as one line per problem, each naming its field: ``raptor.summary_tokens: Input should
    be greater than or equal to 1 (got 0)``; ``section`` prefixes every field path."""
    lines = []
    for error in exc.errors():
        where = ".".join(str(part) for part in ((section,) if section else ()) + tuple(error["loc"]))
        message = str(error["msg"]).removeprefix("Value error, ")
        got = "" if error["type"] in ("value_error", "missing") else f" (got {error['input']!r})"
        lines.append(f"{where}: {message}{got}" if where else message)
    return "; ".join(lines)


def parse_value(text: str) -> Any:
    """A ``--set`` or ``GEMRAG_<SECTION>__<KEY>`` value read with TOML semantics.

    ``200`` -> 200, ``0.5`` -> 0.5, ``true`` -> True, ``[1, 2]`` -> [1, 2], ``{a = 1}`` -> {"a": 1},
    ``"123"`` -> "123"; anything that is not one TOML value (a bare word such as ``umap``, a date, an empty
    string) stays the string as given.
    """
    try:
        parsed = tomllib.loads(f"v = {text}")
    except tomllib.TOMLDecodeError:
        return text
    value = parsed.get("v", text)
    if len(parsed) != 1 or not isinstance(value, (bool, int, float, str, list, dict)):  # dates stay strings
        return text
    return value


def parse_sets(items: Sequence[str]) -> dict[str, Any]:
    """Parse ``--set section.key=value`` items (``key=value`` for a top-level setting) into a nested dict.

    Example: ``["raptor.summary_tokens=200", "gem.search=rank"]`` ->
    ``{"raptor": {"summary_tokens": 200}, "gem": {"search": "rank"}}``; values as :func:`parse_value`.

    Raises:
        ConfigError: an item is not ``dotted.key=value``, or two items set a key and a table inside it.
    """
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        path = [p.strip() for p in key.split(".")]
        if not sep or not all(p.replace("_", "a").replace("-", "a").isalnum() for p in path):
            raise ConfigError(f"bad --set {item!r}: use section.key=value (e.g. raptor.summary_tokens=200)")
        _set_path(out, path, parse_value(raw.strip()), f"--set {item!r}")
    return out


def env_sections(environ: Mapping[str, str], known: Sequence[str] = ()) -> dict[str, Any]:
    """The strategy sections given by ``GEMRAG_<SECTION>__<KEY>`` variables (names lower-cased, values as
    :func:`parse_value`), skipping sections in ``known`` (pydantic-settings reads those itself) and variables
    without ``__`` (such as ``GEMRAG_CONFIG``).

    Raises:
        ConfigError: two variables set a key and a table inside it.
    """
    out: dict[str, Any] = {}
    for name in sorted(environ):
        if name[:7].upper() != "GEMRAG_":
            continue
        path = name[7:].lower().split("__")
        if len(path) < 2 or not all(path) or path[0] in known:
            continue
        _set_path(out, path, parse_value(environ[name]), f"environment variable {name}")
    return out
