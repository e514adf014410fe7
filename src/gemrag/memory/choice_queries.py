"""Multiple choice: what retrieval is asked (``[answer] choice_retrieval``).

A multiple-choice question is retrieved for as written by default; its options are read only by the answer. The
evidence that rules an option in or out, however, is often about the option's own words (a story's "Why did the
captain leave the ship?" is answered by the passage about the mutiny the right option names), which the question
alone does not point to. Two ways to let the options join the query:

* ``"joined"``: one retrieval for the question followed by every option (one query, the same budget);
* ``"each"``: one retrieval per option for the question followed by that option, the lists merged rank by rank
  (round robin in the options' order, a node kept once, at its first place), cut at the budget, so that every
  option brings its best passage when the budget allows. Costs one retrieval per option (a strategy whose retrieval
  calls the LLM calls it per option too).

No paper here prescribes either; they are this library's, measured on QuALITY (docs/reading.md, "Options in the
query"). Only the query changes: the strategy, the budget and the answer (which reads the options as always) do not.

``"question"`` (the default) retrieves for the question alone, as a free-form question is. The eval harness and
:func:`gemrag.memory.asking.context` both go through :func:`retrieve_for_choices`, so what is measured is what
``gemrag ask --choices`` does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Literal

from gemrag.strategies.platform.composite import hit_key
from gemrag.strategies.platform.fusion import interleave
from gemrag.types import Hit

ChoiceRetrieval = Literal["question", "joined", "each"]
"""What retrieval is asked for a multiple-choice question (module docstring)."""

CHOICE_RETRIEVAL: tuple[ChoiceRetrieval, ...] = ("question", "joined", "each")


def option_query(question: str, *options: str) -> str:
    """The query for ``question`` with ``options`` after it, one space between (``"Why ...? The mutiny"``); the
    question alone when no option is given."""
    return " ".join(part.strip() for part in (question, *options) if part.strip())


def merge_ranked(lists: Sequence[Sequence[Hit]], size: int) -> list[Hit]:
    """Round robin over ranked hit lists (:func:`gemrag.strategies.platform.fusion.interleave`, as ``iterative``
    merges its steps): every list's first hit, then every list's second, ... in the lists' order, a node
    (:func:`~gemrag.strategies.platform.composite.hit_key`) kept once at its first place, cut at ``size`` hits; the
    kept hits are re-ranked 0..n-1 (``Hit.rank``), their scores as their own list gave them.

    Args:
        lists: ranked hits, best first, one list per query.
        size: the most hits kept (>= 0).

    Returns:
        At most ``size`` hits, no node twice.
    """
    order = interleave([[hit_key(h) for h in hits] for hits in lists])[: max(size, 0)]
    return [dataclasses.replace(lists[p][rank], rank=i) for i, (_, p, rank) in enumerate(order)]


def retrieve_for_choices(
    retrieve: Callable[[str], list[Hit]],
    question: str,
    choices: Sequence[str] | None,
    mode: ChoiceRetrieval,
) -> list[Hit]:
    """The context for a question, its options joining the query as ``mode`` says (module docstring).

    Args:
        retrieve: one retrieval at the caller's budget and strategy: query -> hits, best first.
        question: the question as written.
        choices: the options, or None (a free-form question: retrieved for as written, whatever ``mode``).
        mode: ``"question"``, ``"joined"`` or ``"each"``.

    Returns:
        The hits, best first; under ``"each"`` as many as the longest per-option list (the budget), merged by
        :func:`merge_ranked`.

    Raises:
        ValueError: an unknown ``mode``; whatever ``retrieve`` raises (an empty question).
    """
    if mode not in CHOICE_RETRIEVAL:
        raise ValueError(f"choice_retrieval must be one of {', '.join(CHOICE_RETRIEVAL)}, not {mode!r}")
    if not choices or mode == "question":
        return retrieve(question)
    if mode == "joined":
        return retrieve(option_query(question, *choices))
    lists = [retrieve(option_query(question, choice)) for choice in choices]
    return merge_ranked(lists, max(len(hits) for hits in lists))
