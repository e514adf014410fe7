"""Documents by source: looking one up by its identity, the rows of a replacement written inside the caller's
transaction, and the history of the versions that left the memory (schema 4, :mod:`gemrag.store.schema`).

A document's identity is ``documents.source_key``: a file's resolved path, or an id given by the user or a client
(NULL for an anonymous document, which is deduplicated by its text instead). Replacing a source's text is one
transaction made by :mod:`gemrag.memory.sources` from these pieces: the old version's row goes to ``document_versions``
(:meth:`DocumentRows.record_version`), its chunks whose text is not in the new version are deleted
(``delete_nodes``), and the document row takes the new version in place (:meth:`DocumentRows.update_document`,
same id), its surviving chunks moved to their new positions and its new chunks inserted
(:meth:`DocumentRows.place_chunks`).

One document per content (schema 5): a document is *held* by its sources: ``documents.source_key`` (its primary
source, whose ``source`` and ``title`` the document row shows) and the rows of ``document_sources`` (further
sources whose text is byte-identical). :meth:`DocumentRows.holders` lists them; :mod:`gemrag.memory.sources` decides
who holds what and rewrites a document's holders with :meth:`DocumentRows.release_holders` and
:meth:`DocumentRows.set_holders` inside its transaction.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

from gemrag.store.migrate_v6 import relocate_chunk_spans
from gemrag.store.parts import Connection, Documents
from gemrag.store.sql_part import SqlPart

DOCUMENT_COLUMNS = "id, source, title, n_chars, chunked, source_key, version, added_at, sha256"
DOCUMENT_KEYS = ("id", "source", "title", "n_chars", "chunked", "key", "version", "added_at", "sha256")
"""The columns of a document row (its text excluded) and the keys of the dict :func:`document_dict` makes."""

_HISTORY_COLUMNS = "doc_id, source_key, source, title, version, sha256, n_chars, added_at, ended_at, reason, text"
_HISTORY_KEYS = ("id", "key", "source", "title", "version", "sha256", "n_chars", "added_at", "ended_at", "reason")

REASONS = ("replaced", "removed", "deleted", "moved", "withdrawn")
"""Why a version left the memory (or left one of its sources): its source's text changed, its file was gone at
``index --sync``, it was deleted (``gemrag delete``), its file was gone at ``index --sync`` while a new file with
the same text took its place (the document stays, under its new source), or it rested on a chunk that was removed
(a chat exchange whose reply recalled it, :func:`gemrag.memory.deletion.resting_on`)."""

HOLDER_KEYS = ("key", "doc_id", "source", "title", "added_at", "primary")
"""The keys of a holder dict (:meth:`DocumentRows.holders`): a source holding a document, and whether it is
the document's primary source (``documents.source_key``) or a further one (``document_sources``)."""

_HOLDERS = (
    "SELECT source_key, id, source, title, added_at, 1 FROM documents WHERE source_key IS NOT NULL{a}"
    " UNION ALL SELECT source_key, doc_id, source, title, added_at, 0 FROM document_sources{b}"
)


def document_dict(row: Sequence[Any]) -> dict[str, Any]:
    """A row of :data:`DOCUMENT_COLUMNS` as a dict with :data:`DOCUMENT_KEYS`."""
    return dict(zip(DOCUMENT_KEYS, row, strict=True))


def like_suffix(ref: str) -> str:
    """A ``LIKE ... ESCAPE '\\'`` pattern matching strings that end with ``ref`` literally."""
    return "%" + ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


