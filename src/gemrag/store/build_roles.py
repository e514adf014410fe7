"""The build roles of a store (re-exported by :mod:`gemrag.store.parts`): a strategy's per-node LLM artefacts
(:class:`Artifacts`), its build generations and their arrays (:class:`BuildArrays`), nearest-neighbour search over
them (:class:`VectorSearch`). The implementations: :class:`gemrag.store.artifacts.ArtifactRows`,
:class:`gemrag.store.files.FileArrays` (or the PostgreSQL generations), :class:`gemrag.store.vectors.ExactSearch`,
:class:`gemrag.store.hnsw.HnswSearch` (or pgvector)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from gemrag.store.db_roles import Connection

if TYPE_CHECKING:
    from pydantic import BaseModel

    from gemrag.store.arrays import ArrayEntry, Matrix
    from gemrag.store.publish_types import Edges, Manifest, Publication, Published

M = TypeVar("M", bound="BaseModel")


@runtime_checkable
class Artifacts(Protocol):
    """Per-node LLM artefacts of a strategy: typed JSON rows keyed by ``(strategy, kind, node id)`` and stamped with the
    prompt version that made them (see :mod:`gemrag.store.artifacts`)."""

    def put_artifact(self, strategy: str, kind: str, node_id: int, value: BaseModel, version: str) -> None:
        """Store (or replace) one node's artefact, committed at once (resumable builds).

        Args:
            strategy: the owning strategy.
            kind: the artefact kind (e.g. ``"triples"``).
            node_id: the node (normally a chunk) it was computed from.
            value: the validated pydantic value.
            version: the prompt version that produced it.

        Raises:
            ValueError: a bad strategy or kind name.
            IntegrityError: (the database's) no node has that id.
            ReadOnlyMemoryError: the store is read-only.
        """
        ...

    def put_artifacts(self, strategy: str, kind: str, values: Iterable[tuple[int, BaseModel]], version: str) -> None:
        """Store several ``(node_id, value)`` artefacts in one transaction (see :meth:`put_artifact`, same errors)."""
        ...

    def get_artifact(self, strategy: str, kind: str, node_id: int, model: type[M], version: str) -> M | None:
        """One node's artefact of the given prompt version as ``model``, or None (missing, or made by another version).

        Raises:
            DamagedMemoryError: the stored JSON does not validate against ``model``.
        """
        ...

    def artifacts(
        self, strategy: str, kind: str, model: type[M], version: str, node_ids: Sequence[int] | None = None
    ) -> dict[int, M]:
        """Artefacts of one kind and prompt version, ``{node id: model}`` (all nodes, or those given that have one).

        Raises:
            DamagedMemoryError: a stored JSON does not validate against ``model``.
        """
        ...

    def missing_artifacts(self, strategy: str, kind: str, version: str, node_ids: Sequence[int]) -> list[int]:
        """The given node ids (in their order) that have no artefact of this kind made by ``version``."""
        ...

    def artifact_counts(self, strategy: str | None = None) -> dict[tuple[str, str, str], int]:
        """The number of stored artefacts per ``(strategy, kind, version)`` (one strategy's, or all)."""
        ...

    def delete_artifacts(self, strategy: str, kind: str | None = None, *, stale_for: str | None = None) -> int:
        """Delete a strategy's artefacts (of one kind, or all; with ``stale_for``, only those not made by that prompt
        version) and return the number of rows deleted.

        Raises:
            ReadOnlyMemoryError: the store is read-only.
        """
        ...


@runtime_checkable
class BuildArrays(Protocol):
    """Build generations and their arrays: a build begins a generation, writes arrays (dense ``.npy`` or sparse CSR),
    and publishes it atomically with its manifest; readers see the published generation only (see
    :mod:`gemrag.store.publish`)."""

    def published_generation(self, strategy: str) -> int | None:
        """The strategy's published generation, or None when it was never built."""
        ...

    def published_generations(self) -> dict[str, int]:
        """Every built strategy's published generation, by strategy name."""
        ...

    def manifest(self, strategy: str) -> Manifest | None:
        """The strategy's committed manifest (cheap: no array is read), or None when it was never built."""
        ...

    def load_published(self, strategy: str, *, mmap: bool = True) -> Published | None:
        """The strategy's published build, checked against its manifest; None when it was never built.

        Args:
            strategy: the strategy's name.
            mmap: memory-map the dense arrays read-only (else read them into memory; sparse matrices are read).

        Raises:
            StaleGenerationError: an array of the generation is gone because a newer generation was published
                meanwhile (the caller retries outside its snapshot).
            DamagedMemoryError: an array is missing or does not match the manifest, and no newer generation exists.
        """
        ...

    def begin_build(self, strategy: str) -> int:
        """Start a build: remove what an unpublished earlier build left, return the new generation (the published one
        + 1; 1 when never published).

        Raises:
            ValueError: the strategy name is not ``[A-Za-z0-9_-]+``.
            ReadOnlyMemoryError: the store is read-only.
        """
        ...

    def write_array(
        self, strategy: str, generation: int, name: str, array: Matrix, axes: Sequence[str] | None = None
    ) -> ArrayEntry:
        """Write one array of a build durably: a dense numpy array (any dtype but object) or a 2-D scipy.sparse matrix
        (read back as CSR).

        Args:
            strategy: the building strategy.
            generation: its build generation (from :meth:`begin_build`).
            name: the array's name (``[A-Za-z0-9_-]+``).
            array: the array.
            axes: optional axis names, one per dimension (arrays sharing an axis name must agree on its length).

        Returns:
            The manifest entry to pass to :meth:`publish`.

        Raises:
            ValueError: a bad name, an object dtype, or ``axes`` does not match the array's dimensions.
        """
        ...

    def artifact_path(self, strategy: str, generation: int, name: str) -> Path:
        """Where a build keeps an artefact that is not an array (a file or a directory the builder creates); publish
        it with ``paths=[name]`` after :meth:`sync_path`."""
        ...

    def sync_path(self, path: Path) -> None:
        """Make ``path`` durable: fsync a file, or every file and directory under a directory, and its parent."""
        ...

    def publish(
        self,
        strategy: str,
        generation: int,
        arrays: Sequence[ArrayEntry],
        *,
        meta: dict[str, Any] | None = None,
        paths: Sequence[str] = (),
        edges: Edges | Mapping[str, Edges] | None = None,
        covers: Sequence[int] | Literal["keep"] | None = None,
        params: dict[str, Any] | None = None,
        models: dict[str, Any] | None = None,
        carry: bool = False,
        retire: Sequence[int] = (),
    ) -> None:
        """Publish a build in one transaction, then remove the strategy's older arrays (the arguments are those of
        :class:`gemrag.store.publish_types.Publication`: ``covers`` the chunk ids it was built over, ``carry`` keeps
        the older generations' nodes, ``retire`` node ids removed from them).

        Raises:
            ValueError: arrays disagree on a named axis, or an array or path is missing.
            GemragError: a generation as new or newer was published meanwhile (two builders without the lock).
            ReadOnlyMemoryError: the store is read-only.
        """
        ...

    def publish_many(
        self,
        publications: Sequence[Publication],
        *,
        before: Callable[[Connection], None] | None = None,
        withdraw: Sequence[str] = (),
    ) -> None:
        """Publish several strategies' generations in one durable transaction, then remove the arrays no published
        build names.

        Args:
            publications: the generations to publish.
            before: run first inside the transaction (e.g. deleting a document's rows), so readers see those changes
                and the new generations together.
            withdraw: strategies whose published build is removed in the same transaction (see :meth:`withdraw`).

        Raises:
            ValueError: arrays disagree on a named axis, or an array or path is missing.
            GemragError: a generation as new or newer was published meanwhile (two builders without the lock).
        """
        ...

    def withdraw(self, strategy: str) -> None:
        """Remove a strategy's published build (it becomes never built): its manifest, nodes, edges and chunk list in
        one transaction, then its arrays. Its per-chunk artefacts stay (rebuilding reuses them)."""
        ...

    def stale_files(self, strategy: str | None = None) -> Iterator[Path]:
        """Files no published build names: other generations (of ``strategy``, or of every strategy when None) and
        leftovers of interrupted writes (none where the arrays live in the database)."""
        ...

    def remove_stale_files(self, strategy: str | None = None) -> int:
        """Delete :meth:`stale_files` (a builder's job: only while holding the build lock) and return how many entries
        were removed (0 on a read-only store, which is left untouched)."""
        ...

    def remove_unpublished(self) -> int:
        """Delete the nodes of every strategy's unpublished generations (left by killed builds) and stale arrays;
        return the number of node rows deleted."""
        ...


@runtime_checkable
class VectorSearch(Protocol):
    """Nearest-neighbour search over a build's arrays: every strategy's nearest-neighbour step goes through it (see
    :class:`gemrag.store.vectors.ExactSearch`)."""

    def index_vectors(self, strategy: str, generation: int, name: str, vectors: NDArray[np.floating]) -> list[str]:
        """Make the array ``name`` of an unpublished build searchable by :meth:`nearest`, where the part keeps an index
        (PostgreSQL + pgvector: a ``vector(d)`` table, with an HNSW index above a size threshold; SQLite: an HNSW
        artefact above :data:`gemrag.store.hnsw.ANN_ABOVE` rows; the exact search needs none).

        Args:
            strategy: the building strategy.
            generation: its build generation (from ``begin_build``).
            name: the array's name.
            vectors: ``(n, d)`` float rows (the array written with ``write_array``).

        Returns:
            The names of the build artefacts written (to publish in the manifest's ``paths``).
        """
        ...

    def nearest(
        self,
        strategy: str,
        generation: int,
        name: str,
        vectors: NDArray[np.floating],
        query: NDArray[np.floating],
        k: int,
        *,
        rows: NDArray[np.int64] | None = None,
        unit: NDArray[np.floating] | None = None,
    ) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """The ``k`` rows of a published build's array ``name`` most cosine-similar to ``query`` (an index's
        candidates, where there is one, rescored exactly, so every backend gives the same scores).

        Args:
            strategy: the strategy whose published array is searched.
            generation: its generation, as loaded by the caller.
            name: the array's name.
            vectors: ``(n, d)`` float, that array as loaded (the exact search and the rescoring use it).
            query: ``(d,)`` float, not all zero.
            k: how many rows (``k > n`` returns all).
            rows: optional ``(m,)`` int rows to search among (a filtered search; always exact).
            unit: optional ``(n, d)`` unit rows (float32 or float64) of ``vectors`` made once per loaded build
                (:func:`gemrag.graph.ann.unit_rows32`): scores are then float32 products, on every backend.

        Returns:
            ``(rows, cosines)``: ``(min(k, m),)`` int64 row indices into ``vectors``, best first, ties to the lower
            row, and their float64 cosines.

        Raises:
            ValueError: a zero or mis-sized query.
        """
        ...
