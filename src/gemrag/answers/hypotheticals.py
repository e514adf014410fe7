"""Which questions are hypothetical questions: those that ask what is likely, not what was said.

A *hypothetical question* asks the reader to infer what the memory does not state: "Would Caroline likely have Dr.
Seuss books on her bookshelf?", "What might John's degree be in?", "Would Melanie go on another roadtrip soon?".
LoCoMo's open-domain category is made of them (Maharana et al., 2024, the QA task: questions answered from what a
speaker said together with commonsense or world knowledge), with gold answers such as "Likely no; since this one went
badly" or "Yes, since she collects classic children's books". Told that it may say an answer is not mentioned, a small
reader says so: the 1.5B answered 6 of LoCoMo's 21 open-domain dev questions "Not mentioned", each scored 0, 5 of them
with some of the turns the inference rests on in its context.

The rule (:func:`hypothetical_cue`) reads only the question's form, in English: the modal "would" or "might", or
"likely", "probably" or "possibly", anywhere in the question. Rules only, no model. The reading it selects
(:func:`hypothetical_instruction`) is an answer setting, ``[answer] hypotheticals`` (:mod:`gemrag.config.answer`):
the prompt asks a yes-or-no question for "Likely yes" or "Likely no" and why, any other for what the context points
to, and the "say that it is not mentioned" line gives way to "give your best guess" for that question only. Asked
once for both kinds, the 1.5B answered "Likely no" to "What would Caroline's political leaning likely be?".
"""

from __future__ import annotations

import re

_RULE = re.compile(r"\b(?:would|might|likely|probably|possibly)\b", re.I)

_LIKELY = "The question asks what is likely, which the context may not say in so many words"
YES_NO_INSTRUCTION = f'{_LIKELY}: answer "Likely yes" or "Likely no", as the context points, and why in a few words.'
"""What the answer prompt adds for a hypothetical yes-or-no question (:func:`yes_no_question`)."""
OPEN_INSTRUCTION = f"{_LIKELY}: answer with what the context points to, not that it is not mentioned."
"""What the answer prompt adds for any other hypothetical question ("What might his degree be in?", "... a national
park or a theme park?")."""
_YES_NO = re.compile(
    r"^\s*(?:would|will|is|are|was|were|do|does|did|can|could|has|have|had|should|might|may)\b(?!.*\bor\b)", re.I
)


def yes_no_question(question: str) -> bool:
    """Whether ``question`` asks for yes or no: it starts with an auxiliary or modal verb ("Would ...", "Is ...",
    "Does ...") and offers no alternatives ("... a national park or a theme park?" asks which). English only."""
    return _YES_NO.search(question) is not None


def hypothetical_instruction(question: str) -> str:
    """The sentence the answer prompt adds for the hypothetical question ``question``: :data:`YES_NO_INSTRUCTION`
    for a yes-or-no question (:func:`yes_no_question`), :data:`OPEN_INSTRUCTION` for any other."""
    return YES_NO_INSTRUCTION if yes_no_question(question) else OPEN_INSTRUCTION


def hypothetical_cue(question: str) -> str | None:
    """The word that makes ``question`` a hypothetical question (as written, e.g. ``"likely"``), or None.

    A hypothetical question has "would", "might", "likely", "probably" or "possibly" as a word: "Would Melanie be
    considered an ally to the transgender community?", "What might John's financial status be?", "Is it likely
    that ...?". Not one: "Did Caroline go to the parade?", or a word that only contains one of them ("likelihood",
    "mighty"). Case is ignored; the rule is English only. The first such word is returned.
    """
    m = _RULE.search(question)
    return m.group(0) if m else None
