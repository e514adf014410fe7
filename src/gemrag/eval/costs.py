"""Cost accounting for ``gemrag eval``: a lazily built shared LLM and per-thread token taps on a memory.

Token counts are *costs*, independent of caching and of the order strategies run in: LLM cache hits count the
tokens of the original call, and embedding tokens count every distinct text a strategy asked to embed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from gemrag.errors import GemragError
from gemrag.memory import Memory
from gemrag.models.base import LLM, Embedder

__all__ = ["CostTap", "LazyLLM", "planned_cost", "token_counter"]


class LazyLLM:
    """One LLM backend shared by every memory of an evaluation, built on first use (so retrieval-only runs
    of LLM-free strategies never load a model); attributes are those of the backend."""

    def __init__(self, make: Callable[[], LLM]) -> None:
        self._make, self._lock = make, threading.Lock()
        self._inner: LLM | None = None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # copy / pickle probes must not load a model
            raise AttributeError(name)
        with self._lock:
            if self._inner is None:
                self._inner = self._make()
        return getattr(self._inner, name)


class CostTap:
    """Per-thread token costs of one memory's model calls, so parallel questions are measured separately.

    It wraps the memory's ``meter.record`` (sees every LLM call, cache hits with their original usage) and
    ``embedder.embed`` (sees every text, cached or not; each distinct text is counted once per measurement,
    as a build from scratch would embed it once) on those instances.
    """

    def __init__(self, mem: Memory, count_tokens: Callable[[Sequence[str]], int]) -> None:
        self._local = threading.local()
        self._shared: tuple[dict[str, int], set[str]] | None = None
        record, embed = mem.meter.record, mem.embedder.embed

        def tapped_record(kind: str, model: str, usage: Any, cached: bool) -> None:
            record(kind, model, usage, cached)
            state = self._current()
            if state is not None and kind == "llm":
                acc = state[0]
                acc["prompt_tokens"] += usage.prompt_tokens
                acc["completion_tokens"] += usage.completion_tokens
                acc["llm_calls"] += 1
                acc["llm_cached"] += int(cached)

        def tapped_embed(texts: Sequence[str]) -> Any:
            state = self._current()
            if state is not None:
                new = [t for t in dict.fromkeys(texts) if t not in state[1]]
                state[1].update(new)
                state[0]["embedding_tokens"] += count_tokens(new) if new else 0
            return embed(texts)

        mem.meter.record = tapped_record  # type: ignore[method-assign]
        mem.embedder.embed = tapped_embed  # type: ignore[method-assign]

    def _current(self) -> tuple[dict[str, int], set[str]] | None:
        state = getattr(self._local, "state", None)
        return state if state is not None else self._shared

    @contextmanager
    def measure(self, all_threads: bool = False) -> Iterator[dict[str, int]]:
        """Count the calls made inside the block into the yielded dict: those of this thread, or with
        ``all_threads`` those of every thread not measuring on its own (for a build that may use threads)."""
        acc = dict.fromkeys(("prompt_tokens", "completion_tokens", "embedding_tokens", "llm_calls", "llm_cached"), 0)
        state: tuple[dict[str, int], set[str]] = (acc, set())
        if all_threads:
            self._shared = state
        else:
            self._local.state = state
        try:
            yield acc
        finally:
            if all_threads:
                self._shared = None
            else:
                self._local.state = None


def token_counter(embedder: Embedder) -> Callable[[Sequence[str]], int]:
    """``count(texts) -> int``: the embedder's own ``count_tokens`` summed, else MiniLM WordPiece tokens."""
    count = getattr(embedder, "count_tokens", None)
    if callable(count):
        return lambda texts: sum(int(count(t)) for t in texts)
    from gemrag.ingest import minilm_tokenizer

    tok = minilm_tokenizer()
    return lambda texts: sum(len(e.ids) for e in tok.encode_batch(list(texts)))


def planned_cost(mem: Memory, strategy: str) -> dict[str, Any]:
    """The cost plan of building ``strategy`` in ``mem`` now (:meth:`gemrag.memory.Memory.plan_index`, the model
    calibrated once per machine), as ``index.jsonl`` records it beside the measured cost: ``calls``,
    ``prompt_tokens``, ``completion_tokens``, ``minutes`` (None: unknown), ``exact`` and ``rates`` (their source).
    A plan that fails is recorded as ``{"error": message}`` rather than stopping the evaluation."""
    try:
        return mem.plan_index(strategy).summary()
    except GemragError as exc:
        return {"error": str(exc)}
