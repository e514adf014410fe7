"""What a free-form question's form adds to the plain answer prompt: the list and hypothetical readings together.

Two answer settings read a question's form, by rules and with no model call: ``[answer] lists`` (a list question is
asked for every item the context names, :mod:`gemrag.answers.lists`) and ``[answer] hypotheticals`` (a hypothetical
question is asked for what the context points to, "Likely yes" or "Likely no" and why to a yes-or-no one, and may
not be declined, :mod:`gemrag.answers.hypotheticals`). :func:`question_form` applies both and gives the one result
every answer path uses (:func:`gemrag.answers.answering.answer_question`,
:func:`gemrag.answers.streaming.answer_stream`): the sentences the prompt adds, whether its decline line gives way to
the guess line, and what ``Answer.reading`` records. A question neither rule reads gets the empty form, so its
prompt, hence its LLM cache key, is unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gemrag.answers.hypotheticals import hypothetical_cue, hypothetical_instruction
from gemrag.answers.lists import LIST_INSTRUCTION, list_cue


@dataclass(frozen=True)
class QuestionForm:
    """What a question's form asks of the answer prompt.

    Attributes:
        instruction: the sentences asked before the prompt's last instructions (``""`` for none): the list
            instruction, then the hypothetical one, when both rules read the question.
        guess: the question must not be declined: the prompt's "say that it is not mentioned" line gives way to
            "give your best guess" (a hypothetical question).
        cues: the words that made each reading apply, as ``Answer.reading`` records them: ``"list_cue"`` and/or
            ``"hypothetical_cue"``.
    """

    instruction: str = ""
    guess: bool = False
    cues: dict[str, str] = field(default_factory=dict)

    def abstains(self, abstain: bool) -> bool:
        """Whether the prompt keeps its decline line: ``abstain``, unless this form asks for a guess."""
        return abstain and not self.guess


def question_form(question: str, *, lists: bool = False, hypotheticals: bool = False) -> QuestionForm:
    """The form the enabled rules read in ``question`` (:func:`gemrag.answers.lists.list_cue` when ``lists``,
    :func:`gemrag.answers.hypotheticals.hypothetical_cue` when ``hypotheticals``); the empty form when neither
    applies. Rules only (English), no model call."""
    cues: dict[str, str] = {}
    sentences: list[str] = []
    listed = list_cue(question) if lists else None
    if listed is not None:
        cues["list_cue"] = listed
        sentences.append(LIST_INSTRUCTION)
    likely = hypothetical_cue(question) if hypotheticals else None
    if likely is not None:
        cues["hypothetical_cue"] = likely
        sentences.append(hypothetical_instruction(question))
    return QuestionForm(" ".join(sentences), likely is not None, cues)
