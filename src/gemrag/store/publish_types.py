"""The records of build generations: what a builder hands to ``publish`` and what readers get back."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from gemrag.store.arrays import ArrayEntry, Matrix

KEEP_COVERS: Literal["keep"] = "keep"
"""``covers`` value of :class:`Publication`: keep the chunk set recorded by the previous generation (a build
that only removed rows, e.g. after deleting a document, still reflects the chunks it was computed from)."""

Edges = tuple[np.ndarray, np.ndarray, np.ndarray]
"""``(src, dst, weight)``: node ids (int) and weights (float), same length."""


@dataclass(frozen=True)
class Published:
    """A strategy's published build, as read by :meth:`gemrag.store.publish.Generations.load_published`.

    Attributes:
        strategy: the strategy's name. generation: its build generation (int >= 1).
        arrays: name -> array (dense arrays memory-mapped read-only when loaded with ``mmap=True``; sparse ones
            as ``scipy.sparse.csr_matrix``).
        paths: name -> path of each other published artefact (a file or directory).
        meta: the build's JSON metadata. published_at: UNIX time of the publishing commit.
        params: the strategy's parameters the build used. models: the model ids it used.
    """

    strategy: str
    generation: int
    arrays: dict[str, Matrix]
    paths: dict[str, Path] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    published_at: float = 0.0
    params: dict[str, Any] = field(default_factory=dict)
    models: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Manifest:
    """A strategy's committed manifest (:meth:`gemrag.store.publish.Generations.manifest`): what :class:`Published`
    holds, with :class:`ArrayEntry` records instead of arrays and path names instead of paths."""

    strategy: str
    generation: int
    arrays: dict[str, ArrayEntry]
    paths: tuple[str, ...]
    meta: dict[str, Any]
    published_at: float
    params: dict[str, Any] = field(default_factory=dict)
    models: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Publication:
    """One strategy's generation ready to publish (:meth:`gemrag.store.publish.Generations.publish_many`).

    Attributes:
        strategy, generation: the build (from :meth:`gemrag.store.publish.Generations.begin_build`).
        arrays: entries from :meth:`gemrag.store.publish.Generations.write_array`.
        meta: JSON-serializable build metadata. paths: names of other artefacts under ``artifact_path``.
        edges: ``(src, dst, weight)`` (edge kind ``""``) or ``{kind: (src, dst, weight)}``: edges of the new
            generation besides those staged with ``Store.add_edges``.
        covers: the chunk ids the build covers; None: every chunk in the memory at the commit;
            :data:`KEEP_COVERS`: the previous generation's set.
        params: the strategy's parameters. models: the model ids used (e.g. ``{"embedder": ..., "llm": ...}``).
        carry: keep the previous generation's nodes and edges (re-stamped to the new generation) instead of
            deleting them. retire: node ids of the previous generation to delete even so.
    """

    strategy: str
    generation: int
    arrays: Sequence[ArrayEntry] = ()
    meta: dict[str, Any] | None = None
    paths: Sequence[str] = ()
    edges: Edges | Mapping[str, Edges] | None = None
    covers: Sequence[int] | Literal["keep"] | None = None
    params: dict[str, Any] | None = None
    models: dict[str, Any] | None = None
    carry: bool = False
    retire: Sequence[int] = ()
