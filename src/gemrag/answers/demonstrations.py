"""Worked examples shown before the question (``[answer] demonstrations``): few-shot prompting, "K examples of
context and completion" given as conditioning before the example the model must complete (Brown et al., "Language
Models are Few-Shot Learners", NeurIPS 2020, section 2), here as earlier turns of the chat: each example is the
answer prompt itself, over a small context of its own, and the model's turn is the answer it should give.

The examples are this library's own (written for it; no evaluation set's text), each showing one thing a small
reader gets wrong in the plain prompt: a number kept with its unit and qualifier, a fact read from the passage that
holds it among passages that do not, the final answer of a chain of two passages rather than the bridge between them,
and the items of a list as the passage writes them. The same examples serve the short form (the answer phrase, in
the passage's words) and the sentence form (one sentence), each with ``[n]`` markers when the prompt cites.

:func:`gemrag.answers.prompts.answer_prompt` and :func:`gemrag.answers.prompts.short_answer_prompt` put them between
the system message and the question's own turn (:func:`demonstration_turns` renders them with the prompt's own
builder, so an example reads exactly as the real question will). They sit at the start of every prompt, so a
backend that keeps the evaluated prompt prefix (llama.cpp does) reads them once for a run of questions.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gemrag.models.base import Message


@dataclass(frozen=True)
class Demonstration:
    """One worked example: its context, question and the answer the model should give.

    Attributes:
        passages: the example's context passages, shown numbered ``[1]..[n]`` as a real context is.
        question: the example's question.
        phrase: the short-form answer: the words of the passage that answer, as the passage writes them.
        sentence: the sentence-form answer (no citation markers; :meth:`reply` adds them).
        cites: the numbers (1-based) of the passages the answer rests on, in the order they are used.
        names: the example's own names (people, places, titles, methods): an answer naming one that neither the
            context nor the question holds has copied the example (:func:`copied_example`).
    """

    passages: tuple[str, ...]
    question: str
    phrase: str
    sentence: str
    cites: tuple[int, ...]
    names: tuple[str, ...] = ()

    def reply(self, *, short: bool, cite: bool) -> str:
        """The model's turn: the phrase (``short``) or the sentence, followed by its ``[n]`` markers when ``cite``
        (the short form's markers after the phrase, as :data:`gemrag.answers.prompts.SHORT_CITE` asks; the
        sentence's before its final stop, where :data:`gemrag.prompting.CITE_INSTRUCTION` puts them)."""
        markers = "".join(f"[{n}]" for n in self.cites)
        if short:
            return f"{self.phrase} {markers}" if cite else self.phrase
        if not cite:
            return self.sentence
        body = self.sentence[:-1] if self.sentence.endswith(".") else self.sentence
        return f"{body} {markers}."


DEMONSTRATIONS: tuple[Demonstration, ...] = (
    Demonstration(
        passages=(
            "The Hallam reservoir was completed in 1954 to supply the towns of the valley.",
            "When full, the reservoir holds 12.4 million cubic metres of water, about a third of what the valley "
            "uses in a year.",
            "A footpath of 9 km runs around its shore.",
        ),
        question="How much water does the Hallam reservoir hold?",
        phrase="12.4 million cubic metres of water",
        sentence="When full, the Hallam reservoir holds 12.4 million cubic metres of water.",
        cites=(2,),
        names=("Hallam",),
    ),
    Demonstration(
        passages=(
            "(8 May 2022) Priya: I have started volunteering at the animal shelter on Saturdays. Walking the dogs "
            "is the best part!",
            "(8 May 2022) Sam: Nice! I have been busy with my pottery class.",
            "(21 June 2022) Priya: The shelter asked me to train the new volunteers next month.",
        ),
        question="Where does Priya volunteer?",
        phrase="at the animal shelter",
        sentence="Priya volunteers at the animal shelter, on Saturdays.",
        cites=(1,),
        names=("Priya", "Sam"),
    ),
    Demonstration(
        passages=(
            "The Glass Orchard is a novel by Helen Marsh, published in 1968.",
            "Helen Marsh was born in Leeds and taught music before she wrote fiction.",
        ),
        question="In which city was the author of The Glass Orchard born?",
        phrase="Leeds",
        sentence="The Glass Orchard's author, Helen Marsh, was born in Leeds.",
        cites=(1, 2),
        names=("The Glass Orchard", "Helen Marsh", "Leeds"),
    ),
    Demonstration(
        passages=(
            "Samples were taken at 40 sites along the river in spring.",
            "The soil was analysed by two methods, X-ray fluorescence and gas chromatography, in the same week.",
        ),
        question="Which methods were used to analyse the soil?",
        phrase="X-ray fluorescence and gas chromatography",
        sentence="The soil was analysed by X-ray fluorescence and gas chromatography.",
        cites=(2,),
        names=("X-ray fluorescence", "gas chromatography"),
    ),
)
"""The worked examples, in the order they are shown (about 500 prompt tokens for the four in the short form, 515
measured with the 1.5B's tokenizer, the prompt's own instructions repeated in each)."""


def demonstration_turns(user_text: Callable[[Demonstration], str], *, short: bool, cite: bool) -> list[Message]:
    """The worked examples as chat turns: for each of :data:`DEMONSTRATIONS`, a user turn (``user_text`` of it: the
    answer prompt's user message for the example's question and passages) and an assistant turn
    (:meth:`Demonstration.reply`). Two messages per example, in order; ``user_text`` must build the example's
    message without demonstrations of its own."""
    turns: list[Message] = []
    for demo in DEMONSTRATIONS:
        turns.append({"role": "user", "content": user_text(demo)})
        turns.append({"role": "assistant", "content": demo.reply(short=short, cite=cite)})
    return turns


def _words(text: str) -> str:
    """``text`` lowercased, its runs of spaces one space, for whole-word search."""
    return " ".join(text.lower().split())


def copied_example(answer: str, context: Sequence[str], question: str = "") -> str | None:
    """What ``answer`` copied from the worked examples, or None: the first example's name (:attr:`Demonstration.names`)
    or short-form phrase that the answer holds as whole words (case and spacing aside) while neither the ``context``
    passages nor the ``question`` do. A small reader sometimes answers with an example's name instead of reading
    its own context (the 1.5B answered a MuSiQue question "Helen Marsh"); such an answer is asked again without the
    examples (:func:`gemrag.answers.answering.answer_question`)."""
    said = _words(answer)
    if not said:
        return None
    held = _words(" ".join([*context, question]))
    for demo in DEMONSTRATIONS:
        for name in (*demo.names, demo.phrase):
            word = re.compile(rf"(?<!\w){re.escape(_words(name))}(?!\w)")
            if word.search(said) and not word.search(held):
                return name
    return None
