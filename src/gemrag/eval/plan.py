"""The runs of an evaluation: each strategy (or strategy variant, :mod:`gemrag.eval.variants`), then one variant per
ablation value of any strategy's setting (``remem.top_k=3,5``, or ``gem.questions=…`` for GEM-RAG Figure 2 and
Table III; a bare key is the configured strategy's), each with the configuration its memory is
opened with."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from gemrag.config import Config
from gemrag.errors import ConfigError
from gemrag.eval.variants import ablation_target, strategy_variant, variant_name
from gemrag.memory_settings import MemorySettings
from gemrag.strategies import available, check_config, config_model, retrieval_settings

__all__ = ["MEMORY_PARAMS", "RunSpec", "plan_runs"]

#: the memory's settings an ablation may sweep as before they left ``[gem]`` (run names stay ``gem[chunk_tokens=..]``);
#: ``budget`` changes retrieval alone, so its ablation reuses the group's base memory.
MEMORY_PARAMS = ("chunk_tokens", "budget", "chunk_titles")


@dataclass(frozen=True)
class RunSpec:
    """One strategy run: ``name`` is what reports show (``"gem"``, ``"gem[questions=3]"``, ``"remem[top_k=3]"``).

    Attributes:
        name: display name, unique within an evaluation.
        strategy: the registered strategy name.
        setting: the changed settings of a variant or an ablation run and their values (``{}`` for a plain run).
        config: the configuration the memory is opened with.
        memory_suffix: appended to the group's memory directory name (``""`` = the base memory).
        sweep: the ablation key this run is one value of (``"questions"``, ``"remem.top_k"``; ``""``: none).
    """

    name: str
    strategy: str
    setting: dict[str, Any]
    config: Config
    memory_suffix: str = ""
    sweep: str = ""


def plan_runs(strategies: Sequence[str], ablation: dict[str, list[Any]] | None, config: Config) -> list[RunSpec]:
    """The runs of an evaluation: each strategy (a name such as ``remem[recognition_filter=false]`` is a variant
    with settings of its section changed: :mod:`gemrag.eval.variants`), then one run per ablation value.

    An ablation key ``strategy.key`` sweeps a setting of that strategy's section, a bare ``key`` one of the configured
    strategy's (``config.strategy``, ``gem`` by default) or of the memory's (:data:`MEMORY_PARAMS`); each value runs as
    the variant ``strategy[key=value]``. A value of a setting that changes the build gets a memory of its own (suffix
    ``-key-value``), so the base build stays; one that changes retrieval alone (the strategy's
    :func:`~gemrag.strategies.retrieval_settings`, the memory's ``budget``) reuses the base memory.

    Raises:
        ConfigError: an unknown strategy or parameter, an invalid value or strategy section, or nothing to run.
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
    for key, values in (ablation or {}).items():
        runs += _ablation_runs(key, values, config)
    if not runs:
        raise ConfigError("nothing to evaluate: give at least one strategy or an ablation")
    if len({r.name for r in runs}) < len(runs):
        raise ConfigError("an ablation value is repeated")
    return runs


def _ablation_runs(key: str, values: Sequence[Any], config: Config) -> list[RunSpec]:
    """The runs of the ablation ``key`` over ``values`` (see :func:`plan_runs`).

    Raises:
        ConfigError: an unknown strategy or parameter, or an invalid value.
    """
    strategy, param = ablation_target(key, config.strategy)
    if strategy not in available():
        raise ConfigError(f"unknown strategy {strategy!r} in --ablation {key}; available: {', '.join(available())}")
    model = config_model(strategy)
    fields = list(model.model_fields) if model is not None else []
    known_params = fields + [p for p in MEMORY_PARAMS if "." not in key and p not in fields]
    if param not in known_params:
        raise ConfigError(
            f"unknown {strategy} parameter {param!r} for --ablation; known: {', '.join(known_params) or 'none'}"
        )
    reuse = retrieval_settings(strategy) | {"budget"}
    runs = []
    for raw in values:
        if param not in fields:  # the memory's
            try:
                memory = MemorySettings.model_validate({**config.memory.model_dump(), param: raw})
            except ValidationError as exc:
                raise ConfigError(f"invalid ablation value {param}={raw!r}: {exc.errors()[0]['msg']}") from exc
            value = getattr(memory, param)
            name, cfg = variant_name(strategy, {param: value}), config.model_copy(update={"memory": memory})
        else:
            try:
                variant = strategy_variant(f"{strategy}[{param}={raw}]", config)
            except ConfigError as exc:
                raise ConfigError(f"invalid ablation value {param}={raw!r}: {exc}") from exc
            assert variant is not None  # the name has its bracket
            name, _, setting, cfg = variant
            value = setting[param]
        suffix = "" if param in reuse else f"-{key.replace('.', '-')}-{value}"
        runs.append(RunSpec(name, strategy, {param: value}, cfg, suffix, key))
    return runs
