"""Conversation turns, session windows and date parsing (:mod:`gemrag.strategies.platform.conversation`)."""

from __future__ import annotations

from datetime import date

import pytest

from gemrag.store import NodeRecord
from gemrag.strategies.platform.conversation import (
    Turn,
    date_bound,
    document_turns,
    parse_date,
    parse_turns,
    session_windows,
    written_dates,
)


def chunk(node_id: int, text: str, ord_: int = 0) -> NodeRecord:
    return NodeRecord(node_id, "chunk", 1, ord_, text, 0, 0, {})


@pytest.mark.parametrize(
    ("stamp", "iso"),
    [
        ("1:56 pm on 8 May, 2023", "2023-05-08"),
        ("10:37 am on 27 June, 2023", "2023-06-27"),
        ("2023-05-08", "2023-05-08"),
        ("2023-05-08T13:56:00", "2023-05-08"),
        ("May 8th, 2023", "2023-05-08"),
        ("8 Sept 2023", "2023-09-08"),
        ("on the 3rd of March 2021", "2021-03-03"),
        ("2023/5/8", "2023-05-08"),
        ("31 February 2023", None),
        ("last Tuesday", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_date(stamp: str | None, iso: str | None) -> None:
    assert parse_date(stamp) == iso


def test_locomo_lines_become_dialogue_turns() -> None:
    text = (
        "[1:56 pm on 8 May, 2023] Caroline: Hey Mel! I went to a support group yesterday.\n"
        "[1:56 pm on 8 May, 2023] Melanie: That's great: how was it? [shares a photo of a lake]"
    )
    turns = parse_turns(text, source=7)
    assert [(t.speaker, t.date, t.iso_date, t.sources) for t in turns] == [
        ("Caroline", "1:56 pm on 8 May, 2023", "2023-05-08", [7]),
        ("Melanie", "1:56 pm on 8 May, 2023", "2023-05-08", [7]),
    ]
    assert turns[1].text == "That's great: how was it? [shares a photo of a lake]"
    assert turns[0].line == text.splitlines()[0]


def test_plain_text_is_one_turn_per_paragraph() -> None:
    turns = parse_turns("Alma Reyes was born in Valdora.\nShe moved away.\n\nA second paragraph.", source=1)
    assert [(t.text, t.speaker, t.date) for t in turns] == [
        ("Alma Reyes was born in Valdora. She moved away.", None, None),
        ("A second paragraph.", None, None),
    ]
    assert turns[0].line == turns[0].text
    assert parse_turns("   \n") == []


def test_a_turn_split_across_chunks_is_joined_and_names_both_chunks() -> None:
    chunks = [
        chunk(1, "[8 May 2023] Ann: First sentence.\n[8 May 2023] Bob: One sentence.", 0),
        chunk(2, "Another sentence of Bob.\n[9 May 2023] Ann: New day.", 1),
    ]
    turns = document_turns(chunks)
    assert [(t.speaker, t.text, t.sources, t.session) for t in turns] == [
        ("Ann", "First sentence.", [1], 1),
        ("Bob", "One sentence. Another sentence of Bob.", [1, 2], 1),
        ("Ann", "New day.", [2], 2),
    ]


def test_session_windows_split_at_sessions_and_size() -> None:
    turns = [Turn(f"t{i}", "A", "d1", "2023-01-01", 1, [1]) for i in range(5)]
    turns += [Turn("u", "B", "d2", "2023-01-02", 2, [2]), Turn("plain", sources=[3])]
    windows = session_windows(turns, 2)
    assert [[t.text for t in w.turns] for w in windows] == [["t0", "t1"], ["t2", "t3"], ["t4"], ["u"], ["plain"]]
    assert windows[3].iso_date == "2023-01-02" and windows[3].session == 2 and windows[3].start_chunk == 2
    assert windows[0].text == "[d1] A: t0\n[d1] A: t1"
    with pytest.raises(ValueError):
        session_windows(turns, 0)


def test_date_bounds() -> None:
    assert date_bound("2023-05", end=False) == date(2023, 5, 1)
    assert date_bound("2023-02", end=True) == date(2023, 2, 28)
    assert date_bound("2023", end=True) == date(2023, 12, 31)
    assert date_bound("8 May 2023", end=True) == date(2023, 5, 8)
    assert date_bound(None, end=True) is None and date_bound(" ", end=False) is None
    with pytest.raises(ValueError):
        date_bound("last week", end=False)


def test_a_chunked_locomo_document_gives_back_its_turns() -> None:
    """The loader's text form, cut by the real chunker into chunks smaller than some turns: every turn comes back
    whole, with the chunks it spans."""
    from gemrag.ingest.chunker import chunk_text
    from gemrag.ingest.tokenizer import minilm_tokenizer

    said = [
        ("Ann", "I adopted a puppy. His name is Biscuit. He is very small and he sleeps all day long."),
        ("Bob", "Congratulations! I started painting lessons. The teacher is strict but kind."),
        ("Ann", "Painting sounds relaxing."),
    ]
    dates = ("1:56 pm on 8 May, 2023", "9:00 am on 2 July, 2023")
    lines = [f"[{d}] {who}: {text}" for d in dates for who, text in said]
    text = "\n".join(lines[:3]) + "\n\n" + "\n".join(lines[3:])
    chunks = [chunk(i + 1, c.text, i) for i, c in enumerate(chunk_text(text, minilm_tokenizer(), 16))]
    assert len(chunks) > len(lines)  # some turns are split
    turns = document_turns(chunks)
    assert [t.line for t in turns] == lines
    assert [t.session for t in turns] == [1, 1, 1, 2, 2, 2]
    assert any(len(t.sources) > 1 for t in turns)
    assert turns[3].iso_date == "2023-07-02"


def test_turns_come_back_from_chunks_stored_on_one_line() -> None:
    """A memory stores each chunk with its whitespace collapsed (``normalize_chunk``), so the loader's one turn per
    line arrives as one line per chunk: every date-stamped ``[<date>] <speaker>:`` inside it still starts a turn."""
    from gemrag.ingest.chunker import chunk_text, normalize_chunk
    from gemrag.ingest.tokenizer import minilm_tokenizer

    said = [
        ("Caroline", "I went to a support group yesterday. It was powerful. [shares a photo of a lake]"),
        ("Melanie", "That's great: how was it? I painted a sunrise last year."),
        ("Caroline", "Thanks, Mel!"),
        ("Melanie", "Anytime."),
    ]
    lines = [f"[1:56 pm on 8 May, 2023] {who}: {text}" for who, text in said]
    lines.append("[9:00 am on 2 July, 2023] Caroline: New day.")
    text = "\n".join(lines)
    stored = [normalize_chunk(c.text) for c in chunk_text(text, minilm_tokenizer(), 40)]
    assert all("\n" not in s for s in stored) and len(stored) < len(lines)  # several turns per stored chunk
    turns = document_turns([chunk(i + 1, s, i) for i, s in enumerate(stored)])
    assert [t.line for t in turns] == lines
    assert [t.session for t in turns] == [1, 1, 1, 1, 2]
    # a bracket that is not a date stamp (a photo caption, a note) does not start a turn
    one = parse_turns("[8 May 2023] Ann: See [the note] Bob: not a turn. [8 May 2023] Bob: A turn.")
    assert [(t.speaker, t.text) for t in one] == [("Ann", "See [the note] Bob: not a turn."), ("Bob", "A turn.")]


def test_written_dates_finds_every_date_in_text_order_and_skips_invalid_ones() -> None:
    text = "(date: 5 July 2023) [1:00 pm on 5 July, 2023] Mel: since May 8th, 2021 or 2022-01-03; not 31 February 2023."
    assert written_dates(text) == [date(2023, 7, 5), date(2023, 7, 5), date(2021, 5, 8), date(2022, 1, 3)]
    assert written_dates("no date here, only 2023 and July") == []
