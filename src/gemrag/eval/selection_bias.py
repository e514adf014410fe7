"""Selection bias of a multiple-choice evaluation: which option letters a run chose against which were right.

A model choosing among lettered options may prefer some letters whatever the options say (Zheng et al., ICLR 2024,
"Large Language Models Are Not Robust Multiple Choice Selectors", section 2). Counting the letters chosen alone
misleads when the gold letters are unbalanced, so Zheng et al. measure it by the recall of each letter (the share of
the questions whose answer is at that letter that were answered right) and their standard deviation, **RStd**: 0
for a model that finds every letter's answers equally well, larger the more it leans. The evaluation report gives,
per run of a multiple-choice dataset, the letters' gold and chosen counts, recalls and RStd
(:func:`letter_table`, :func:`selection_bias_markdown`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from gemrag.answers.choices import LETTERS

__all__ = ["LetterTable", "letter_table", "selection_bias_markdown"]


@dataclass(frozen=True)
class LetterTable:
    """One run's letters.

    Attributes:
        n: questions with a gold letter (those with ``gold_index``; a question with no choice counts as wrong).
        gold: per letter, the questions whose answer is at it.
        chosen: per letter, the questions answered with it.
        recall: per letter, the share of its gold questions answered right (0..1), None for a letter no answer is at.
        rstd: the population standard deviation of the recalls that exist (0..1; Zheng et al.'s RStd), None with
            fewer than two.
    """

    n: int
    gold: list[int]
    chosen: list[int]
    recall: list[float | None]
    rstd: float | None


def letter_table(records: Iterable[dict[str, Any]]) -> LetterTable | None:
    """The letters of one run's records (``gold_index``: the right option, 0-based; ``choice``: the option chosen,
    None when none was). None when no record has a gold option (not a multiple-choice run)."""
    asked = [r for r in records if isinstance(r.get("gold_index"), int)]
    if not asked:
        return None
    seen = [r["gold_index"] for r in asked] + [r["choice"] for r in asked if isinstance(r.get("choice"), int)]
    width = min(max(seen) + 1, len(LETTERS))
    gold, chosen, right = [0] * width, [0] * width, [0] * width
    for r in asked:
        g, c = r["gold_index"], r.get("choice")
        if 0 <= g < width:
            gold[g] += 1
            right[g] += c == g
        if isinstance(c, int) and 0 <= c < width:
            chosen[c] += 1
    recall = [right[d] / gold[d] if gold[d] else None for d in range(width)]
    present = [x for x in recall if x is not None]
    rstd = None
    if len(present) > 1:
        mean = sum(present) / len(present)
        rstd = math.sqrt(sum((x - mean) ** 2 for x in present) / len(present))
    return LetterTable(len(asked), gold, chosen, recall, rstd)


def selection_bias_markdown(runs: Sequence[str], records: Sequence[dict[str, Any]]) -> list[str]:
    """The report's section on selection bias: per run (``record["strategy"]``), each letter's gold and chosen
    counts and recall (%), and RStd (points); ``[]`` when no run has gold options."""
    tables = {name: letter_table(r for r in records if r.get("strategy") == name) for name in runs}
    shown = {name: t for name, t in tables.items() if t is not None}
    if not shown:
        return []
    width = max(len(t.gold) for t in shown.values())
    head = ["RAG", *(f"{LETTERS[d]} gold / chosen / recall %" for d in range(width)), "RStd (points)"]
    lines = ["", "## Selection bias (multiple choice)", "", "| " + " | ".join(head) + " |"]
    lines.append("|" + "---|" * len(head))
    for name, t in shown.items():
        cells = [name]
        for d in range(width):
            if d >= len(t.gold):
                cells.append("—")
                continue
            share = t.recall[d]
            recall = "—" if share is None else f"{100 * share:.1f}"
            cells.append(f"{t.gold[d]} / {t.chosen[d]} / {recall}")
        cells.append("—" if t.rstd is None else f"{100 * t.rstd:.1f}")
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "Per option letter: the questions whose answer is at it, those answered with it, and its recall (the share of "
        "its questions answered right); RStd: the standard deviation of the letters' recalls, 0 for a model that "
        "finds every letter's answers equally well (Zheng et al., ICLR 2024, section 2). A run that leans to a letter "
        "shows it chosen more often than it is right and a high RStd; `[answer] option_orders` and "
        "`choice_scoring` are the settings against it (see Reading in the documentation).",
    ]
    return lines
