"""Strategy variants in an evaluation: ``remem[recognition_filter=false]`` runs ``remem`` with one or more of its
settings changed (HippoRAG 2's recognition-filter ablation, a RAPTOR or GEM setting, ...), beside the plain run.

The bracket holds ``key=value`` pairs separated by ``;`` (values with TOML semantics, as ``--set``); the keys
belong to the strategy's own configuration section. A variant shares its group's memory with the plain run (same
chunks, embeddings and cached LLM answers), so only what the changed setting recomputes costs anything.
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
    shown = ";".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in setting.items())
    return f"{strategy}[{shown}]", strategy, setting, changed
