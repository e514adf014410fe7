"""Free-form answers asked a second time (:func:`gemrag.answers.answering.answer_question` and
:func:`gemrag.answers.streaming.answer_stream` call these after the first reply is read): an answer whose form does
not fit its question asked again with a sentence saying what it must be (:func:`repaired`, ``[answer] repair``;
Self-Refine, Madaan et al., NeurIPS 2023, section 2, one round, the feedback a rule's), and an answer that copied a
worked example asked again without the examples (:func:`without_examples`, ``[answer] demonstrations``; Brown et
al. 2020, section 2). Each is one more LLM call for such an answer only, cached like any other."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import partial

from gemrag.answers.answer import Quote
from gemrag.answers.demonstrations import Demonstration
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


@dataclass(frozen=True)
class Asked:
    """How a plain free-form answer was asked, to ask it again the same way: its model, question, hits (their
    ``texts`` as the prompt showed them), form (``short``: the short form's prompt; ``cite``: asking for ``[n]``
    markers), decline line (``abstain``), follow-ups (``steps``), the question form's sentence (``instruction``),
    sampling (``temperature``, ``seed``), ``question_first`` and ``demonstrations`` (the worked examples shown; ``()``
    for none)."""

    model: LLM
    question: str
    hits: Sequence[Hit]
    texts: Sequence[str]
    short: bool
    cite: bool
    abstain: bool
    steps: FollowUps
    instruction: str
    temperature: float
    seed: int | None
    question_first: bool = False
    demonstrations: tuple[Demonstration, ...] = ()

    def again(self, instruction: str | None = None) -> Read:
        """One more answer from the same ``texts`` with the same prompt, its ``instruction`` replaced when one is
        given: one LLM call (two if the reply is only markers), cached like any other, read as the first was
        (:func:`gemrag.answers.replies.read_reply`)."""
        build = partial(
            short_answer_prompt if self.short else answer_prompt, self.question, list(self.texts),
            abstain=self.abstain, follow_ups=self.steps,
            instruction=self.instruction if instruction is None else instruction,
            question_first=self.question_first, demonstrations=self.demonstrations,
        )  # fmt: skip
        messages, uncited = build(cite=self.cite), build()
        limit = SHORT_MAX_TOKENS if self.short else ANSWER_MAX_TOKENS
        return read_reply(
            self.model, messages, uncited, self.hits, "plain", short=self.short, cite=self.cite, limit=limit,
            temperature=self.temperature, seed=self.seed,
        )  # fmt: skip


def without_examples(asked: Asked) -> Read:
    """The answer asked again without the worked examples (``[answer] demonstrations``), for an answer that copied
    one (:func:`gemrag.answers.demonstrations.copied_example`): the same prompt with no example turns, one more LLM
    call (Brown et al. 2020, section 2, the examples only conditioning)."""
    return replace(asked, demonstrations=()).again()


def repaired(asked: Asked, first: Read) -> tuple[Read, dict[str, str] | None]:
    """A plain free-form answer whose form does not fit its question, asked once more (``[answer] repair``,
    :mod:`gemrag.answers.repair`; Self-Refine, Madaan et al., NeurIPS 2023, section 2, one round, the feedback a
    rule's).

    ``first`` is read for a fault (:func:`gemrag.answers.repair.answer_fault`: it restates the question, or says yes
    or no to a question offering alternatives). None: ``(first, None)``, no call. Otherwise the question is asked
    again as ``asked`` says (the same texts and prompt: the short form's when short, citing when citing, the question
    first and the worked examples as the first prompt showed them) plus the fault's sentence
    (:func:`gemrag.answers.repair.repair_instruction`), one LLM call (two if the reply is only markers), cached like
    any other; the second reply is kept when it is non-empty and has no fault, else ``first``.

    Returns:
        The kept reply, and what ``Answer.reading["repair"]`` records (a :class:`gemrag.answers.repair.Repair` as a
        dict; None when ``first`` had no fault).
    """
    fault = answer_fault(asked.question, first[0])
    if fault is None:
        return first, None
    second = asked.again(f"{asked.instruction} {repair_instruction(fault)}".strip())
    kept = bool(second[0].strip()) and answer_fault(asked.question, second[0]) is None
    note = Repair(fault=fault, first_answer=first[0], kept="second" if kept else "first")
    return (second if kept else first), note.model_dump()
