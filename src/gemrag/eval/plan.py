"""The runs of an evaluation: each strategy (or strategy variant, :mod:`gemrag.eval.variants`), then ``gem`` once
per ablation value (GEM-RAG Figure 2, Table III), each with the configuration its memory is opened with."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from gemrag.config import Config
from gemrag.errors import ConfigError
from gemrag.eval.variants import strategy_variant
from gemrag.memory_settings import MemorySettings
from gemrag.strategies import available, check_config
from gemrag.strategies.gem.settings import GemConfig, gem_config

__all__ = ["RETRIEVAL_ONLY", "RunSpec", "plan_runs"]

#: gem parameters that change only retrieval: their ablation settings reuse the group's base memory.
RETRIEVAL_ONLY = frozenset({"search", "budget"})
#: the memory's settings an ablation may sweep as before they left ``[gem]`` (run names stay ``gem[chunk_tokens=..]``).
MEMORY_PARAMS = ("chunk_tokens", "budget", "chunk_titles")


@dataclass(frozen=True)
class RunSpec:
    """One strategy run: ``name`` is what reports show (``"gem"``, ``"gem[questions=3]"``).

    Attributes:
        name: display name, unique within an evaluation.
        strategy: the registered strategy name.
        setting: the ablated gem parameter and its value (``{}`` for a plain run).
        config: the configuration the memory is opened with.
        memory_suffix: appended to the group's memory directory name (``""`` = the base memory).
    """

    name: str
    strategy: str
    setting: dict[str, Any]
    config: Config
    memory_suffix: str = ""


def plan_runs(strategies: Sequence[str], ablation: dict[str, list[Any]] | None, config: Config) -> list[RunSpec]:
    """The runs of an evaluation: each strategy (a name such as ``remem[recognition_filter=false]`` is a variant
    with settings of its section changed: :mod:`gemrag.eval.variants`), then ``gem`` once per ablation value.

    Raises:
        ConfigError: an unknown strategy or gem parameter, an invalid value or strategy section, or nothing to run.
    """
    check_config(config)
    known = available()
    runs: list[RunSpec] = []
    for name in dict.fromkeys(s.strip() for s in strategies if s.strip()):
        variant = strategy_variant(name, config)
        base = variant[1] if variant else name
        if base not in known:
            raise ConfigError(f"unknown strategy {base!r}; available: {', '.join(known)}")
        runs.append(RunSpec(variant[0], base, variant[2], variant[3]) if variant else RunSpec(name, name, {}, config))
    known_params = [*GemConfig.model_fields, *MEMORY_PARAMS]
    for param, values in (ablation or {}).items():
        if param not in known_params:
            raise ConfigError(f"unknown gem parameter {param!r} for --ablation; known: {', '.join(known_params)}")
        section, model = ("memory", MemorySettings) if param in MEMORY_PARAMS else ("gem", GemConfig)
        for raw in values:
            try:
                current = config.memory if section == "memory" else gem_config(config)
                settings = model.model_validate({**current.model_dump(), param: raw})
            except ValidationError as exc:
                raise ConfigError(f"invalid ablation value {param}={raw!r}: {exc.errors()[0]['msg']}") from exc
            value = getattr(settings, param)
            suffix = "" if param in RETRIEVAL_ONLY else f"-{param}-{value}"
            cfg = config.model_copy(update={section: settings if section == "memory" else settings.model_dump()})
            runs.append(RunSpec(f"gem[{param}={value}]", "gem", {param: value}, cfg, suffix))
    if not runs:
        raise ConfigError("nothing to evaluate: give at least one strategy or an ablation")
    if len({r.name for r in runs}) < len(runs):
        raise ConfigError("an ablation value is repeated")
    return runs
