"""Self-consistency (``[answer] samples``): several sampled answers, and the one the others agree with most.

Wang et al., 2023, "Self-Consistency Improves Chain of Thought Reasoning in Language Models", section 2: sample a
set of answers at a temperature above zero and take the most consistent one (there: the majority vote over the
final answers). A free-form answer rarely repeats word for word, so agreement here is the SQuAD token F1 between two
answers (normalized as the span-QA scorers normalize), and the kept answer is the one with the highest summed F1 to
the others: the majority when several answers are identical, the medoid otherwise; ties go to the earliest sample.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> list[str]:
    """SQuAD's answer normalization as tokens: lower case, punctuation and the articles a/an/the removed."""
    text = "".join(ch for ch in text.lower() if ch not in set(string.punctuation))
    return _ARTICLES.sub(" ", text).split()


def token_f1(a: str, b: str) -> float:
    """Token F1 of two answers after :func:`normalize_answer` (1.0 for two empty answers), in [0, 1]."""
    ta, tb = normalize_answer(a), normalize_answer(b)
    if not ta or not tb:
        return float(ta == tb)
    common = sum((Counter(ta) & Counter(tb)).values())
    if common == 0:
        return 0.0
    p, r = common / len(ta), common / len(tb)
    return 2 * p * r / (p + r)


def most_consistent(answers: Sequence[str]) -> int:
    """Index of the answer the others agree with most (summed :func:`token_f1` to every other answer; the earliest
    on a tie).

    Raises:
        ValueError: no answers.
    """
    if not answers:
        raise ValueError("no answers to vote on")
    scores = [sum(token_f1(a, b) for j, b in enumerate(answers) if j != i) for i, a in enumerate(answers)]
    return max(range(len(answers)), key=lambda i: (scores[i], -i))
