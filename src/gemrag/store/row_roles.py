"""The row roles of a store (re-exported by :mod:`gemrag.store.parts`): the rows part's protocol :class:`Rows`, split by
its callers' roles (meta, documents and chunks, nodes, utility questions, edges, deletes, build states), and the
documents part's :class:`Documents`.

Ids are database integers (a node id is never reused); texts are ``str``; token counts are embedder tokens; times are
UNIX seconds. Document dicts carry ``id, source, title, n_chars, chunked, key, version, added_at, sha256`` (text
excluded; :data:`gemrag.store.documents.DOCUMENT_KEYS`). The implementations (SQL written once for both databases)
are :class:`gemrag.store.rows.SqlRows` and :class:`gemrag.store.documents.DocumentRows`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from gemrag.store.db_roles import Connection
from gemrag.store.records import BuildState, NodeRecord

if TYPE_CHECKING:
    from gemrag.types import Passage

Build = tuple[str, int]
"""A build's view ``(strategy, generation)``: that build's own new nodes replacing the strategy's published ones."""


@runtime_checkable
class MetaRows(Protocol):
    """The memory's recorded settings: JSON values by key (the ``meta`` table)."""

    def get_meta(self, key: str, default: Any = None) -> Any:
        """The JSON-decoded value stored under ``key``, or ``default`` when there is none."""
        ...

    def set_meta(self, key: str, value: Any) -> None:
        """Store a JSON-serializable ``value`` under ``key`` (replacing the old one).

        Raises:
            ReadOnlyMemoryError: the store is read-only.
            TypeError: the value is not JSON-serializable.
        """
        ...


@runtime_checkable
class DocumentChunks(Protocol):
    """Documents and their chunks: adding, listing, finding and chunking documents."""

    def add_document(self, source: str, title: str, text: str) -> tuple[int, bool]:
        """Insert an anonymous document (no identity; see :mod:`gemrag.store.documents`) unless a document with the
        same text exists.

        Returns:
            ``(doc_id, created)``: created is False when the same text was already stored.

        Raises:
            ReadOnlyMemoryError: the store is read-only.
        """
        ...

    def documents(self) -> list[dict[str, Any]]:
        """Every document as a dict, text excluded, by id (see the module docstring for the keys: ``key`` is the
        identity, a file's resolved path or a given id, None for an anonymous document; ``version`` 1, 2, ... each time
        its source's text was replaced)."""
        ...

    def document_text(self, doc_id: int) -> str:
        """The full text of one document.

        Raises:
            IndexError: no such document.
        """
        ...

    def unchunked_documents(self) -> list[tuple[int, str]]:
        """``(doc_id, text)`` of the documents not yet split into chunks, by id."""
        ...

    def add_chunks(
        self, doc_id: int, chunks: Sequence[tuple[str, int]], spans: Sequence[tuple[int, int] | None] | None = None
    ) -> None:
        """Store a document's chunks ``(text, n_tokens)`` in order and mark it chunked, in one transaction.

        Args:
            doc_id: the document.
            chunks: ``(text, n_tokens)`` per chunk, in document order.
            spans: each chunk's character span ``[start, end)`` in the document's text, as the chunker cut it (None:
                unknown spans, stored as NULL).

        Raises:
            ValueError: ``spans`` and ``chunks`` differ in length.
            ReadOnlyMemoryError: the store is read-only.
        """
        ...

    def find_documents(self, ref: str) -> list[dict[str, Any]]:
        """Documents matching ``ref``: its id (digits), else its identity (a file's resolved path or a given id), else
        its exact source path or title, else the source paths ending with ``ref``, of the document or of any of its
        further sources. Dicts as :meth:`documents` gives (text excluded); empty when nothing matches."""
        ...

    def document_chunk_ids(self, doc_id: int) -> list[int]:
        """Ids of a document's chunks, in document order (empty for an unknown or unchunked document)."""
        ...

    def chunk_signature(self) -> tuple[int, int, int, int]:
        """``(chunks, largest chunk id, documents, largest document id)``: changes whenever chunks or documents are
        added or deleted (ids are never reused), so callers can cache a build state against it."""
        ...


