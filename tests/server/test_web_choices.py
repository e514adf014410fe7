"""Multiple choice on the web page, in Debian's chromium (the ``browser`` fixture, test doubles): the options are
sent with the question, the answer shows the option chosen with its letter, and, when the server chooses by the
letters' probabilities, every option's probability; a single option is refused with the reason and nothing is sent.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from test_web_look import seeded_page
from test_web_page import ANSWER_ENDED, ANSWERED, TIMEOUT, served

from fakes import HashEmbedder, StreamingLLM
from gemrag.answers.choices import LETTERS
from gemrag.config import Config, load_config
from gemrag.models.base import Message, Scores, Usage

QUESTION = "What is the keeper's cat named?"
OPTIONS = ["Rex", "Pilot", "Whiskers"]


def _config(**answer: object) -> Config:
    return load_config(
        None, {"strategy": "dense", "memory": {"chunk_tokens": 30}, "gem": {"questions": 2}, "answer": answer}
    )


def _ask(page: Any, options: Sequence[str]) -> list[dict[str, Any]]:
    """Ask :data:`QUESTION` with ``options`` on the Ask tab; returns the JSON bodies posted to the ask endpoint."""
    posted: list[dict[str, Any]] = []
    page.on("request", lambda r: posted.append(json.loads(r.post_data)) if r.url.endswith("/ask") else None)
    page.get_by_role("tab", name="Ask").click()
    page.locator("#choices-box summary").click()
    page.fill("#choices", "\n".join(options))
    page.fill("#question", QUESTION)
    page.click("#ask-button")
    return posted


def test_the_option_chosen_is_shown_with_its_letter(browser: Any, tmp_path: Path, config: Config) -> None:
    # the test double picks the option sharing most words with the context: "Pilot"
    with seeded_page(browser, served(tmp_path / "root", _config(), embedder=HashEmbedder(), llm=StreamingLLM())) as (
        page,
        errors,
    ):
        posted = _ask(page, ["  Rex ", "", *OPTIONS[1:]])
        page.wait_for_function(ANSWERED, timeout=TIMEOUT)
        answer = page.inner_text("#answer-text")
        states = page.locator("#answer-state > p").evaluate_all("ps => ps.map((p) => p.dataset.state)")
        chosen = page.inner_text("#answer-state [data-state='choice']")
    assert errors == []
    assert posted and posted[0]["choices"] == OPTIONS  # trimmed, the empty line left out
    assert answer.startswith("(B) Pilot"), answer
    assert "not-found" not in states, states
    assert chosen.startswith("Option B of 3.") and "The model wrote its letter." in chosen, chosen


def test_a_single_option_is_refused_before_anything_is_sent(browser: Any, tmp_path: Path, config: Config) -> None:
    with seeded_page(browser, served(tmp_path / "root", _config(), embedder=HashEmbedder(), llm=StreamingLLM())) as (
        page,
        errors,
    ):
        posted = _ask(page, ["Pilot"])
        page.wait_for_selector("#message:not([hidden])", timeout=TIMEOUT)
        message = page.inner_text("#message")
    assert errors == []
    assert posted == []
    assert "Give between 2 and 10 options, one per line (1 option now)" in message, message


class LetterScoringLLM(StreamingLLM):
    """Scores the choice reply's letter by the option the prompt shows at it: ``content[option]`` times a lean to A
    (``bias``); its other calls are :class:`StreamingLLM`'s."""

    def __init__(self, content: dict[str, float], bias: Sequence[float]) -> None:
        super().__init__()
        self.content, self.bias = content, list(bias)

    def score_continuations(self, messages: Sequence[Message], continuations: Sequence[str]) -> Scores:
        shown = dict(re.findall(r"^([A-J])\. (.+)$", messages[-1]["content"], re.MULTILINE))
        out = [[math.log(self.bias[LETTERS.index(c[-1])] * self.content[shown[c[-1]]])] for c in continuations]
        return Scores(out, Usage(prompt_tokens=40, seconds=0.01))


def test_the_letters_probabilities_are_shown(browser: Any, tmp_path: Path, config: Config) -> None:
    llm = LetterScoringLLM({"Rex": 0.2, "Pilot": 0.6, "Whiskers": 0.2}, [0.6, 0.2, 0.2])
    cfg = _config(choice_scoring="letter_probability", option_orders=3)
    with seeded_page(browser, served(tmp_path / "root", cfg, embedder=HashEmbedder(), llm=llm)) as (page, errors):
        _ask(page, OPTIONS)
        page.wait_for_function(ANSWER_ENDED, timeout=TIMEOUT)
        message = page.inner_text("#message")
        answer = page.inner_text("#answer-text")
        chosen = page.inner_text("#answer-state [data-state='choice']")
    assert errors == []
    assert message == "", message
    assert answer.startswith("(B) Pilot"), answer  # A's lean cancels over the three orders
    match = re.search(r"Chosen by the letters' probabilities: A ([\d.]+), B ([\d.]+), C ([\d.]+)\.", chosen)
    assert chosen.startswith("Option B of 3.") and match, chosen
    probabilities = [float(p) for p in match.groups()]
    assert probabilities[1] == max(probabilities) and abs(sum(probabilities) - 1) <= 0.02, probabilities
