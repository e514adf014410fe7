"""Answers whose form does not fit their question, and the one sentence that asks for the answer again.

A small reader sometimes writes an answer that cannot be right whatever the context says, because its *form* does not
answer the question:

* it **restates the question**: asked "What is multiple evanescent white dot syndrome?", the 1.5B answered "Multiple
  evanescent white dot syndrome" (and likewise for "What is Acute hemorrhagic encephalomyelitis?"): the answer's
  words are the question's own, so it says nothing the question did not (:func:`restates_question`);
* it answers **yes or no to a question that offers alternatives**: "Does John live close to a beach or the
  mountains?" answered "Yes" (:func:`yes_no_to_alternatives`).

Both are read by rules on the question and the answer (English), no model call. Under ``[answer] repair = "auto"``
(:mod:`gemrag.config.answer`) such an answer is asked once more, from the same context, with one sentence added to
the prompt that says what the answer must be (:func:`repair_instruction`); the second answer is kept unless it has a
fault too (:func:`answer_fault`), in which case the first stays. This is Self-Refine's loop (Madaan et al., NeurIPS
2023, section 2: feedback on an output, then a refined output) cut to one round, with the feedback given by a rule
rather than by the model, which a 1.5B reader does not reliably give itself, and without the earlier output in the
prompt (small models copy it: :func:`repair_instruction`). A question and answer with no fault cost
nothing and keep their prompt, hence their cached answer.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel

from gemrag.answers.words import content_words

Fault = Literal["restated", "yes_no_to_alternatives"]
"""What is wrong with an answer's form (:func:`answer_fault`)."""

_YES_NO_START = re.compile(r"^\s*(?:likely\s+|probably\s+)?(?:yes|no)\b", re.I)
#: "or" offering alternatives: not "or not" / "or no" (a yes-or-no question written out).
_ALTERNATIVE = re.compile(r"\bor\b(?!\s+(?:not|no)\b)", re.I)

RESTATED_INSTRUCTION = (
    "Do not answer with the question's own words: say what the context says about them (for a question such as "
    '"What is X?", what X is or does).'
)
"""The sentence a restating answer is asked again with (:func:`restates_question`)."""
ALTERNATIVES_INSTRUCTION = (
    'The question offers alternatives (the words around "or"): answer with the one the context supports, not with '
    "yes or no."
)
"""The sentence an answer of yes or no to a question offering alternatives is asked again with
(:func:`yes_no_to_alternatives`)."""
_PARENTHESES = re.compile(r"\([^()]*\)")


def restates_question(question: str, answer: str) -> bool:
    """Whether ``answer`` only restates ``question``: its content words (:func:`gemrag.answers.words.content_words`),
    those in parentheses aside (an abbreviation: "... syndrome (MEWDS)"), are exactly the question's, and there is at
    least one. "What is multiple evanescent white dot syndrome?" answered "Multiple evanescent white dot syndrome" or
    "Multiple evanescent white dot syndrome (MEWDS)" restates it; answered "A rare chorioretinopathy" or "Yes" it does
    not, nor does "Paris" to "Which is larger, Paris or Lyon?" (the answer names one alternative, not the question's
    words), nor an answer that starts with yes or no ("Yes, hepcidin is toxic" to "Is hepcidin toxic?")."""
    if _YES_NO_START.match(answer):  # "Yes, hepcidin is toxic": an answer to a yes-or-no question, not a restatement
        return False
    words = set(content_words(_PARENTHESES.sub(" ", answer)))
    return bool(words) and words == set(content_words(question))


def offers_alternatives(question: str) -> bool:
    """Whether ``question``'s last clause offers alternatives joined by "or" ("... a beach or the mountains?",
    "Which is older, A or B?"); not "... or not?", and not an "or" before the last comma. English only."""
    last = question.rsplit(",", 1)[-1]
    return _ALTERNATIVE.search(last) is not None


def yes_no_to_alternatives(question: str, answer: str) -> bool:
    """Whether ``answer`` is yes or no ("Yes", "No.", "Likely yes") to a question that offers alternatives
    (:func:`offers_alternatives`) while naming none of them: "Does John live close to a beach or the mountains?"
    answered "Yes". An answer that goes on to name an alternative ("Yes, the beach") is not a fault: its content words
    other than yes/no/likely/probably appear in the question."""
    if not offers_alternatives(question) or _YES_NO_START.match(answer) is None:
        return False
    rest = set(content_words(answer)) - {"likely", "probably"}  # yes and no are stop words
    return not rest & set(content_words(question))


def answer_fault(question: str, answer: str) -> Fault | None:
    """What is wrong with ``answer``'s form as an answer to ``question`` (module docstring), or None: ``"restated"``
    (:func:`restates_question`), ``"yes_no_to_alternatives"`` (:func:`yes_no_to_alternatives`)."""
    if restates_question(question, answer):
        return "restated"
    if yes_no_to_alternatives(question, answer):
        return "yes_no_to_alternatives"
    return None


def repair_instruction(fault: Fault) -> str:
    """The sentence added to the answer prompt to ask an answer with ``fault`` again: :data:`RESTATED_INSTRUCTION`
    or :data:`ALTERNATIVES_INSTRUCTION`. It does not name the first answer, as Self-Refine shows the model its earlier
    output: shown "An earlier answer to this question was "hepcidin", which only repeats ...", the 0.5B wrote its
    first answer again on all six such answers of COVID-QA and LoCoMo it was tried on, and the 1.5B on one of three."""
    return RESTATED_INSTRUCTION if fault == "restated" else ALTERNATIVES_INSTRUCTION


class Repair(BaseModel):
    """An answer asked again because its form did not fit its question (``[answer] repair``), as
    ``Answer.reading["repair"]`` records it and the JSON surfaces give it (``gemrag ask --json``, the server's and
    MCP's answers).

    Attributes:
        fault: what was wrong with the first answer (:data:`Fault`).
        first_answer: the first answer's text.
        kept: ``"second"`` when the answer asked again was kept (it is the answer's text), ``"first"`` when it had
            a fault too, or was empty, and the first answer stayed.
    """

    fault: Fault
    first_answer: str
    kept: Literal["second", "first"]

    @classmethod
    def of(cls, reading: dict[str, Any]) -> Repair | None:
        """The repair an answer's ``reading`` records, or None (no fault, or ``repair`` off)."""
        note = reading.get("repair")
        return cls(**note) if note else None
