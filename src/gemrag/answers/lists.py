"""Which questions are list questions: those the answer prompt asks to name every item the context gives.

A *list question* asks for all the instances of something ("What books has Melanie read?", "Which cities has Jon
visited?"), not one fact. The TREC question-answering track made it a question type of its own, scored by how many
of the instances an answer names (Voorhees, "Overview of the TREC 2003 Question Answering Track", the list
questions); LoCoMo's multi-hop category is mostly such questions, whose items are spread over several sessions
(Maharana et al., 2024, the QA task: "multi-hop questions require synthesizing information from multiple sessions";
gold answers such as "pottery, camping, painting, swimming"). A small reader answers them with the first item it
reads: the 1.5B answered "painting" to the first example and "clarinet" to "What instruments does Melanie play?"
(gold "clarinet and violin").

The rule (:func:`list_cue`) reads only the question's form, in English: a *what*/*which* question whose asked-for
noun is plural and followed by its verb ("What activities does", "Which cities has", "What European countries has"),
"what kinds/types/sorts of" (but not "what kinds of X are <a name>", which asks which kind), "what/which/who
are/were" ("What are Maria's dogs' names?"), or "list/name all". Rules only, no model; a question in another
language, or one whose plural is not in that form ("Where has Melanie camped?"), is read as written. The reading it
selects (:data:`LIST_INSTRUCTION`) is an answer setting,
``[answer] lists`` (:mod:`gemrag.config.answer`).
"""

from __future__ import annotations

import re

_VERB = r"(?:do|does|did|has|have|had|is|are|was|were|can|could|would|will|should|might|may)"
# a plural noun: ends in -s but not -ss/-us/-is ("class", "status", "analysis"), nor "news"; or -men/-people/-children
_PLURAL = r"(?:(?!news\b)[a-z][\w'+/-]*[^\Wsui]s|[a-z]*(?:men|people|children))"
_RULES = re.compile(
    rf"^\s*(?:what|which)\s+(?:(?!of\b)[\w'+/-]+\s+){{0,2}}?{_PLURAL}\s+{_VERB}\b"
    # "what kinds of X are Y", Y a name, asks which kind Y is ("What kinds of viruses are JEV and TBEV?"): not a list
    r"|^\s*(?:what|which)\s+(?:kinds|types|sorts)\s+of\b(?!(?:\s+[\w'+/-]+){1,3}\s+(?:is|are|was|were)\s+(?-i:[A-Z]))"
    r"|^\s*(?:what|which|who)\s+(?:are|were)\b"
    r"|\b(?:list|name)\s+(?:all|every|each)\b",
    re.I,
)

LIST_INSTRUCTION = "The question asks for several things: give every one the context names, separated by commas."
"""What the answer prompt adds for a list question (before its last instructions), with ``[answer] lists``."""


def list_cue(question: str) -> str | None:
    """The words that make ``question`` a list question (as written, e.g. ``"What books has"``), or None.

    A list question: *what*/*which* followed by at most two words and a plural noun, then a verb (do/does/did,
    has/have/had, is/are/was/were or a modal): "What activities does Melanie partake in?", "Which cities has Jon
    visited?", "What European countries has Maria been to?"; "what/which kinds, types or sorts of"; "what/which/who
    are/were" ("What are the names of John's children?"); "list/name all/every/each". Not a list question: a singular
    noun ("What book did she read?"), a word ending in -ss, -us, -is or "news" ("What status", "What news did ..."),
    a plural after "of" ("What percentage of patients were ...": the asked-for noun is the first one), a question
    of which kind a named thing is ("What kinds of viruses are JEV and TBEV?": a capitalised word after is/are/was/
    were asks for the kind, not for every instance; "What kinds of pets are allowed?" is still a list question).
    Case is ignored; the rules are English only.
    """
    m = _RULES.search(question)
    return m.group(0).strip() if m else None
