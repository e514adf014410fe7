"""Strategy variants in an evaluation: ``remem[recognition_filter=false]`` runs ``remem`` with one or more of its
settings changed (HippoRAG 2's recognition-filter ablation, a RAPTOR or GEM setting, ...), beside the plain run.

The bracket holds ``key=value`` pairs separated by ``;`` (values with TOML semantics, as ``--set``); the keys
belong to the strategy's own configuration section. A variant shares its group's memory with the plain run (same
chunks, embeddings and cached LLM answers), so only what the changed setting recomputes costs anything.

An ablation (``--ablation remem.top_k=3,5``) runs one variant per value, ``remem[top_k=3]`` and ``remem[top_k=5]``;
a key without a strategy (``questions=0,1,3,5``) is a setting of the configured strategy (``gem`` by default), or one
of the memory's (:func:`ablation_target`).
"""

from __future__ import annotations

import re
from typing import Any

from gemrag.config import Config, parse_sets
from gemrag.errors import ConfigError
from gemrag.strategies import check_config, strategy_config

_VARIANT = re.compile(r"([A-Za-z0-9_-]+)\[(.*)\]")
_COMMA_PAIR = re.compile(r",\s*[A-Za-z_][A-Za-z0-9_.]*\s*=")  # "a=1,b=2": a second pair after a comma


def split_strategies(text: str) -> list[str]:
    """Split a comma-separated strategy list, keeping commas inside brackets: ``"dense,gem[eigen=2]"`` ->
    ``["dense", "gem[eigen=2]"]``. Empty items are dropped."""
    items, depth, current = [], 0, ""
    for ch in text:
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth == 0:
            items.append(current.strip())
            current = ""
        else:
            current += ch
    items.append(current.strip())
    return [i for i in items if i]


def variant_name(strategy: str, setting: dict[str, Any]) -> str:
    """The display name of ``strategy`` with ``setting`` changed: ``remem[recognition_filter=false;top_k=3]`` (booleans
    in TOML spelling)."""
    shown = ";".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in setting.items())
    return f"{strategy}[{shown}]"


def ablation_target(key: str, default: str) -> tuple[str, str]:
    """The strategy and setting an ablation key sweeps: ``"remem.top_k"`` -> ``("remem", "top_k")``; a key without a
    strategy, ``"questions"``, is the ``default`` (configured) strategy's: ``(default, "questions")``."""
    strategy, _, param = key.rpartition(".")
    return strategy or default, param


def sweep_label(key: str, default: str) -> str:
    """How reports name the sweep of ablation key ``key``: ``"gem questions"``, ``"remem top_k"``."""
    return " ".join(ablation_target(key, default))


def strategy_variant(name: str, config: Config) -> tuple[str, str, dict[str, Any], Config] | None:
    """Parse ``strategy[key=value;...]``.

    Returns:
        ``(display name, strategy, {key: value}, the configuration with the strategy's section changed)``, or
        None when ``name`` has no bracket.

    Raises:
        ConfigError: an empty or malformed bracket (pairs separated by ``,`` instead of ``;``), or a key or value
            the strategy's section rejects.
    """
    match = _VARIANT.fullmatch(name.strip())
    if match is None:
        return None
    strategy, body = match.group(1), match.group(2)
    if ";" not in body and _COMMA_PAIR.search(body):
        raise ConfigError(f"strategy variant {name!r}: separate its settings with ';', as in {strategy}[a=1;b=2]")
    pairs = [p.strip() for p in body.split(";") if p.strip()]
    if not pairs:
        raise ConfigError(f"strategy variant {name!r} changes nothing: use {strategy}[key=value]")
    setting = parse_sets([f"{strategy}.{p}" for p in pairs])[strategy]
    data = config.model_dump()
    data[strategy] = {**config.section(strategy), **setting}
    try:
        changed = Config.model_validate(data)
    except ValueError as exc:
        raise ConfigError(f"strategy variant {name!r}: {exc}") from exc
    check_config(changed)
    strategy_config(strategy, changed)
    return variant_name(strategy, setting), strategy, setting, changed
