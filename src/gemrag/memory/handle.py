"""What the memory's role modules need of a memory: :class:`MemoryHandle`, the one protocol they type against.

:class:`gemrag.memory.Memory` is one; the role modules (states, retrieval, deletion, sources, indexing, forgetting,
stats, cost plans) take a handle rather than the facade, so that none of them imports the facade that uses them.
"""

from __future__ import annotations

from typing import Any, Protocol

from gemrag.store import MemoryStore
from gemrag.strategies.base import Strategy, StrategyContext


class MemoryHandle(Protocol):
    """What the role modules need of a memory (:class:`gemrag.memory.Memory` is one): its store, its strategy context,
    its strategies by name and a build. A protocol, so that the role modules do not import the memory that uses it."""

    store: MemoryStore
    ctx: StrategyContext

    def get_strategy(self, name: str | None = None) -> Strategy: ...

    def index(self, strategy: str | None = None, *, wait: float | None = None) -> Any: ...
