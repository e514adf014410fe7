"""Answering a question from retrieved context: the answer prompt (GEM-RAG section III.B.2: "The LLM is then
given this context, followed by the question"), the multiple-choice schema, and :func:`answer_question`, which
:meth:`gemrag.memory.Memory.answer` calls."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel

from gemrag.errors import StructuredOutputError
from gemrag.models.base import LLM, Message, Usage
from gemrag.models.meter import UsageMeter
from gemrag.models.structured import complete_structured
from gemrag.prompting import format_context
from gemrag.reports import Answer
from gemrag.store import MemoryStore
from gemrag.types import Hit

LETTERS = "ABCDEFGHIJ"


class ChoiceAnswer(BaseModel):
    """Structured output of the multiple-choice answer prompt: one option letter."""

    answer: str


#: Last instruction of a free-form answer prompt; with ``abstain=True`` the model may decline instead of guessing.
GUESS = "If the context does not contain the answer, give your best guess."
ABSTAIN = "If the context does not contain the answer, say that it is not mentioned."


def answer_prompt(
    question: str, context: Sequence[str], choices: Sequence[str] | None = None, *, abstain: bool = False
) -> list[Message]:
    """Messages with the retrieved context followed by the question (and lettered options, if any).

    ``abstain`` (free-form only): tell the model to say the answer is not mentioned when the context lacks it,
    instead of guessing — for datasets with unanswerable questions (LoCoMo category 5, Maharana et al. 2024).
    The default prompt is unchanged, so the LLM cache keys of other evaluations stay the same.
    """
    system = "Answer questions about a document using the context passages retrieved from it."
    user = f"Context:\n{format_context(context)}\n\nQuestion: {question}\n"
    if choices:
        options = "\n".join(f"{LETTERS[i]}. {c}" for i, c in enumerate(choices))
        letters = ", ".join(LETTERS[: len(choices)])
        user += (
            f"Options:\n{options}\n\nWhich option is correct according to the context? Think about each "
            f'option, then reply with JSON whose "answer" is one letter from {letters}.'
        )
    else:
        user += f"\nAnswer briefly. {ABSTAIN if abstain else GUESS}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def choice_schema(n_choices: int) -> dict[str, Any]:
    """JSON schema restricting the answer to one of the first ``n_choices`` letters."""
    return {
        "type": "object",
        "properties": {"answer": {"type": "string", "enum": list(LETTERS[:n_choices])}},
        "required": ["answer"],
    }


def answer_question(
    llm: Callable[[], LLM],
    meter: UsageMeter,
    store: MemoryStore,
    question: str,
    hits: Sequence[Hit],
    choices: Sequence[str] | None = None,
    retrieval_seconds: float = 0.0,
    *,
    abstain: bool = False,
) -> Answer:
    """Answer ``question`` from a given context (the LLM gets the context, then the question).

    With ``choices`` the LLM picks exactly one option letter (structured output; a malformed answer is recorded as
    a ``query/answer`` failure in ``store`` and the answer is empty). ``abstain``: a free-form answer may say the
    answer is not mentioned (see :func:`answer_prompt`). A free-form question whose retrieval already produced an
    answer (a hit's ``meta["agent_answer"]``: REMem's tool-using agent, :mod:`gemrag.strategies.remem.agent`) is
    answered with it, without another LLM call (``llm`` is then never called, so no model is loaded).

    Args:
        llm: returns the LLM to answer with (called only when an LLM call is needed).
        meter: the usage meter; the answer's calls are counted in its ``query`` phase.
        retrieval_seconds: the retrieval's wall time (seconds), reported in the answer.

    Raises:
        ValueError: fewer than 2 or more than 10 choices.
    """
    if choices is not None and not 2 <= len(choices) <= len(LETTERS):
        raise ValueError(f"give between 2 and {len(LETTERS)} choices")
    before = meter.totals.get("query", Usage())
    t1 = time.perf_counter()
    agent = next((h.meta["agent_answer"] for h in hits if h.meta.get("agent_answer")), None)
    if agent is not None and not choices:
        return Answer(str(agent), None, list(hits), retrieval_seconds, 0.0, Usage())
    messages = answer_prompt(question, [h.text for h in hits], choices, abstain=abstain)
    model = llm()
    with meter.phase("query"):
        if choices:
            try:
                parsed = complete_structured(
                    model, messages, ChoiceAnswer, schema=choice_schema(len(choices)), max_tokens=16
                )
                letter = parsed.answer.strip().upper()[:1]
                choice = LETTERS.index(letter) if letter and letter in LETTERS[: len(choices)] else None
            except StructuredOutputError as exc:
                store.record_failure("query/answer", None, f"{question[:80]}: {exc}")
                choice = None
            text = choices[choice] if choice is not None else ""
        else:
            completion = model.complete(messages, max_tokens=256, temperature=0.0)
            text, choice = completion.text.strip(), None
    t2 = time.perf_counter()
    spent = meter.totals.get("query", Usage()) - before
    return Answer(text, choice, list(hits), retrieval_seconds, t2 - t1, spent)
