"""LoCoMo's questions as its released evaluation asks them: category 5 with two options in an order fixed per
question id, an option letter read as its option's text, both outcomes scored by the official rule; category 2 with
the date hint; both recorded in ``run.json``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_eval_locomo import AnsweringLLM, locomo_file

from fakes import HashEmbedder
from gemrag.config import Config
from gemrag.eval.adversarial import (
    DATE_HINT,
    adversarial_question,
    asked_question,
    option_order,
    options_question,
    read_option,
)
from gemrag.eval.categories import score_free_form
from gemrag.eval.datasets import Question
from gemrag.eval.loaders.locomo import NOT_MENTIONED
from gemrag.eval.runner import run_eval
from gemrag.models.base import Completion, Message
from gemrag.strategies import register
from gemrag.strategies.base import StrategyContext
from gemrag.types import Hit

OPTIONS = ("Not mentioned in the conversation", "self-care matters")


def _q(category: str = "5", qid: str = "conv-26_q154", distractor: str | None = "self-care is important") -> Question:
    meta = {"adversarial_answer": distractor} if distractor is not None else {}
    answer = NOT_MENTIONED if category == "5" else "Paris"
    return Question(
        id=qid, doc_ids=["d"], question="What did she realize?", answer=answer, category=category, metadata=meta
    )


def test_option_order_is_fixed_per_question_id() -> None:
    # pinned: the first byte of sha256("conv-26_q154") is odd, of "conv-26_q156" even
    assert option_order("conv-26_q154", "x") == ("x", NOT_MENTIONED)
    assert option_order("conv-26_q156", "x") == (NOT_MENTIONED, "x")
    assert option_order("conv-26_q154", "x") == option_order("conv-26_q154", "x")
    # the same in a fresh interpreter with another hash seed (not Python's salted hash)
    code = "from gemrag.eval.adversarial import option_order as o; print(o('conv-26_q154', 'x')[0])"
    env = {"PYTHONHASHSEED": "12345", "PATH": ""}
    src = str(Path(__file__).resolve().parents[2] / "src")
    out = subprocess.run([sys.executable, "-c", code], env=env | {"PYTHONPATH": src}, capture_output=True, text=True)
    assert out.stdout.strip() == "x", out.stderr
    # both orders occur, about half each
    firsts = [option_order(f"conv-1_q{i}", "x")[0] == NOT_MENTIONED for i in range(200)]
    assert 70 < sum(firsts) < 130


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("b", OPTIONS[1]),
        ("B", OPTIONS[1]),
        ("(b)", OPTIONS[1]),
        ("b.", OPTIONS[1]),
        ("a", OPTIONS[0]),
        ("(a)", OPTIONS[0]),
        ("A)", OPTIONS[0]),
        ("option a", OPTIONS[0]),
        (" (b) ", OPTIONS[1]),
        ("self-care matters", "self-care matters"),  # text is kept as text
        ("(b) self-care matters", "(b) self-care matters"),  # a letter with text: scored as text
        ("about", "about"),
        ("c", "c"),
        ("", ""),
    ],
)
def test_read_option(reply: str, expected: str) -> None:
    assert read_option(reply, OPTIONS) == expected


def test_read_option_without_options_keeps_the_reply() -> None:
    assert read_option("b", None) == "b"


def test_adversarial_question_only_for_locomo_category_5_with_a_distractor() -> None:
    text, options = adversarial_question("locomo", _q(), "options")
    assert options == ("self-care is important", NOT_MENTIONED)
    expected = "What did she realize? Select the correct answer: (a) self-care is important (b) " + NOT_MENTIONED + "."
    assert text == expected == options_question("What did she realize?", options)
    assert adversarial_question("locomo", _q(), "open") == ("What did she realize?", None)
    assert adversarial_question("locomo", _q("4"), "options") == ("What did she realize?", None)
    assert adversarial_question("qasper", _q(), "options") == ("What did she realize?", None)
    assert adversarial_question("locomo", _q(distractor=None), "options") == ("What did she realize?", None)
    with pytest.raises(ValueError, match="options, open"):
        adversarial_question("locomo", _q(), "choice")


def test_asked_question_appends_the_date_hint_to_locomo_category_2_only() -> None:
    temporal = _q("2", qid="conv-26_q2")
    assert DATE_HINT == "Use DATE of CONVERSATION to answer with an approximate date."  # LoCoMo's words, verbatim
    assert asked_question("locomo", temporal, "options") == (f"What did she realize? {DATE_HINT}", None)
    assert asked_question("locomo", temporal, "options", date_hint=False) == ("What did she realize?", None)
    assert asked_question("musique", temporal, "options") == ("What did she realize?", None)
    assert asked_question("locomo", _q("4"), "options") == ("What did she realize?", None)
    # category 5 is unchanged by the hint: its options, as adversarial_question gives them
    assert asked_question("locomo", _q(), "options") == adversarial_question("locomo", _q(), "options")
    with pytest.raises(ValueError, match="options, open"):
        asked_question("locomo", temporal, "choice")


@pytest.mark.parametrize("qid", ["conv-26_q154", "conv-26_q156"])
def test_both_outcomes_are_scored_as_the_official_scorer_does(qid: str) -> None:
    q = _q(qid=qid)
    _, options = adversarial_question("locomo", q, "options")
    assert options is not None
    for letter, text in zip("ab", options, strict=True):
        expected = 1.0 if text == NOT_MENTIONED else 0.0  # choosing the distractor is wrong
        assert score_free_form("locomo", q, read_option(letter, options)) == (expected, expected)


# -- end to end on the tiny LoCoMo file ------------------------------------------------------------------

SEEN: list[str] = []


@register("locomo_seen")
class SeenQuestions:
    """Test-only strategy: the first chunk; records the questions retrieval is asked."""

    name = "locomo_seen"

    def build(self, ctx: StrategyContext) -> None:
        ctx.state["built"] = True

    def retrieve(self, ctx: StrategyContext, question: str, budget: int) -> list[Hit]:
        SEEN.append(question)
        first = min(ctx.store.nodes("chunk"), key=lambda n: n.ord)
        return [Hit(first.id, "chunk", 1.0, first.text, 0)]

    def report(self, ctx: StrategyContext) -> dict[str, Any]:
        return {}


class LetterLLM(AnsweringLLM):
    """Replies to an option question with a letter: "(a)" for q3 (its option a is "Not mentioned"), "b" for q4
    (its option b is the distractor "green")."""

    def complete(self, messages: list[Message], **kwargs: Any) -> Completion:  # type: ignore[override]
        prompt = messages[-1]["content"]
        if "Select the correct answer:" in prompt:
            reply = "(a)" if "What did Ann realize" in prompt else "b"
            return Completion(reply, None, super().complete(messages, **kwargs).usage)
        return super().complete(messages, **kwargs)


def _run(tmp_path: Path, config: Config, name: str, llm: AnsweringLLM, **kw: Any) -> Any:
    return run_eval(
        "locomo",
        locomo_file(tmp_path),
        ["locomo_seen"],
        config=config,
        budget=1,
        out_dir=tmp_path / name,
        llm=llm,
        embedder=HashEmbedder(),
        plots=False,
        **kw,
    )


@pytest.mark.parametrize("answer_form", ["auto", "default"])
def test_eval_asks_category_5_with_options_by_default(tmp_path: Path, config: Config, answer_form: str) -> None:
    SEEN.clear()
    llm = LetterLLM()
    res = _run(tmp_path, config, "opts", llm, answer_form=answer_form)
    recs = {r["question_id"]: r for r in res.records}
    q3, q4 = recs["conv-t_q3"], recs["conv-t_q4"]  # both ids give the order (Not mentioned, distractor)
    assert q3["options"] == [NOT_MENTIONED, "self-care matters"] and q4["options"] == [NOT_MENTIONED, "green"]
    assert (q3["reply"], q3["answer"], q3["f1"], q3["em"]) == ("(a)", NOT_MENTIONED, 1.0, 1.0)
    assert (q4["reply"], q4["answer"], q4["f1"], q4["em"]) == ("b", "green", 0.0, 0.0)
    assert "options" not in recs["conv-t_q1"] and recs["conv-t_q1"]["f1"] == 1.0  # other categories as before
    prompts = [p for p in llm.prompts if "Select the correct answer:" in p]
    assert len(prompts) == 2
    asked = "What did Ann realize after the race? Select the correct answer: (a) Not mentioned in the conversation"
    assert f"Question: {asked} (b) self-care matters.\n" in prompts[0]
    assert not any("Select" in s for s in SEEN)  # retrieval gets the question as written
    assert json.loads((tmp_path / "opts" / "run.json").read_text())["adversarial"] == "options"
    temporal = [p for p in llm.prompts if "When did Ann move?" in p]  # category 2: the date hint, as LoCoMo asks
    assert len(temporal) == 1 and f"Question: When did Ann move? {DATE_HINT}\n" in temporal[0]
    assert "When did Ann move?" in SEEN and not any(DATE_HINT in s for s in SEEN)  # retrieval: as written
    assert json.loads((tmp_path / "opts" / "run.json").read_text())["date_hint"] is True


def test_eval_without_the_date_hint_asks_category_2_as_written(tmp_path: Path, config: Config) -> None:
    llm = AnsweringLLM()
    res = _run(tmp_path, config, "plain", llm, date_hint=False)
    assert not any(DATE_HINT in p for p in llm.prompts)
    assert any("Question: When did Ann move?\n" in p for p in llm.prompts)
    assert {r["question_id"]: r for r in res.records}["conv-t_q2"]["f1"] > 0  # "May 2023" against "7 May 2023"
    assert "date_hint" not in json.loads((tmp_path / "plain" / "run.json").read_text())
    from gemrag.errors import ConfigError

    with pytest.raises(ConfigError, match="date_hint"):  # a directory asked otherwise is refused
        _run(tmp_path, config, "plain", llm)


def test_eval_open_mode_asks_the_question_as_written(tmp_path: Path, config: Config) -> None:
    llm = AnsweringLLM()
    res = _run(tmp_path, config, "open", llm, adversarial="open")
    recs = {r["question_id"]: r for r in res.records}
    assert not any("Select the correct answer" in p for p in llm.prompts)
    assert "options" not in recs["conv-t_q3"] and recs["conv-t_q3"]["f1"] == 1.0  # declined in words
    assert "adversarial" not in json.loads((tmp_path / "open" / "run.json").read_text())
    # an output directory of the other mode is refused (its category-5 records were asked otherwise)
    from gemrag.errors import ConfigError

    with pytest.raises(ConfigError, match="adversarial"):
        _run(tmp_path, config, "open", LetterLLM())
    with pytest.raises(ConfigError, match="adversarial must be"):
        _run(tmp_path, config, "x", llm, adversarial="choice")
