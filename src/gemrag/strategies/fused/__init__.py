"""``fused``: reciprocal-rank (or score) fusion over the hits of several strategies (:mod:`.strategy`), with the
fusion math in :mod:`gemrag.strategies.platform.fusion` (shared with ``iterative``)."""

from gemrag.strategies.fused.strategy import FusedConfig, FusedStrategy

__all__ = ["FusedConfig", "FusedStrategy"]
