"""Entity-name normalization shared by the fact-based methods (REMem / HippoRAG 2's fact graph and recognition
filter, HLGraphRAG's subject nodes): HippoRAG's phrase normalization and the alphanumeric length of a name."""

from __future__ import annotations

import re

__all__ = ["alnum_length", "normalize_entity"]

_NON_ALNUM = re.compile(r"[\W_]+")


def normalize_entity(text: str) -> str:
    """HippoRAG's phrase normalization: lowercase, each run of non-alphanumeric characters (Unicode-aware: accented
    letters and other scripts are kept) becomes one space, trimmed. ``"Turing's Test!"`` -> ``"turing s test"``."""
    return _NON_ALNUM.sub(" ", text.lower()).strip()


def alnum_length(text: str) -> int:
    """Number of alphanumeric characters of ``text`` (HippoRAG 2 gives no synonym edges to entities of two or
    fewer, such as "us" or "1")."""
    return len(_NON_ALNUM.sub("", text))
