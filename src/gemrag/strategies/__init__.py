"""Retrieval strategies, registered by name (``gem`` is the default)."""

from gemrag.strategies.base import (
    Strategy,
    StrategyContext,
    available,
    check_config,
    config_model,
    get_strategy,
    register,
    strategy_config,
)

__all__ = [
    "Strategy",
    "StrategyContext",
    "available",
    "check_config",
    "config_model",
    "get_strategy",
    "register",
    "strategy_config",
]
