"""Prefix reuse of the llama.cpp batch decoder (:mod:`gemrag.models.llama.batch`): which slot a new request starts
in and how much of its prompt the KV cache already holds. Pure functions on token ids, re-exported by
:mod:`gemrag.models.llama.batch`.

Source: llama.cpp ``tools/server`` (a slot is picked by the longest common prefix of its cached tokens).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["choose_slot", "common_prefix_len"]


def common_prefix_len(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token sequences (tokens)."""
    n = min(len(a), len(b))
    if n == 0:
        return 0
    x = np.asarray(a[:n], dtype=np.int64)
    y = np.asarray(b[:n], dtype=np.int64)
    diff = np.flatnonzero(x != y)
    return int(diff[0]) if diff.size else n


def choose_slot(cached: Sequence[Sequence[int]], busy: Sequence[bool], prompt: Sequence[int]) -> tuple[int, int, int]:
    """Where a new request starts: ``(slot, source, reuse)``.

    ``source`` is the slot (busy or free) whose cached tokens share the longest prefix with ``prompt``, and
    ``reuse`` that prefix's length, capped at ``len(prompt) - 1`` so that at least one prompt token is decoded
    (its logits give the first completion token). ``slot`` is ``source`` itself when it is free (the request
    continues in place), else the free slot holding the fewest cached tokens (the least to lose).

    Raises:
        ValueError: no slot is free, or ``prompt`` is empty.
    """
    if not prompt:
        raise ValueError("empty prompt")
    free = [i for i, b in enumerate(busy) if not b]
    if not free:
        raise ValueError("no free slot")
    lengths = [common_prefix_len(c, prompt) for c in cached]
    source = max(range(len(cached)), key=lambda i: (lengths[i], not busy[i]))
    reuse = min(lengths[source], len(prompt) - 1)
    if reuse <= 0:
        return min(free, key=lambda i: len(cached[i])), -1, 0
    slot = source if not busy[source] else min(free, key=lambda i: len(cached[i]))
    return slot, source, reuse
