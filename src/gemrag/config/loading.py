"""Loading the configuration: :func:`load_config` merges the defaults, the TOML file (:func:`find_config_file`),
the ``GEMRAG_*`` variables, explicit overrides and ``--set`` items, in that order of precedence, into one
:class:`~gemrag.config.settings.Config`; :func:`memory_location` is the memory a command works on. Precedence, the
file's form and the strategy sections: :mod:`gemrag.config`."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_settings import SettingsError

from gemrag.config.settings import OWN_ENV, Config, typed_env
from gemrag.config.values import describe_errors, env_sections, parse_sets
from gemrag.errors import ConfigError
from gemrag.memory_settings import move_deprecated

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


def _find_config_file(path: str | Path | None) -> Path | None:
    if path is not None:
        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"config file not found: {p}")
        return p
    env = os.environ.get("GEMRAG_CONFIG")
    if env:
        return _find_config_file(env)
    local = Path("gemrag.toml")
    return local if local.is_file() else None


def find_config_file(path: str | Path | None) -> Path | None:
    """The configuration file :func:`load_config` reads: ``path``, else ``$GEMRAG_CONFIG``, else ``./gemrag.toml``
    when it exists (None: no file).

    Raises:
        ConfigError: ``path`` (or ``$GEMRAG_CONFIG``) names no file.
    """
    return _find_config_file(path)


def _deep_drop_none(d: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, Mapping):
            v = _deep_drop_none(v)
            if v:
                out[k] = v
        elif v is not None:
            out[k] = v
    return out


def _deep_merge(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` updated by ``top``, recursively for tables (``top`` wins)."""
    out = dict(base)
    for k, v in top.items():
        old = out.get(k)
        out[k] = _deep_merge(old, v) if isinstance(old, Mapping) and isinstance(v, Mapping) else v
    return out


def load_config(
    config_file: str | Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    sets: Sequence[str] | None = None,
) -> Config:
    """Build the configuration from defaults, a TOML file, ``GEMRAG_*`` variables and overrides.

    Precedence, lowest first: defaults < the TOML file < ``GEMRAG_*`` variables < ``overrides`` < ``sets``;
    strategy sections merge key by key across these layers. Strategy sections are only checked to be tables
    here: the strategies' own models validate them later (:mod:`gemrag.config`). The memory's old keys in ``[gem]``
    move to ``[memory]`` layer by layer, with a one-line :class:`~gemrag.memory_settings.DeprecatedSettingWarning`
    (:func:`~gemrag.memory_settings.move_deprecated`).

    Args:
        config_file: a TOML file; None looks at ``$GEMRAG_CONFIG`` then ``./gemrag.toml``.
        overrides: nested dict of explicit values (e.g. ``{"memory": {"budget": 6}}``); ``None`` values are
            ignored so unset CLI flags do not mask lower layers.
        sets: ``--set`` items, ``section.key=value`` (:func:`parse_sets`).

    Raises:
        ConfigError: the file is missing or malformed, a value is invalid, a typed section (llm, embedder, memory,
            answer) has
            an unknown key, a top-level key is neither a setting nor a table, a ``--set`` is malformed, or one layer
            gives a memory setting under its old and its new key with different values.
    """
    toml_path = _find_config_file(config_file)
    try:
        toml = tomllib.loads(toml_path.read_text(encoding="utf-8")) if toml_path is not None else {}
    except (OSError, ValueError) as exc:  # a malformed file: tomllib.TOMLDecodeError is a ValueError
        raise ConfigError(f"invalid configuration file {toml_path}: {exc}") from exc
    toml = move_deprecated(toml, str(toml_path))
    env = move_deprecated(_own_env(os.environ), "the environment", "env")
    given = move_deprecated(_deep_drop_none(overrides or {}), "the overrides")
    sets_given = move_deprecated(parse_sets(sets or []), "--set", "set")
    try:
        merged: dict[str, Any] = {}
        for layer in (toml, typed_env(), env, given, sets_given):  # lowest precedence first, tables merged
            merged = _deep_merge(merged, layer)
        return Config(**merged)
    except ValidationError as exc:
        raise ConfigError(f"invalid configuration: {describe_errors(exc)}") from exc
    except SettingsError as exc:  # a GEMRAG_* variable pydantic-settings cannot read (malformed JSON)
        raise ConfigError(f"invalid configuration: {exc}") from exc


def _own_env(environ: Mapping[str, str]) -> dict[str, Any]:
    """The strategy sections and the :data:`OWN_ENV` sections given by ``GEMRAG_*`` variables
    (:func:`env_sections`), with ``GEMRAG_MEMORY`` as ``memory.location``."""
    typed = [name for name in Config.model_fields if name not in OWN_ENV]
    out = env_sections(environ, typed)
    location = next((v for k, v in environ.items() if k.upper() == "GEMRAG_MEMORY"), None)
    if location:
        out["memory"] = {"location": location, **out.get("memory", {})}
    return out


def memory_location(option: str | Path | None, config: Config) -> str:
    """The memory a command works on: ``--memory`` when given, else the configuration's ``memory``
    (``config.memory.location``: ``GEMRAG_MEMORY``, or ``memory = "..."`` in ``gemrag.toml``).

    Raises:
        ConfigError: neither names a memory.
    """
    if option is not None and str(option):
        return str(option)
    if config.memory.location:
        return config.memory.location
    raise ConfigError(
        'no memory given: pass --memory DIR (or a postgresql:// URL), set GEMRAG_MEMORY, or put memory = "..." '
        "in gemrag.toml"
    )
