"""An answer over a dated context that gives the day a turn was said on, where that turn tells another time for what
the question asks about, is given the time the turn tells (:mod:`gemrag.answers.dates.said`); every other answer is
left as written."""

from __future__ import annotations

from pathlib import Path

import pytest

from fakes import HashEmbedder, StreamingLLM
from gemrag import Memory
from gemrag.answers.answer import Answer
from gemrag.answers.dates.completion import complete_dates
from gemrag.answers.dates.said import said_to_happened
from gemrag.cli.ask import question_form_lines
from gemrag.types import Hit
from test_time_aware_reading import _config


def _hit(text: str, first: str) -> Hit:
    return Hit(1, "chunk", 1.0, text, meta={"date": first})


ADOPTION = _hit(
    "(date: 14 March 2024) [9:14 am on 14 March, 2024] Maya: Big news, we adopted a dog yesterday (= 13 March 2024)! "
    "A rescue beagle called Pepper. [9:16 am on 14 March, 2024] Leo: That's wonderful! Where did you find her?",
    "2024-03-14",
)
MARATHON = _hit(
    "(date: 20 May 2024) [6:05 pm on 20 May, 2024] Leo: I finally ran the city half marathon two weeks ago "
    "(= the week of 6 May 2024), in 1 hour 52 minutes. [6:07 pm on 20 May, 2024] Maya: Congratulations! Pepper would "
    "have loved to run with you.",
    "2024-05-20",
)
HITS = [ADOPTION, MARATHON]
MARATHON_Q = "When did Leo run the half marathon?"


WEEK = "the week of 6 May 2024"


@pytest.mark.parametrize(
    ("answer", "question", "expected", "put"),
    [
        ("20 May 2024", MARATHON_Q, "The week of 6 May 2024", WEEK),
        ("Leo ran it on 20 May 2024 [2].", MARATHON_Q, "Leo ran it in the week of 6 May 2024 [2].", WEEK),
        ("On 14 March 2024.", "When did Maya adopt Pepper?", "On 13 March 2024.", "13 March 2024"),  # keeps "on"
        ("March 14, 2024", "When did Maya adopt her beagle?", "13 March 2024", "13 March 2024"),
    ],
)
def test_the_day_a_turn_was_said_on_becomes_the_time_it_tells(
    answer: str, question: str, expected: str, put: str
) -> None:
    assert said_to_happened(answer, question, HITS) == (expected, [put])


def test_a_year_or_a_month_told_is_put_in_with_in() -> None:
    said = _hit(
        "(date: 3 August 2023) [1:00 pm on 3 August, 2023] Jon: We opened the dance studio last year (= 2022).",
        "2023-08-03",
    )
    assert said_to_happened("on 3 August 2023", "When did Jon open his dance studio?", [said]) == ("in 2022", ["2022"])


@pytest.mark.parametrize(
    ("answer", "question"),
    [
        ("20 May 2024", "When did Maya congratulate Leo?"),  # the turn asked about tells no other time
        ("20 May 2024", "When did Leo run?"),  # one shared word: too weak a sign
        ("the week of 20 May 2024", MARATHON_Q),  # already a period
        ("13 March 2024", "When did Maya adopt Pepper?"),  # not a day a turn was said on
        ("20 May 2024 or 14 March 2024", MARATHON_Q),  # two dates: which one is meant is not clear
        ("in May", MARATHON_Q),  # no full date
    ],
)
def test_other_answers_are_left_as_written(answer: str, question: str) -> None:
    assert said_to_happened(answer, question, HITS) == (answer, [])


def test_tied_turns_and_a_turn_telling_two_times_change_nothing() -> None:
    tied = _hit(
        "(date: 20 May 2024) [6:05 pm on 20 May, 2024] Leo: I ran the half marathon two weeks ago (= the week of 6 May "
        "2024). [6:06 pm on 20 May, 2024] Leo: I ran the half marathon route again yesterday (= 19 May 2024).",
        "2024-05-20",
    )
    assert said_to_happened("20 May 2024", MARATHON_Q, [tied]) == ("20 May 2024", [])
    two = _hit(
        "(date: 20 May 2024) [6:05 pm on 20 May, 2024] Leo: I ran the half marathon two weeks ago (= the week of 6 May "
        "2024) and again yesterday (= 19 May 2024).",
        "2024-05-20",
    )
    assert said_to_happened("20 May 2024", MARATHON_Q, [two]) == ("20 May 2024", [])


def test_an_undated_context_or_no_question_changes_nothing() -> None:
    undated = Hit(1, "chunk", 1.0, MARATHON.text, meta={})
    assert said_to_happened("20 May 2024", MARATHON_Q, [undated]) == ("20 May 2024", [])
    assert complete_dates("20 May 2024", HITS) == ("20 May 2024", [])  # without the question: years and periods only
    assert complete_dates("20 May", HITS, MARATHON_Q) == (
        "The week of 6 May 2024",
        ["20 May 2024", "the week of 6 May 2024"],
    )


CHAT = (
    "[9:14 am on 14 March, 2024] Maya: Big news, we adopted a dog yesterday! A rescue beagle called Pepper.\n"
    "[6:05 pm on 20 May, 2024] Leo: I finally ran the city half marathon two weeks ago, in 1 hour 52 minutes.\n"
)


def test_ask_and_its_stream_answer_with_the_time_the_turn_tells(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cfg = _config(monkeypatch, tmp_path, dates="auto", cite=False, verify="off")
    with Memory.open(tmp_path / "m", cfg, llm=StreamingLLM("On 20 May 2024."), embedder=HashEmbedder()) as mem:
        mem.add_text(CHAT, "chat", source="chat.txt")
        mem.index()
        answer = mem.ask(MARATHON_Q)
        final = list(mem.ask_stream("When did Leo run the city half marathon?"))[-1]
    assert isinstance(final, Answer)
    assert answer.text == final.text == "In the week of 6 May 2024."
    assert answer.reading["dates_completed"] == final.reading["dates_completed"] == ["the week of 6 May 2024"]
    said = [str(line) for line in question_form_lines(answer)]  # gemrag ask, under the answer
    assert said == ["· dates completed from the dated context (no model call): the week of 6 May 2024"]
    assert question_form_lines(Answer("Leo ran it.", None, [], 0.0, 0.0)) == []


def test_a_turn_telling_of_two_things_gives_the_time_only_for_the_one_it_dates() -> None:
    studio = _hit(
        "(date: 3 April 2023) [2:00 pm on 3 April, 2023] Jon: I'm expanding my dance studio's social media presence "
        "and offering workshops. I'm also hosting a dance competition next month (= May 2023).",
        "2023-04-03",
    )
    asked_media = "When did Jon start expanding his studio's social media presence?"
    assert said_to_happened("3 April 2023", asked_media, [studio]) == ("3 April 2023", [])
    asked_competition = "When did Jon host a dance competition?"
    assert said_to_happened("3 April 2023", asked_competition, [studio]) == ("May 2023", ["May 2023"])