class DocumentRows(SqlPart, Documents):
    """The documents part of a store (:class:`gemrag.store.parts.Documents`): documents by source, their holders and
    version history (arguments: those of :class:`~gemrag.store.sql_part.SqlPart`)."""

    def document_by_key(self, key: str) -> dict[str, Any] | None:
        rows = self._query(
            f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE source_key = ?"
            " OR id = (SELECT doc_id FROM document_sources WHERE source_key = ?)",
            (key, key),
        )
        return document_dict(rows[0]) if rows else None

    def documents_with_text(self, sha256: str) -> list[dict[str, Any]]:
        rows = self._query(f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE sha256 = ? ORDER BY id", (sha256,))
        return [document_dict(r) for r in rows]

    def holders(self, doc_id: int | None = None) -> list[dict[str, Any]]:
        where = ("", "") if doc_id is None else (" AND id = ?", " WHERE doc_id = ?")
        args = () if doc_id is None else (doc_id, doc_id)
        rows = self._query(_HOLDERS.format(a=where[0], b=where[1]) + " ORDER BY 2, 6 DESC, 5, 1", args)
        return [{**dict(zip(HOLDER_KEYS, r, strict=True)), "primary": bool(r[5])} for r in rows]

    def release_holders(self, c: Connection, doc_ids: Sequence[int]) -> None:
        c.executemany("UPDATE documents SET source_key = NULL WHERE id = ?", [(i,) for i in doc_ids])
        c.executemany("DELETE FROM document_sources WHERE doc_id = ?", [(i,) for i in doc_ids])

    def set_holders(self, c: Connection, doc_id: int, holders: Sequence[dict[str, Any]]) -> None:
        if not holders:
            raise ValueError(f"document {doc_id} needs at least one source")
        first = holders[0]
        c.execute(
            "UPDATE documents SET source_key = ?, source = ? WHERE id = ?", (first["key"], first["source"], doc_id)
        )
        c.executemany(
            "INSERT INTO document_sources(source_key, doc_id, source, title, added_at) VALUES (?,?,?,?,?)",
            [(h["key"], doc_id, h["source"], h["title"], float(h["added_at"])) for h in holders[1:]],
        )

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
        cur = c.execute(
            "INSERT INTO documents(source, sha256, title, text, n_chars, added_at, chunked, source_key, version)"
            " VALUES (?,?,?,?,?,?,?,?,?)",
            (source, sha256, title, text, len(text), time.time(), int(chunks is not None), key, version),
        )
        doc_id = int(cur.lastrowid or 0)
        if chunks is not None:
            c.executemany(
                "INSERT INTO nodes(kind, doc_id, ord, text, n_tokens) VALUES ('chunk', ?, ?, ?, ?)",
                [(doc_id, i, t, n) for i, (t, n) in enumerate(chunks)],
            )
            relocate_chunk_spans(c, [doc_id])
        return doc_id

    def update_document(
        self, c: Connection, doc_id: int, source: str, title: str, text: str, sha256: str, *, version: int
    ) -> None:
        c.execute(
            "UPDATE documents SET source = ?, title = ?, text = ?, sha256 = ?, n_chars = ?, added_at = ?, version = ?"
            " WHERE id = ?",
            (source, title, text, sha256, len(text), time.time(), version, doc_id),
        )

    def place_chunks(
        self, c: Connection, doc_id: int, keep: dict[int, int], new: Sequence[tuple[int, str, int]]
    ) -> None:
        c.executemany("UPDATE nodes SET ord = ? WHERE id = ? AND doc_id = ?", [(o, i, doc_id) for i, o in keep.items()])
        c.executemany(
            "INSERT INTO nodes(kind, doc_id, ord, text, n_tokens) VALUES ('chunk', ?, ?, ?, ?)",
            [(doc_id, o, t, n) for o, t, n in new],
        )
        c.execute("UPDATE documents SET chunked = 1 WHERE id = ?", (doc_id,))
        relocate_chunk_spans(c, [doc_id])

    def set_inputs(self, c: Connection, doc_id: int, chunk_ids: Iterable[int]) -> None:
        rows = [(int(doc_id), int(i)) for i in sorted(set(chunk_ids))]
        c.executemany("INSERT OR IGNORE INTO document_inputs(doc_id, chunk_id) VALUES (?,?)", rows)

    def document_inputs(self, doc_ids: Sequence[int]) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {}
        for start in range(0, len(doc_ids), 500):
            part = [int(i) for i in doc_ids[start : start + 500]]
            rows = self._query(
                f"SELECT doc_id, chunk_id FROM document_inputs WHERE doc_id IN ({','.join('?' * len(part))})"
                " ORDER BY doc_id, chunk_id",
                part,
            )
            for doc_id, chunk_id in rows:
                out.setdefault(int(doc_id), []).append(int(chunk_id))
        return out

    def documents_resting_on(self, chunk_ids: Sequence[int]) -> list[int]:
        found: set[int] = set()
        ids = sorted({int(i) for i in chunk_ids})
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            marks = ",".join("?" * len(part))
            found.update(
                int(r[0]) for r in self._query(f"SELECT doc_id FROM document_inputs WHERE chunk_id IN ({marks})", part)
            )
        return sorted(found)

    def record_version(self, c: Connection, doc: dict[str, Any], reason: str, *, keep_text: bool = False) -> None:
        if reason not in REASONS:
            raise ValueError(f"reason must be one of {REASONS}, not {reason!r}")
        text = c.execute("SELECT text FROM documents WHERE id = ?", (doc["id"],)).fetchone()[0] if keep_text else None
        c.execute(
            f"INSERT INTO document_versions({_HISTORY_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (
                int(doc["id"]),
                doc.get("key"),
                doc["source"],
                doc["title"],
                int(doc.get("version") or 1),
                doc["sha256"],
                int(doc["n_chars"]),
                float(doc["added_at"]),
                time.time(),
                reason,
                text,
            ),
        )

    def document_history(self, ref: str) -> list[dict[str, Any]]:
        ident = "COALESCE(source_key, source)"
        idents: list[str] = []
        for where, args in (
            ("source_key = ? OR source = ? OR title = ?", (ref, ref, ref)),
            ("source LIKE ? ESCAPE '\\'", (like_suffix(ref),)),
        ):
            rows = self._query(
                f"SELECT {ident} FROM documents WHERE {where}"
                f" UNION SELECT {ident} FROM document_versions WHERE {where}"
                f" UNION SELECT source_key FROM document_sources WHERE {where}",
                (*args, *args, *args),
            )
            idents = sorted({str(r[0]) for r in rows})
            if idents:
                break
        out: list[dict[str, Any]] = []
        for name in idents:
            for row in self._query(
                f"SELECT {_HISTORY_COLUMNS} FROM document_versions WHERE {ident} = ? ORDER BY id", (name,)
            ):
                out.append({**dict(zip(_HISTORY_KEYS, row[:10], strict=True)), "text": row[10], "current": False})
            for row in self._query(
                f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE {ident} = ?"
                " OR id IN (SELECT doc_id FROM document_sources WHERE source_key = ?) ORDER BY id",
                (name, name),
            ):
                doc = document_dict(row)
                held = self.holders(int(doc["id"]))
                mine = next((h for h in held if h["key"] == name), None)
                current = {k: doc[k] for k in _HISTORY_KEYS if k in doc}
                if mine is not None:  # the source's own path, title and time (a further source of the document)
                    current.update(key=name, source=mine["source"], title=mine["title"], added_at=mine["added_at"])
                sources = [h["source"] for h in held] or [doc["source"]]
                out.append(
                    {**current, "ended_at": None, "reason": None, "text": None, "current": True, "sources": sources}
                )
        return out
