"""Multiple choice answered by likelihood (``[answer] choice_scoring``): the scores and their normalizations
(:mod:`gemrag.answers.likelihood`), the answer chosen by them (:func:`answer_question`), the cached scoring calls
(:class:`gemrag.models.cache.CachedLLM`), the setting read from the config and recorded by an evaluation run."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from fakes import HashEmbedder, ScriptedLLM
from gemrag.answers.answering import answer_question
from gemrag.answers.likelihood import (
    ANSWER_LINE,
    OptionScore,
    best_option,
    likelihood_prompt,
    score_options,
    unconditional_prompt,
)
from gemrag.answers.reading import Reading
from gemrag.config import AnswerSettings, load_config
from gemrag.errors import GemragError
from gemrag.eval.protocol import answer_settings_fingerprint
from gemrag.memory.asking import reading_of
from gemrag.models.base import Completion, Message, Scores, Usage, continuation_scorer
from gemrag.models.cache import INPUT_KEY, CachedLLM
from gemrag.models.meter import UsageMeter
from gemrag.store import Store
from gemrag.types import Hit

QUESTION = "Who bought the boat?"
CHOICES = ["Marta", "Ivo", "the harbour master of the old town"]
HITS = [
    Hit(1, "chunk", 0.9, "Marta sold her boat to Ivo in 1998. The harbour was quiet that year."),
    Hit(2, "chunk", 0.5, "Ivo painted the boat red. He named it Kestrel."),
]


class Scorer(ScriptedLLM):
    """Scores continuations from tables: ``given[option]`` (token log-probabilities after a context) and
    ``alone[option]`` (after the answer line alone); records every scoring call. Its ``complete`` fails: a choice by
    likelihood must not ask for a letter."""

    def __init__(self, given: dict[str, list[float]], alone: dict[str, list[float]]) -> None:
        super().__init__()
        self.given, self.alone = given, alone
        self.scored: list[tuple[Sequence[Message], list[str]]] = []

    def complete(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
        raise AssertionError("a choice by likelihood asked for a letter")

    def score_continuations(self, messages: Sequence[Message], continuations: Sequence[str]) -> Scores:
        self.scored.append((messages, list(continuations)))
        table = self.alone if "Context:" not in messages[-1]["content"] else self.given
        return Scores([table[c] for c in continuations], Usage(prompt_tokens=50, seconds=0.01))


# "Marta": the best sum; "Ivo": the best mean per token; the long option: the best against its unconditional
GIVEN = {"Marta": [-1.0], "Ivo": [-0.5, -1.0], "the harbour master of the old town": [-0.625] * 5}
ALONE = {"Marta": [-1.5], "Ivo": [-1.0, -1.0], "the harbour master of the old town": [-2.0] * 5}


def test_the_normalizations_choose_as_their_papers_say() -> None:
    scores = [OptionScore(len(v), sum(v), sum(ALONE[k])) for k, v in GIVEN.items()]
    assert [round(s.value("likelihood"), 3) for s in scores] == [-1.0, -0.75, -0.625]
    assert [round(s.value("calibrated"), 3) for s in scores] == [0.5, 0.5, 6.875]
    assert best_option(scores, "likelihood") == 2
    assert best_option(scores, "calibrated") == 2
    two = scores[:2]
    assert best_option(two, "likelihood") == 1  # mean per token, not the sum (the sum would pick "Marta")
    assert best_option(two, "calibrated") == 0  # a tie goes to the earliest option
    with pytest.raises(ValueError):
        OptionScore(1, -1.0).value("calibrated")  # no unconditional score
    with pytest.raises(ValueError):
        best_option([], "likelihood")
    assert OptionScore(0, 0.0).value("likelihood") == float("-inf")


def test_options_are_scored_as_the_reply_and_never_shown() -> None:
    llm = Scorer(GIVEN, ALONE)
    scores = score_options(llm, QUESTION, [h.text for h in HITS], CHOICES, "calibrated")
    (given, options), (alone, again) = llm.scored
    assert options == again == CHOICES
    user = given[-1]["content"]
    assert "[1] Marta sold her boat" in user and user.endswith(f"Question: {QUESTION}\n{ANSWER_LINE}")
    assert "Options" not in user and "the harbour master" not in user
    assert alone == unconditional_prompt() and alone[-1]["content"] == ANSWER_LINE
    assert scores[1] == OptionScore(2, -1.5, -2.0)
    llm.scored.clear()
    assert score_options(llm, QUESTION, [h.text for h in HITS], CHOICES, "likelihood")[0].unconditional is None
    assert len(llm.scored) == 1  # no unconditional call
    with pytest.raises(ValueError):
        score_options(llm, QUESTION, [], CHOICES, "letter")


def test_an_llm_that_cannot_score_gets_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(GemragError, match="cannot score continuations"):
        continuation_scorer(ScriptedLLM())
    store = Store(tmp_path / "m")
    try:
        cached = CachedLLM(ScriptedLLM(), store, UsageMeter(store))
        assert not cached.can_score
        with pytest.raises(GemragError, match="cannot score"):
            continuation_scorer(cached)
        with pytest.raises(GemragError, match="choice_scoring"):
            answer_question(
                lambda: cached,
                UsageMeter(),
                store,
                QUESTION,
                HITS,
                CHOICES,
                reading=Reading(choice_scoring="likelihood"),
            )
    finally:
        store.close()


@pytest.mark.parametrize(("scoring", "expected"), [("likelihood", 2), ("calibrated", 2)])
def test_the_answer_is_the_best_scored_option(tmp_path: Path, scoring: str, expected: int) -> None:
    llm = Scorer(GIVEN, ALONE)
    store = Store(tmp_path / "m")
    try:
        answer = answer_question(
            lambda: llm, UsageMeter(), store, QUESTION, HITS, CHOICES, reading=Reading(choice_scoring=scoring),
            embedder=HashEmbedder(), cite=True,
        )  # fmt: skip
    finally:
        store.close()
    assert answer.choice == expected and answer.text == CHOICES[expected]
    assert answer.cited == []  # the options were scored, no passage named
    assert answer.reading["choice_scoring"] == scoring
    recorded = answer.reading["option_scores"]
    assert [r["tokens"] for r in recorded] == [1, 2, 5]
    assert recorded[1]["logprob"] == -1.5
    assert (recorded[1]["unconditional"] is None) == (scoring == "likelihood")
    assert len(llm.scored) == (2 if scoring == "calibrated" else 1)


def test_free_form_questions_ignore_the_setting(tmp_path: Path) -> None:
    llm = ScriptedLLM()
    store = Store(tmp_path / "m")
    try:
        answer = answer_question(
            lambda: llm, UsageMeter(), store, QUESTION, HITS, None, reading=Reading(choice_scoring="calibrated")
        )
    finally:
        store.close()
    assert answer.text == "A free-form answer." and "option_scores" not in answer.reading


class Backend(ScriptedLLM):
    """A scoring backend that counts its scoring calls."""

    def __init__(self) -> None:
        super().__init__()
        self.scorings = 0

    def score_continuations(self, messages: Sequence[Message], continuations: Sequence[str]) -> Scores:
        self.scorings += 1
        return Scores([[-0.25] * len(c.split()) for c in continuations], Usage(prompt_tokens=40, seconds=0.5))


def test_scores_are_cached_with_their_input_and_metered(tmp_path: Path) -> None:
    store = Store(tmp_path / "m")
    try:
        backend = Backend()
        meter = UsageMeter(store)
        llm = CachedLLM(backend, store, meter)
        messages = likelihood_prompt(QUESTION, [h.text for h in HITS])
        first = llm.score_continuations(messages, CHOICES)
        second = llm.score_continuations(messages, CHOICES)
        other = llm.score_continuations(messages, CHOICES[:2])  # other continuations: another key
        assert backend.scorings == 2 and not first.cached and second.cached and not other.cached
        assert second.logprobs == first.logprobs == [[-0.25], [-0.25], [-0.25] * 7]
        meter.flush()
        spent = store.usage_by_phase()["index"]
        assert spent["calls"] == 2 and spent["cached"] == 1 and spent["prompt_tokens"] == 80
        # the cached entry records the options as replies, so a purge of their text finds it
        recorded = store.recent_llm_responses(backend.model_id)
        entries = [e for e in recorded if e[INPUT_KEY][-1]["content"] == CHOICES[-1]]
        assert len(entries) == 1 and entries[0][INPUT_KEY][0] == messages[0]
    finally:
        store.close()


def test_the_setting_is_read_and_recorded(tmp_path: Path) -> None:
    (tmp_path / "gemrag.toml").write_text('[answer]\nchoice_scoring = "calibrated"\n', encoding="utf-8")
    settings = load_config(tmp_path / "gemrag.toml").answer
    assert reading_of(settings).choice_scoring == "calibrated" and not reading_of(settings).plain
    assert reading_of(AnswerSettings()).plain
    assert answer_settings_fingerprint(settings) == {"choice_scoring": "calibrated"}
    assert answer_settings_fingerprint(AnswerSettings(lists="auto", hypotheticals="auto")) == {
        "lists": "auto",
        "hypotheticals": "auto",
    }
    with pytest.raises(ValueError):
        AnswerSettings(choice_scoring="cloze")  # type: ignore[arg-type]


def test_every_surface_shows_the_option_scores(tmp_path: Path) -> None:
    from gemrag.answers.provenance import describe_answer
    from gemrag.cli.ask import question_form_lines
    from gemrag.server.serialize import answer_out

    store = Store(tmp_path / "m")
    try:
        answer = answer_question(
            lambda: Scorer(GIVEN, ALONE), UsageMeter(), store, QUESTION, [], CHOICES,
            reading=Reading(choice_scoring="calibrated"),
        )  # fmt: skip
        described = describe_answer(None, answer, "dense")
        plain = answer_question(lambda: ScriptedLLM(), UsageMeter(), store, QUESTION, [], None)
    finally:
        store.close()
    assert described.choice_scoring == "calibrated" and described.choice == 2
    assert [o.score for o in described.option_scores] == [0.5, 0.5, 6.875]
    assert [o.unconditional for o in described.option_scores] == [-1.5, -2.0, -10.0]
    served = answer_out(answer, "dense")
    assert served.choice_scoring == "calibrated" and served.option_scores == described.option_scores
    (line,) = question_form_lines(answer)
    assert line.plain == (
        "· chosen by likelihood, the options not shown (the log-probability minus that without the context): "
        "A 0.50, B 0.50, C 6.88"
    )
    assert question_form_lines(plain) == [] and describe_answer(None, plain, "dense").option_scores == []


class ScoringScripted(ScriptedLLM):
    """gemrag's scripted LLM that also scores continuations (every token -0.5)."""

    def score_continuations(self, messages: Sequence[Message], continuations: Sequence[str]) -> Scores:
        return Scores([[-0.5] * len(c.split()) for c in continuations], Usage(prompt_tokens=30, seconds=0.01))


