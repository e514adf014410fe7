"""Multiple choice answered by likelihood (``[answer] choice_scoring``): each option is scored as the text of the
answer, and the most likely one is chosen, instead of asking the model for a letter.

A model asked to pick a letter must bind each option to its symbol (Robinson & Wingate, "Leveraging Large Language
Models for Multiple Choice Question Answering", ICLR 2023, section 2: "multiple choice symbol binding"), which small
models do poorly; the older way, which needs no such binding, scores every option as a continuation of the prompt and
keeps the most probable (Brown et al. 2020, "Language Models are Few-Shot Learners", section 2.4, the "cloze" form of
Robinson & Wingate). Options differ in length, so the raw log-probability is normalized:

* ``"likelihood"``: the mean log-probability per token of the option given the context and the question (Brown et
  al. 2020, section 2.4: "we compare the per-token likelihood (to normalize for length)").
* ``"calibrated"``: the option's log-probability given the context and the question minus its log-probability given
  the answer line alone, ``log P(option | context, question) - log P(option | "Answer in one sentence.")``, which
  removes how likely the option's words are on their own (Brown et al. 2020, section 2.4, for ARC, OpenBookQA and
  RACE, reading comprehension like QuALITY: "normalizing by the unconditional probability of each completion";
  Holtzman et al. 2021, "Surface Form Competition", section 3, domain-conditional PMI).

The options are never shown to the model: each is read as the assistant's reply to the context and the question.
Scoring needs the log-probabilities of given text, which the embedded llama.cpp model gives
(:class:`gemrag.models.base.ScoringLLM`) and HTTP chat APIs do not. Two scoring calls a question for
``"calibrated"`` (one short), one for ``"likelihood"``; no token is generated, and the model cites no passage.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gemrag.answers.choices import ChoiceScoring
from gemrag.answers.prompts import ANSWER_SYSTEM, FollowUps, context_and_question
from gemrag.models.base import LLM, Message, continuation_scorer

__all__ = [
    "ANSWER_LINE",
    "ChoiceScoring",
    "OptionScore",
    "best_option",
    "likelihood_prompt",
    "score_options",
    "unconditional_prompt",
]

ANSWER_LINE = "Answer in one sentence."
"""The last line of the scoring prompt, and the whole user message of the unconditional one."""


def likelihood_prompt(
    question: str, context: Sequence[str], *, follow_ups: FollowUps = (), aside: str = ""
) -> list[Message]:
    """The messages every option is scored after: the numbered context passages
    (:func:`gemrag.prompting.format_context`), the question and :data:`ANSWER_LINE`, as the answer prompt shows them
    (:func:`gemrag.answers.prompts.answer_prompt`) but without the options. ``follow_ups``: the retrieval's follow-ups
    shown first; ``aside``: the quotes or notes of a reading's first call, after the passages."""
    user = context_and_question(question, context, follow_ups=follow_ups, aside=aside) + ANSWER_LINE
    return [{"role": "system", "content": ANSWER_SYSTEM}, {"role": "user", "content": user}]


def unconditional_prompt() -> list[Message]:
    """The messages an option's unconditional log-probability is scored after: :data:`ANSWER_LINE` alone (no
    context, no question; the domain premise of Holtzman et al. 2021, section 3)."""
    return [{"role": "system", "content": ANSWER_SYSTEM}, {"role": "user", "content": ANSWER_LINE}]


@dataclass(frozen=True)
class OptionScore:
    """One option's scores.

    Attributes:
        tokens: the option's length in the model's tokenizer (tokens).
        logprob: the sum of its tokens' log-probabilities given the context and the question (natural log, <= 0).
        unconditional: the same given :data:`ANSWER_LINE` alone, or None when not scored (``"likelihood"``).
    """

    tokens: int
    logprob: float
    unconditional: float | None = None

    def value(self, scoring: ChoiceScoring) -> float:
        """The option's score under ``scoring``: the mean log-probability per token (``"likelihood"``; -inf for an
        option of no tokens) or the log-probability minus the unconditional one (``"calibrated"``).

        Raises:
            ValueError: ``"letter"``, or ``"calibrated"`` without an unconditional score.
        """
        if scoring == "likelihood":
            return self.logprob / self.tokens if self.tokens else float("-inf")
        if scoring == "calibrated" and self.unconditional is not None:
            return self.logprob - self.unconditional
        raise ValueError(f"no {scoring!r} score for this option")


def score_options(
    model: LLM,
    question: str,
    context: Sequence[str],
    choices: Sequence[str],
    scoring: ChoiceScoring,
    *,
    follow_ups: FollowUps = (),
    aside: str = "",
) -> list[OptionScore]:
    """Every option scored as the answer to ``question`` over ``context`` (one scoring call; a second, short one for
    ``"calibrated"``).

    Args:
        model: an LLM that scores continuations (:func:`gemrag.models.base.continuation_scorer`).
        question: the question.
        context: the passages' texts, in the order shown.
        choices: the options (2 to 10).
        scoring: ``"likelihood"`` or ``"calibrated"``.
        follow_ups, aside: as :func:`likelihood_prompt`.

    Returns:
        One :class:`OptionScore` per option, in order.

    Raises:
        GemragError: ``model`` cannot score continuations, or the scoring call failed.
        ValueError: ``scoring`` is ``"letter"``.
    """
    if scoring == "letter":
        raise ValueError('"letter" is answered by a letter, not scored')
    scorer = continuation_scorer(model, "answering multiple choice by likelihood ([answer] choice_scoring) needs it")
    messages = likelihood_prompt(question, context, follow_ups=follow_ups, aside=aside)
    given = scorer.score_continuations(messages, choices)
    alone = scorer.score_continuations(unconditional_prompt(), choices) if scoring == "calibrated" else None
    return [
        OptionScore(len(lp), sum(lp), None if alone is None else sum(alone.logprobs[i]))
        for i, lp in enumerate(given.logprobs)
    ]


def best_option(scores: Sequence[OptionScore], scoring: ChoiceScoring) -> int:
    """The index of the option with the highest score under ``scoring`` (a tie goes to the earliest option).

    Raises:
        ValueError: no scores, or as :meth:`OptionScore.value`.
    """
    if not scores:
        raise ValueError("no options to choose from")
    values = [s.value(scoring) for s in scores]
    return values.index(max(values))
