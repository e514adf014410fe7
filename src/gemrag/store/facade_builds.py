"""The store facade's members of the artefacts, build-arrays, vector-search and caches parts (:class:`BuildMembers`, a
base of :class:`gemrag.store.base.MemoryStore`): each a real method, typed as its role protocol declares it, forwarded
to the part at each call (a part swapped in :class:`StoreParts` is the one called). The contracts are the protocols'
(:mod:`gemrag.store.build_roles`, :mod:`gemrag.store.cache_roles`)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import NDArray

from gemrag.store.build_roles import M
from gemrag.store.cache_roles import UsageRow
from gemrag.store.db_roles import Connection
from gemrag.store.parts import StoreParts

if TYPE_CHECKING:
    from pydantic import BaseModel

    from gemrag.store.arrays import ArrayEntry, Matrix
    from gemrag.store.erase import Purged
    from gemrag.store.publish_types import Edges, Manifest, Publication, Published


class BuildMembers:
    """The members of :class:`~gemrag.store.build_roles.Artifacts`, :class:`~gemrag.store.build_roles.BuildArrays`,
    :class:`~gemrag.store.build_roles.VectorSearch` and :class:`~gemrag.store.cache_roles.Caches` on the store
    facade."""

    parts: StoreParts

    def put_artifact(self, strategy: str, kind: str, node_id: int, value: BaseModel, version: str) -> None:
        """``parts.artifacts``: :meth:`~gemrag.store.build_roles.Artifacts.put_artifact`."""
        self.parts.artifacts.put_artifact(strategy, kind, node_id, value, version)

    def put_artifacts(self, strategy: str, kind: str, values: Iterable[tuple[int, BaseModel]], version: str) -> None:
        """``parts.artifacts``: :meth:`~gemrag.store.build_roles.Artifacts.put_artifacts`."""
        self.parts.artifacts.put_artifacts(strategy, kind, values, version)

    def get_artifact(self, strategy: str, kind: str, node_id: int, model: type[M], version: str) -> M | None:
        """``parts.artifacts``: :meth:`~gemrag.store.build_roles.Artifacts.get_artifact`."""
        return self.parts.artifacts.get_artifact(strategy, kind, node_id, model, version)

    def artifacts(
        self, strategy: str, kind: str, model: type[M], version: str, node_ids: Sequence[int] | None = None
    ) -> dict[int, M]:
        """``parts.artifacts``: :meth:`~gemrag.store.build_roles.Artifacts.artifacts`."""
        return self.parts.artifacts.artifacts(strategy, kind, model, version, node_ids)

    def missing_artifacts(self, strategy: str, kind: str, version: str, node_ids: Sequence[int]) -> list[int]:
        """``parts.artifacts``: :meth:`~gemrag.store.build_roles.Artifacts.missing_artifacts`."""
        return self.parts.artifacts.missing_artifacts(strategy, kind, version, node_ids)

    def artifact_counts(self, strategy: str | None = None) -> dict[tuple[str, str, str], int]:
        """``parts.artifacts``: :meth:`~gemrag.store.build_roles.Artifacts.artifact_counts`."""
        return self.parts.artifacts.artifact_counts(strategy)

    def delete_artifacts(self, strategy: str, kind: str | None = None, *, stale_for: str | None = None) -> int:
        """``parts.artifacts``: :meth:`~gemrag.store.build_roles.Artifacts.delete_artifacts`."""
        return self.parts.artifacts.delete_artifacts(strategy, kind, stale_for=stale_for)

    def published_generation(self, strategy: str) -> int | None:
        """``parts.arrays``: :meth:`~gemrag.store.build_roles.BuildArrays.published_generation`."""
        return self.parts.arrays.published_generation(strategy)

    def published_generations(self) -> dict[str, int]:
        """``parts.arrays``: :meth:`~gemrag.store.build_roles.BuildArrays.published_generations`."""
        return self.parts.arrays.published_generations()

    def manifest(self, strategy: str) -> Manifest | None:
        """``parts.arrays``: :meth:`~gemrag.store.build_roles.BuildArrays.manifest`."""
        return self.parts.arrays.manifest(strategy)

    def load_published(self, strategy: str, *, mmap: bool = True) -> Published | None:
        """``parts.arrays``: :meth:`~gemrag.store.build_roles.BuildArrays.load_published`."""
        return self.parts.arrays.load_published(strategy, mmap=mmap)

    def begin_build(self, strategy: str) -> int:
        """``parts.arrays``: :meth:`~gemrag.store.build_roles.BuildArrays.begin_build`."""
        return self.parts.arrays.begin_build(strategy)

    def write_array(
        self, strategy: str, generation: int, name: str, array: Matrix, axes: Sequence[str] | None = None
    ) -> ArrayEntry:
        """``parts.arrays``: :meth:`~gemrag.store.build_roles.BuildArrays.write_array`."""
        return self.parts.arrays.write_array(strategy, generation, name, array, axes)

    def artifact_path(self, strategy: str, generation: int, name: str) -> Path:
        """``parts.arrays``: :meth:`~gemrag.store.build_roles.BuildArrays.artifact_path`."""
        return self.parts.arrays.artifact_path(strategy, generation, name)

    def sync_path(self, path: Path) -> None:
        """``parts.arrays``: :meth:`~gemrag.store.build_roles.BuildArrays.sync_path`."""
        self.parts.arrays.sync_path(path)

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
        """``parts.arrays``: :meth:`~gemrag.store.build_roles.BuildArrays.publish`."""
        self.parts.arrays.publish(
            strategy,
            generation,
            arrays,
            meta=meta,
            paths=paths,
            edges=edges,
            covers=covers,
            params=params,
            models=models,
            carry=carry,
            retire=retire,
        )

    def publish_many(
        self,
        publications: Sequence[Publication],
        *,
        before: Callable[[Connection], None] | None = None,
        withdraw: Sequence[str] = (),
    ) -> None:
        """``parts.arrays``: :meth:`~gemrag.store.build_roles.BuildArrays.publish_many`."""
        self.parts.arrays.publish_many(publications, before=before, withdraw=withdraw)

    def withdraw(self, strategy: str) -> None:
        """``parts.arrays``: :meth:`~gemrag.store.build_roles.BuildArrays.withdraw`."""
        self.parts.arrays.withdraw(strategy)

    def stale_files(self, strategy: str | None = None) -> Iterator[Path]:
        """``parts.arrays``: :meth:`~gemrag.store.build_roles.BuildArrays.stale_files`."""
        return self.parts.arrays.stale_files(strategy)

    def remove_stale_files(self, strategy: str | None = None) -> int:
        """``parts.arrays``: :meth:`~gemrag.store.build_roles.BuildArrays.remove_stale_files`."""
        return self.parts.arrays.remove_stale_files(strategy)

    def remove_unpublished(self) -> int:
        """``parts.arrays``: :meth:`~gemrag.store.build_roles.BuildArrays.remove_unpublished`."""
        return self.parts.arrays.remove_unpublished()

    def index_vectors(self, strategy: str, generation: int, name: str, vectors: NDArray[np.floating]) -> list[str]:
        """``parts.vectors``: :meth:`~gemrag.store.build_roles.VectorSearch.index_vectors`."""
        return self.parts.vectors.index_vectors(strategy, generation, name, vectors)

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
        """``parts.vectors``: :meth:`~gemrag.store.build_roles.VectorSearch.nearest`."""
        return self.parts.vectors.nearest(strategy, generation, name, vectors, query, k, rows=rows, unit=unit)

    def get_embeddings(self, model: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """``parts.caches``: :meth:`~gemrag.store.cache_roles.Caches.get_embeddings`."""
        return self.parts.caches.get_embeddings(model, keys)

    def put_embeddings(self, model: str, items: Iterable[tuple[str, np.ndarray]]) -> None:
        """``parts.caches``: :meth:`~gemrag.store.cache_roles.Caches.put_embeddings`."""
        self.parts.caches.put_embeddings(model, items)

    def get_llm(self, key: str) -> dict[str, Any] | None:
        """``parts.caches``: :meth:`~gemrag.store.cache_roles.Caches.get_llm`."""
        return self.parts.caches.get_llm(key)

    def put_llm(self, key: str, model: str, response: dict[str, Any]) -> None:
        """``parts.caches``: :meth:`~gemrag.store.cache_roles.Caches.put_llm`."""
        self.parts.caches.put_llm(key, model, response)

    def cached_llm(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """``parts.caches``: :meth:`~gemrag.store.cache_roles.Caches.cached_llm`."""
        return self.parts.caches.cached_llm(keys)

    def recent_llm_responses(self, model: str, limit: int = 5000) -> list[dict[str, Any]]:
        """``parts.caches``: :meth:`~gemrag.store.cache_roles.Caches.recent_llm_responses`."""
        return self.parts.caches.recent_llm_responses(model, limit)

    def llm_cache_counts(self) -> tuple[int, int]:
        """``parts.caches``: :meth:`~gemrag.store.cache_roles.Caches.llm_cache_counts`."""
        return self.parts.caches.llm_cache_counts()

    def log_usage(self, rows: Sequence[UsageRow]) -> None:
        """``parts.caches``: :meth:`~gemrag.store.cache_roles.Caches.log_usage`."""
        self.parts.caches.log_usage(rows)

    def usage_by_phase(self) -> dict[str, dict[str, float]]:
        """``parts.caches``: :meth:`~gemrag.store.cache_roles.Caches.usage_by_phase`."""
        return self.parts.caches.usage_by_phase()

    def usage_mark(self) -> int:
        """``parts.caches``: :meth:`~gemrag.store.cache_roles.Caches.usage_mark`."""
        return self.parts.caches.usage_mark()

    def usage_after(self, mark: int, upto: int | None = None, phase: str = "index") -> dict[str, float]:
        """``parts.caches``: :meth:`~gemrag.store.cache_roles.Caches.usage_after`."""
        return self.parts.caches.usage_after(mark, upto, phase)

    def record_failure(self, phase: str, node_id: int | None, message: str) -> None:
        """``parts.caches``: :meth:`~gemrag.store.cache_roles.Caches.record_failure`."""
        self.parts.caches.record_failure(phase, node_id, message)

    def failures(self) -> list[dict[str, Any]]:
        """``parts.caches``: :meth:`~gemrag.store.cache_roles.Caches.failures`."""
        return self.parts.caches.failures()

    def forget_marks(self, c: Connection, marks: Iterable[int]) -> None:
        """``parts.caches``: :meth:`~gemrag.store.cache_roles.Caches.forget_marks`."""
        self.parts.caches.forget_marks(c, marks)

    def forgotten_marks(self) -> set[int]:
        """``parts.caches``: :meth:`~gemrag.store.cache_roles.Caches.forgotten_marks`."""
        return self.parts.caches.forgotten_marks()

    def purge_caches(
        self,
        removed: Collection[int],
        *,
        handled: Collection[int],
        input_key: str,
        keep_embeddings: Collection[str] | None,
    ) -> Purged:
        """``parts.caches``: :meth:`~gemrag.store.cache_roles.Caches.purge_caches`."""
        return self.parts.caches.purge_caches(
            removed, handled=handled, input_key=input_key, keep_embeddings=keep_embeddings
        )
