"""Retrieval strategies, registered by name (``fused`` is the default, :data:`gemrag.config.DEFAULT_STRATEGY`)."""

from gemrag.strategies.base import (
    Strategy,
    StrategyContext,
    Themes,
    available,
    check_config,
    config_model,
    get_strategy,
    register,
    retrieval_settings,
    strategy_config,
    strategy_themes,
)

__all__ = [
    "Strategy",
    "StrategyContext",
    "Themes",
    "available",
    "check_config",
    "config_model",
    "get_strategy",
    "register",
    "retrieval_settings",
    "strategy_config",
    "strategy_themes",
]
