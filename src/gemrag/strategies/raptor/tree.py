"""RAPTOR's published tree (Sarthi et al. 2024, section 3, "collapsed tree"): one row per node, chunks (layer 0)
first, then summaries layer by layer; how it is published through the store and read back."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from gemrag.store import Published
from gemrag.strategies.base import StrategyContext
from gemrag.strategies.platform.common import publish_arrays

STRATEGY = "raptor"
"""The strategy's name, the namespace of its nodes, edges and arrays."""


class HasParams(Protocol):
    """The strategy's settings, recorded in the manifest (:class:`~gemrag.strategies.raptor.strategy.RaptorConfig`)."""

    def as_dict(self) -> dict[str, Any]: ...


SUMMARY = "summary"
"""Kind of RAPTOR's summary nodes (namespaced by the strategy ``raptor``)."""
CHILD = "child"
"""Kind of RAPTOR's edges, from a summary to each node it summarizes."""
AXES = {"node_ids": ("n",), "layers": ("n",), "n_tokens": ("n",), "vectors": ("n", "d")}


@dataclass
class RaptorTree:
    """The collapsed tree, one row per node: chunks (layer 0) first, then summaries layer by layer.

    Attributes:
        node_ids: store id of each node (chunks and RAPTOR's summary nodes).
        layers: layer of each node (0 = chunk).
        n_tokens: length of each node's text in MiniLM tokens (the budget's unit).
        vectors: ``(N, d)`` float32 ``E(text)`` of every node.
        sources: per row, the chunk ids under it (a chunk: itself); used while building.
        children: ``(parent id, child id)`` edges made while building.
    """

    node_ids: list[int]
    layers: list[int]
    n_tokens: list[int]
    vectors: NDArray[np.float32]
    sources: list[set[int]] = field(default_factory=list)
    children: list[tuple[int, int]] = field(default_factory=list)

    def publish(
        self, ctx: StrategyContext, generation: int, params: HasParams, retire: Sequence[int] | None = None
    ) -> None:
        """Publish generation ``generation``: the arrays, the summary nodes already inserted and the child edges
        made by this build. ``retire`` (an incremental update): keep the previous generation's summary nodes and
        edges except those summary ids; None: replace the whole tree."""
        arrays = {
            "node_ids": np.asarray(self.node_ids, dtype=np.int64),
            "layers": np.asarray(self.layers, dtype=np.int64),
            "n_tokens": np.asarray(self.n_tokens, dtype=np.int64),
            "vectors": self.vectors,
        }
        src = np.asarray([a for a, _ in self.children], dtype=np.int64)
        dst = np.asarray([b for _, b in self.children], dtype=np.int64)
        edges = {CHILD: (src, dst, np.ones(len(src)))}
        meta = {"params": params.as_dict()}
        carry = {} if retire is None else {"carry": True, "retire": retire}
        publish_arrays(
            ctx, STRATEGY, generation, arrays, axes=AXES, meta=meta, edges=edges, search=["vectors"], **carry
        )

    @classmethod
    def from_published(cls, published: Published) -> RaptorTree:
        """The tree of a published generation (arrays only; texts and children are read from the store)."""
        a = published.arrays
        return cls(
            np.asarray(a["node_ids"]).tolist(),
            np.asarray(a["layers"]).tolist(),
            np.asarray(a["n_tokens"]).tolist(),
            np.asarray(a["vectors"]),
        )
