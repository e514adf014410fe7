"""An answer over a dated context gets absolute dates: a date written without its year is given the year the context
shows for it (gemrag.answers.dates.years); nothing else changes. Through ask, its stream and their JSON:
tests/test_time_aware_reading.py."""

from __future__ import annotations

import pytest

from gemrag.answers.dates.years import complete_years, context_year
from gemrag.types import Hit


def _hit(text: str, first: str | None = None, last: str | None = None) -> Hit:
    meta: dict[str, object] = {} if first is None else {"date": first} | ({"date_last": last} if last else {})
    return Hit(1, "chunk", 1.0, text, meta=meta)


JULY = _hit("(date: 5 July 2023) [1:00 pm on 5 July, 2023] Mel: We went camping last weekend.", "2023-07-05")
JANUARY = _hit("(date: 20 January 2024) [2:00 pm on 20 January, 2024] Mel: Happy new year!", "2024-01-20")


@pytest.mark.parametrize(
    ("answer", "completed"),
    [
        ("5 July", "5 July 2023"),
        ("July 5th", "July 5th, 2023"),
        ("the 5th of July", "the 5th of July 2023"),
        ("They went on 5 July.", "They went on 5 July 2023."),
        ("in July", "in July 2023"),
        ("July", "July 2023"),
        ("20 January", "20 January 2024"),  # the passage that writes 20 January says 2024
    ],
)
def test_a_date_without_its_year_gets_the_year_the_context_writes(answer: str, completed: str) -> None:
    text, done = complete_years(answer, [JULY, JANUARY])
    assert text == completed
    assert len(done) == 1 and done[0] in completed and done[0][-4:] in {"2023", "2024"}


@pytest.mark.parametrize(
    "answer",
    ["5 July 2023", "July 5, 2023", "July 2023", "May I ask?", "last Sunday", "3 weeks", "on Friday", "", "2022"],
)
def test_dates_with_a_year_and_other_words_are_left_alone(answer: str) -> None:
    assert complete_years(answer, [JULY, JANUARY]) == (answer, [])


def test_an_undated_context_changes_nothing() -> None:
    undated = _hit("[1:00 pm on 5 July, 2023] Mel: We went camping.")
    assert complete_years("5 July", [undated]) == ("5 July", [])
    assert context_year(7, 5, [undated]) is None


def test_the_year_comes_from_written_dates_then_the_passage_dates_then_one_year() -> None:
    # 1. a written full date with that day and month wins, even against the passages' own dates
    spring = _hit("(date: 2 March 2022) I moved on 14 March, 2021.", "2022-03-02")
    assert context_year(3, 14, [spring, JULY]) == 2021
    # 2. no written date: the dated passage that falls in that month (a span of dates counts every month it covers)
    span = _hit("Notes of the trip.", "2022-11-20", "2023-01-10")
    assert context_year(12, 24, [span, JULY]) == 2022
    assert context_year(1, 2, [span, JULY]) == 2023
    # 3. no passage in that month: the one year of the whole context
    assert context_year(3, 3, [JULY]) == 2023
    # 4. passages of two years, none in that month: not settled
    assert context_year(3, 3, [JULY, JANUARY]) is None
    assert complete_years("3 March and 5 July", [JULY, JANUARY]) == ("3 March and 5 July 2023", ["5 July 2023"])


def test_written_dates_that_disagree_settle_nothing() -> None:
    other = _hit("(date: 5 July 2024) [9:00 am on 5 July, 2024] Mel: A year already.", "2024-07-05")
    assert context_year(7, 5, [JULY, other]) is None
    assert complete_years("5 July", [JULY, other]) == ("5 July", [])
