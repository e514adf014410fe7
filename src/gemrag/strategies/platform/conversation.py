"""Conversation turns and session windows of a memory's chunks (REMem seed ``remem-retrieval-strategies.txt``,
"Episodic Gist Strategy": verbatim nodes are the turns, "original text with metadata"; "Return Chunk Type").

Pure functions, no store and no model:

* :func:`parse_date`: an ISO date (``YYYY-MM-DD``) from LoCoMo's session stamps (``"1:56 pm on 8 May, 2023"``) and
  other common forms (``2023-05-08``, ``8 May 2023``, ``May 8th, 2023``, ``2023/05/08``), else None;
* :func:`written_dates`: every calendar date written in a text, in the forms :func:`parse_date` reads;
* :func:`parse_turns`: the turns of one text. A line ``[<date>] <speaker>: <text>`` (the form the LoCoMo loader
  writes, :mod:`gemrag.eval.loaders.locomo`) starts a dialogue turn; a following line without that form continues
  it (a turn whose text has a line break); a blank line ends it. Other lines form *plain* turns (no speaker, no
  date), one per paragraph, so any document has turns. A memory stores chunks with their line breaks collapsed, so
  a date-stamped ``[<date>] <speaker>:`` inside a line starts a turn too (:func:`split_inline_turns`);
* :func:`document_turns`: the turns of one document's chunks, in order, each with the chunk(s) it came from. The
  chunker cuts at sentence boundaries, so a turn of several sentences can be split across two chunks: when a chunk
  begins with plain text and the previous chunk ended in a dialogue turn, that text is the rest of the turn; it is
  appended to the turn (joined by one space, the whitespace the chunker dropped) and the turn's ``sources`` name
  both chunks. (A document whose paragraphs are not dialogue keeps one turn per paragraph of each chunk.) Sessions
  are numbered 1, 2, ... in the document, a new session starting whenever the date stamp changes;
* :func:`session_windows`: consecutive turns of one session (same date stamp), at most ``size`` per window, the
  unit a gist summarizes.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date

from gemrag.store import NodeRecord

HEADER = re.compile(r"^\[(?P<date>[^\]\n]*)\]\s*(?P<speaker>[^:\n\[\]]{1,80}?):[ \t]?(?P<text>.*)$")
"""A dialogue line: ``[<date>] <speaker>: <text>``."""
INLINE_HEADER = re.compile(r"(?<=\S)[ \t]+(?=\[(?P<date>[^\]\n]*)\]\s*[^:\n\[\]]{1,80}?:)")
"""The space before a ``[<date>] <speaker>:`` inside a line; it starts a turn when ``<date>`` is a date
(:func:`parse_date`), as in a chunk the memory stored with its line breaks collapsed."""

_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS |= {name.lower(): i for i, name in enumerate(calendar.month_abbr) if name}
_MONTHS["sept"] = 9
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DATE_FORMS = (
    re.compile(r"(?P<year>\d{4})[-/.](?P<mnum>\d{1,2})[-/.](?P<day>\d{1,2})"),
    re.compile(r"(?P<day>\d{1,2})(?:st|nd|rd|th)?(?:\s+of)?\s+" + _MONTH + r",?\s+(?P<year>\d{4})", re.I),
    re.compile(_MONTH + r"\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?,?\s+(?P<year>\d{4})", re.I),
)


def parse_date(stamp: str | None) -> str | None:
    """The calendar date in a date stamp, as ISO ``YYYY-MM-DD``.

    Args:
        stamp: e.g. LoCoMo's ``"1:56 pm on 8 May, 2023"``, ``"2023-05-08T13:56"``, ``"May 8th, 2023"``; the first
            date found anywhere in it is used (a time of day is ignored).

    Returns:
        The ISO date, or None when no (valid) date is found (``"31 February 2023"`` is None).
    """
    if not stamp:
        return None
    for form in _DATE_FORMS:
        m = form.search(stamp)
        if not m:
            continue
        parts = m.groupdict()
        month = int(parts["mnum"]) if parts.get("mnum") else _MONTHS[parts["month"].lower()]
        try:
            return date(int(parts["year"]), month, int(parts["day"])).isoformat()
        except ValueError:
            continue
    return None


def written_date_spans(text: str) -> list[tuple[int, int, date]]:
    """Every calendar date written in ``text`` in the forms :func:`parse_date` reads (``8 May, 2023``, ``May 8th,
    2023``, ``2023-05-08``, ...), with where it is written, in text order; an invalid one (``31 February 2023``) is
    skipped, and where two forms overlap the earlier match is kept.

    Returns:
        ``(start, end, day)`` per written date: character offsets into ``text`` (``text[start:end]`` is the date as
        written) and the date (:class:`datetime.date`).
    """
    found: list[tuple[int, int, date]] = []
    for form in _DATE_FORMS:
        for m in form.finditer(text):
            parts = m.groupdict()
            month = int(parts["mnum"]) if parts.get("mnum") else _MONTHS[parts["month"].lower()]
            try:
                found.append((m.start(), m.end(), date(int(parts["year"]), month, int(parts["day"]))))
            except ValueError:
                continue
    kept: list[tuple[int, int, date]] = []
    for start, end, day in sorted(found):
        if not kept or start >= kept[-1][1]:
            kept.append((start, end, day))
    return kept


def written_dates(text: str) -> list[date]:
    """Every calendar date written in ``text`` (:func:`written_date_spans` without the offsets), in text order.

    Returns:
        The dates (:class:`datetime.date`), one per written date.
    """
    return [day for _, _, day in written_date_spans(text)]


@dataclass
class Turn:
    """One turn of a conversation, or one paragraph of other text.

    Attributes:
        text: what was said (without the stamp and speaker), or the paragraph.
        speaker: who said it; None for a plain (non-dialogue) turn.
        date: the date stamp as written (e.g. ``"1:56 pm on 8 May, 2023"``); None for a plain turn.
        iso_date: :func:`parse_date` of ``date`` (None when it has no recognizable date).
        session: 1-based session number in its document (:func:`document_turns`); None for plain turns and
            before numbering.
        sources: ids of the chunk(s) the turn came from, in order (two when it was split across chunks).
    """

    text: str
    speaker: str | None = None
    date: str | None = None
    iso_date: str | None = None
    session: int | None = None
    sources: list[int] = field(default_factory=list)

    @property
    def line(self) -> str:
        """The turn as written in the document: ``"[<date>] <speaker>: <text>"`` (a plain turn: its text)."""
        if self.speaker is None:
            return self.text
        return f"[{self.date or ''}] {self.speaker}: {self.text}"


def split_inline_turns(text: str) -> str:
    """``text`` with a line break before every date-stamped ``[<date>] <speaker>:`` that does not start a line.

    A memory stores a chunk's text with its whitespace collapsed (:func:`gemrag.ingest.chunker.normalize_chunk`), so
    the loader's one turn per line reaches :func:`parse_turns` as a single line. A bracket whose content is not a
    date (:func:`parse_date`), such as LoCoMo's ``[shares a photo of ...]``, is left inside its turn. The result has
    the same length as ``text`` (one space or tab becomes ``\\n``).
    """

    def brk(m: re.Match[str]) -> str:
        return m.group(0)[:-1] + "\n" if parse_date(m.group("date")) else m.group(0)

    return INLINE_HEADER.sub(brk, text)


def parse_turns(text: str, source: int | None = None) -> list[Turn]:
    """The turns of one text (module docstring), each with ``sources = [source]`` when a source is given.

    Returns:
        Turns in order; an empty or blank text has none. Plain turns are whitespace-joined paragraphs.
    """
    turns: list[Turn] = []
    sources = [source] if source is not None else []
    current: Turn | None = None
    for raw in split_inline_turns(text).splitlines():
        line = raw.strip()
        if not line:
            current = None
            continue
        m = HEADER.match(line)
        if m:
            stamp = m.group("date").strip()
            current = Turn(m.group("text").strip(), m.group("speaker").strip(), stamp, parse_date(stamp))
            current.sources = list(sources)
            turns.append(current)
        elif current is None:
            current = Turn(line, sources=list(sources))
            turns.append(current)
        else:  # a dialogue turn's next line, or the paragraph's
            current.text = f"{current.text}\n{line}" if current.speaker is not None else f"{current.text} {line}"
    return turns


def document_turns(chunks: Sequence[NodeRecord]) -> list[Turn]:
    """The turns of one document's chunks (given in document order), with sources and session numbers.

    A chunk beginning with plain text right after a chunk that ended in a dialogue turn continues that turn
    (module docstring); sessions are numbered from 1 in the document, a new one whenever the date stamp of a
    dialogue turn differs from the previous dialogue turn's.
    """
    turns: list[Turn] = []
    for chunk in chunks:
        parsed = parse_turns(chunk.text, chunk.id)
        if parsed and parsed[0].speaker is None and turns and turns[-1].speaker is not None:
            rest = parsed.pop(0)
            turns[-1].text = f"{turns[-1].text} {rest.text}"
            turns[-1].sources.append(chunk.id)
        turns.extend(parsed)
    session, stamp = 0, None
    for turn in turns:
        if turn.speaker is None:
            continue
        if session == 0 or turn.date != stamp:
            session, stamp = session + 1, turn.date
        turn.session = session
    return turns


@dataclass
class Window:
    """Consecutive turns of one session (or of plain text), summarized by one gist.

    Attributes:
        turns: the turns, in order (at least one).
    """

    turns: list[Turn]

    @property
    def date(self) -> str | None:
        """The session's date stamp as written (None for plain text)."""
        return self.turns[0].date

    @property
    def iso_date(self) -> str | None:
        """The session's ISO date (None when unknown)."""
        return self.turns[0].iso_date

    @property
    def session(self) -> int | None:
        """The session's number in its document."""
        return self.turns[0].session

    @property
    def start_chunk(self) -> int:
        """The chunk the window's first turn came from (its gist artefact is stored under that chunk)."""
        return self.turns[0].sources[0]

    @property
    def sources(self) -> list[int]:
        """Every chunk a turn of the window came from, sorted."""
        return sorted({s for t in self.turns for s in t.sources})

    @property
    def text(self) -> str:
        """The window as the LLM reads it: one line per turn."""
        return "\n".join(t.line for t in self.turns)


