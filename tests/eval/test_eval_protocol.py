"""The answer protocol resolved from ``run_eval``'s arguments: which kinds get the short form, LoCoMo's options and
date hint; what ``run.json`` records; what the answer step is asked."""

from __future__ import annotations

import pytest

from gemrag.config import AnswerSettings
from gemrag.errors import ConfigError
from gemrag.eval.adversarial import DATE_HINT
from gemrag.eval.datasets import Question
from gemrag.eval.protocol import AnswerProtocol, answer_settings_fingerprint


def _q(category: str) -> Question:
    meta = {"adversarial_answer": "in Paris"} if category == "5" else {}
    return Question(
        id="conv-26_q7", doc_ids=["d"], question="Where did she go?", answer="x", category=category, metadata=meta
    )


@pytest.mark.parametrize(
    ("kind", "form", "short"),
    [
        ("locomo", "auto", True),
        ("musique", "auto", True),
        ("covid_qa", "auto", True),
        ("quality", "auto", False),
        ("quality", "short", True),
        ("musique", "default", False),
    ],
)
def test_short_form_follows_answer_form_and_kind(kind: str, form: str, short: bool) -> None:
    assert AnswerProtocol.resolve(kind, True, form, "options", True).short is short


def test_locomo_options_and_date_hint_apply_to_locomo_only() -> None:
    locomo = AnswerProtocol.resolve("locomo", True, "auto", "options", True)
    assert (locomo.adversarial, locomo.date_hint) == ("options", True)
    other = AnswerProtocol.resolve("musique", True, "auto", "options", True)
    assert (other.adversarial, other.date_hint) == ("open", False)


def test_retrieval_only_asks_nothing_so_the_protocol_is_the_default() -> None:
    assert AnswerProtocol.resolve("locomo", False, "short", "options", True) == AnswerProtocol()
    assert AnswerProtocol().fingerprint() == {}


def test_fingerprint_records_each_non_default_setting() -> None:
    full = AnswerProtocol.resolve("locomo", True, "auto", "options", True)
    assert full.fingerprint() == {"answer_form": "short", "adversarial": "options", "date_hint": True}
    plain = AnswerProtocol.resolve("locomo", True, "default", "open", False)
    assert plain.fingerprint() == {}
    no_abstain = AnswerProtocol.resolve("locomo", True, "auto", "options", True, abstain=False)
    assert no_abstain.fingerprint() == {**full.fingerprint(), "abstain": False}


def test_abstain_applies_to_answered_locomo_only() -> None:
    assert AnswerProtocol.resolve("locomo", True, "auto", "options", True).abstain is True
    assert AnswerProtocol.resolve("locomo", True, "auto", "open", True, abstain=False).abstain is False
    # no kind but LoCoMo has unanswerable questions; retrieval only asks nothing: the option does not apply
    assert AnswerProtocol.resolve("musique", True, "auto", "open", False, abstain=False).abstain is None
    assert AnswerProtocol.resolve("locomo", False, "auto", "options", True, abstain=False).abstain is None


def test_asked_applies_the_hint_and_the_options() -> None:
    protocol = AnswerProtocol.resolve("locomo", True, "auto", "options", True)
    text, options = protocol.asked("locomo", _q("2"))
    assert text.endswith(DATE_HINT) and options is None
    text, options = protocol.asked("locomo", _q("5"))
    assert options is not None and "in Paris" in options and "Select the correct answer" in text
    no_hint = AnswerProtocol.resolve("locomo", True, "auto", "open", False)
    assert no_hint.asked("locomo", _q("2")) == ("Where did she go?", None)
    assert no_hint.asked("locomo", _q("5")) == ("Where did she go?", None)


@pytest.mark.parametrize(("form", "mode"), [("long", "options"), ("auto", "maybe")])
def test_unknown_values_are_config_errors(form: str, mode: str) -> None:
    with pytest.raises(ConfigError, match="must be"):
        AnswerProtocol.resolve("locomo", True, form, mode, True)


def test_the_answer_settings_fingerprint_holds_what_differs_from_the_defaults() -> None:
    assert answer_settings_fingerprint(AnswerSettings()) == {}
    assert answer_settings_fingerprint(AnswerSettings(verify="off", cite=True, shape_order="rank")) == {}  # unused
    assert answer_settings_fingerprint(AnswerSettings(reading="quote", dates="off")) == {
        "reading": "quote",
        "dates": "off",
    }
    assert answer_settings_fingerprint(AnswerSettings(dates="auto")) == {}  # the default
    shaped = AnswerSettings(shape=True, shape_order="rank", shape_keep_min=3, samples=5, sample_temperature=0.9)
    assert answer_settings_fingerprint(shaped) == {
        "shape": True,
        "shape_order": "rank",
        "shape_keep_min": 3,
        "samples": 5,
        "sample_temperature": 0.9,
    }
    assert answer_settings_fingerprint(AnswerSettings(dates="on", date_llm=True, abstain_below=0.2)) == {
        "dates": "on",
        "date_llm": True,
        "abstain_below": 0.2,
    }