@runtime_checkable
class NodeRows(Protocol):
    """Nodes (chunks and the nodes strategies derive) and the chunks each derived node rests on."""

    def nodes(
        self, kind: str | None = None, *, strategy: str | None = None, build: Build | None = None
    ) -> list[NodeRecord]:
        """Nodes ordered by id, optionally of one kind and one deriving strategy, as a reader or a builder sees them.

        Args:
            kind: ``"chunk"``, a strategy's node kind (e.g. ``"summary"``) or None for all.
            strategy: only the nodes this strategy derived (None: any, chunks included).
            build: None: chunks plus the nodes of every strategy's *published* generation (what retrieval uses).
                ``(strategy, generation)``: a builder's view, that build's own new nodes replacing the strategy's
                published ones.
        """
        ...

    def node(self, node_id: int) -> NodeRecord:
        """One node by id (whatever its generation).

        Raises:
            KeyError: no such node.
        """
        ...

    def nodes_by_id(self, node_ids: Sequence[int]) -> dict[int, NodeRecord]:
        """Several nodes by id (whatever their generation): ``{id: NodeRecord}``, one query per 500 ids.

        Raises:
            KeyError: one of the ids names no node.
        """
        ...

    def passages(self, chunk_ids: Sequence[int]) -> dict[int, Passage]:
        """The chunks ``chunk_ids`` with their documents and character spans (:class:`gemrag.types.Passage`):
        ``{chunk id: Passage}``; an id that names no chunk (a derived node, a deleted chunk) is left out."""
        ...

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
        """Insert a node derived by build ``(strategy, generation)`` and return its id. Readers do not see it until
        that generation is published.

        Args:
            strategy: the deriving strategy.
            generation: its build generation (from ``begin_build``).
            kind: the strategy's node kind (not ``"chunk"``).
            text: the node's text.
            n_tokens: its length in embedder tokens.
            meta: JSON-serializable details.
            ord_: its position.
            sources: ids of every chunk it was made from: removing any of them removes the node (their number is kept
                in the node's meta, :data:`gemrag.store.graph_rows.INPUTS`).

        Raises:
            ValueError: the kind is ``"chunk"`` or empty.
            ReadOnlyMemoryError: the store is read-only.
        """
        ...

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
        """Insert a node of kind ``"summary"`` derived by build ``(strategy, generation)`` and return its id (see
        :meth:`add_node`; ``sources`` are the chunks it summarizes, ``n_tokens`` its length in embedder tokens)."""
        ...

    def node_sources(self, node_ids: Sequence[int]) -> dict[int, list[int]]:
        """The chunk ids each given node was made from, sorted (a missing node or a chunk maps to ``[]``)."""
        ...

    def nodes_only_from(self, chunk_ids: Sequence[int]) -> list[int]:
        """Derived nodes (of any strategy and generation) all of whose recorded sources are among ``chunk_ids``, by
        id. Nodes without recorded sources are never returned."""
        ...

    def nodes_citing(self, node_ids: Sequence[int]) -> dict[int, tuple[str, str]]:
        """Derived nodes (of any strategy and generation) with at least one recorded source among ``node_ids``, as
        ``{node id: (strategy, kind)}`` by id: what forgetting decides about when those chunks are removed."""
        ...

    def texts_of(self, node_ids: Sequence[int]) -> list[str]:
        """Every text the memory holds for the nodes ``node_ids`` (chunks or derived nodes): their texts, their meta
        (JSON), their utility questions and their artefacts (JSON), as stored; what a purge must erase wherever else
        it was copied (caches, kept versions). Missing nodes add nothing."""
        ...


