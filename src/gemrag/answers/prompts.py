"""The answer prompts every retrieval strategy shares (GEM-RAG section III.B.2: "The LLM is then given this context,
followed by the question"; UnWeaver section 3 fixes one query prompt across all methods): the whole answer
(:func:`answer_prompt`: free form, or a letter among lettered options), the short phrase of span-answer benchmarks
(:func:`short_answer_prompt`), the final shortening of an answer written elsewhere (:func:`shorten_prompt`), the
retrieval's follow-ups shown before the context (:func:`follow_ups_text`), and the completion limits that, with the
messages, make an answer's LLM cache key (:data:`ANSWER_MAX_TOKENS`, :data:`SHORT_MAX_TOKENS`).

:mod:`gemrag.answers.answering` chooses among them; the quote and notes forms' prompts are
:mod:`gemrag.answers.reading`'s. With ``cite=False`` and no follow-ups every prompt is the one of earlier releases,
so their LLM cache keys hold."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial

from gemrag.answers.choices import LETTERS
from gemrag.answers.demonstrations import Demonstration, demonstration_turns
from gemrag.models.base import Message
from gemrag.prompting import CITE_INSTRUCTION, format_context

#: Last instruction of a free-form answer prompt; with ``abstain=True`` the model may decline instead of guessing.
GUESS = "If the context does not contain the answer, give your best guess."
ABSTAIN = "If the context does not contain the answer, say that it is not mentioned."


FollowUps = Sequence[Mapping[str, str | None]]
"""Self-ask's follow-up questions and intermediate answers: ``[{"question": str, "answer": str | None}]``, in the
order they were asked (``answer`` None where none was read)."""


def follow_ups_text(follow_ups: FollowUps) -> str:
    """The follow-ups as the answer prompt shows them, before the context: self-ask's ``Follow up:`` and
    ``Intermediate answer:`` lines (Press et al. 2023, section 3, Figure 3), the latter only where an answer was
    read; ``""`` for none."""
    lines = []
    for f in follow_ups:
        lines.append(f"Follow up: {f['question']}")
        if f.get("answer"):
            lines.append(f"Intermediate answer: {f['answer']}")
    body = "\n".join(lines)
    return f"Follow-up questions asked while searching:\n{body}\n\n" if lines else ""


ANSWER_SYSTEM = "Answer questions about a document using the context passages retrieved from it."
"""The system message of the answer prompts (:func:`answer_prompt`; the likelihood choice's prompt,
:mod:`gemrag.answers.likelihood`)."""


def question_lead(question: str, question_first: bool) -> str:
    """What an answer prompt shows before everything else under ``[answer] question_first``: the question, so that
    the model reads the passages knowing what it looks for (query-aware contextualization: the query placed before
    and after the documents, Liu et al., "Lost in the Middle", TACL 2024, section 4.2); ``""`` when off. The
    question is still asked after the context as well, where every prompt asks it."""
    return f"Question: {question}\n\n" if question_first else ""


def context_and_question(
    question: str,
    context: Sequence[str],
    *,
    follow_ups: FollowUps = (),
    aside: str = "",
    question_first: bool = False,
) -> str:
    """The start of an answer prompt's user message: the question when ``question_first`` (:func:`question_lead`),
    the follow-ups (:func:`follow_ups_text`), the numbered context passages (:func:`gemrag.prompting.format_context`),
    ``aside`` (a reading's quotes or notes) and the question, ending with a newline; what follows it (the options,
    the instructions) is each prompt's own."""
    lead = question_lead(question, question_first)
    return f"{lead}{follow_ups_text(follow_ups)}Context:\n{format_context(context)}\n\n{aside}Question: {question}\n"


