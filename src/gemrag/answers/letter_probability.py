"""Multiple choice by the option letters' probabilities (``[answer] choice_scoring = "letter_probability"``): the
model is shown the lettered options, as for ``"letter"``, but instead of decoding one letter the probability of every
letter as the start of its reply is read (one scoring call), and with ``option_orders = k`` the probabilities of
each option under the k cyclic orders are averaged before the most probable option is kept.

Zheng et al., ICLR 2024, "Large Language Models Are Not Robust Multiple Choice Selectors": a model choosing among
lettered options prefers some letters whatever the options say (selection bias, section 2), mostly a prior on the
letter tokens themselves. Their debiasing baseline (section 3) asks under every cyclic permutation of the options and
averages the model's *probability distributions* over the options; the vote of ``option_orders`` with ``"letter"``
approximates it with one decoded letter an order, and breaks ties by order. This module is the probability form:

* each order's letter distribution: ``p_i(d) = P(reply starts with letter d | prompt of order i)``, normalized over
  the n letters shown (:func:`letter_distribution`);
* each option's probability: the mean over the orders of ``p_i`` at the letter the option had in order i
  (:func:`average_over_orders`), and the option with the highest mean is chosen.

PriDe (same paper, section 3) estimates the letter prior ``P_prior(d)`` from a few questions asked under all cyclic
orders (the geometric mean of their letter distributions, normalized; :func:`letter_prior`) and divides it out of
the one-order distribution of the others (:func:`debiased`); both are given for analyses of recorded distributions
(``Answer.reading["order_letter_logprobs"]``).

The reply the letter starts is the structured answer's JSON (:func:`gemrag.answers.choices.choice_schema`), which a
model writes either compactly or with spaces; both beginnings are scored and their probabilities summed (the letter's
probability over the two ways of writing the same reply). Needs a model that scores continuations
(:class:`gemrag.models.base.ScoringLLM`: the embedded llama.cpp model); nothing is cited (no passages are decoded).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from scipy.special import logsumexp

from gemrag.answers.choices import LETTERS, original_choice
from gemrag.models.base import LLM, Message, continuation_scorer

__all__ = [
    "REPLY_STARTS",
    "LetterChoice",
    "average_over_orders",
    "choose_by_letter_probability",
    "debiased",
    "letter_distribution",
    "letter_prior",
]

REPLY_STARTS = ('{"answer": "', '{"answer":"')
"""The beginnings of the structured choice reply a letter follows, as models write them (spaced and compact)."""


def _logsumexp(values: Sequence[float]) -> float:
    return float(logsumexp(values))


def letter_distribution(replies: Sequence[float], n_choices: int) -> list[float]:
    """The log-probability of each of the first ``n_choices`` letters as the reply's letter, normalized over them.

    Args:
        replies: the log-probability of every scored reply beginning, ``len(REPLY_STARTS) * n_choices`` floats,
            reply start by reply start (the letters in order within each), natural log.
        n_choices: the options shown (2 to 10).

    Returns:
        ``n_choices`` log-probabilities (natural log) whose probabilities sum to 1.

    Raises:
        ValueError: ``replies`` is not ``len(REPLY_STARTS) * n_choices`` long.
    """
    if len(replies) != len(REPLY_STARTS) * n_choices:
        raise ValueError(f"expected {len(REPLY_STARTS) * n_choices} scored replies, got {len(replies)}")
    per_letter = [_logsumexp(replies[d::n_choices]) for d in range(n_choices)]
    total = _logsumexp(per_letter)
    return [lp - total for lp in per_letter]


def average_over_orders(orders: Sequence[Sequence[float]]) -> list[float]:
    """Each option's log-probability averaged over the orders asked (Zheng et al. 2024, section 3: the prediction
    distribution averaged over the cyclic permutations of the options).

    Args:
        orders: per order i (order i shows the options rotated by i, :func:`gemrag.answers.choices.rotate`), the
            normalized letter log-probabilities of :func:`letter_distribution` (n floats, by letter shown).

    Returns:
        n floats: ``log(mean_i p_i(letter of option o in order i))`` per original option o.

    Raises:
        ValueError: no orders, or orders of different lengths.
    """
    if not orders or len({len(o) for o in orders}) != 1:
        raise ValueError("give one letter distribution per order, all over the same options")
    n = len(orders[0])
    by_option: list[list[float]] = [[] for _ in range(n)]
    for i, letters in enumerate(orders):
        for shown, lp in enumerate(letters):
            by_option[original_choice(shown, i, n)].append(lp)
    return [_logsumexp(lps) - math.log(len(lps)) for lps in by_option]


def letter_prior(full_orders: Sequence[Sequence[Sequence[float]]]) -> list[float]:
    """PriDe's estimate of the model's prior over the letters (Zheng et al. 2024, section 3), from questions asked
    under all n cyclic orders: per question, the letter distributions' mean log-probability per letter, normalized
    (the options' own probabilities cancel, each option having held every letter once); then the questions' priors
    averaged.

    Args:
        full_orders: per question, n letter distributions (:func:`letter_distribution`), one per cyclic order.

    Returns:
        n log-probabilities (natural log) whose probabilities sum to 1.

    Raises:
        ValueError: no questions, or a question not asked under exactly n orders of n letters.
    """
    if not full_orders:
        raise ValueError("give at least one question asked under every cyclic order")
    n = len(full_orders[0][0]) if full_orders[0] else 0
    priors: list[list[float]] = []
    for question in full_orders:
        if len(question) != n or any(len(o) != n for o in question):
            raise ValueError(f"every question needs {n} orders of {n} letters")
        mean = [sum(o[d] for o in question) / n for d in range(n)]
        total = _logsumexp(mean)
        priors.append([math.exp(m - total) for m in mean])
    return [math.log(sum(p[d] for p in priors) / len(priors)) for d in range(n)]


def debiased(letters: Sequence[float], prior: Sequence[float]) -> list[float]:
    """PriDe's debiased distribution (Zheng et al. 2024, section 3): the observed letter log-probabilities minus
    the prior's, normalized; by letter shown.

    Raises:
        ValueError: ``letters`` and ``prior`` differ in length.
    """
    if len(letters) != len(prior):
        raise ValueError("the distribution and the prior must cover the same letters")
    raw = [lp - pp for lp, pp in zip(letters, prior, strict=True)]
    total = _logsumexp(raw)
    return [r - total for r in raw]


@dataclass(frozen=True)
class LetterChoice:
    """A choice by the letters' probabilities.

    Attributes:
        choice: the original index of the option chosen (the highest :attr:`options`; a tie to the earliest).
        options: per original option, ``log`` of its probability averaged over the orders (natural log).
        orders: per order asked, the normalized letter log-probabilities by letter shown
            (:func:`letter_distribution`); order i shows the options rotated by i.
    """

    choice: int
    options: list[float]
    orders: list[list[float]]


def choose_by_letter_probability(
    model: LLM, prompt_of_order: Callable[[int], list[Message]], n_choices: int, orders: int
) -> LetterChoice:
    """Choose an option by its letters' probabilities over ``orders`` cyclic orders: one scoring call an order
    (every letter after each of :data:`REPLY_STARTS`), the distributions averaged (:func:`average_over_orders`).

    Args:
        model: an LLM that scores continuations (:func:`gemrag.models.base.continuation_scorer`).
        prompt_of_order: the choice prompt showing the options in order i (the letter prompt of
            :func:`gemrag.answers.prompts.answer_prompt` over the rotated options).
        n_choices: the options (2 to 10).
        orders: the cyclic orders asked (1 to ``n_choices``).

    Returns:
        :class:`LetterChoice`.

    Raises:
        GemragError: ``model`` cannot score continuations, or a scoring call failed.
        ValueError: ``n_choices`` or ``orders`` out of range.
    """
    if not 2 <= n_choices <= len(LETTERS) or not 1 <= orders <= n_choices:
        raise ValueError(f"{n_choices} options under {orders} orders")
    scorer = continuation_scorer(model, "choosing by the letters' probabilities ([answer] choice_scoring) needs it")
    replies = [start + letter for start in REPLY_STARTS for letter in LETTERS[:n_choices]]
    distributions = []
    for i in range(orders):
        scored = scorer.score_continuations(prompt_of_order(i), replies)
        distributions.append(letter_distribution([sum(lp) for lp in scored.logprobs], n_choices))
    options = average_over_orders(distributions)
    return LetterChoice(options.index(max(options)), options, distributions)
