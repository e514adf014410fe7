"""Time-aware reading (``[answer] dates``): relative time expressions resolved by rules against the day they were said,
questions with a time anchor, chunks dated at index time (conversation turns, dated documents), the dated context in
chronological order, and what the fake LLM's answer prompt shows through ``Memory.ask``. Unit tests with test doubles;
every expected date below was worked out on a calendar, not computed by the code under test."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from fakes import HashEmbedder, ScriptedLLM, StreamingLLM
from gemrag import Memory
from gemrag.answers.answer import Answer
from gemrag.answers.dates import (
    ChunkDates,
    annotate_dates,
    chunk_dates,
    dated_context,
    resolve_expressions,
    time_anchor,
    vague_expressions,
)
from gemrag.answers.dates.chunks import DATES_VERSION, NAMESPACE, date_chunks, document_date
from gemrag.answers.dates.context import HitDate, annotate, chronological
from gemrag.answers.dates.llm import llm_step, parse_period
from gemrag.answers.prompts import answer_prompt
from gemrag.answers.provenance import describe_answer
from gemrag.config import AnswerSettings, Config, load_config
from gemrag.errors import ConfigError
from gemrag.models.base import Completion, Usage
from gemrag.server.serialize import answer_out
from gemrag.types import Hit

WED = "2023-05-10"  # a Wednesday
SUN = "2023-05-14"  # a Sunday


@pytest.mark.parametrize(
    ("text", "anchor", "shown"),
    [
        ("yesterday", WED, "9 May 2023"),
        ("last night", WED, "9 May 2023"),
        ("today", WED, "10 May 2023"),
        ("tomorrow", WED, "11 May 2023"),
        ("the day before yesterday", WED, "8 May 2023"),
        ("the day after tomorrow", WED, "12 May 2023"),
        ("yesterday", "2024-03-01", "29 February 2024"),  # a leap year
        ("3 days ago", WED, "7 May 2023"),
        ("two weeks ago", WED, "the week of 24 April 2023"),
        ("a week ago", WED, "the week of 1 May 2023"),
        ("a month ago", "2023-03-31", "February 2023"),  # 31 March minus a month: 28 February, its month
        ("two months ago", "2023-01-15", "November 2022"),
        ("five years ago", WED, "2018"),
        ("3 weeks from now", WED, "the week of 29 May 2023"),
        ("last week", WED, "the week of 1 May 2023"),
        ("last week", "2023-05-08", "the week of 1 May 2023"),  # said on a Monday
        ("this week", SUN, "the week of 8 May 2023"),  # Sunday ends the Monday-to-Sunday week
        ("next week", WED, "the week of 15 May 2023"),
        ("last month", "2023-01-20", "December 2022"),
        ("next month", WED, "June 2023"),
        ("earlier this month", WED, "May 2023"),
        ("last year", "2023-01-01", "2022"),
        ("next year", WED, "2024"),
        ("last Sunday", WED, "7 May 2023"),
        ("last Sunday", SUN, "7 May 2023"),  # said on a Sunday: the one a week before
        ("last Wednesday", WED, "3 May 2023"),
        ("last Friday", "2023-05-13", "12 May 2023"),  # said on Saturday: the day before
        ("this past Monday", WED, "8 May 2023"),
        ("this Friday", WED, "12 May 2023"),
        ("this Monday", WED, "8 May 2023"),
        ("last Tues", WED, "9 May 2023"),  # a weekday's capitalized abbreviation (LoCoMo writes "last Tues.")
        ("last Fri", "2023-05-13", "12 May 2023"),
        ("last Thurs", WED, "4 May 2023"),
        ("this Sun", WED, "14 May 2023"),
        ("last weekend", WED, "the weekend of 6 May 2023"),
        ("last weekend", SUN, "the weekend of 6 May 2023"),
        ("this weekend", WED, "the weekend of 13 May 2023"),
        ("this weekend", SUN, "the weekend of 13 May 2023"),
        ("Last May", WED, "May 2022"),
        ("last April", WED, "April 2023"),
        ("next March", WED, "March 2024"),
        ("this December", WED, "December 2023"),
    ],
)
def test_rules_resolve_expressions_against_the_anchor(text: str, anchor: str, shown: str) -> None:
    [note] = resolve_expressions(f"We said it {text}, really.", date.fromisoformat(anchor))
    assert (note.text, note.shown, note.anchor, note.by) == (text, shown, anchor, "rule")
    assert (note.start, note.end) == (11, 11 + len(text))


@pytest.mark.parametrize(
    "text",
    ["next Friday", "next Fri", "a few days ago", "a couple of weeks ago", "on Saturday", "the other day",
     "last summer", "next weekend"],
)  # fmt: skip
def test_ambiguous_expressions_are_left_unresolved_and_reported(text: str) -> None:
    sentence = f"We met {text} at the pier."
    assert resolve_expressions(sentence, date.fromisoformat(WED)) == []
    [(start, end)] = vague_expressions(sentence)
    assert sentence[start:end] == text


@pytest.mark.parametrize(
    "text",
    ["the last sat down", "this sun is hot", "the last Sun of summer", "the last Friday of the month", "a Tuesday"],
)
def test_words_that_only_look_like_a_weekday_are_not_resolved(text: str) -> None:
    assert resolve_expressions(f"He said {text}.", date.fromisoformat(WED)) == []


@pytest.mark.parametrize("text", ["I may go last may", "in two weeks", "the last day of the trip", "on Saturdays"])
def test_no_time_expression(text: str) -> None:
    assert resolve_expressions(text, date.fromisoformat(WED)) == [] and vague_expressions(text) == []


def test_longest_expression_wins_and_spans_index_the_text() -> None:
    text = "The day before yesterday I swam; two weeks ago I ran."
    notes = resolve_expressions(text, date.fromisoformat(WED), offset=100)
    assert [(n.text, n.value, n.unit) for n in notes] == [
        ("The day before yesterday", "2023-05-08", "day"),
        ("two weeks ago", "2023-04-24", "week"),
    ]
    assert [text[n.start - 100 : n.end - 100] for n in notes] == ["The day before yesterday", "two weeks ago"]


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("When did Maria adopt Biscuit?", "when"),
        ("What year did Tom move to Oslo?", "when"),
        ("How long ago did Caroline start painting?", "when"),
        ("Which month was the race?", "when"),
        ("What did Maria do before the trip to Rome?", "order"),
        ("What did Tom buy after he sold the boat?", "order"),
        ("Where did they go for the first time together?", "order"),
        ("What did Maria buy in March?", "period"),
        ("What happened on 7 May?", "period"),
        ("What did Tom read in 2022?", "period"),
        ("What did Maria cook last week?", "period"),
        ("Who did Tom meet on Saturday?", "period"),
        ("What is Biscuit's breed?", None),
        ("What did she name her dog after?", None),  # "after" as a question's last word is no anchor
        ("May I ask what Tom's job is?", None),  # "may" is a verb
    ],
)
def test_time_anchor(question: str, kind: str | None) -> None:
    anchor = time_anchor(question)
    assert (anchor.kind if anchor else None) == kind
    if anchor:
        assert anchor.cue.lower() in question.lower()


def test_chunks_are_dated_by_their_turns_and_a_cut_turn_keeps_its_date() -> None:
    texts = [
        "[1:56 pm on 8 May, 2023] Maria: I went to the market today. [2:10 pm on 25 May, 2023] Maria: We adopted",
        "a puppy last Sunday and he slept yesterday.",
        "Plain text about next month.",
    ]
    first, second, third = date_chunks(texts, None)
    assert first.dates == ["2023-05-08", "2023-05-25"]
    assert [(n.text, n.value) for n in first.notes] == [("today", "2023-05-08")]
    assert second.dates == ["2023-05-25"]  # the turn the chunker cut goes on, dated by its stamp
    assert [(n.text, n.value) for n in second.notes] == [("last Sunday", "2023-05-21"), ("yesterday", "2023-05-24")]
    assert third.dates == ["2023-05-25"] and third.notes[0].value == "2023-06-01"  # until another stamp comes


def test_undated_text_gets_no_date_and_documents_give_theirs() -> None:
    assert date_chunks(["Yesterday the harbour froze."], None) == [ChunkDates()]
    assert (
        document_date("notes", "---\ntitle: Log\ndate: 2023-05-08\n---\nYesterday the harbour froze.") == "2023-05-08"
    )
    assert document_date("notes", "Date: 8 May 2023\n\nText.") == "2023-05-08"
    assert document_date("standup 2023-05-09", "No date line.") == "2023-05-09"
    assert document_date("notes", "Text.\nDate: in a while") is None
    [dated] = date_chunks(["Yesterday the harbour froze."], "2023-05-08")
    assert dated.dates == ["2023-05-08"] and dated.notes[0].shown == "7 May 2023"


def test_annotate_puts_the_period_after_each_expression() -> None:
    text = "We adopted him last Sunday and he slept yesterday."
    notes = resolve_expressions(text, date.fromisoformat(WED))
    assert annotate(text, notes) == ("We adopted him last Sunday (= 7 May 2023) and he slept yesterday (= 9 May 2023).")
    moved = [notes[0].model_copy(update={"start": 0, "end": 11})]  # a span that no longer holds its text
    assert annotate(text, moved) == text


def _hit(i: int, text: str = "x") -> Hit:
    return Hit(i, "chunk", 1.0 - i / 10, text, i)


def test_chronological_order_puts_dated_hits_first_oldest_first() -> None:
    hits = [_hit(i) for i in range(5)]
    dates = [HitDate("2023-06-01", "2023-06-01"), None, HitDate("2023-05-01", "2023-07-01"), None,
             HitDate("2023-06-01", "2023-06-01")]  # fmt: skip
    assert chronological(hits, dates) == [2, 0, 4, 1, 3]
    assert HitDate("2023-05-01", "2023-07-01").shown == "1 May 2023 to 1 July 2023"


CONVERSATION = """[1:56 pm on 8 May, 2023] Maria: I went to the farmers market today and bought plums.
[1:56 pm on 8 May, 2023] Tom: Nice, plums are my favourite fruit.

