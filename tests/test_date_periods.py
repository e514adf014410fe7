"""An answer over a dated context is no more precise than the context: a day it gives only as a week's or weekend's
first day is put back as that period (gemrag.answers.dates.periods), after the years are completed
(gemrag.answers.dates.completion). Through ask, its stream and their JSON: tests/test_time_aware_reading.py."""

from __future__ import annotations

from datetime import date

import pytest

from gemrag.answers.dates.completion import complete_dates
from gemrag.answers.dates.periods import context_periods, restore_periods
from gemrag.types import Hit


def _hit(text: str, first: str | None = "2023-06-09") -> Hit:
    return Hit(1, "chunk", 1.0, text, meta={} if first is None else {"date": first})


SPEECH = _hit(
    "(date: 9 June 2023) [1:00 pm on 9 June, 2023] Caroline: I gave a talk at a school last week "
    "(= the week of 29 May 2023)."
)
CAMPING = _hit(
    "(date: 17 July 2023) [3:00 pm on 17 July, 2023] Mel: We went camping last weekend "
    "(= the weekend of 15 July 2023).",
    "2023-07-17",
)


def test_the_context_periods_are_its_weeks_and_weekends_by_first_day() -> None:
    assert context_periods([SPEECH, CAMPING]) == {
        date(2023, 5, 29): "the week of 29 May 2023",
        date(2023, 7, 15): "the weekend of 15 July 2023",
    }


@pytest.mark.parametrize(
    ("answer", "restored"),
    [
        ("29 May 2023", "The week of 29 May 2023"),
        ("May 29, 2023", "The week of 29 May 2023"),
        ("She gave it on 29 May 2023.", "She gave it in the week of 29 May 2023."),
        ("On 29 May 2023.", "In the week of 29 May 2023."),
        ("They camped on 15 July 2023", "They camped on the weekend of 15 July 2023"),
    ],
)
def test_a_day_the_context_gives_only_as_a_period_becomes_the_period(answer: str, restored: str) -> None:
    text, done = restore_periods(answer, [SPEECH, CAMPING])
    assert text == restored
    assert len(done) == 1 and done[0] in {"the week of 29 May 2023", "the weekend of 15 July 2023"}
    assert done[0].lower() in restored.lower()


@pytest.mark.parametrize(
    "answer",
    [
        "the week of 29 May 2023",
        "week of 29 May 2023",
        "The weekend of 15 July 2023",
        "9 June 2023",
        "30 May 2023",
        "May 2023",
        "",
        "Yes",
    ],
)
def test_periods_days_the_context_writes_and_other_dates_are_left_alone(answer: str) -> None:
    assert restore_periods(answer, [SPEECH, CAMPING]) == (answer, [])


def test_a_day_the_context_also_writes_as_a_day_is_not_a_period() -> None:
    that_day = _hit("(date: 29 May 2023) [9:00 am on 29 May, 2023] Mel: Morning!", "2023-05-29")
    assert context_periods([SPEECH, that_day]) == {}
    assert restore_periods("29 May 2023", [SPEECH, that_day]) == ("29 May 2023", [])
    weekend_too = _hit("(date: 30 May 2023) Mel: The weekend (= the weekend of 29 May 2023) was fun.", "2023-05-30")
    assert date(2023, 5, 29) not in context_periods([SPEECH, weekend_too])


def test_an_undated_context_changes_nothing() -> None:
    undated = _hit("Caroline: I gave a talk last week (= the week of 29 May 2023).", None)
    assert restore_periods("29 May 2023", [undated]) == ("29 May 2023", [])


def test_years_are_completed_before_periods_are_put_back() -> None:
    text, done = complete_dates("She spoke on 29 May and camped in July.", [SPEECH, CAMPING])
    assert text == "She spoke in the week of 29 May 2023 and camped in July 2023."
    assert done == ["29 May 2023", "July 2023", "the week of 29 May 2023"]
