"""What a published record names as differing from the defaults (its ``non_default``, :mod:`gemrag.eval.publish`).

What differs from the defaults is found from the recorded configuration itself (:func:`non_default_settings`): every
setting of ``[llm]``, ``[embedder]``, ``[memory]``, ``[answer]`` and every strategy section whose value is not the
default of the code that publishes, leaving out the settings that change how fast a run goes but not what it
measures (:data:`MACHINE_KEYS`), and the evaluation's own options (budget, answer form, LoCoMo's protocol) that
differ from ``gemrag eval``'s defaults (:data:`EVAL_DEFAULTS`). Settings the publisher states for a run whose
recorded configuration lacks them are compared the same way (:func:`non_default_stated`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from gemrag.errors import InputError

__all__ = ["EVAL_DEFAULTS", "MACHINE_KEYS", "non_default_settings", "non_default_stated"]

#: Settings that change how a run goes (threads, timeouts, retries, where files live) but not what it measures.
MACHINE_KEYS = frozenset(
    {"cache_dir", "progress", "memory.location", "llm.api_key", "embedder.api_key", "llm.n_threads", "llm.timeout"}
    | {"llm.concurrency", "llm.max_retries", "llm.requests_per_minute", "llm.tokens_per_minute", "llm.n_parallel"}
    | {"llm.ray", "llm.ray_actors", "llm.ray_actor_concurrency", "llm.ray_actor_cpus", "llm.n_gpu_layers"}
    | {"embedder.timeout", "embedder.concurrency", "embedder.max_retries"}
)
#: ``gemrag eval``'s own options at their defaults (a published run names those it changed).
EVAL_DEFAULTS: dict[str, Any] = {
    "budget": 4, "answer_form": "auto", "adversarial": "options", "date_hint": True, "abstain": True, "runs": 1
}  # fmt: skip


def _flat(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out |= _flat(value, f"{name}.")
        else:
            out[name] = value
    return out


def _defaults() -> dict[str, Any]:
    """The typed sections' defaults, as JSON (read from the models, not from the environment or a TOML file)."""
    from gemrag.config import Config

    out: dict[str, Any] = {}
    for name, field in Config.model_fields.items():
        value = field.get_default(call_default_factory=True)
        out[name] = value.model_dump(mode="json") if hasattr(value, "model_dump") else value
    return json.loads(json.dumps(out, default=str))


def non_default_settings(config: Mapping[str, Any], options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The settings of a recorded configuration that differ from today's defaults.

    Args:
        config: a run's configuration as ``results.json`` records it (``Config.model_dump(mode="json")``).
        options: ``gemrag eval``'s own options of the run (keys of :data:`EVAL_DEFAULTS`), when known.

    Returns:
        ``{dotted key: value}``, sorted, without :data:`MACHINE_KEYS`; a strategy section's key is compared with the
        default of that strategy's settings model (a section of an unknown strategy is listed whole).
    """
    from gemrag.strategies.base import config_model

    typed = _defaults()
    defaults = _flat(typed)
    out: dict[str, Any] = {}
    for key, value in _flat(config).items():
        section = key.split(".", 1)[0]
        if key in MACHINE_KEYS:
            continue
        if section in typed:
            if key not in defaults or defaults[key] != value:
                out[key] = value
            continue
        try:
            model = config_model(section)
        except KeyError:
            model = None
        base = _flat({section: model().model_dump(mode="json")}) if model is not None else {}
        if key not in base or base[key] != value:
            out[key] = value
    for key, value in (options or {}).items():
        if key in EVAL_DEFAULTS and EVAL_DEFAULTS[key] != value:
            out[key] = value
    return dict(sorted(out.items()))


def non_default_stated(
    config: Mapping[str, Any], options: Mapping[str, Any], settings: Mapping[str, Any] | None
) -> dict[str, Any]:
    """:func:`non_default_settings` of the recorded configuration, with the publisher's stated ``settings`` put into
    it (as a section of the configuration, so each is compared with its default the same way).

    Raises:
        InputError: a stated setting's key has no section (``shape`` rather than ``answer.shape``).
    """
    merged = json.loads(json.dumps(dict(config)))
    for key, value in (settings or {}).items():
        section, _, rest = key.partition(".")
        if not rest:
            raise InputError(f"setting {key!r}: give section.key=value (e.g. answer.shape=true)")
        target = merged.setdefault(section, {})
        for part in rest.split(".")[:-1]:
            target = target.setdefault(part, {})
        target[rest.split(".")[-1]] = value
    return non_default_settings(merged, options)
