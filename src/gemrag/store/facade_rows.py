"""The store facade's members of the rows and documents parts (:class:`RowMembers`, a base of
:class:`gemrag.store.base.MemoryStore`): each a real method, typed as its role protocol declares it, forwarded to the
part at each call (``self.parts.rows`` / ``self.parts.documents``: a part swapped in :class:`StoreParts` is the one
called). The contracts are the protocols' (:mod:`gemrag.store.row_roles`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from gemrag.store.db_roles import Connection
from gemrag.store.parts import StoreParts
from gemrag.store.records import BuildState, NodeRecord
from gemrag.store.row_roles import Build

if TYPE_CHECKING:
    from gemrag.types import Passage


class RowMembers:
    """The members of :class:`~gemrag.store.row_roles.Rows` and :class:`~gemrag.store.row_roles.Documents` on the
    store facade."""

    parts: StoreParts

    def get_meta(self, key: str, default: Any = None) -> Any:
        """``parts.rows``: :meth:`~gemrag.store.row_roles.MetaRows.get_meta`."""
        return self.parts.rows.get_meta(key, default)

    def set_meta(self, key: str, value: Any) -> None:
        """``parts.rows``: :meth:`~gemrag.store.row_roles.MetaRows.set_meta`."""
        self.parts.rows.set_meta(key, value)

    def add_document(self, source: str, title: str, text: str) -> tuple[int, bool]:
        """``parts.rows``: :meth:`~gemrag.store.row_roles.DocumentChunks.add_document`."""
        return self.parts.rows.add_document(source, title, text)

    def documents(self) -> list[dict[str, Any]]:
        """``parts.rows``: :meth:`~gemrag.store.row_roles.DocumentChunks.documents`."""
        return self.parts.rows.documents()

    def document_text(self, doc_id: int) -> str:
        """``parts.rows``: :meth:`~gemrag.store.row_roles.DocumentChunks.document_text`."""
        return self.parts.rows.document_text(doc_id)

    def unchunked_documents(self) -> list[tuple[int, str]]:
        """``parts.rows``: :meth:`~gemrag.store.row_roles.DocumentChunks.unchunked_documents`."""
        return self.parts.rows.unchunked_documents()

    def add_chunks(
        self, doc_id: int, chunks: Sequence[tuple[str, int]], spans: Sequence[tuple[int, int] | None] | None = None
    ) -> None:
        """``parts.rows``: :meth:`~gemrag.store.row_roles.DocumentChunks.add_chunks`."""
        self.parts.rows.add_chunks(doc_id, chunks, spans)

    def find_documents(self, ref: str) -> list[dict[str, Any]]:
        """``parts.rows``: :meth:`~gemrag.store.row_roles.DocumentChunks.find_documents`."""
        return self.parts.rows.find_documents(ref)

    def document_chunk_ids(self, doc_id: int) -> list[int]:
        """``parts.rows``: :meth:`~gemrag.store.row_roles.DocumentChunks.document_chunk_ids`."""
        return self.parts.rows.document_chunk_ids(doc_id)

    def chunk_signature(self) -> tuple[int, int, int, int]:
        """``parts.rows``: :meth:`~gemrag.store.row_roles.DocumentChunks.chunk_signature`."""
        return self.parts.rows.chunk_signature()

    def nodes(
        self, kind: str | None = None, *, strategy: str | None = None, build: Build | None = None
    ) -> list[NodeRecord]:
        """``parts.rows``: :meth:`~gemrag.store.row_roles.NodeRows.nodes`."""
        return self.parts.rows.nodes(kind, strategy=strategy, build=build)

    def node(self, node_id: int) -> NodeRecord:
        """``parts.rows``: :meth:`~gemrag.store.row_roles.NodeRows.node`."""
        return self.parts.rows.node(node_id)

    def nodes_by_id(self, node_ids: Sequence[int]) -> dict[int, NodeRecord]:
        """``parts.rows``: :meth:`~gemrag.store.row_roles.NodeRows.nodes_by_id`."""
        return self.parts.rows.nodes_by_id(node_ids)

    def passages(self, chunk_ids: Sequence[int]) -> dict[int, Passage]:
        """``parts.rows``: :meth:`~gemrag.store.row_roles.NodeRows.passages`."""
        return self.parts.rows.passages(chunk_ids)

    def add_node(
        self,
        strategy: str,
        generation: int,
        kind: str,
        text: str,
        *,
        n_tokens: int = 0,
        meta: dict[str, Any] | None = None,
        ord_: int = 0,
        sources: Iterable[int] = (),
    ) -> int:
        """``parts.rows``: :meth:`~gemrag.store.row_roles.NodeRows.add_node`."""
        return self.parts.rows.add_node(
            strategy, generation, kind, text, n_tokens=n_tokens, meta=meta, ord_=ord_, sources=sources
        )

    def add_summary_node(
        self,
        ord_: int,
        text: str,
        n_tokens: int,
        meta: dict[str, Any],
        *,
        strategy: str,
        generation: int,
        sources: Sequence[int] = (),
    ) -> int:
        """``parts.rows``: :meth:`~gemrag.store.row_roles.NodeRows.add_summary_node`."""
        return self.parts.rows.add_summary_node(
            ord_, text, n_tokens, meta, strategy=strategy, generation=generation, sources=sources
        )

    def node_sources(self, node_ids: Sequence[int]) -> dict[int, list[int]]:
        """``parts.rows``: :meth:`~gemrag.store.row_roles.NodeRows.node_sources`."""
        return self.parts.rows.node_sources(node_ids)

    def nodes_only_from(self, chunk_ids: Sequence[int]) -> list[int]:
        """``parts.rows``: :meth:`~gemrag.store.row_roles.NodeRows.nodes_only_from`."""
        return self.parts.rows.nodes_only_from(chunk_ids)

    def nodes_citing(self, node_ids: Sequence[int]) -> dict[int, tuple[str, str]]:
        """``parts.rows``: :meth:`~gemrag.store.row_roles.NodeRows.nodes_citing`."""
        return self.parts.rows.nodes_citing(node_ids)

    def texts_of(self, node_ids: Sequence[int]) -> list[str]:
        """``parts.rows``: :meth:`~gemrag.store.row_roles.NodeRows.texts_of`."""
        return self.parts.rows.texts_of(node_ids)

    def set_questions(self, node_id: int, questions: Sequence[str]) -> None:
        """``parts.rows``: :meth:`~gemrag.store.row_roles.QuestionRows.set_questions`."""
        self.parts.rows.set_questions(node_id, questions)

    def fail_questions(self, node_id: int, phase: str, message: str) -> None:
        """``parts.rows``: :meth:`~gemrag.store.row_roles.QuestionRows.fail_questions`."""
        self.parts.rows.fail_questions(node_id, phase, message)

    def reset_questions(self) -> None:
        """``parts.rows``: :meth:`~gemrag.store.row_roles.QuestionRows.reset_questions`."""
        self.parts.rows.reset_questions()

    def questions(self, *, build: Build | None = None) -> list[tuple[int, int, str]]:
        """``parts.rows``: :meth:`~gemrag.store.row_roles.QuestionRows.questions`."""
        return self.parts.rows.questions(build=build)

    def add_edges(
        self, strategy: str, generation: int, kind: str, src: np.ndarray, dst: np.ndarray, weight: np.ndarray
    ) -> None:
        """``parts.rows``: :meth:`~gemrag.store.row_roles.EdgeRows.add_edges`."""
        self.parts.rows.add_edges(strategy, generation, kind, src, dst, weight)

    def edges(
        self, node_id: int, strategy: str, kind: str | None = None, *, build: Build | None = None
    ) -> list[tuple[int, float]]:
        """``parts.rows``: :meth:`~gemrag.store.row_roles.EdgeRows.edges`."""
        return self.parts.rows.edges(node_id, strategy, kind, build=build)

    def edge_list(
        self, strategy: str, kind: str | None = None, *, build: Build | None = None
    ) -> list[tuple[str, int, int, float]]:
        """``parts.rows``: :meth:`~gemrag.store.row_roles.EdgeRows.edge_list`."""
        return self.parts.rows.edge_list(strategy, kind, build=build)

    def delete_rows(self, c: Connection, doc_id: int, nodes: Sequence[int]) -> None:
        """``parts.rows``: :meth:`~gemrag.store.row_roles.RowDeletes.delete_rows`."""
        self.parts.rows.delete_rows(c, doc_id, nodes)

    def delete_nodes(self, c: Connection, nodes: Sequence[int]) -> None:
        """``parts.rows``: :meth:`~gemrag.store.row_roles.RowDeletes.delete_nodes`."""
        self.parts.rows.delete_nodes(c, nodes)

    def build_state(self, strategy: str) -> BuildState:
        """``parts.rows``: :meth:`~gemrag.store.row_roles.BuildStates.build_state`."""
        return self.parts.rows.build_state(strategy)

    def covered_chunks(self, strategy: str) -> set[int] | None:
        """``parts.rows``: :meth:`~gemrag.store.row_roles.BuildStates.covered_chunks`."""
        return self.parts.rows.covered_chunks(strategy)

    def document_by_key(self, key: str) -> dict[str, Any] | None:
        """``parts.documents``: :meth:`~gemrag.store.row_roles.Documents.document_by_key`."""
        return self.parts.documents.document_by_key(key)

    def documents_with_text(self, sha256: str) -> list[dict[str, Any]]:
        """``parts.documents``: :meth:`~gemrag.store.row_roles.Documents.documents_with_text`."""
        return self.parts.documents.documents_with_text(sha256)

    def holders(self, doc_id: int | None = None) -> list[dict[str, Any]]:
        """``parts.documents``: :meth:`~gemrag.store.row_roles.Documents.holders`."""
        return self.parts.documents.holders(doc_id)

    def release_holders(self, c: Connection, doc_ids: Sequence[int]) -> None:
        """``parts.documents``: :meth:`~gemrag.store.row_roles.Documents.release_holders`."""
        self.parts.documents.release_holders(c, doc_ids)

    def set_holders(self, c: Connection, doc_id: int, holders: Sequence[dict[str, Any]]) -> None:
        """``parts.documents``: :meth:`~gemrag.store.row_roles.Documents.set_holders`."""
        self.parts.documents.set_holders(c, doc_id, holders)

    def insert_document(
        self,
        c: Connection,
        source: str,
        title: str,
        text: str,
        sha256: str,
        *,
        key: str | None = None,
        version: int = 1,
        chunks: Sequence[tuple[str, int]] | None = None,
    ) -> int:
        """``parts.documents``: :meth:`~gemrag.store.row_roles.Documents.insert_document`."""
        return self.parts.documents.insert_document(
            c, source, title, text, sha256, key=key, version=version, chunks=chunks
        )

    def update_document(
        self, c: Connection, doc_id: int, source: str, title: str, text: str, sha256: str, *, version: int
    ) -> None:
        """``parts.documents``: :meth:`~gemrag.store.row_roles.Documents.update_document`."""
        self.parts.documents.update_document(c, doc_id, source, title, text, sha256, version=version)

    def place_chunks(
        self, c: Connection, doc_id: int, keep: dict[int, int], new: Sequence[tuple[int, str, int]]
    ) -> None:
        """``parts.documents``: :meth:`~gemrag.store.row_roles.Documents.place_chunks`."""
        self.parts.documents.place_chunks(c, doc_id, keep, new)

    def set_inputs(self, c: Connection, doc_id: int, chunk_ids: Iterable[int]) -> None:
        """``parts.documents``: :meth:`~gemrag.store.row_roles.Documents.set_inputs`."""
        self.parts.documents.set_inputs(c, doc_id, chunk_ids)

    def document_inputs(self, doc_ids: Sequence[int]) -> dict[int, list[int]]:
        """``parts.documents``: :meth:`~gemrag.store.row_roles.Documents.document_inputs`."""
        return self.parts.documents.document_inputs(doc_ids)

    def documents_resting_on(self, chunk_ids: Sequence[int]) -> list[int]:
        """``parts.documents``: :meth:`~gemrag.store.row_roles.Documents.documents_resting_on`."""
        return self.parts.documents.documents_resting_on(chunk_ids)

    def record_version(self, c: Connection, doc: dict[str, Any], reason: str, *, keep_text: bool = False) -> None:
        """``parts.documents``: :meth:`~gemrag.store.row_roles.Documents.record_version`."""
        self.parts.documents.record_version(c, doc, reason, keep_text=keep_text)

    def document_history(self, ref: str) -> list[dict[str, Any]]:
        """``parts.documents``: :meth:`~gemrag.store.row_roles.Documents.document_history`."""
        return self.parts.documents.document_history(ref)
