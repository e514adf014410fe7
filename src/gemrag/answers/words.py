"""The content words of a text, as the answer checks compare them: lower-cased words, stop words (articles,
prepositions, pronouns, auxiliaries, question words, yes/no; English) removed, a plural ``s`` folded, a capitalized
weekday or month abbreviation read as its full name. Used by the token-overlap check of
:mod:`gemrag.answers.sentence_checks` (which first removes the answer's reading frame, :func:`without_frame`, and
compares the words' stems, :func:`stems`) and the answer-form rules of :mod:`gemrag.answers.repair`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import snowballstemmer

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")
_STOP_WORDS = (
    "a an the and or but if then than of in on at to for from by with without about into over under as is are was "
    "were be been being am do does did done have has had having it its it's this that these those there here he she "
    "they them his her their him we us our you your i me my mine not no yes so such can could would should will "
    "shall may might must also which who whom whose what when where why how all any some each both either neither "
    "very just only more most other another same own up down out off again further once"
)
_STOP = frozenset(_STOP_WORDS.split())

WEEKDAY_ABBREVIATIONS = {
    "Mon": "monday", "Tue": "tuesday", "Tues": "tuesday", "Wed": "wednesday", "Weds": "wednesday",
    "Thu": "thursday", "Thur": "thursday", "Thurs": "thursday", "Fri": "friday", "Sat": "saturday", "Sun": "sunday",
}  # fmt: skip
"""Weekday abbreviations as people write them ("last Tues", "next Fri"), capitalized only ("sat" and "sun" are
words), each with the weekday it names (lower case). The time-aware reading's rules read the same table."""
MONTH_ABBREVIATIONS = {
    "Jan": "january", "Feb": "february", "Mar": "march", "Apr": "april", "Jun": "june", "Jul": "july",
    "Aug": "august", "Sep": "september", "Sept": "september", "Oct": "october", "Nov": "november", "Dec": "december",
}  # fmt: skip
"""Month abbreviations, capitalized only, each with the month it names (lower case)."""
_ABBREVIATIONS = WEEKDAY_ABBREVIATIONS | MONTH_ABBREVIATIONS

_SOURCE = (
    r"(?:(?:the|this|these)\s+)?(?:(?:provided|given|above|retrieved|first|second|third|fourth|fifth|last)\s+)?"
    r"(?:context(?:\s+passages?)?|passages?|excerpts?|conversation|(?:provided|given|above) (?:text|information))"
    r"(?:\s+(?:provided|given|above))?(?:\s*\[\d+\])*"
)
_SAYS = r"(?:says|said|states|stated|mentions|mentioned|indicates|shows|notes|suggests|describes|explains|reports)"
_FRAMES = re.compile(
    # "Based on the context,", "according to passage [2]", "as mentioned in the provided context", "in the first
    # passage [1]"
    r"\b(?:based (?:up)?on|according to|as (?:stated|mentioned|described|shown|noted|given|seen) in|from|in)\s+"
    rf"{_SOURCE}"
    # "The context states that", "passage [3] says"; a marker alone opening the sentence as its source: "[1] states
    # that", "[2, 3] show"
    rf"|\b{_SOURCE}\s+{_SAYS}(?:\s+that)?"
    rf"|\A\s*(?:\[\d+(?:\s*,\s*\d+)*\]\s*)+(?:and\s+\[\d+\]\s*)?(?:{_SAYS}|show|say|mention|state)(?:\s+that)?\b"
    # "This is stated (in ...)", "This information is found (in ...)"
    r"|\b(?:this|it|that)\s+(?:information\s+)?(?:is|was|can\s+be)\s+"
    r"(?:stated|mentioned|found|given|provided|described|shown|seen|noted|indicated)\b"
    # "..., where it is mentioned that", "..., which states:"
    rf"|\b(?:where|which)\s+(?:it\s+)?(?:is\s+)?{_SAYS}(?:\s+that)?"
    # a numbered list item's number: "2. Varicella zoster virus"
    r"|\A\s*\d{1,3}[.)](?=\s)",
    re.IGNORECASE,
)
_STEMMER = snowballstemmer.stemmer("english")


def without_frame(text: str) -> str:
    """``text`` without its reading frame: the words by which an answer refers to its context rather than states
    something ("Based on the context,", "according to passage [2]", "the passage says that", "This is stated in the
    first passage [1], where it is mentioned that"), and a list item's number. A small reader writes them around a
    claim it draws from the passages; they are not part of the claim, and the passages do not contain them."""
    return _FRAMES.sub(" ", text)


def stems(words: Iterable[str]) -> set[str]:
    """The Snowball (Porter 2) English stems of lower-cased words: ``detected``, ``detection`` -> ``detect``."""
    return set(_STEMMER.stemWords(list(words)))


def content_words(text: str) -> list[str]:
    """Lower-cased words of ``text`` without a plural ``s`` (``patients`` -> ``patient``), stop words removed, a
    capitalized weekday or month abbreviation as its full name (``Tues`` -> ``tuesday``, ``Sept`` -> ``september``),
    in order."""
    words = (_ABBREVIATIONS.get(w) or w.lower() for w in _WORD.findall(text))
    return [w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words if w not in _STOP]
