"""The multiple-choice answer's structured output: the option letters, the reply model and the JSON schema that
constrains decoding to one letter (and, citing, the passage numbers). Used by :mod:`gemrag.answers.answering`, which
re-exports them."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

__all__ = ["LETTERS", "ChoiceAnswer", "choice_schema"]

LETTERS = "ABCDEFGHIJ"


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
