"""The content words of a text, as the answer checks compare them: lower-cased words, stop words (articles,
prepositions, pronouns, auxiliaries, question words, yes/no; English) removed, a plural ``s`` folded. Used by the
token-overlap check of :mod:`gemrag.answers.verification` and the answer-form rules of :mod:`gemrag.answers.repair`.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")
_STOP_WORDS = (
    "a an the and or but if then than of in on at to for from by with without about into over under as is are was "
    "were be been being am do does did done have has had having it its it's this that these those there here he she "
    "they them his her their him we us our you your i me my mine not no yes so such can could would should will "
    "shall may might must also which who whom whose what when where why how all any some each both either neither "
    "very just only more most other another same own up down out off again further once"
)
_STOP = frozenset(_STOP_WORDS.split())


def content_words(text: str) -> list[str]:
    """Lower-cased words of ``text`` without a plural ``s`` (``patients`` -> ``patient``), stop words removed, in
    order."""
    words = (w.lower() for w in _WORD.findall(text))
    return [w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words if w not in _STOP]
