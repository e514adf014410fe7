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

A user's own examples (``[answer] demonstrations_file``, a TOML or JSON file: :func:`load_demonstrations`) are shown
instead, in the same way: examples of the user's own domain and answer style.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from gemrag.config.values import describe_errors
from gemrag.errors import ConfigError
from gemrag.models.base import Message

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


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


def demonstration_turns(
    user_text: Callable[[Demonstration], str], examples: Sequence[Demonstration], *, short: bool, cite: bool
) -> list[Message]:
    """The worked examples as chat turns: for each of ``examples`` (:data:`DEMONSTRATIONS` or a user's own), a user
    turn (``user_text`` of it: the answer prompt's user message for the example's question and passages) and an
    assistant turn (:meth:`Demonstration.reply`). Two messages per example, in order; ``user_text`` must build the
    example's message without demonstrations of its own."""
    turns: list[Message] = []
    for demo in examples:
        turns.append({"role": "user", "content": user_text(demo)})
        turns.append({"role": "assistant", "content": demo.reply(short=short, cite=cite)})
    return turns


def _words(text: str) -> str:
    """``text`` lowercased, its runs of spaces one space, for whole-word search."""
    return " ".join(text.lower().split())


def copied_example(
    answer: str, context: Sequence[str], question: str = "", examples: Sequence[Demonstration] = DEMONSTRATIONS
) -> str | None:
    """What ``answer`` copied from the worked ``examples``, or None: the first example's name
    (:attr:`Demonstration.names`), or its short-form phrase when that has two words or more, that the answer holds as
    whole words (case and spacing aside) while neither the ``context`` passages nor the ``question`` do. A small
    reader sometimes answers with an example's name instead of reading its own context (the 1.5B answered a MuSiQue
    question "Helen Marsh"); such an answer is asked again without the examples
    (:func:`gemrag.answers.answering.answer_question`). A one-word phrase ("yes", "1954") is not searched for: it is
    an answer any question may have; a name the example wants guarded belongs in its ``names``."""
    said = _words(answer)
    if not said:
        return None
    held = _words(" ".join([*context, question]))
    for demo in examples:
        phrases: tuple[str, ...] = (demo.phrase,) if len(demo.phrase.split()) >= 2 else ()
        for name in (*demo.names, *phrases):
            word = re.compile(rf"(?<!\w){re.escape(_words(name))}(?!\w)")
            if word.search(said) and not word.search(held):
                return name
    return None


class _ExampleEntry(BaseModel):
    """One worked example as a demonstrations file writes it (:func:`load_demonstrations`): the fields of
    :class:`Demonstration`, checked."""

    model_config = ConfigDict(extra="forbid")

    passages: list[str] = Field(min_length=1)
    question: str
    phrase: str
    sentence: str
    cites: list[int] = Field(min_length=1)
    names: list[str] = []

    @field_validator("passages", "names")
    @classmethod
    def _no_empty_item(cls, items: list[str]) -> list[str]:
        if any(not item.strip() for item in items):
            raise ValueError("an empty string")
        return [item.strip() for item in items]

    @field_validator("question", "phrase", "sentence")
    @classmethod
    def _not_empty(cls, text: str) -> str:
        if not text.strip():
            raise ValueError("empty")
        return text.strip()

    @model_validator(mode="after")
    def _cites_its_passages(self) -> _ExampleEntry:
        wrong = [n for n in self.cites if not 1 <= n <= len(self.passages)]
        if wrong:
            raise ValueError(f"cites {wrong}: the example has passages 1 to {len(self.passages)}")
        if re.search(r"\[\d+\]", self.sentence):
            raise ValueError("the sentence carries [n] markers: give them in cites (they are added when citing)")
        return self

    def demonstration(self) -> Demonstration:
        """The example as a :class:`Demonstration`."""
        return Demonstration(
            tuple(self.passages), self.question, self.phrase, self.sentence, tuple(self.cites), tuple(self.names)
        )


def _counted_from_one(found: re.Match[str]) -> str:
    """``example.0.`` -> ``example 1, ``, ``example.0:`` -> ``example 1:`` (an error's place, as a reader counts)."""
    return f"example {int(found[1]) + 1}{', ' if found[2] == '.' else ':'}"


class _ExampleFile(BaseModel):
    """A demonstrations file: its examples, in the order they are shown."""

    model_config = ConfigDict(extra="forbid")

    example: list[_ExampleEntry] = Field(min_length=1)


def load_demonstrations(path: str | Path) -> tuple[Demonstration, ...]:
    """A user's own worked examples (``[answer] demonstrations_file``), in the file's order, shown instead of
    :data:`DEMONSTRATIONS` before a plain free-form question.

    The file is TOML (``[[example]]`` tables) or JSON (``{"example": [...]}`` or a bare list), by its suffix
    (``.json`` is JSON, anything else TOML). Each example has ``passages`` (its numbered context, at least one),
    ``question``, ``phrase`` (the short-form answer, best in the passages' own words), ``sentence`` (the one-sentence
    answer, no ``[n]`` markers), ``cites`` (the 1-based numbers of the passages the answer rests on) and, optionally,
    ``names`` (the example's own names, guarded by :func:`copied_example`). Read as UTF-8; nothing is cached (the file
    is read again by every :func:`gemrag.memory.asking.reading_of`: each ``ask``; an evaluation reads it once).

    Raises:
        ConfigError: the file is missing, a directory, not UTF-8 or not valid TOML/JSON; it has no example; an example
            lacks a field, has an unknown or empty one, cites a passage it does not have, or writes ``[n]`` markers in
            its sentence. The message names the file and the example (counted from 1).
    """
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ConfigError(f"demonstrations file {file}: no such file") from exc
    except IsADirectoryError as exc:
        raise ConfigError(f"demonstrations file {file}: a directory, not a file") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"demonstrations file {file}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except OSError as exc:
        raise ConfigError(f"demonstrations file {file}: {exc.strerror or exc}") from exc
    try:
        data: Any = json.loads(text) if file.suffix.lower() == ".json" else tomllib.loads(text)
    except ValueError as exc:  # json.JSONDecodeError and tomllib.TOMLDecodeError are ValueErrors
        kind = "JSON" if file.suffix.lower() == ".json" else "TOML"
        raise ConfigError(f"demonstrations file {file}: not valid {kind}: {exc}") from exc
    if isinstance(data, list):
        data = {"example": data}
    if not isinstance(data, dict):
        raise ConfigError(f'demonstrations file {file}: expected a table of examples ("example"), got {data!r:.40}')
    try:
        examples = _ExampleFile.model_validate(data).example
    except ValidationError as exc:  # "example.0.phrase: ..." -> "example 1, phrase: ...", counted as a reader does
        said = re.sub(r"\bexample\.(\d+)(\.|:)", _counted_from_one, describe_errors(exc))
        raise ConfigError(f"demonstrations file {file}: {said}") from exc
    return tuple(entry.demonstration() for entry in examples)