def _same_session(a: Turn, b: Turn) -> bool:
    """Whether two consecutive turns belong to one window: both dialogue of one session and date, or both plain."""
    return (a.speaker is None) == (b.speaker is None) and a.session == b.session and a.date == b.date


def session_windows(turns: Sequence[Turn], size: int) -> list[Window]:
    """Split turns into windows: a new window at each change of session (or between dialogue and plain turns),
    and after ``size`` turns.

    Args:
        turns: one document's turns (:func:`document_turns`); every turn must have a source.
        size: most turns per window (>= 1).

    Raises:
        ValueError: ``size < 1``.
    """
    if size < 1:
        raise ValueError(f"size must be >= 1, got {size}")
    windows: list[Window] = []
    for turn in turns:
        last = windows[-1].turns if windows else None
        if last and len(last) < size and _same_session(last[-1], turn):
            last.append(turn)
            continue
        windows.append(Window([turn]))
    return windows


def date_bound(value: str | None, *, end: bool) -> date | None:
    """A date-range bound given as ``YYYY-MM-DD``, ``YYYY-MM`` or ``YYYY`` (or any form :func:`parse_date` reads):
    a month or year means its first day for a start bound and its last day for an end bound (``end=True``).

    Returns:
        The date, or None for an empty bound.

    Raises:
        ValueError: the bound is not a date.
    """
    if value is None or not value.strip():
        return None
    text = value.strip()
    iso = parse_date(text)
    if iso is not None:
        return date.fromisoformat(iso)
    m = re.fullmatch(r"(\d{4})(?:-(\d{1,2}))?", text)
    if not m or not 1 <= int(m.group(2) or 1) <= 12:
        raise ValueError(f"not a date: {value!r} (use YYYY-MM-DD)")
    year = int(m.group(1))
    if m.group(2):
        month = int(m.group(2))
        return date(year, month, calendar.monthrange(year, month)[1] if end else 1)
    return date(year, 12, 31) if end else date(year, 1, 1)