[2:10 pm on 25 May, 2023] Maria: We adopted a puppy named Biscuit last Sunday!
[2:10 pm on 25 May, 2023] Tom: Congratulations, what breed is Biscuit?
"""


def _config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, **answer: Any) -> Config:
    for var in list(__import__("os").environ):
        if var.startswith("GEMRAG_"):
            monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    return load_config(None, {"strategy": "dense", "memory": {"chunk_tokens": 24, "budget": 10}, "answer": answer})


def test_ask_with_dates_on_shows_the_absolute_date_in_the_prompt(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    llm = ScriptedLLM()
    cfg = _config(monkeypatch, tmp_path, dates="on")
    with Memory.open(tmp_path / "m", cfg, llm=llm, embedder=HashEmbedder()) as mem:
        mem.add_text(CONVERSATION, "Maria and Tom", source="chat.txt")
        mem.index()
        stored = mem.store.artifacts(NAMESPACE, "dates", ChunkDates, DATES_VERSION)
        assert len(stored) == len(mem.store.nodes("chunk")) >= 2  # every chunk dated at index time
        answer = mem.ask("When did Maria adopt Biscuit?")
        doc_id = mem.store.documents()[0]["id"]
        mem.delete(doc_id)  # the dates leave with their chunks
        assert mem.store.artifacts(NAMESPACE, "dates", ChunkDates, DATES_VERSION) == {}
    prompt = llm.prompts[-1]
    assert "last Sunday (= 21 May 2023)" in prompt
    assert "(date: 25 May 2023)" in prompt and "(date: 8 May 2023)" in prompt
    assert prompt.index("(date: 8 May 2023)") < prompt.index("(date: 25 May 2023)")  # oldest first
    assert [h.meta["date"] for h in answer.hits] == sorted(h.meta["date"] for h in answer.hits)
    assert [h.rank for h in answer.hits] == list(range(len(answer.hits)))
    assert answer.citations[0].text.startswith("(date: ")  # passage [1] is the first hit the model read


@pytest.mark.parametrize(("dates", "expected"), [("on", "On 21 May 2023."), ("off", "On 21 May.")])
def test_ask_and_its_stream_complete_the_year_over_a_dated_context(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, dates: str, expected: str
) -> None:
    llm = StreamingLLM(reply="On 21 May.")
    with Memory.open(
        tmp_path / "m", _config(monkeypatch, tmp_path, dates=dates), llm=llm, embedder=HashEmbedder()
    ) as mem:
        mem.add_text(CONVERSATION, "Maria and Tom", source="chat.txt")
        mem.index()
        answer = mem.ask("When did Maria adopt Biscuit?")
        streamed = list(mem.ask_stream("When did Maria adopt Biscuit?"))
        described = describe_answer(mem.store, answer, "dense")  # gemrag ask --json, MCP ask
    final = streamed[-1]
    assert isinstance(final, Answer)
    assert answer.text == final.text == expected
    assert "".join(p for p in streamed[:-1] if isinstance(p, str)) == "On 21 May."  # the pieces are the model's
    completed = ["21 May 2023"] if dates == "on" else None
    assert answer.reading.get("dates_completed") == final.reading.get("dates_completed") == completed
    assert described.answer == expected and described.dates_completed == (completed or [])
    assert answer_out(final, "dense").dates_completed == (completed or [])  # the server's answer and stream event


def test_dates_off_and_auto_without_an_anchor_leave_the_prompt_as_before(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    question = "What breed is Biscuit?"
    for mode in ("off", "auto"):
        llm = ScriptedLLM()
        cfg = _config(monkeypatch, tmp_path, dates=mode)
        with Memory.open(tmp_path / mode, cfg, llm=llm, embedder=HashEmbedder()) as mem:
            mem.add_text(CONVERSATION, "Maria and Tom", source="chat.txt")
            mem.index()
            assert (mem.store.artifacts(NAMESPACE, "dates", ChunkDates, DATES_VERSION) != {}) == (mode == "auto")
            hits = mem.retrieve(question)
            answer = mem.ask(question)
        expected = answer_prompt(question, [h.text for h in hits], cite=True)[-1]["content"]
        assert llm.prompts[-1] == expected and "(date:" not in llm.prompts[-1]
        assert [h.text for h in answer.hits] == [h.text for h in hits]


def test_auto_dates_a_time_question_from_dates_computed_on_the_read_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A memory indexed with dates off has no stored dates; answering with dates on computes them by the rules and
    writes nothing."""
    with Memory.open(
        tmp_path / "m", _config(monkeypatch, tmp_path, dates="off"), llm=ScriptedLLM(), embedder=HashEmbedder()
    ) as mem:
        mem.add_text(CONVERSATION, "Maria and Tom", source="chat.txt")
        mem.index()
    llm = ScriptedLLM()
    with Memory.open(
        tmp_path / "m", _config(monkeypatch, tmp_path, dates="auto"), llm=llm, embedder=HashEmbedder()
    ) as mem:
        hits = mem.retrieve("When did Maria adopt Biscuit?")
        read = dated_context(mem.store, "When did Maria adopt Biscuit?", hits, "auto")
        assert mem.store.artifacts(NAMESPACE, "dates", ChunkDates, DATES_VERSION) == {}
        assert dated_context(mem.store, "What breed is Biscuit?", hits, "auto") == hits
        assert dated_context(mem.store, "What breed is Biscuit?", hits, "off") == hits
        ids = [h.node_id for h in hits]
        assert set(chunk_dates(mem.store, ids)) == set(ids)
    assert any("last Sunday (= 21 May 2023)" in h.text for h in read)
    assert {h.meta["date"] for h in read} <= {"2023-05-08", "2023-05-25"}
    with pytest.raises(ValueError, match="auto, on or off"):
        dated_context(mem.store, "When?", hits, "always")  # type: ignore[arg-type]