def answer_prompt(
    question: str,
    context: Sequence[str],
    choices: Sequence[str] | None = None,
    *,
    abstain: bool = False,
    cite: bool = False,
    follow_ups: FollowUps = (),
    aside: str = "",
    instruction: str = "",
    question_first: bool = False,
    demonstrations: Sequence[Demonstration] = (),
) -> list[Message]:
    """Messages with the retrieved context followed by the question (and lettered options, if any).

    ``abstain`` (free-form only): tell the model to say the answer is not mentioned when the context lacks it,
    instead of guessing — for datasets with unanswerable questions (LoCoMo category 5, Maharana et al. 2024).
    ``cite``: ask for ``[n]`` markers naming the passages used (free form), or for their numbers in the JSON's
    ``passages`` (multiple choice). ``follow_ups``: the retrieval's sub-questions and answers, shown before the
    context (:func:`follow_ups_text`). ``aside``: the quotes or notes of a multiple-choice reading's first call
    (:func:`gemrag.answers.reading.reading_aid`), shown after the passages. ``instruction`` (free-form only): what the
    question's form asks (:attr:`gemrag.answers.question_forms.QuestionForm.instruction`: a list question's or a
    hypothetical question's sentence), asked before the last instructions. ``question_first``: the question also
    shown before the context (:func:`question_lead`). ``demonstrations`` (free-form only): worked examples
    (:data:`gemrag.answers.demonstrations.DEMONSTRATIONS` or a user's own) as earlier turns, each asked with this
    prompt (same ``abstain``, ``cite``, ``question_first``; no follow-ups or instruction) and answered in one
    sentence (Brown et al. 2020, section 2); ``()`` shows none.
    The default prompt is unchanged, so the LLM cache keys of other evaluations stay the same.
    """
    system = ANSWER_SYSTEM
    user = context_and_question(question, context, follow_ups=follow_ups, aside=aside, question_first=question_first)
    if choices:
        options = "\n".join(f"{LETTERS[i]}. {c}" for i, c in enumerate(choices))
        letters = ", ".join(LETTERS[: len(choices)])
        cited = ' and whose "passages" lists the numbers of the context passages it rests on' if cite else ""
        user += (
            f"Options:\n{options}\n\nWhich option is correct according to the context? Think about each "
            f'option, then reply with JSON whose "answer" is one letter from {letters}{cited}.'
        )
    else:
        asked = f"{instruction} " if instruction else ""
        user += f"\n{asked}Answer briefly. {CITE_INSTRUCTION + ' ' if cite else ''}{ABSTAIN if abstain else GUESS}"
    shown: list[Message] = []
    if demonstrations and not choices:
        example = partial(answer_prompt, abstain=abstain, cite=cite, question_first=question_first)
        shown = demonstration_turns(
            lambda d: example(d.question, d.passages)[-1]["content"], demonstrations, short=False, cite=cite
        )
    return [{"role": "system", "content": system}, *shown, {"role": "user", "content": user}]


SHORT_INSTRUCTION = (
    "Answer with a short phrase of a few words, not a sentence, using the exact words of the context whenever possible."
)
#: Completion limit of a free-form answer (tokens; part of its cache key, so streamed and whole answers share it).
ANSWER_MAX_TOKENS = 256
SHORT_CITE = "After the phrase, cite the passages it comes from by their numbers in brackets, e.g. [2]."
"""What the short answer prompt asks when citing (``cite=True``)."""
#: Completion limit of a short answer (tokens); a longer completion is cut to its answer by
#: :func:`gemrag.answers.replies.short_form`.
SHORT_MAX_TOKENS = 48


def short_answer_prompt(
    question: str,
    context: Sequence[str],
    *,
    abstain: bool = False,
    cite: bool = False,
    follow_ups: FollowUps = (),
    instruction: str = "",
    question_first: bool = False,
    demonstrations: Sequence[Demonstration] = (),
) -> list[Message]:
    """The answer prompt of span-answer benchmarks: the context, the question, and a request for a short phrase in
    the words of the context — the form their official scorers (SQuAD-style EM and token F1) expect. It follows
    LoCoMo's QA prompt (Maharana et al. 2024, ``task_eval``: "write an answer in the form of a short phrase ...
    Answer with exact words from the context whenever possible") and HippoRAG 2's QA reader, which ends with a
    concise ``Answer:``. A separate prompt: :func:`answer_prompt`'s messages, hence its cache keys, are unchanged.

    ``abstain``: say the answer is not mentioned when the context lacks it (LoCoMo category 5's scorer accepts
    "not mentioned"). ``cite``: ask for ``[n]`` markers after the phrase (:data:`SHORT_CITE`). ``follow_ups``,
    ``instruction``: as :func:`answer_prompt` (a list question's items are each a short phrase).
    ``question_first``: the question also shown before the context (:func:`question_lead`). ``demonstrations``:
    worked examples (:data:`gemrag.answers.demonstrations.DEMONSTRATIONS` or a user's own) as earlier turns, each
    asked with this prompt and answered with its phrase (Brown et al. 2020, section 2); ``()`` shows none.
    """
    system = "Answer questions about a document using the context passages retrieved from it."
    last = ABSTAIN if abstain else GUESS
    if cite:
        last = f"{SHORT_CITE} {last}"
    lead = question_lead(question, question_first)
    user = f"{lead}{follow_ups_text(follow_ups)}Context:\n{format_context(context)}\n\nQuestion: {question}\n\n"
    asked = f"{instruction} " if instruction else ""
    user += f"{asked}{SHORT_INSTRUCTION} {last}\nShort answer:"
    shown: list[Message] = []
    if demonstrations:
        example = partial(short_answer_prompt, abstain=abstain, cite=cite, question_first=question_first)
        shown = demonstration_turns(
            lambda d: example(d.question, d.passages)[-1]["content"], demonstrations, short=True, cite=cite
        )
    return [{"role": "system", "content": system}, *shown, {"role": "user", "content": user}]


def shorten_prompt(question: str, answer: str, *, abstain: bool = False) -> list[Message]:
    """The final extraction step of the short form, for an answer written elsewhere (REMem's agent writes long
    sentences in ``output_answer``): the question and that answer, and a request for the short phrase in its words."""
    system = "You shorten answers to questions."
    last = " If the answer says the information is not available, reply: not mentioned." if abstain else ""
    user = (
        f"Question: {question}\nLong answer: {answer}\n\nGive the answer as a short phrase of a few words, not a "
        f"sentence, using the long answer's exact words.{last}\nShort answer:"
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]
