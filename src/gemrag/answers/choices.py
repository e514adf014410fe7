"""The multiple-choice answer's structured output: the option letters, the reply model and the JSON schema that
constrains decoding to one letter (and, citing, the passage numbers); and the arithmetic of asking with the options
in several cyclic orders (``[answer] option_orders``): the orders (:func:`order_count`, :func:`rotate`), a letter
mapped back to its option (:func:`original_choice`) and the vote (:func:`vote_orders`); and the names of the ways an
option is chosen (:data:`ChoiceScoring`). Used by :mod:`gemrag.answers.answering`, which re-exports them.

Option orders: a model choosing among lettered options prefers some letters or positions whatever the options say
(selection bias; Zheng et al., ICLR 2024, "Large Language Models Are Not Robust Multiple Choice Selectors", sections
2-3; Pezeshkpour & Hruschka 2023, "Large Language Models Sensitivity to the Order of Options in Multiple-Choice
Questions"). Asking under every cyclic permutation of the options and voting is the debiasing baseline of Zheng et
al. (section 3), costly (one call per order) and approximated by their PriDe; gemrag asks under the first k cyclic
orders."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, Literal, TypeVar

from pydantic import BaseModel

__all__ = [
    "LETTERS",
    "ChoiceAnswer",
    "ChoiceScoring",
    "choice_schema",
    "order_count",
    "original_choice",
    "rotate",
    "vote_orders",
]

T = TypeVar("T")

LETTERS = "ABCDEFGHIJ"

ChoiceScoring = Literal["letter", "letter_probability", "likelihood", "calibrated"]
"""How a multiple-choice answer is chosen (``[answer] choice_scoring``): ``"letter"`` (the model is shown the lettered
options and writes a letter), ``"letter_probability"`` (shown them, and every letter's probability read instead of one
decoded; :mod:`gemrag.answers.letter_probability`), or every option scored as the answer's text by ``"likelihood"`` or
``"calibrated"`` likelihood (:mod:`gemrag.answers.likelihood`)."""


class ChoiceAnswer(BaseModel):
    """Structured output of the multiple-choice answer prompt: one option letter, and (citing) the numbers of the
    context passages the choice rests on."""

    answer: str
    passages: list[int] = []


def choice_schema(n_choices: int, n_passages: int = 0) -> dict[str, Any]:
    """JSON schema restricting the answer to one of the first ``n_choices`` letters; with ``n_passages`` > 0 (a cited
    answer) also ``passages``, at most ``n_passages`` passage numbers (each one of ``1..n_passages``), after the
    letter (so a grammar decodes the letter first, from the same prompt prefix)."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"answer": {"type": "string", "enum": list(LETTERS[:n_choices])}},
        "required": ["answer"],
    }
    if n_passages > 0:
        numbers = {"type": "integer", "enum": list(range(1, n_passages + 1))}
        schema["properties"]["passages"] = {"type": "array", "items": numbers, "maxItems": n_passages}
        schema["required"] = ["answer", "passages"]
    return schema


def order_count(option_orders: int, n_choices: int) -> int:
    """How many cyclic orders are asked for ``n_choices`` options under ``option_orders``: ``option_orders``, at most
    ``n_choices`` (there are only ``n_choices`` distinct cyclic orders).

    Raises:
        ValueError: ``option_orders`` or ``n_choices`` below 1.
    """
    if option_orders < 1 or n_choices < 1:
        raise ValueError("option_orders and n_choices must be at least 1")
    return min(option_orders, n_choices)


def rotate(choices: Sequence[T], shift: int) -> list[T]:
    """The options as order ``shift`` shows them: rotated left by ``shift`` positions (cyclically), so position
    ``p`` (letter ``LETTERS[p]``) shows option ``(p + shift) % n``; order 0 is the original order. A list of the
    same length; ``[]`` for no options."""
    if not choices:
        return []
    s = shift % len(choices)
    return [*choices[s:], *choices[:s]]


def original_choice(shown: int, shift: int, n_choices: int) -> int:
    """The original index of the option shown at position ``shown`` (the letter's index) under order ``shift`` of
    ``n_choices`` options (:func:`rotate`).

    Raises:
        ValueError: ``shown`` is not a position among ``n_choices``.
    """
    if not 0 <= shown < n_choices:
        raise ValueError(f"position {shown} is not among {n_choices} options")
    return (shown + shift) % n_choices


def vote_orders(mapped: Sequence[int | None]) -> int | None:
    """The choice kept from the choices of several orders (each an original option index, None where the order gave
    no valid choice): the one chosen most often; a tie goes to the tied choice given first, i.e. under the original
    order (order 0) when it is tied, else under the earliest order. None when no order gave a choice."""
    counts = Counter(c for c in mapped if c is not None)
    if not counts:
        return None
    most = max(counts.values())
    return next(c for c in mapped if c is not None and counts[c] == most)