def test_a_dated_document_dates_its_chunks(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    llm = ScriptedLLM()
    cfg = _config(monkeypatch, tmp_path, dates="auto")
    with Memory.open(tmp_path / "m", cfg, llm=llm, embedder=HashEmbedder()) as mem:
        mem.add_text("Date: 8 May 2023\n\nThe harbour froze yesterday, and the ferry stopped.", "log", source="log.md")
        mem.add_text("The lighthouse keeper is Amos Wren.", "keeper", source="keeper.md")
        mem.index()
        answer = mem.ask("When did the harbour freeze?")
    assert "(date: 8 May 2023)" in llm.prompts[-1] and "yesterday (= 7 May 2023)" in llm.prompts[-1]
    undated = [h for h in answer.hits if "date" not in h.meta]
    assert undated and all(not h.text.startswith("(date:") for h in undated)
    assert answer.hits[-1] in undated  # undated passages come after the dated ones


def test_the_dates_setting_defaults_to_auto_and_is_checked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert _config(monkeypatch, tmp_path).answer.dates == "auto"
    with pytest.raises(ConfigError):
        _config(monkeypatch, tmp_path, dates="sometimes")


class _DateLLM:
    """Answers every date question with ``reply`` and records the prompts."""

    model_id = "fake:dates"
    context_window = 4096

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.prompts: list[str] = []

    def complete(self, messages: Any, **kwargs: Any) -> Completion:
        self.prompts.append(messages[-1]["content"])
        text = json.dumps({"date": self.reply})
        return Completion(text, json.loads(text), Usage(prompt_tokens=10, completion_tokens=5, calls=1))


class _Failures:
    def __init__(self) -> None:
        self.recorded: list[tuple[str, int | None, str]] = []

    def record_failure(self, phase: str, node_id: int | None, message: str) -> None:
        self.recorded.append((phase, node_id, message))


def test_the_llm_step_resolves_only_what_the_rules_left() -> None:
    text = "[9:00 am on 10 May, 2023] Maria: On Saturday we sailed, and yesterday we rested."
    [dated] = date_chunks([text], None)
    assert [u.text for u in dated.unresolved] == ["On Saturday"] and len(dated.notes) == 1
    llm = _DateLLM("2023-05-06")
    done = llm_step(lambda: llm, _Failures())(text, dated, 7)  # type: ignore[arg-type]
    assert [(n.text, n.value, n.unit, n.by) for n in done.notes] == [
        ("On Saturday", "2023-05-06", "day", "llm"),
        ("yesterday", "2023-05-09", "day", "rule"),
    ]
    assert done.unresolved == [] and len(llm.prompts) == 1
    assert "Wednesday, 10 May 2023" in llm.prompts[0] and '"On Saturday"' in llm.prompts[0]
    unknown = llm_step(lambda: _DateLLM("unknown"), _Failures())(text, dated, 7)  # type: ignore[arg-type]
    assert unknown.unresolved == dated.unresolved and unknown.notes == dated.notes


def test_parse_period() -> None:
    assert parse_period("2023-05-06") == (date(2023, 5, 6), "day")
    assert parse_period("2023-05") == (date(2023, 5, 1), "month")
    assert parse_period("2023") == (date(2023, 1, 1), "year")
    assert parse_period("unknown") is None and parse_period("2023-02-30") is None


def test_index_with_date_llm_asks_the_model_once_per_unresolved_expression(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cfg = _config(monkeypatch, tmp_path, dates="on", date_llm=True)
    text = "[10 May, 2023] Maria: On Saturday we sailed."
    llm = _DateLLM("2023-05-06")
    with Memory.open(tmp_path / "m", cfg, llm=llm, embedder=HashEmbedder()) as mem:
        mem.add_text(text, "sail", source="sail.txt")
        mem.index()
        stored = mem.store.artifacts(NAMESPACE, "dates", ChunkDates, DATES_VERSION).values()
        assert [(n.text, n.value, n.by) for d in stored for n in d.notes] == [("On Saturday", "2023-05-06", "llm")]
        assert annotate_dates(mem.store) == 0  # nothing left to annotate: no second call
    assert len(llm.prompts) == 1


def test_an_evaluation_reads_time_questions_dated(tmp_path: Path, config: Config) -> None:
    """``gemrag eval`` answers through the same reading settings (``memory.asking.read_as``): with ``dates = "auto"``
    LoCoMo's "When did Ann move?" is read dated, "Where did Ann move?" as retrieved."""
    from test_eval_locomo import AnsweringLLM, _run

    llm = AnsweringLLM()
    res = _run(tmp_path, config.model_copy(update={"answer": AnswerSettings(dates="auto")}), "dated", llm=llm)
    dated = {r["question_id"] for r in res.records if r.get("dated")}
    assert dated == {"conv-t_q2", "conv-t_q3"}  # "When did Ann move?", "What did Ann realize after the race?"
    when = next(p for p in llm.prompts if "Question: When did Ann move?" in p)
    where = next(p for p in llm.prompts if "Question: Where did Ann move?" in p)
    assert "(date: 8 May 2023)" in when and "last week (= the week of 1 May 2023)" in when
    assert "(date:" not in where and "(= " not in where


def test_ask_and_its_stream_put_back_the_week_the_context_gives(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    talk = "[2:10 pm on 25 May, 2023] Maria: I gave a talk at a school last week.\n"
    llm = StreamingLLM(reply="On 15 May.")  # the week's Monday, without its year
    with Memory.open(
        tmp_path / "m", _config(monkeypatch, tmp_path, dates="on"), llm=llm, embedder=HashEmbedder()
    ) as mem:
        mem.add_text(talk, "Maria", source="talk.txt")
        mem.index()
        answer = mem.ask("When did Maria give a talk?")
        streamed = list(mem.ask_stream("When did Maria give a talk?"))
        described = describe_answer(mem.store, answer, "dense")
    assert "last week (= the week of 15 May 2023)" in llm.prompts[-1]
    final = streamed[-1]
    assert isinstance(final, Answer)
    assert answer.text == final.text == described.answer == "In the week of 15 May 2023."
    assert answer.reading["dates_completed"] == ["15 May 2023", "the week of 15 May 2023"]
    assert answer_out(final, "dense").dates_completed == described.dates_completed == answer.reading["dates_completed"]