def test_a_purge_erases_the_scores_read_from_a_deleted_document(config: Any, tmp_path: Path) -> None:
    from gemrag import Memory

    canary = "The Zephyr station's launch code is MAGENTA-4471. Captain Ilse Varga keeps it in a brass locket."
    other = "Marta sold her boat to Ivo in 1998. Ivo painted the boat red and named it Kestrel."
    cfg = config.model_copy(update={"strategy": "dense", "answer": AnswerSettings(choice_scoring="likelihood")})
    llm = ScoringScripted()
    with Memory.open(tmp_path / "m", cfg, llm=llm, embedder=HashEmbedder()) as mem:
        mem.add_text(canary, "canary")
        mem.add_text(other, "boat")
        mem.index()
        answer = mem.ask("Who keeps the launch code?", ["Ilse Varga", "Marta"], budget=2)
        assert answer.reading["choice_scoring"] == "likelihood"

        def scored() -> list[str]:
            rows = mem.store.recent_llm_responses(llm.model_id)
            return [json.dumps(r) for r in rows if isinstance(r.get("parsed"), dict) and "logprobs" in r["parsed"]]

        assert any("MAGENTA-4471" in r for r in scored())  # the canary's passage is in the scored prompt
        mem.delete("canary", purge=True)
        assert not any("MAGENTA-4471" in r for r in scored())