@runtime_checkable
class QuestionRows(Protocol):
    """GEM's utility questions per node (stored beside the nodes: a chunk's questions outlive a build)."""

    def set_questions(self, node_id: int, questions: Sequence[str]) -> None:
        """Replace a node's utility questions and mark them done, atomically.

        Raises:
            ReadOnlyMemoryError: the store is read-only.
        """
        ...

    def fail_questions(self, node_id: int, phase: str, message: str) -> None:
        """Record that a node's questions failed, in one transaction: the failure row (``phase``, ``message``), no
        questions, status -1.

        Raises:
            ReadOnlyMemoryError: the store is read-only.
        """
        ...

    def reset_questions(self) -> None:
        """Forget every node's utility questions (when the number per chunk changes).

        Raises:
            ReadOnlyMemoryError: the store is read-only.
        """
        ...

    def questions(self, *, build: Build | None = None) -> list[tuple[int, int, str]]:
        """Utility questions of the visible nodes (see :meth:`NodeRows.nodes`, ``build`` alike) as
        ``(question_id, node_id, text)``, ordered by node then position."""
        ...


@runtime_checkable
class EdgeRows(Protocol):
    """A strategy's weighted edges between nodes, by kind and build generation."""

    def add_edges(
        self, strategy: str, generation: int, kind: str, src: np.ndarray, dst: np.ndarray, weight: np.ndarray
    ) -> None:
        """Stage edges of build ``(strategy, generation)`` (visible to readers once it is published).

        Args:
            strategy: the building strategy.
            generation: its build generation.
            kind: the strategy's edge kind.
            src: ``(E,)`` source node ids (int).
            dst: ``(E,)`` destination node ids (int).
            weight: ``(E,)`` float weights.

        Raises:
            ReadOnlyMemoryError: the store is read-only.
        """
        ...

    def edges(
        self, node_id: int, strategy: str, kind: str | None = None, *, build: Build | None = None
    ) -> list[tuple[int, float]]:
        """A node's outgoing edges in the strategy's published generation (or in ``build``) as
        ``(neighbour id, weight)``, strongest first; optionally of one edge kind (empty when never built)."""
        ...

    def edge_list(
        self, strategy: str, kind: str | None = None, *, build: Build | None = None
    ) -> list[tuple[str, int, int, float]]:
        """All edges of the strategy's published generation (or of ``build``) as ``(kind, src, dst, weight)``."""
        ...


@runtime_checkable
class RowDeletes(Protocol):
    """Deleting rows inside the caller's transaction (a document's replacement or deletion, forgetting)."""

    def delete_rows(self, c: Connection, doc_id: int, nodes: Sequence[int]) -> None:
        """Inside the caller's transaction ``c``: delete the derived ``nodes``, the document ``doc_id`` and its chunks,
        every edge touching them and their failure rows (artefacts, questions and sources go by cascade). Cached LLM
        answers and embeddings stay, so adding the document again costs no model call."""
        ...

    def delete_nodes(self, c: Connection, nodes: Sequence[int]) -> None:
        """Inside the caller's transaction ``c``: delete ``nodes`` (chunks or derived nodes), every edge touching them
        and their failure rows (artefacts, questions and sources go by cascade)."""
        ...


@runtime_checkable
class BuildStates(Protocol):
    """Each strategy's build compared with the memory's chunks now."""

    def build_state(self, strategy: str) -> BuildState:
        """The strategy's state: never built, built over exactly the memory's chunks, or stale (with the counts of
        chunks and documents added or deleted since)."""
        ...

    def covered_chunks(self, strategy: str) -> set[int] | None:
        """The chunk ids the published build of ``strategy`` covers (deleted ones included), or None when it was
        never built."""
        ...


@runtime_checkable
class Rows(MetaRows, DocumentChunks, NodeRows, QuestionRows, EdgeRows, RowDeletes, BuildStates, Protocol):
    """The rows part: meta, documents and chunks, derived nodes, utility questions, edges, deletes and build states
    (:mod:`gemrag.store.rows`, :mod:`gemrag.store.graph_rows`). A caller that uses one of these roles types against
    it alone."""


