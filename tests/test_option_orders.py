"""Multiple choice under several cyclic option orders (``[answer] option_orders``): the rotations and the vote
(:mod:`gemrag.answers.choices`), the answer asked once per order and voted (:func:`answer_question`), the setting
read from the config and recorded by an evaluation run."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from fakes import HashEmbedder, ScriptedLLM
from gemrag.answers.answering import answer_question
from gemrag.answers.choices import LETTERS, choice_schema, order_count, original_choice, rotate, vote_orders
from gemrag.answers.prompts import answer_prompt
from gemrag.answers.reading import Reading
from gemrag.config import AnswerSettings, load_config
from gemrag.eval.protocol import answer_settings_fingerprint
from gemrag.memory.asking import reading_of
from gemrag.models.base import Completion, Message, Usage
from gemrag.models.meter import UsageMeter
from gemrag.store import Store
from gemrag.types import Hit

QUESTION = "Who bought the boat?"
CHOICES = ["Marta", "Ivo", "Kestrel", "the harbour master"]
HITS = [
    Hit(1, "chunk", 0.9, "Marta sold her boat to Ivo in 1998. The harbour was quiet that year."),
    Hit(2, "chunk", 0.5, "Ivo painted the boat red. He named it Kestrel."),
]


def shown_options(messages: Sequence[Message]) -> list[str]:
    """The option texts a choice prompt shows, in the order shown (its ``A. ...`` lines after ``Options:``)."""
    user = messages[1]["content"]
    block = user.split("Options:\n", 1)[1].split("\n\n", 1)[0]
    return [line.split(". ", 1)[1] for line in block.splitlines()]


class Chooser(ScriptedLLM):
    """Replies to a choice prompt with ``reply(options shown)``, to any other prompt (a reading's first call) with
    ``aid``; records every call's messages and options."""

    def __init__(self, reply: Callable[[list[str]], str], aid: str = "") -> None:
        super().__init__()
        self.reply, self.aid = reply, aid
        self.seen: list[tuple[Sequence[Message], dict[str, Any]]] = []

    def complete(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
        self.seen.append((messages, kwargs))
        text = self.reply(shown_options(messages)) if "Options:\n" in messages[1]["content"] else self.aid
        return Completion(text, None, Usage(prompt_tokens=10, completion_tokens=3, seconds=0.0, calls=1))

    def choice_calls(self) -> list[tuple[Sequence[Message], dict[str, Any]]]:
        return [(m, kw) for m, kw in self.seen if "Options:\n" in m[1]["content"]]


def _ask(
    tmp_path: Path, llm: Chooser, reading: Reading, choices: Sequence[str] = CHOICES, **options: Any
) -> tuple[Any, list[dict[str, Any]]]:
    store = Store(tmp_path / "m")
    try:
        answer = answer_question(
            lambda: llm, UsageMeter(), store, QUESTION, HITS, choices, reading=reading, embedder=HashEmbedder(),
            **options,
        )  # fmt: skip
        return answer, store.failures()
    finally:
        store.close()


def always(letter: str) -> Callable[[list[str]], str]:
    """Pure position bias: the same letter whatever the options are."""
    return lambda options: json.dumps({"answer": letter})


def the_option(text: str, passages: Callable[[list[str]], list[int]] = lambda o: []) -> Callable[[list[str]], str]:
    """A reader that picks the option ``text`` wherever it is shown (citing ``passages(options shown)``)."""
    return lambda options: json.dumps({"answer": LETTERS[options.index(text)], "passages": passages(options)})


# --- the arithmetic --------------------------------------------------------------------------------------------------


def test_rotations_and_their_letters_map_back() -> None:
    assert rotate(CHOICES, 0) == CHOICES
    assert rotate(CHOICES, 1) == ["Ivo", "Kestrel", "the harbour master", "Marta"]
    assert rotate(CHOICES, 5) == rotate(CHOICES, 1) and rotate([], 3) == []
    for shift in range(4):
        shown = rotate(CHOICES, shift)
        assert [CHOICES[original_choice(p, shift, 4)] for p in range(4)] == shown
    with pytest.raises(ValueError):
        original_choice(4, 0, 4)
    assert order_count(4, 4) == 4 and order_count(7, 3) == 3 and order_count(1, 5) == 1
    with pytest.raises(ValueError):
        order_count(0, 4)


def test_the_vote_keeps_the_majority_and_breaks_ties_by_the_earliest_order() -> None:
    assert vote_orders([2, 1, 1, 0]) == 1  # a majority beats order 0
    assert vote_orders([0, 1, 2, 3]) == 0  # all tied: order 0's
    assert vote_orders([3, 1, 1, 3]) == 3  # tied at two: order 0's
    assert vote_orders([None, 2, 1, 1, 2]) == 2  # order 0 gave nothing: the earliest tied order's
    assert vote_orders([0, 2, 2]) == 2
    assert vote_orders([None, None]) is None and vote_orders([]) is None


# --- the answer ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cite", [False, True])
def test_one_order_sends_todays_single_call(tmp_path: Path, cite: bool) -> None:
    llm = Chooser(the_option("Ivo", lambda o: [1]))
    answer, _ = _ask(tmp_path, llm, Reading(option_orders=1), cite=cite)
    ((messages, kwargs),) = llm.seen
    assert messages == answer_prompt(QUESTION, [h.text for h in HITS], CHOICES, cite=cite)
    assert kwargs["schema"] == choice_schema(4, 2 if cite else 0)
    assert answer.choice == 1 and answer.reading == {} and answer.cited == ([1] if cite else [])


def test_pure_position_bias_spreads_the_votes_and_the_tie_goes_to_order_0(tmp_path: Path) -> None:
    llm = Chooser(always("A"))
    answer, _ = _ask(tmp_path, llm, Reading(option_orders=4))
    assert [shown_options(m) for m, _ in llm.seen] == [rotate(CHOICES, i) for i in range(4)]
    assert llm.seen[0][0] == answer_prompt(QUESTION, [h.text for h in HITS], CHOICES)  # order 0 is today's prompt
    assert answer.reading["order_votes"] == [0, 1, 2, 3] and answer.reading["option_orders"] == 4
    assert answer.choice == 0 and answer.text == "Marta"


def test_a_reader_of_the_option_text_gets_every_vote(tmp_path: Path) -> None:
    llm = Chooser(the_option("Kestrel"))
    answer, _ = _ask(tmp_path, llm, Reading(option_orders=4))
    assert answer.reading["order_votes"] == [2, 2, 2, 2]
    assert answer.choice == 2 and answer.text == "Kestrel"
    assert all(kw["temperature"] == 0.0 for _, kw in llm.seen)  # greedy in every order


def test_a_majority_beats_order_0_and_its_first_order_cites(tmp_path: Path) -> None:
    # order 0 says "A" (Marta); orders 1..3 pick Ivo, citing passage 2 first under order 1, passage 1 after
    def reply(options: list[str]) -> str:
        if options == CHOICES:
            return json.dumps({"answer": "A", "passages": [1]})
        cites = [2] if options == rotate(CHOICES, 1) else [1]
        return json.dumps({"answer": LETTERS[options.index("Ivo")], "passages": cites})

    answer, _ = _ask(tmp_path, Chooser(reply), Reading(option_orders=4), cite=True)
    assert answer.reading["order_votes"] == [0, 1, 1, 1]
    assert answer.choice == 1 and answer.cited == [2]


def test_a_malformed_order_does_not_vote(tmp_path: Path) -> None:
    def reply(options: list[str]) -> str:
        if options == rotate(CHOICES, 2):
            return "no json here"
        return json.dumps({"answer": LETTERS[options.index("Ivo")] if options == CHOICES else "A"})

    answer, failures = _ask(tmp_path, Chooser(reply), Reading(option_orders=3))
    assert answer.reading["order_votes"] == [1, 1, None]  # order 1 shows Ivo first: "A" is Ivo
    assert answer.choice == 1
    assert [f["phase"] for f in failures] == ["query/answer"]

    answer, failures = _ask(tmp_path, Chooser(lambda o: "nothing"), Reading(option_orders=2))
    assert answer.choice is None and answer.text == "" and answer.reading["order_votes"] == [None, None]


def test_more_orders_than_options_asks_each_cyclic_order_once(tmp_path: Path) -> None:
    llm = Chooser(always("B"))
    answer, _ = _ask(tmp_path, llm, Reading(option_orders=5), choices=["Marta", "Ivo"])
    assert len(llm.seen) == 2 and answer.reading["order_votes"] == [1, 0] and answer.choice == 1


def test_a_quote_reading_reads_once_and_chooses_per_order(tmp_path: Path) -> None:
    llm = Chooser(the_option("Ivo"), aid='[1] "Marta sold her boat to Ivo in 1998."')
    answer, _ = _ask(tmp_path, llm, Reading("quote", option_orders=3))
    assert len(llm.seen) == 4 and len(llm.choice_calls()) == 3  # one reading call, three choice calls
    assert all("Sentences quoted from the context:" in m[1]["content"] for m, _ in llm.choice_calls())
    assert answer.choice == 1 and answer.reading["order_votes"] == [1, 1, 1] and answer.quotes[0].verified


# --- the setting -----------------------------------------------------------------------------------------------------


def test_the_setting_builds_the_reading() -> None:
    reading = reading_of(load_config(sets=["answer.option_orders=4"]).answer)
    assert reading.option_orders == 4 and not reading.plain
    assert reading_of(load_config().answer).option_orders == 1 and reading_of(load_config().answer).plain
    for bad in ("0", "11"):
        with pytest.raises(Exception, match="option_orders"):
            load_config(sets=[f"answer.option_orders={bad}"])


def test_an_evaluation_records_the_option_orders() -> None:
    assert answer_settings_fingerprint(AnswerSettings(option_orders=4)) == {"option_orders": 4}
    assert answer_settings_fingerprint(AnswerSettings(option_orders=1)) == {}
