"""Every chunk of a dated source with its absolute date and its time expressions resolved: the index-time half of
time-aware reading (REMem seed ``remem-retrieval-strategies.txt``, "Temporal Strategy": facts with time qualifiers;
LongMemEval, Wu et al. 2024, section 5, time-aware query expansion: timestamps associated with what is indexed).

Where a date comes from:

* a conversation: each ``[<date>] <speaker>: <text>`` turn (the LoCoMo loader's form, a chat's exchanges;
  :mod:`gemrag.strategies.platform.conversation`) is dated by its stamp; a chunk that begins inside a turn (the
  chunker cut it) takes the date of the previous chunk's last turn;
* any other document: its own date, from a ``date:`` line among its first lines (front matter, ``Date: 8 May
  2023``), else from a full date in its title (``standup 2023-05-08``).

A chunk's :class:`ChunkDates` (its dates, in text order, and every relative expression resolved against the date of
the turn or document it is in, :func:`gemrag.answers.dates.expressions.resolve_expressions`) is kept as a store
artefact of the ``reading`` namespace (kind ``dates``, version :data:`DATES_VERSION`), keyed by the chunk, so it
leaves with the chunk (artefacts cascade with their node) and needs no table of its own. :func:`annotate_dates` writes
them at index time (with the optional LLM step for what the rules leave, :mod:`gemrag.answers.dates.llm`);
:func:`chunk_dates` reads them and computes, by the rules, those of chunks indexed before (nothing is written on the
read path).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import date
from typing import Any, Protocol

from pydantic import BaseModel

from gemrag.answers.dates.expressions import TimeNote, resolve_expressions, vague_expressions
from gemrag.store.parts import Artifacts, Rows
from gemrag.strategies.platform.conversation import HEADER, parse_date, split_inline_turns

NAMESPACE = "reading"
"""The artefacts' namespace (the store's ``strategy`` column: a name, not a strategy; answering owns it)."""
KIND = "dates"
DATES_VERSION = "dates-v2"
"""Version of the rules; a new version recomputes every chunk's artefact at the next index (v2: weekday
abbreviations, "last Tues")."""

_DATE_LINE = re.compile(r"^\s*(?:date|dated|written|published|posted|created)\s*[:=]\s*(?P<value>.+?)\s*$", re.I)
#: Lines of a document searched for its ``date:`` line.
HEADER_LINES = 12


class Unresolved(BaseModel):
    """A time expression of a dated text that the rules do not resolve
    (:func:`~gemrag.answers.dates.expressions.vague_expressions`).

    Attributes:
        start, end: its span ``[start, end)`` in the chunk's text. text: as written. anchor: the ISO date of the turn
            or document it is in.
    """

    start: int
    end: int
    text: str
    anchor: str


class ChunkDates(BaseModel):
    """A chunk's dates, stored as its ``reading/dates`` artefact.

    Attributes:
        dates: the ISO dates (``YYYY-MM-DD``) its text is dated by, each once, in text order: its turns' dates, or
            its document's date; empty for a chunk of an undated source.
        notes: its relative time expressions resolved to periods (:class:`TimeNote`, spans into the chunk's text),
            in text order.
        unresolved: the dated time expressions neither the rules nor the LLM resolved (:class:`Unresolved`).
    """

    dates: list[str] = []
    notes: list[TimeNote] = []
    unresolved: list[Unresolved] = []


class DatingStore(Rows, Artifacts, Protocol):
    """What dating chunks needs of a store: its rows (documents, chunks) and its artefacts."""


def document_date(title: str, text: str) -> str | None:
    """A document's own date (ISO): the value of a ``date:`` line (also ``dated``, ``written``, ``published``,
    ``posted``, ``created``; front matter's form) among its first :data:`HEADER_LINES` lines, else a full date in its
    title (:func:`gemrag.strategies.platform.conversation.parse_date`), else None."""
    for line in text.splitlines()[:HEADER_LINES]:
        m = _DATE_LINE.match(line)
        if m and (found := parse_date(m.group("value"))):
            return found
    return parse_date(title)


def segments(text: str, carry: str | None) -> list[tuple[int, int, str | None]]:
    """The dated pieces of one chunk's text: ``(start, end, iso_date)`` per turn (a stored chunk's turns are found by
    their ``[<date>] <speaker>:`` stamps, :func:`~gemrag.strategies.platform.conversation.split_inline_turns`), in text
    order; text before the first stamp (a turn the chunker cut, or plain text) is dated ``carry``; a turn whose stamp is
    not a date is dated ``carry`` as well."""
    out: list[tuple[int, int, str | None]] = []
    current, pos = carry, 0
    for line in split_inline_turns(text).split("\n"):
        m = HEADER.match(line.strip())
        if m:
            current = parse_date(m.group("date")) or carry
        if line.strip():
            out.append((pos, pos + len(line), current))
        pos += len(line) + 1
    return out


def date_chunks(texts: Sequence[str], doc_date: str | None) -> list[ChunkDates]:
    """The :class:`ChunkDates` of one document's chunks (their texts, in document order), by the rules: each turn
    dated by its stamp, text outside turns by the document's date, a chunk's leading text by the previous chunk's last
    date."""
    out: list[ChunkDates] = []
    carry = doc_date
    for text in texts:
        dated = ChunkDates()
        for start, end, iso in segments(text, carry):
            carry = iso if iso is not None else carry
            if iso is None:
                continue
            if iso not in dated.dates:
                dated.dates.append(iso)
            piece = text[start:end]
            notes = resolve_expressions(piece, date.fromisoformat(iso), offset=start)
            dated.notes += notes
            dated.unresolved += [
                Unresolved(start=start + a, end=start + b, text=piece[a:b], anchor=iso)
                for a, b in vague_expressions(piece)
            ]
        out.append(dated)
    return out


def _documents_of(store: Rows, chunk_ids: Iterable[int]) -> dict[int, list[Any]]:
    """The documents of the given chunks: doc id -> all its chunk records, in document order."""
    nodes = store.nodes_by_id(sorted({int(i) for i in chunk_ids}))
    docs = sorted({n.doc_id for n in nodes.values() if n.kind == "chunk" and n.doc_id is not None})
    out: dict[int, list[Any]] = {}
    for doc_id in docs:
        ids = store.document_chunk_ids(doc_id)
        records = store.nodes_by_id(ids)
        out[doc_id] = [records[i] for i in ids if i in records and records[i].kind == "chunk"]
    return out


def _titles(store: Rows) -> dict[int, str]:
    return {int(d["id"]): str(d.get("title") or "") for d in store.documents()}


def compute_dates(store: Rows, chunk_ids: Iterable[int]) -> dict[int, ChunkDates]:
    """The rules' :class:`ChunkDates` of the given chunks (each computed with its whole document), nothing stored;
    ids that are not chunks are left out."""
    wanted = {int(i) for i in chunk_ids}
    docs = _documents_of(store, wanted)
    titles = _titles(store) if docs else {}
    out: dict[int, ChunkDates] = {}
    for doc_id, records in docs.items():
        doc_date = document_date(titles.get(doc_id, ""), store.document_text(doc_id))
        for record, dated in zip(records, date_chunks([r.text for r in records], doc_date), strict=True):
            if record.id in wanted:
                out[record.id] = dated
    return out


def chunk_dates(store: DatingStore, chunk_ids: Iterable[int]) -> dict[int, ChunkDates]:
    """The :class:`ChunkDates` of the given chunks: their stored artefacts (:func:`annotate_dates`), and for chunks
    without one (indexed while ``[answer] dates`` was ``"off"``, or by an older version) the rules'
    (:func:`compute_dates`, not stored). Ids that are not chunks are left out.

    Raises:
        DamagedMemoryError: a stored artefact does not validate.
    """
    ids = sorted({int(i) for i in chunk_ids})
    found = store.artifacts(NAMESPACE, KIND, ChunkDates, DATES_VERSION, ids)
    missing = [i for i in ids if i not in found]
    return found | compute_dates(store, missing) if missing else found


def annotate_dates(store: DatingStore, resolve: Any = None) -> int:
    """Store the :class:`ChunkDates` of every chunk that has none of :data:`DATES_VERSION` (index time; each document
    whose chunks need one is read whole).

    Args:
        store: the memory's store (written: one transaction per document).
        resolve: optional ``(text, notes, chunk_id) -> ChunkDates`` step run on each chunk's rules result before it is
            stored (the LLM step for what the rules left, :func:`gemrag.answers.dates.llm.llm_step`).

    Returns:
        How many chunks were annotated.

    Raises:
        ReadOnlyMemoryError: the store is read-only.
    """
    chunks = [n.id for n in store.nodes("chunk")]
    missing = store.missing_artifacts(NAMESPACE, KIND, DATES_VERSION, chunks)
    if not missing:
        return 0
    wanted = set(missing)
    docs = _documents_of(store, missing)
    titles = _titles(store)
    done = 0
    for doc_id, records in docs.items():
        doc_date = document_date(titles.get(doc_id, ""), store.document_text(doc_id))
        values: list[tuple[int, BaseModel]] = []
        for record, dated in zip(records, date_chunks([r.text for r in records], doc_date), strict=True):
            if record.id not in wanted:
                continue
            values.append((record.id, resolve(record.text, dated, record.id) if resolve is not None else dated))
        store.put_artifacts(NAMESPACE, KIND, values, DATES_VERSION)
        done += len(values)
    return done