@runtime_checkable
class Documents(Protocol):
    """Documents by source: their identity, holders, the rows of a replacement written inside the caller's
    transaction ``c``, and their version history (see :mod:`gemrag.store.documents`). Holder dicts carry ``key``,
    ``doc_id``, ``source``, ``title``, ``added_at``, ``primary`` (:data:`gemrag.store.documents.HOLDER_KEYS`)."""

    def document_by_key(self, key: str) -> dict[str, Any] | None:
        """The document held by the source ``key`` (its primary or a further source; its dict's ``key`` is the primary
        one), or None."""
        ...

    def documents_with_text(self, sha256: str) -> list[dict[str, Any]]:
        """The documents whose text has the hex digest ``sha256``, by id."""
        ...

    def holders(self, doc_id: int | None = None) -> list[dict[str, Any]]:
        """The sources holding the document ``doc_id`` (None: every document): per document its primary source first,
        then its further sources in the order they were added. An anonymous document has no primary source."""
        ...

    def release_holders(self, c: Connection, doc_ids: Sequence[int]) -> None:
        """Inside ``c``: the documents ``doc_ids`` lose every source (primary and further), so that
        :meth:`set_holders` may give the keys to other documents."""
        ...

    def set_holders(self, c: Connection, doc_id: int, holders: Sequence[dict[str, Any]]) -> None:
        """Inside ``c``: the document ``doc_id`` (released, or new) is held by ``holders`` (dicts with ``key``,
        ``source``, ``title``, ``added_at``): the first is its primary source (the document row takes its key and
        source, and keeps its title, the one its chunks were indexed with), the others its further sources.

        Raises:
            ValueError: no holder given.
            IntegrityError: (the database's) a key still holds another document.
        """
        ...

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
        """Inside ``c``: insert a document (and its chunks ``(text, n_tokens)`` when given, which marks it chunked,
        with their character spans in the text) and return its new id.

        Raises:
            IntegrityError: (the database's) another document already has the identity ``key``.
        """
        ...

    def update_document(
        self, c: Connection, doc_id: int, source: str, title: str, text: str, sha256: str, *, version: int
    ) -> None:
        """Inside ``c``: make the document ``doc_id`` hold a new version of its source (same id and identity;
        ``added_at`` now). Its chunks are changed by :meth:`place_chunks`."""
        ...

    def place_chunks(
        self, c: Connection, doc_id: int, keep: dict[int, int], new: Sequence[tuple[int, str, int]]
    ) -> None:
        """Inside ``c``, after :meth:`update_document`: the kept chunk nodes ``keep`` (node id -> new position) move to
        their positions, the ``new`` chunks ``(position, text, n_tokens)`` are inserted (the caller deleted the
        others), and every chunk of the document gets its character span in the new text."""
        ...

    def set_inputs(self, c: Connection, doc_id: int, chunk_ids: Iterable[int]) -> None:
        """Inside ``c``: record the chunk node ids document ``doc_id`` rests on (a chat exchange: the chunks its reply
        recalled), so that removing one of them withdraws the document (see :meth:`documents_resting_on`)."""
        ...

    def document_inputs(self, doc_ids: Sequence[int]) -> dict[int, list[int]]:
        """The chunks each of ``doc_ids`` rests on (:meth:`set_inputs`): doc id -> sorted chunk node ids (absent when
        none)."""
        ...

    def documents_resting_on(self, chunk_ids: Sequence[int]) -> list[int]:
        """The ids (sorted) of the documents that rest on one of the chunk nodes ``chunk_ids`` (:meth:`set_inputs`)."""
        ...

    def record_version(self, c: Connection, doc: dict[str, Any], reason: str, *, keep_text: bool = False) -> None:
        """Inside ``c``, before the document's rows are deleted: record the version ``doc`` (a document dict) in the
        version history, with its text when ``keep_text``.

        Raises:
            ValueError: ``reason`` is not one of :data:`gemrag.store.documents.REASONS`.
        """
        ...

    def document_history(self, ref: str) -> list[dict[str, Any]]:
        """The versions of the source ``ref`` (its identity, exact source or title, else every source ending with
        ``ref``), oldest first per source: each recorded past version (``text`` when it was kept, ``current`` False),
        then the current one (``current`` True; ``ended_at``, ``reason`` and ``text`` None; its ``id``, ``version``
        and ``sha256`` those of the document the source holds; ``sources`` every source holding that document, primary
        first). Empty when nothing matches."""
        ...
