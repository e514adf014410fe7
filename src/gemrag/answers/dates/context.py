"""The dated context: the answer-time half of time-aware reading. A question with a time anchor
(:func:`gemrag.answers.dates.questions.time_anchor`) over hits from dated sources is answered from those hits oldest
first, each passage prefixed with its absolute date and its relative time expressions followed by the period they name:
``(date: 10 May 2023) [1:56 pm on 10 May, 2023] Maria: We adopted Biscuit last Sunday (= 7 May 2023)!``.

LongMemEval (Wu et al., 2024, section 5, time-aware query expansion: the timestamps of indexed facts, and the
question's time reference, decide what the reader sees) and REMem's temporal strategy (seed
``remem-retrieval-strategies.txt``, "Temporal Strategy": "Chronological ordering: results can be sorted by time") —
here for every retrieval strategy, as a reading of the answer, not a retrieval.

:func:`dated_context` is what the answer path calls (``[answer] dates``: ``"off"`` returns the hits untouched, so the
prompts and their LLM cache keys are those of before); :func:`hit_dates` gives any hit's dates.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import date
from typing import Literal

from gemrag.answers.dates.chunks import ChunkDates, DatingStore, chunk_dates, segments
from gemrag.answers.dates.expressions import TimeNote, format_day, resolve_expressions
from gemrag.answers.dates.questions import time_anchor
from gemrag.types import Hit, provenance_nodes

DatesMode = Literal["auto", "on", "off"]
"""``[answer] dates``: ``"off"`` never dates the context; ``"on"`` always dates (and orders) a context with dated
hits; ``"auto"`` only for questions with a time anchor."""


@dataclasses.dataclass(frozen=True)
class HitDate:
    """The dates of one hit: those of the chunks it rests on (itself, or the chunks a derived node was made from).

    Attributes:
        first, last: the earliest and latest ISO date (equal for a hit of one date).
    """

    first: str
    last: str

    @property
    def shown(self) -> str:
        """``"10 May 2023"``, or ``"10 May 2023 to 9 June 2023"`` for a span of dates."""
        first = format_day(date.fromisoformat(self.first))
        return first if self.first == self.last else f"{first} to {format_day(date.fromisoformat(self.last))}"


def hit_chunks(store: DatingStore, hit: Hit) -> list[int]:
    """The chunks a hit rests on: its provenance's passages when described (:meth:`gemrag.memory.Memory.retrieve`
    does), else the hit itself for a chunk, or the recorded sources of the node(s) it stands for."""
    if hit.provenance is not None and hit.provenance.passages:
        return [p.chunk_id for p in hit.provenance.passages]
    if hit.kind == "chunk":
        return [int(hit.node_id)]
    sources = store.node_sources(provenance_nodes(hit))
    return [c for chunks in sources.values() for c in chunks]


def hit_dates(store: DatingStore, hits: Sequence[Hit]) -> list[HitDate | None]:
    """Each hit's :class:`HitDate` (None for a hit of undated sources), in the order of ``hits``.

    Raises:
        DamagedMemoryError: a stored date artefact does not validate.
    """
    chunks = [hit_chunks(store, h) for h in hits]
    return _dates_of(chunks, chunk_dates(store, {c for cs in chunks for c in cs}))


def _dates_of(chunks: Sequence[Sequence[int]], dated: dict[int, ChunkDates]) -> list[HitDate | None]:
    out: list[HitDate | None] = []
    for cs in chunks:
        days = sorted({d for c in cs if c in dated for d in dated[c].dates})
        out.append(HitDate(days[0], days[-1]) if days else None)
    return out


def annotate(text: str, notes: Sequence[TimeNote]) -> str:
    """``text`` with `` (= <period>)`` after each note's span (spans into ``text``; overlapping or out-of-range notes
    are skipped)."""
    out, last = [], 0
    for note in sorted(notes, key=lambda n: n.start):
        if note.start < last or note.end > len(text) or text[note.start : note.end] != note.text:
            continue
        out.append(f"{text[last : note.end]} (= {note.shown})")
        last = note.end
    return "".join(out) + text[last:]


def _notes_for(text: str, chunk_text: str, dated: ChunkDates) -> list[TimeNote] | None:
    """The chunk's notes moved to their place in ``text`` when ``text`` is the chunk's text, contains it (a title
    before it) or is part of it (a turn); None when the two texts are not aligned."""
    if text == chunk_text or (chunk_text and chunk_text in text):
        shift = text.find(chunk_text)
        return [n.model_copy(update={"start": n.start + shift, "end": n.end + shift}) for n in dated.notes]
    at = chunk_text.find(text) if text else -1
    if at < 0:
        return None
    inside = [n for n in dated.notes if at <= n.start and n.end <= at + len(text)]
    return [n.model_copy(update={"start": n.start - at, "end": n.end - at}) for n in inside]


def dated_text(hit: Hit, when: HitDate, chunk_text: str | None = None, dated: ChunkDates | None = None) -> str:
    """The hit's text as a dated context shows it: ``(date: <when>) <text>`` with its relative time expressions
    annotated — the stored notes of its chunk (``chunk_text`` and its ``dated``, for a hit resting on one chunk) when
    the texts align (the chunk itself, the chunk after a title, a turn of it), else (a summary, a gist) the rules run on
    the hit's own text against its turns' stamps or, outside turns, its first date."""
    notes = _notes_for(hit.text, chunk_text, dated) if chunk_text is not None and dated is not None else None
    if notes is None:
        notes = [
            n
            for start, end, iso in segments(hit.text, when.first)
            if iso is not None
            for n in resolve_expressions(hit.text[start:end], date.fromisoformat(iso), offset=start)
        ]
    return f"(date: {when.shown}) {annotate(hit.text, notes)}"


def chronological(hits: Sequence[Hit], dates: Sequence[HitDate | None]) -> list[int]:
    """The order a dated context shows the hits in, as indices into ``hits``: dated hits by their first date (ties
    in retrieval order), then the undated ones in retrieval order."""
    dated = sorted((d.first, i) for i, d in enumerate(dates) if d is not None)
    return [i for _, i in dated] + [i for i, d in enumerate(dates) if d is None]


def reads_dates(mode: DatesMode, question: str) -> bool:
    """Whether ``mode`` dates the context of ``question`` (before looking at the hits): ``"on"`` always, ``"auto"``
    when the question has a time anchor, ``"off"`` never."""
    return mode == "on" or (mode == "auto" and time_anchor(question) is not None)


def dated_context(store: DatingStore, question: str, hits: Sequence[Hit], mode: DatesMode) -> list[Hit]:
    """The hits as the answer reads them under ``[answer] dates = mode``.

    When :func:`reads_dates` and at least one hit has a date: the hits in :func:`chronological` order, ranks
    renumbered ``0..n-1`` (passage ``[n]`` of the prompt is the n-th hit, as citations require), each dated hit's
    ``text`` replaced by :func:`dated_text` and its ``meta`` given ``date`` (its first ISO date) and, for a span of
    dates, ``date_last``; undated hits unchanged. Otherwise the hits themselves, unchanged (the prompt, hence its LLM
    cache key, is the one without dates).

    Args:
        store: the memory's store (read only).
        question: the question as asked. hits: the retrieved context, best first.
        mode: ``"auto"``, ``"on"`` or ``"off"`` (:data:`DatesMode`).

    Raises:
        ValueError: an unknown mode.
        DamagedMemoryError: a stored date artefact does not validate.
    """
    if mode not in ("auto", "on", "off"):
        raise ValueError(f"[answer] dates must be auto, on or off, not {mode!r}")
    if not hits or not reads_dates(mode, question):
        return list(hits)
    chunks = [hit_chunks(store, h) for h in hits]
    dated = chunk_dates(store, {c for cs in chunks for c in cs})
    dates = _dates_of(chunks, dated)
    if all(d is None for d in dates):
        return list(hits)
    single = [cs[0] for cs in chunks if len(cs) == 1]
    records = store.nodes_by_id(single) if single else {}
    out: list[Hit] = []
    for rank, i in enumerate(chronological(hits, dates)):
        hit, when = hits[i], dates[i]
        if when is None:
            out.append(dataclasses.replace(hit, rank=rank))
            continue
        own = chunks[i][0] if len(chunks[i]) == 1 else None
        record = records.get(own) if own is not None else None
        text = dated_text(
            hit,
            when,
            record.text if record is not None else None,
            dated.get(own) if record and own is not None else None,
        )
        meta = {**hit.meta, "date": when.first} | ({"date_last": when.last} if when.last != when.first else {})
        out.append(dataclasses.replace(hit, rank=rank, text=text, meta=meta))
    return out
