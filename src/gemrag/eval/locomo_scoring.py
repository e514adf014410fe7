"""LoCoMo's own answer scoring, category by category, as its official scorer computes it.

Maharana et al., "Evaluating Very Long-Term Conversational Memory of LLM Agents" (ACL 2024), section 5.1 and the
released ``task_eval/evaluation.py``: answers are normalized (lower case, commas and punctuation removed, the words
"a", "an", "the" and "and" removed, whitespace collapsed), each token reduced by the Porter stemmer (NLTK), and
scored by token F1 with a rule per category:

* 1 multi-hop: the prediction and the gold are split at commas into several answers; the score is the mean over
  the gold parts of the best F1 of any predicted part;
* 2 temporal and 4 single-hop: token F1;
* 3 open-domain: token F1 against the gold's first ``;``-separated part;
* 5 adversarial: 1 iff the prediction contains "no information available" or "not mentioned" (case-insensitive).

Exact match (not reported by LoCoMo) stays SQuAD's, with the category-5 rule above.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from gemrag.eval.metrics import exact_match

__all__ = ["locomo_em_f1", "locomo_f1", "locomo_normalize", "declines"]

_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCTUATION = set(string.punctuation)
DECLINES = ("no information available", "not mentioned")
"""The phrases LoCoMo's scorer accepts as the answer to an adversarial (category 5) question."""


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    from nltk.stem import PorterStemmer  # the eval extra; the stemmer needs no NLTK data download

    return PorterStemmer()


def locomo_normalize(text: str) -> str:
    """LoCoMo's answer normalization: commas removed, lower case, punctuation removed, "a"/"an"/"the"/"and"
    removed as words, whitespace collapsed."""
    text = text.replace(",", "").lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def _tokens(text: str) -> list[str]:
    stem = _stemmer().stem
    return [stem(w) for w in locomo_normalize(text).split()]


def _f1(prediction: str, gold: str) -> float:
    pred, ref = _tokens(prediction), _tokens(gold)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def _multi_f1(prediction: str, gold: str) -> float:
    preds = [p.strip() for p in prediction.split(",")]
    golds = [g.strip() for g in gold.split(",")]
    return sum(max(_f1(p, g) for p in preds) for g in golds) / len(golds)


def declines(prediction: str) -> bool:
    """LoCoMo's category-5 rule: the prediction contains one of :data:`DECLINES` (case-insensitive)."""
    low = prediction.lower()
    return any(phrase in low for phrase in DECLINES)


def locomo_f1(prediction: str, gold: str, category: str | None) -> float:
    """LoCoMo's F1 of one answer for its category (``"1"``..``"5"``; another or None: plain stemmed token F1).

    Returns:
        F1 in [0, 1] (category 5: 0 or 1).
    """
    if category == "5":
        return float(declines(prediction))
    if category == "1":
        return _multi_f1(prediction, gold)
    if category == "3":
        gold = gold.split(";")[0].strip()
    return _f1(prediction, gold)


def locomo_em_f1(prediction: str, golds: Sequence[str], category: str | None) -> tuple[float, float]:
    """``(em, f1)`` of a LoCoMo answer: SQuAD exact match and :func:`locomo_f1` (best over ``golds``); for
    category 5 both are the decline rule."""
    if category == "5":
        score = float(declines(prediction))
        return score, score
    if not golds:
        return exact_match(prediction, []), float(not prediction.strip())
    return exact_match(prediction, golds), max(locomo_f1(prediction, g, category) for g in golds)
