"""LoCoMo's questions asked as LoCoMo's released evaluation asks them: category 5 (adversarial) as a two-option
choice, category 2 (temporal) with its date hint.

Maharana et al., "Evaluating Very Long-Term Conversational Memory of LLM Agents" (ACL 2024), section 4 and the
released QA evaluation (https://github.com/snap-research/locomo, ``task_eval/evaluate_gpts.py`` and the other
``evaluate_*.py`` scripts): a category-5 question asks about something the conversation never says, with a
plausible wrong answer (the dataset's ``adversarial_answer``). The released code does not ask it open-ended: it
appends ``Select the correct answer: (a) ... (b) ...`` with the two options "Not mentioned in the conversation"
and the distractor, in an order drawn at random, and maps a reply that is only an option letter (``a``, ``(b)``)
back to that option's text; the text is then scored by the official rule (correct iff it contains "not mentioned"
or "no information available", :func:`gemrag.eval.locomo_scoring.declines`).

Here the order is fixed per question (a hash of its id, not a random draw), so reruns, resumed runs and every
strategy ask the same prompt. The mode ``"options"`` (the default of ``gemrag eval locomo``) does this; ``"open"``
asks the question as written (the behaviour before this module). Retrieval always gets the question as written;
only the answer step sees the options (an agent strategy that answers during retrieval sees them only in the short
form's final extraction step, :func:`gemrag.answers.prompts.shorten_prompt`).

The released code also appends ``Use DATE of CONVERSATION to answer with an approximate date.`` to every
category-2 (temporal) question before answering (``task_eval/gpt_utils.py``; its answers are dates relative to
the sessions' dates, which every chunk here carries as ``[<session date>]``, :mod:`gemrag.eval.loaders.locomo`).
:func:`asked_question` adds it when ``date_hint`` is on (the default of ``gemrag eval locomo``); retrieval again
gets the question as written.

Note the protocol's tell: only category-5 questions carry a "Not mentioned" option, so a model can learn that the
option list itself marks the question as unanswerable. Scores under ``"options"`` are comparable with LoCoMo's
published ones, not with ``"open"`` ones.
"""

from __future__ import annotations

import hashlib
import re

from gemrag.eval.categories import is_adversarial
from gemrag.eval.datasets import Question
from gemrag.eval.loaders.locomo import NOT_MENTIONED

__all__ = [
    "ADVERSARIAL_MODES",
    "DATE_HINT",
    "adversarial_question",
    "asked_question",
    "option_order",
    "options_question",
    "read_option",
]

ADVERSARIAL_MODES = ("options", "open")
"""Values of ``gemrag eval --adversarial``: LoCoMo's two-option choice (default), or the question as written."""

DATE_HINT = "Use DATE of CONVERSATION to answer with an approximate date."
"""What LoCoMo's released evaluation appends to a category-2 (temporal) question, verbatim."""

_LETTER = re.compile(r"^\(?\s*(?:option\s+)?\(?([ab])\)?\s*[.:)]?$", re.IGNORECASE)


def option_order(question_id: str, distractor: str) -> tuple[str, str]:
    """The two options ``(a, b)`` of an adversarial question, in an order fixed by the question's id.

    Args:
        question_id: the question's id (e.g. ``"conv-26_q154"``); its SHA-256 decides the order (the same on every
            machine and run, unlike Python's salted ``hash``).
        distractor: the dataset's ``adversarial_answer``.

    Returns:
        ``(NOT_MENTIONED, distractor)`` if the first byte of the id's SHA-256 is even, else
        ``(distractor, NOT_MENTIONED)``; about half the questions get each order.
    """
    first = hashlib.sha256(question_id.encode("utf-8")).digest()[0]
    return (NOT_MENTIONED, distractor) if first % 2 == 0 else (distractor, NOT_MENTIONED)


def options_question(question: str, options: tuple[str, str]) -> str:
    """The question with its options appended, as LoCoMo's released evaluation asks a category-5 question:
    ``"<question> Select the correct answer: (a) <a> (b) <b>."``."""
    return f"{question.rstrip()} Select the correct answer: (a) {options[0]} (b) {options[1]}."


def read_option(reply: str, options: tuple[str, str] | None) -> str:
    """The answer a reply stands for: an option letter alone (``a``, ``B``, ``(b)``, ``a.``, ``option b``) reads as
    that option's text; any other reply, or no ``options``, is returned as given (scored as text).

    Args:
        reply: the model's (short-form cut) reply.
        options: ``(a, b)`` from :func:`option_order`, or None for a question asked without options.

    Returns:
        The option's text, or ``reply`` unchanged.
    """
    if options is None:
        return reply
    match = _LETTER.match(reply.strip())
    if match is None:
        return reply
    return options[0] if match.group(1).lower() == "a" else options[1]


def adversarial_question(kind: str, question: Question, mode: str) -> tuple[str, tuple[str, str] | None]:
    """What the answer step asks for ``question``: ``(text, options)``.

    Args:
        kind: the dataset kind (only ``"locomo"`` has adversarial questions).
        question: the question; its ``metadata["adversarial_answer"]`` is the distractor.
        mode: ``"options"`` (LoCoMo's two-option choice) or ``"open"``.

    Returns:
        ``(options_question(...), (a, b))`` for a LoCoMo category-5 question with a distractor under ``"options"``;
        ``(question.question, None)`` otherwise.

    Raises:
        ValueError: ``mode`` is not one of :data:`ADVERSARIAL_MODES`.
    """
    if mode not in ADVERSARIAL_MODES:
        raise ValueError(f"adversarial mode must be one of {', '.join(ADVERSARIAL_MODES)}, not {mode!r}")
    distractor = str(question.metadata.get("adversarial_answer") or "").strip()
    if mode != "options" or not is_adversarial(kind, question) or not distractor:
        return question.question, None
    options = option_order(question.id, distractor)
    return options_question(question.question, options), options


def asked_question(
    kind: str, question: Question, mode: str, date_hint: bool = True
) -> tuple[str, tuple[str, str] | None]:
    """What the answer step asks for ``question`` under LoCoMo's released protocol: ``(text, options)``.

    Args:
        kind: the dataset kind (only ``"locomo"`` is changed).
        question: the question (``category`` ``"2"`` or ``"5"`` are the ones changed).
        mode: category 5, as in :func:`adversarial_question`.
        date_hint: append :data:`DATE_HINT` to a LoCoMo category-2 question (Maharana et al., ACL 2024, released
            ``task_eval/gpt_utils.py``).

    Returns:
        :func:`adversarial_question`'s ``(text, options)``, with ``" " + DATE_HINT`` appended to the text of a
        LoCoMo category-2 question when ``date_hint`` is on.

    Raises:
        ValueError: ``mode`` is not one of :data:`ADVERSARIAL_MODES`.
    """
    text, options = adversarial_question(kind, question, mode)
    if date_hint and kind == "locomo" and question.category == "2":
        text = f"{text.rstrip()} {DATE_HINT}"
    return text, options
