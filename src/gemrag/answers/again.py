"""Free-form answers asked a second time (:func:`gemrag.answers.answering.answer_question` and
:func:`gemrag.answers.streaming.answer_stream` call these after the first reply is read): an answer whose form does
not fit its question asked again with a sentence saying what it must be (:func:`repaired`, ``[answer] repair``;
Self-Refine, Madaan et al., NeurIPS 2023, section 2, one round, the feedback a rule's), and an answer that copied a
worked example asked again without the examples (:func:`without_examples`, ``[answer] demonstrations``; Brown et
al. 2020, section 2). Each is one more LLM call for such an answer only, cached like any other."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from gemrag.answers.answer import Quote
from gemrag.answers.prompts import (
    ANSWER_MAX_TOKENS,
    SHORT_MAX_TOKENS,
    FollowUps,
    answer_prompt,
    short_answer_prompt,
)
from gemrag.answers.repair import Repair, answer_fault, repair_instruction
from gemrag.answers.replies import read_reply
from gemrag.models.base import LLM
from gemrag.types import Hit

Read = tuple[str, list[int], int, list[Quote]]
"""A free-form reply as :func:`gemrag.answers.replies.read_reply` reads it: ``(text, cited, dropped, quotes)``."""


def without_examples(
    model: LLM,
    question: str,
    hits: Sequence[Hit],
    texts: Sequence[str],
    *,
    short: bool,
    cite: bool,
    abstain: bool,
    steps: FollowUps,
    instruction: str,
    temperature: float,
    seed: int | None,
    question_first: bool = False,
) -> Read:
    """A plain free-form answer asked again without the worked examples (``[answer] demonstrations``), for an answer
    that copied one (:func:`gemrag.answers.demonstrations.copied_example`): the same prompt (the short form's when
    ``short``, citing when ``cite``, the question first when ``question_first``) over the same ``texts``, with no
    example turns; one LLM call (two if the reply is only markers), cached like any other."""
    plain = partial(
        short_answer_prompt if short else answer_prompt, question, list(texts), abstain=abstain, follow_ups=steps,
        instruction=instruction, question_first=question_first,
    )  # fmt: skip
    limit = SHORT_MAX_TOKENS if short else ANSWER_MAX_TOKENS
    return read_reply(
        model, plain(cite=cite), plain(), hits, "plain", short=short, cite=cite, limit=limit, temperature=temperature,
        seed=seed,
    )  # fmt: skip


def repaired(
    model: LLM,
    question: str,
    hits: Sequence[Hit],
    texts: Sequence[str],
    first: Read,
    *,
    short: bool,
    cite: bool,
    abstain: bool,
    steps: FollowUps,
    instruction: str,
    temperature: float,
    seed: int | None,
    question_first: bool = False,
    demonstrations: bool = False,
) -> tuple[Read, dict[str, str] | None]:
    """A plain free-form answer whose form does not fit its question, asked once more (``[answer] repair``,
    :mod:`gemrag.answers.repair`; Self-Refine, Madaan et al., NeurIPS 2023, section 2, one round, the feedback a
    rule's).

    ``first`` is read for a fault (:func:`gemrag.answers.repair.answer_fault`: it restates the question, or says yes
    or no to a question offering alternatives). None: ``(first, None)``, no call. Otherwise the question is asked
    again from the same ``texts`` with the prompt ``first`` was asked with plus the fault's sentence
    (:func:`gemrag.answers.repair.repair_instruction`; the short form's prompt when ``short``, citing when ``cite``),
    one LLM call (two if the reply is only markers), cached like any other; the second reply is kept
    when it is non-empty and has no fault, else ``first``. ``question_first``, ``demonstrations``: as the first
    prompt showed the question (:func:`gemrag.answers.prompts.question_lead`) and the worked examples
    (:mod:`gemrag.answers.demonstrations`).

    Returns:
        The kept reply, and what ``Answer.reading["repair"]`` records (a :class:`gemrag.answers.repair.Repair` as a
        dict; None when ``first`` had no fault).
    """
    fault = answer_fault(question, first[0])
    if fault is None:
        return first, None
    again = f"{instruction} {repair_instruction(fault)}".strip()
    build = partial(
        short_answer_prompt if short else answer_prompt, question_first=question_first, demonstrations=demonstrations
    )
    messages = build(question, list(texts), abstain=abstain, cite=cite, follow_ups=steps, instruction=again)
    uncited = build(question, list(texts), abstain=abstain, follow_ups=steps, instruction=again)
    limit = SHORT_MAX_TOKENS if short else ANSWER_MAX_TOKENS
    second = read_reply(
        model, messages, uncited, hits, "plain", short=short, cite=cite, limit=limit, temperature=temperature,
        seed=seed,
    )  # fmt: skip
    kept = bool(second[0].strip()) and answer_fault(question, second[0]) is None
    note = Repair(fault=fault, first_answer=first[0], kept="second" if kept else "first")
    return (second if kept else first), note.model_dump()
