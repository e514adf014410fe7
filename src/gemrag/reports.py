"""Deprecated: import :class:`~gemrag.answers.answer.Answer` and :class:`~gemrag.memory.indexing.IndexReport` from
:mod:`gemrag` (``from gemrag import Answer, IndexReport``). This module only forwards the two names, with a
:class:`DeprecationWarning` (:func:`gemrag.deprecation.forwarding`), and will be removed."""

from __future__ import annotations

from gemrag.deprecation import forwarding

__getattr__ = forwarding(
    __name__, {"Answer": "gemrag.answers.answer", "IndexReport": "gemrag.memory.indexing"}, advice="gemrag"
)
