"""Usage meter: counts prompt, completion and embedding tokens and seconds, split by phase.

Phases are free-form names; gemrag uses ``"index"`` for building a memory and ``"query"`` for retrieval
and answering (the split the UnWeaver paper's Table 1 reports). Rows are appended to the memory's
``usage`` table so ``gemrag info`` can report totals across runs.

Rows of the ``index`` phase are written at once; rows of *buffered* phases (``query`` by default) are kept in
memory and written in batches (every ``max_pending`` rows, and by :meth:`UsageMeter.flush`, which
:class:`~gemrag.memory.Memory` calls before reporting and on close), so answering questions does not take the
database's write lock once per model call while a build holds it. A batch the database refuses (locked) stays
pending for the next flush; a read-only store drops rows silently (:meth:`gemrag.store.Store.log_usage`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from gemrag.errors import GemragError
from gemrag.models.base import Usage

Row = tuple[str, str, str, int, int, int, float, int]
MAX_KEPT = 10_000
"""Most unwritten rows kept while the database refuses them (older ones are dropped beyond that)."""


class UsageSink(Protocol):
    """Where usage rows go (the memory's :class:`gemrag.store.Store`)."""

    def log_usage(self, rows: list[Row]) -> None: ...


class UsageMeter:
    """Accumulates :class:`Usage` per phase in memory and appends each call to a sink.

    Args:
        sink: optional persistent sink (the store); None keeps totals in memory only.
        phase: the initial phase name.
        buffered: phases whose rows are written in batches (see the module docstring).
        max_pending: batch size of buffered phases.
    """

    def __init__(
        self,
        sink: UsageSink | None = None,
        phase: str = "index",
        *,
        buffered: tuple[str, ...] = ("query",),
        max_pending: int = 64,
    ) -> None:
        self.sink = sink
        self._local = threading.local()
        self._default_phase = phase
        self._lock = threading.Lock()
        self.totals: dict[str, Usage] = {}
        self.buffered = buffered
        self.max_pending = max_pending
        self._pending: list[Row] = []

    @property
    def current_phase(self) -> str:
        """The phase calls are attributed to in this thread."""
        return getattr(self._local, "phase", self._default_phase)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Attribute calls made inside the block (in this thread) to phase ``name``."""
        previous = self.current_phase
        self._local.phase = name
        try:
            yield
        finally:
            self._local.phase = previous

    def record(self, kind: str, model: str, usage: Usage, cached: bool) -> None:
        """Record one call.

        Args:
            kind: ``"llm"`` or ``"embed"``.
            model: the model id.
            usage: what the call cost (for a cache hit: what it cost when first made).
            cached: True when served from the cache (its tokens and seconds are then not spent again).
        """
        phase = self.current_phase
        spent = (
            Usage(cached=1)
            if cached
            else Usage(usage.prompt_tokens, usage.completion_tokens, usage.embedding_tokens, usage.seconds, calls=1)
        )
        row: Row = (
            phase,
            kind,
            model,
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.embedding_tokens,
            0.0 if cached else usage.seconds,
            int(cached),
        )
        with self._lock:
            self.totals[phase] = self.totals.get(phase, Usage()) + spent
            if self.sink is None:
                return
            self._pending.append(row)
            now = phase not in self.buffered or len(self._pending) >= self.max_pending
        if now:
            self.flush()

    def flush(self) -> int:
        """Write the pending rows to the sink.

        Returns:
            The number of rows written (0 when the sink refused them: they stay pending, up to
            :data:`MAX_KEPT`).
        """
        with self._lock:
            rows, self._pending = self._pending, []
        if not rows or self.sink is None:
            return 0
        try:
            self.sink.log_usage(rows)
        except GemragError:
            with self._lock:
                self._pending = (rows + self._pending)[-MAX_KEPT:]
            return 0
        return len(rows)

    def total(self) -> Usage:
        """Sum over all phases of what was spent in this process."""
        out = Usage()
        for u in self.totals.values():
            out = out + u
        return out
