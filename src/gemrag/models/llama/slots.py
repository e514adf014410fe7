"""Prefix reuse of the llama.cpp batch decoder (:mod:`gemrag.models.llama.batch`): which slot a new request starts
in and how much of its prompt the KV cache already holds. :func:`choose_slot` and :func:`common_prefix_len` are pure
functions on token ids, re-exported by :mod:`gemrag.models.llama.batch`; :class:`KVSlots` applies them to the
decoder's KV cache.

* **Prefix reuse.** Each slot remembers the tokens its sequence holds in the KV cache. A new request starts
  from the slot whose tokens share the longest prefix with its prompt: in place when that slot is free, else by
  ``llama_memory_seq_cp`` into a free slot (cells are shared, not copied, in a unified cache). Only the rest of
  the prompt is decoded. A request whose prefix a running job is still reading waits for that step.

Sources: llama.cpp ``tools/server`` (a slot is picked by the longest common prefix of its cached tokens),
``include/llama.h`` (memory API); llama-cpp-python ``llama.py`` (``Llama.generate``: prefix matching).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from gemrag.models.llama.jobs import DecodeRequest, Job

__all__ = ["PREFIX_WAIT_MIN", "KVSlots", "choose_slot", "common_prefix_len"]

#: Shared prompt tokens (beyond those already cached) that make a request wait for a running job to read them.
PREFIX_WAIT_MIN = 8


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


class KVSlots:
    """The sequences (slots) of the batch decoder's KV cache: the tokens each one holds, which are busy, and where a
    new request starts (module docstring).

    Owned by one :class:`~gemrag.models.llama.batch.BatchDecoder`; not thread-safe.

    Attributes:
        cached: per slot, the token ids its sequence holds in the KV cache (the decoder appends what it decodes).
        busy: per slot, whether a request in flight uses it.
    """

    def __init__(self, lib: Any, mem: Any, *, n_seq: int, n_ctx: int) -> None:
        """Args: lib: the ``llama_cpp`` module. mem: the context's ``llama_memory`` handle. n_seq: slots (sequences).
        n_ctx: KV cells shared by all slots (tokens)."""
        self._lib = lib
        self._mem = mem
        self.n_seq, self.n_ctx = n_seq, n_ctx
        self.cached: list[list[int]] = [[] for _ in range(n_seq)]
        self.busy = [False] * n_seq

    def clear(self) -> None:
        """Empty the KV cache and forget every cached prefix."""
        self._lib.llama_memory_clear(self._mem, True)
        self.cached = [[] for _ in range(self.n_seq)]

    def truncate(self, slot: int, length: int) -> None:
        """Keep only the first ``length`` tokens of ``slot``'s sequence in the KV cache (a shorter one is kept)."""
        if length < len(self.cached[slot]):
            self._lib.llama_memory_seq_rm(self._mem, slot, length, -1)
            del self.cached[slot][length:]

    def _drop(self, slot: int) -> None:
        self._lib.llama_memory_seq_rm(self._mem, slot, -1, -1)
        self.cached[slot] = []

    def _reserved(self, jobs: Sequence[Job]) -> int:
        """Cells that active jobs may still need plus those idle slots hold (an upper bound: shared cells count
        once per sequence)."""
        need = sum(len(j.request.tokens) + j.request.max_tokens for j in jobs)
        return need + sum(len(c) for s, c in enumerate(self.cached) if not self.busy[s])

    def place(self, request: DecodeRequest, jobs: Sequence[Job]) -> tuple[int, int] | None:
        """Claim a free slot for ``request`` with the longest cached prefix of its prompt moved into it:
        ``(slot, reuse)``, ``reuse`` prompt tokens already in the KV cache; or None to retry after the next step:
        the KV cache has no room yet, or a running job is still reading more than :data:`PREFIX_WAIT_MIN` tokens
        of its prompt prefix.

        Args:
            request: the request to start (at least one prompt token; a free slot exists).
            jobs: the requests in flight.
        """
        prompt = list(request.tokens)
        # A prefix a running job is still reading is worth a step's wait: it is then copied, not decoded again.
        cached = max(common_prefix_len(c, prompt) for c in self.cached)
        coming = max((common_prefix_len(j.request.tokens, prompt) for j in jobs if j.pending), default=0)
        if coming > cached + PREFIX_WAIT_MIN:
            return None
        slot, source, reuse = choose_slot(self.cached, self.busy, prompt)
        need = len(prompt) + request.max_tokens
        # The target slot's own cache is replaced; other idle slots' caches are evicted until the request fits
        # (an idle source is always the target itself, see choose_slot). With no job running it always fits.
        while self._reserved(jobs) - len(self.cached[slot]) + need > self.n_ctx:
            idle = [s for s in range(self.n_seq) if not self.busy[s] and self.cached[s] and s != slot]
            if not idle:
                if jobs:
                    return None
                break
            self._drop(min(idle, key=lambda s: common_prefix_len(self.cached[s], prompt)))
        if slot == source:
            self._lib.llama_memory_seq_rm(self._mem, slot, reuse, -1)
            del self.cached[slot][reuse:]
        else:
            self._drop(slot)
            if reuse > 0:
                self._lib.llama_memory_seq_cp(self._mem, source, slot, 0, reuse)
                self.cached[slot] = list(self.cached[source][:reuse])
        self.busy[slot] = True
        return slot, reuse
