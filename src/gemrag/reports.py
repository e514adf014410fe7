"""Deprecated: import :class:`~gemrag.answers.answer.Answer` and :class:`~gemrag.memory.indexing.IndexReport` from
:mod:`gemrag` (``from gemrag import Answer, IndexReport``). This module only forwards the two names, with a
:class:`DeprecationWarning`, and will be removed."""

from __future__ import annotations

import warnings
from typing import Any


def __getattr__(name: str) -> Any:
    """``Answer`` or ``IndexReport`` from their new modules, with a :class:`DeprecationWarning`.

    Raises:
        AttributeError: any other name.
    """
    if name == "Answer":
        from gemrag.answers.answer import Answer as found
    elif name == "IndexReport":
        from gemrag.memory.indexing import IndexReport as found  # type: ignore[assignment]
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"gemrag.reports is deprecated: import {name} from gemrag (from gemrag import {name})",
        DeprecationWarning,
        stacklevel=2,
    )
    return found
