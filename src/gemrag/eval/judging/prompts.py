"""The judge's prompt and output schema of the HLGraphRAG acceptance test (Zeng, "HLGraphRAG", section 4 "Testing").

* **Judge** (section 4, Figure 4.1, "Choke, Inaccurate, or Correct Analysis"): the paper's prompt used as a
  template: its role sentence, its worked example (the paper spells the example's name both "Serena" and "Selena";
  gemrag uses "Selena" throughout) and its question with ``[content]``, ``[entity]``, ``[dialogue 1]``,
  ``[entity 2]``, ``[dialogue 2]`` and ``[correct]`` filled in; the verdict is asked for as JSON
  (:class:`Verdict`, :func:`verdict_schema`).

The in-character reply's prompt is :mod:`gemrag.eval.acceptance.prompts`. Changing a text here changes the LLM cache
keys (and the judge's agreement, ``benchmarks/judge_agreement.py``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, field_validator

from gemrag.models.base import Message

VERDICTS = ("choke", "inaccurate", "correct")
"""The judge's classes, most severe first (section 4, "Definitions")."""

_SYNONYMS = {"inaccuracy": "inaccurate", "chokes": "choke", "choked": "choke"}

JUDGE_SYSTEM = (
    "You are a psychology major specialized in analyzing memory impairments. Your job is assessing memory "
    "retention by categorizing responses as choke (significant memory failure), Inaccurate (minor deviations that "
    "do not imply severe memory impairment), or Correct (accurate recall)."
)
JUDGE_EXAMPLE = (
    'For example, given the context that "John knows that [free-spirited traveler named Selena] had differing life '
    'goals. John knows that [differing life goals] caused heartbreaking separation." The stranger asks "Alright! '
    'Well then, let\'s get this show started. Have you ever been in love? Who?" The correct answer is "I loved '
    'someone named Selena".\n\n'
    'A choke answer would be one such as "No, I have never been in love". An inaccurate answer would be "I have '
    'been in love". A correct answer would be "I liked a person named Selena" due to how it doesn\'t deviate '
    "anything."
)
JUDGE_QUESTION = (
    'Now, given the context that "{content}", when {entity} says "{dialogue1}" and {entity2} responds with '
    '"{dialogue2}" when the correct answer is "{correct}", is this a choke, inaccurate, or correct?'
)

OTHER = "the stranger"
SEER = "the person who read about the movie"
#: Longest document excerpt given to the judge (characters); a CMU DoG section is about 1,000-2,500.
MAX_CONTENT_CHARS = 2500


class Verdict(BaseModel):
    """The judge's answer: ``verdict`` is one of :data:`VERDICTS` (case and the forms "Inaccuracy" / "Choked" are
    normalized; anything else fails validation, so the call is retried)."""

    verdict: Literal["choke", "inaccurate", "correct"]

    @field_validator("verdict", mode="before")
    @classmethod
    def _normalize(cls, value: Any) -> Any:
        if isinstance(value, str):
            word = value.strip().strip(".!\"'").lower()
            return _SYNONYMS.get(word, word)
        return value


def verdict_schema() -> dict[str, Any]:
    """JSON schema of :class:`Verdict` (an enum, so a grammar-constrained model can only answer a class)."""
    return {
        "type": "object",
        "properties": {"verdict": {"type": "string", "enum": list(VERDICTS)}},
        "required": ["verdict"],
    }


def judge_prompt(content: str, dialogue1: str, candidate: str, correct: str) -> list[Message]:
    """The judge's messages (Figure 4.1 filled in).

    Args:
        content: what the replying speaker knew (the document section they were reading), cut to
            :data:`MAX_CONTENT_CHARS` characters.
        dialogue1: the other speaker's last message ("" at the start of a conversation).
        candidate: the generated reply being judged.
        correct: the real reply from the dataset.
    """
    question = JUDGE_QUESTION.format(
        content=" ".join(content.split())[:MAX_CONTENT_CHARS],
        entity=OTHER,
        dialogue1=" ".join(dialogue1.split()) or "(nothing yet)",
        entity2=SEER,
        dialogue2=" ".join(candidate.split()),
        correct=" ".join(correct.split()),
    )
    return [
        {"role": "system", "content": JUDGE_SYSTEM},
        {
            "role": "user",
            "content": f'{JUDGE_EXAMPLE}\n\n{question}\nReply with JSON: {{"verdict": "choke" | "inaccurate" | '
            '"correct"}',
        },
    ]
