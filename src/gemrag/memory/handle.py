"""What the memory's role modules need of a memory: :class:`MemoryHandle`, the one protocol they type against.

:class:`gemrag.memory.Memory` is one; the role modules (states, retrieval, deletion, sources, indexing, forgetting,
stats, cost plans) take a handle rather than the facade, so that none of them imports the facade that uses them. A
handle is generic in its store: each role module names the store roles it uses (``MemoryHandle[RetrievalStore]``, a
protocol of :mod:`gemrag.store.parts` roles), and the type checker holds it to them.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar

from gemrag.models.cache import CachedEmbedder
from gemrag.strategies.base import Strategy, StrategyContext

S_co = TypeVar("S_co", covariant=True)
"""The store roles a role module uses (a protocol the memory's store satisfies)."""


class MemoryHandle(Protocol[S_co]):
    """What the role modules need of a memory (:class:`gemrag.memory.Memory` is one): its store (as the roles
    ``S_co`` the module uses), its cached embedder, its strategy context, its strategies by name and a build. A
    protocol, so that the role modules do not import the memory that uses it."""

    @property
    def store(self) -> S_co:
        """The memory's store, as the roles the module uses."""
        ...

    @property
    def embedder(self) -> CachedEmbedder:
        """The memory's embedder behind its cache (:meth:`~gemrag.models.cache.CachedEmbedder.key`: a text's cache
        key)."""
        ...

    @property
    def ctx(self) -> StrategyContext:
        """The strategies' context (store, models, configuration, usage meter, progress)."""
        ...

    def get_strategy(self, name: str | None = None) -> Strategy:
        """The strategy ``name`` (default: the configured one), made once per memory.

        Raises:
            KeyError: no strategy has that name.
            ConfigError: the strategy's configuration section is invalid.
        """
        ...

    def index(self, strategy: str | None = None, *, wait: float | None = None) -> Any:
        """Chunk what is new and build ``strategy`` under the build lock (waiting up to ``wait`` seconds for it);
        returns the :class:`gemrag.memory.IndexReport`."""
        ...
