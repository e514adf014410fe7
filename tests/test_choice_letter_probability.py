"""Multiple choice by the option letters' probabilities (``[answer] choice_scoring = "letter_probability"``): the
letter distribution over both ways of writing the reply, the average over cyclic orders and PriDe's prior
(:mod:`gemrag.answers.letter_probability`), the answer chosen by them (:func:`answer_question`), and the setting on
every surface."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from fakes import ScriptedLLM
from gemrag.answers.answering import answer_question
from gemrag.answers.choices import LETTERS
from gemrag.answers.letter_probability import (
    REPLY_STARTS,
    average_over_orders,
    debiased,
    letter_distribution,
    letter_prior,
)
from gemrag.answers.reading import Reading
from gemrag.config import AnswerSettings
from gemrag.errors import GemragError
from gemrag.eval.protocol import answer_settings_fingerprint
from gemrag.memory.asking import reading_of
from gemrag.models.base import Completion, Message, Scores, Usage
from gemrag.models.meter import UsageMeter
from gemrag.store import Store
from gemrag.types import Hit

QUESTION = "Who bought the boat?"
CHOICES = ["Marta", "Ivo", "the harbour master"]
HITS = [Hit(1, "chunk", 0.9, "Marta sold her boat to Ivo in 1998."), Hit(2, "chunk", 0.5, "Ivo painted it red.")]


def _normalized(values: Sequence[float]) -> list[float]:
    total = math.log(sum(math.exp(v) for v in values))
    return [v - total for v in values]


def test_the_letter_distribution_sums_both_ways_of_writing_the_reply() -> None:
    # spaced replies: A 0.2, B 0.1; compact ones: A 0.1, B 0.2 (unnormalized probabilities)
    replies = [math.log(0.2), math.log(0.1), math.log(0.1), math.log(0.2)]
    dist = letter_distribution(replies, 2)
    assert [round(math.exp(d), 6) for d in dist] == [0.5, 0.5]
    dist = letter_distribution([math.log(0.3), math.log(0.1), math.log(0.3), math.log(0.1)], 2)
    assert [round(math.exp(d), 6) for d in dist] == [0.75, 0.25]
    with pytest.raises(ValueError, match="expected 4"):
        letter_distribution([0.0, 0.0, 0.0], 2)


def test_orders_are_mapped_back_to_their_options_and_averaged() -> None:
    # order 0 shows options 0, 1, 2 as A, B, C; order 1 shows options 1, 2, 0
    order0 = _normalized([math.log(0.6), math.log(0.3), math.log(0.1)])
    order1 = _normalized([math.log(0.5), math.log(0.2), math.log(0.3)])  # option 1 at A, 2 at B, 0 at C
    averaged = [math.exp(v) for v in average_over_orders([order0, order1])]
    assert [round(p, 6) for p in averaged] == [0.45, 0.4, 0.15]  # (0.6+0.3)/2, (0.3+0.5)/2, (0.1+0.2)/2
    assert average_over_orders([order0]) == pytest.approx(order0)
    with pytest.raises(ValueError):
        average_over_orders([])
    with pytest.raises(ValueError):
        average_over_orders([order0, order0[:2]])


def test_pride_recovers_the_prior_and_the_options_probabilities() -> None:
    # observed p_i(d) ∝ prior(d) * content(option shown at d in order i): Zheng et al.'s decomposition
    prior = [0.1, 0.2, 0.3, 0.4]
    contents = [[0.7, 0.1, 0.1, 0.1], [0.35, 0.2, 0.2, 0.25]]
    asked = []
    for content in contents:
        orders = []
        for i in range(4):
            shown = [content[(d + i) % 4] for d in range(4)]
            orders.append(_normalized([math.log(p * c) for p, c in zip(prior, shown, strict=True)]))
        asked.append(orders)
    estimated = letter_prior(asked)
    assert [math.exp(p) for p in estimated] == pytest.approx(prior)
    # order 0, debiased: the options' own probabilities
    assert [math.exp(p) for p in debiased(asked[0][0], estimated)] == pytest.approx(contents[0])
    second = asked[1][0]
    assert second.index(max(second)) == 3  # the lean to D wins as observed (0.4 * 0.25 against 0.1 * 0.35)
    fixed = debiased(second, estimated)
    assert fixed.index(max(fixed)) == 0  # and A, the most probable option, once the prior is divided out
    with pytest.raises(ValueError):
        letter_prior([])
    with pytest.raises(ValueError):
        letter_prior([asked[0][:3]])  # not every cyclic order
    with pytest.raises(ValueError):
        debiased(asked[0][0], estimated[:3])


class LetterScorer(ScriptedLLM):
    """Scores the choice reply's letter from the options the prompt shows: ``content[option]`` times ``bias[letter]``
    (a model that leans to a letter whatever it shows); records every scoring call. Its ``complete`` fails: a choice
    by the letters' probabilities must not decode one."""

    def __init__(self, content: dict[str, float], bias: Sequence[float]) -> None:
        super().__init__()
        self.content, self.bias = content, list(bias)
        self.scored: list[tuple[Sequence[Message], list[str]]] = []

    def complete(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
        raise AssertionError("a choice by the letters' probabilities decoded a letter")

    def score_continuations(self, messages: Sequence[Message], continuations: Sequence[str]) -> Scores:
        self.scored.append((messages, list(continuations)))
        shown = dict(re.findall(r"^([A-J])\. (.+)$", messages[-1]["content"], re.MULTILINE))
        out = []
        for c in continuations:
            start, letter = c[:-1], c[-1]
            half = 0.5 if start in REPLY_STARTS else 0.0
            p = self.bias[LETTERS.index(letter)] * self.content[shown[letter]] * half
            out.append([math.log(0.9), math.log(p)])  # the reply's start, then the letter
        return Scores(out, Usage(prompt_tokens=60, seconds=0.01))


CONTENT = {"Marta": 0.3, "Ivo": 0.5, "the harbour master": 0.2}
BIAS = [0.8, 0.1, 0.1]  # leans hard to A


def _answer(tmp_path: Path, llm: Any, reading: Reading, hits: Sequence[Hit] = HITS) -> Any:
    store = Store(tmp_path / "m")
    try:
        return answer_question(lambda: llm, UsageMeter(), store, QUESTION, hits, CHOICES, reading=reading, cite=True)
    finally:
        store.close()


def test_one_order_follows_the_letters_and_three_orders_average_the_lean_away(tmp_path: Path) -> None:
    llm = LetterScorer(CONTENT, BIAS)
    one = _answer(tmp_path, llm, Reading(choice_scoring="letter_probability"))
    assert one.choice == 0 and one.text == "Marta"  # A's lean beats Ivo's content in one order
    assert len(llm.scored) == 1
    messages, replies = llm.scored[0]
    assert replies == [s + x for s in REPLY_STARTS for x in "ABC"]
    assert "A. Marta" in messages[-1]["content"] and "C. the harbour master" in messages[-1]["content"]
    assert one.cited == []  # nothing decoded, nothing cited
    assert one.reading["choice_scoring"] == "letter_probability" and one.reading["option_orders"] == 1
    # A: 0.8 * 0.3, B: 0.1 * 0.5, C: 0.1 * 0.2, normalized (the reply's start, the same for every letter, cancels)
    assert [round(math.exp(v), 3) for v in one.reading["order_letter_logprobs"][0]] == [0.774, 0.161, 0.065]
    assert all(o["tokens"] is None for o in one.reading["option_scores"])

    llm = LetterScorer(CONTENT, BIAS)
    three = _answer(tmp_path, llm, Reading(choice_scoring="letter_probability", option_orders=3))
    assert three.choice == 1 and three.text == "Ivo"  # every option held A once: the lean cancels
    assert len(llm.scored) == 3
    assert "A. Ivo" in llm.scored[1][0][-1]["content"] and "A. the harbour master" in llm.scored[2][0][-1]["content"]
    scores = [o["score"] for o in three.reading["option_scores"]]
    assert scores.index(max(scores)) == 1
    assert three.reading["option_orders"] == 3 and len(three.reading["order_letter_logprobs"]) == 3
    # the original order's letter distribution is the option's logprob
    assert [o["logprob"] for o in three.reading["option_scores"]] == three.reading["order_letter_logprobs"][0]


def test_an_llm_that_cannot_score_gets_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(GemragError, match="letters' probabilities"):
        _answer(tmp_path, ScriptedLLM(), Reading(choice_scoring="letter_probability"))


def test_the_setting_is_read_and_shown(tmp_path: Path) -> None:
    from gemrag.answers.provenance import describe_answer
    from gemrag.cli.ask import question_form_lines
    from gemrag.server.serialize import answer_out

    settings = AnswerSettings(choice_scoring="letter_probability", option_orders=3)
    reading = reading_of(settings)
    assert reading.choice_scoring == "letter_probability" and reading.option_orders == 3 and not reading.plain
    assert answer_settings_fingerprint(settings) == {"choice_scoring": "letter_probability", "option_orders": 3}
    answer = _answer(tmp_path, LetterScorer(CONTENT, BIAS), reading, hits=[])
    described = describe_answer(None, answer, "dense")
    assert described.choice_scoring == "letter_probability" and described.choice == 1
    assert [o.tokens for o in described.option_scores] == [None, None, None]
    assert answer_out(answer, "dense").option_scores == described.option_scores
    (line,) = question_form_lines(answer)
    probabilities = [math.exp(o.score) for o in described.option_scores]
    expected = ", ".join(f"{x} {p:.2f}" for x, p in zip("ABC", probabilities, strict=True))
    assert line.plain == f"· chosen by the letters' probabilities, averaged over 3 orders of the options: {expected}"
    assert sum(probabilities) == pytest.approx(1.0, abs=1e-3)
