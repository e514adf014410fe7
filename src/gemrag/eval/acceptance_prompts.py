"""Prompts and the judge's output schema of the HLGraphRAG acceptance test (Zeng, "HLGraphRAG", section 4 "Testing").

* **In-character reply** (section 4, "Autonomous Testing Driver", steps 3-4): before each turn of the speaker who
  read the movie article, the memory is searched with the other speaker's last message and the model answers as
  that speaker, "You are Bob, and you know [retrieved knowledge]", with the paper's instruction "Do not use any
  information not included in the context". As the paper keeps a chat session, the recent real turns follow as chat
  messages (:func:`reply_prompt`); :func:`clean_reply` drops speaker labels a small model still writes.
* **Judge** (section 4, Figure 4.1, "Choke, Inaccurate, or Correct Analysis"): the paper's prompt used as a
  template: its role sentence, its worked example (the paper spells the example's name both "Serena" and "Selena";
  gemrag uses "Selena" throughout) and its question with ``[content]``, ``[entity]``, ``[dialogue 1]``,
  ``[entity 2]``, ``[dialogue 2]`` and ``[correct]`` filled in; the verdict is asked for as JSON
  (:class:`Verdict`, :func:`verdict_schema`).

Changing a text here changes the LLM cache keys (and the judge's agreement, ``benchmarks/judge_agreement.py``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, field_validator

from gemrag.models.base import Message
from gemrag.prompting import format_context

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
#: The user turn that asks the speaker to go on when they sent the last message themselves.
GO_ON = "(The stranger is waiting for your next message.)"
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


def reply_prompt(movie: str, context: Sequence[str], transcript: Sequence[tuple[bool, str]]) -> list[Message]:
    """The in-character reply's messages: a chat session, as the paper keeps one (section 4, step 4).

    The system message is the persona with the retrieved context ("you know [retrieved knowledge]"); the transcript
    follows as chat turns, the stranger's as ``user`` messages and the speaker's own as ``assistant`` messages
    (consecutive messages of one speaker joined by a newline), so the model answers as the speaker. A one-line
    transcript of "You:" / "Stranger:" lines made the 0.5B model continue the transcript, often writing the
    stranger's next line. When the speaker spoke last (CMU DoG speakers sometimes send two messages in a row) a
    short user message asks them to go on.

    Args:
        movie: the movie's name.
        context: the retrieved passages, in retrieval order (numbered by :func:`format_context`).
        transcript: the conversation so far (real turns only: error correction), oldest first, as
            ``(said by the replying speaker, text)``.
    """
    system = (
        f"You are a person chatting online with a stranger about the movie {movie}. You read its Wikipedia article; "
        "what you remember of it is in the context below. Stay in character and write your next chat message: one "
        "or two short sentences, in the first person, that answer the stranger. Do not use any information not "
        f"included in the context.\n\nContext:\n{format_context(context)}"
    )
    messages: list[Message] = [{"role": "system", "content": system}]
    for own, text in transcript:
        role = "assistant" if own else "user"
        if messages[-1]["role"] == role:
            messages[-1] = {"role": role, "content": f"{messages[-1]['content']}\n{text}"}
        else:
            messages.append({"role": role, "content": text})
    if messages[-1]["role"] != "user":
        messages.append({"role": "user", "content": GO_ON})
    return messages


def clean_reply(text: str) -> str:
    """The speaker's own message in a completion, whitespace collapsed.

    A small model may still write speaker labels, as in "Stranger: ... You: ...": the text is split at ``You:``,
    ``Me:`` and ``Stranger:`` labels and the first non-empty part not labelled ``Stranger`` is kept (an unlabelled
    opening counts as the speaker's own); when every part is the stranger's, the first one is kept.
    """
    pieces = re.split(r"\b(You|Me|Stranger)\s*:", text)
    parts = [(None, pieces[0])] + [(pieces[i], pieces[i + 1]) for i in range(1, len(pieces) - 1, 2)]
    parts = [(label, " ".join(part.split())) for label, part in parts if part.strip()]
    own = [part for label, part in parts if label != "Stranger"]
    return own[0] if own else (parts[0][1] if parts else "")
