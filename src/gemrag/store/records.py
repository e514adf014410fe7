"""The records a store's rows part returns: a node (:class:`NodeRecord`) and a strategy's build state
(:class:`BuildState`). A leaf module, so that the part protocols (:mod:`gemrag.store.parts`) can name them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class NodeRecord:
    """A node row: a chunk of a document or a summary node.

    Attributes:
        id: node id (int, never reused). kind: ``"chunk"``, or the deriving strategy's kind (e.g. ``"summary"``).
            doc_id: document id (None for derived nodes).
        ord: position of the chunk in its document (or of the summary among summaries).
        text: the node's text. n_tokens: its length in embedder tokens (int).
        questions_done: 1 when utility questions were generated, 0 pending, -1 failed.
        meta: JSON-decoded extra fields (e.g. a summary's eigenvalue and member node ids).
        strategy: the strategy that derived the node (None for chunks).
        generation: the build generation that derived it (None for chunks).
        start, end: a chunk's character span ``[start, end)`` in its document's current text (None for derived
            nodes, and for a chunk whose span is unknown; see :class:`gemrag.types.Passage`).
    """

    id: int
    kind: str
    doc_id: int | None
    ord: int
    text: str
    n_tokens: int
    questions_done: int
    meta: dict[str, Any]
    strategy: str | None = None
    generation: int | None = None
    start: int | None = None
    end: int | None = None


State = Literal["built", "stale", "never built"]


@dataclass(frozen=True)
class BuildState:
    """A strategy's build compared with the memory's chunks now.

    Attributes:
        strategy: the strategy's name. state: ``"built"``, ``"stale"`` or ``"never built"``.
        generation: the published generation (None when never built).
        new_chunks: chunks added since that build. deleted_chunks: chunks it covered that were deleted since.
        new_documents: documents added but not chunked yet (``index`` chunks them).
        published_at: UNIX time of the publish. params, models: what the build recorded.
    """

    strategy: str
    state: State
    generation: int | None = None
    new_chunks: int = 0
    deleted_chunks: int = 0
    published_at: float | None = None
    params: dict[str, Any] = field(default_factory=dict)
    models: dict[str, Any] = field(default_factory=dict)
    new_documents: int = 0

    def describe(self) -> str:
        """One line for people: ``built (generation 3)``, ``stale: 2 new chunks, 1 deleted chunk`` or
        ``never built``."""
        if self.state == "never built":
            return "never built"
        if self.state == "built":
            return f"built (generation {self.generation})"
        parts = []
        for n, what in ((self.new_documents, "new document"), (self.new_chunks, "new chunk")):
            if n:
                parts.append(f"{n} {what}{'s' if n != 1 else ''}")
        if self.deleted_chunks:
            parts.append(f"{self.deleted_chunks} deleted chunk{'s' if self.deleted_chunks != 1 else ''}")
        return f"stale: {', '.join(parts)} (generation {self.generation})"
