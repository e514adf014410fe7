"""Deprecated: the cost plan moved to :mod:`gemrag.memory.index_plan` (``Memory.plan_index()`` is the same plan). This
module only forwards its public names, with a :class:`DeprecationWarning` (:func:`gemrag.deprecation.forwarding`),
and will be removed."""

from __future__ import annotations

from gemrag.deprecation import forwarding

__getattr__ = forwarding(
    __name__,
    dict.fromkeys(
        ["CONFIRM_MINUTES", "IndexPlan", "PassEstimate", "StrategyEstimate", "plan_index"], "gemrag.memory.index_plan"
    ),
)
