"""Agreement of an automatic judge with hand labels, printed the same way by ``judge_agreement.py`` (CMU DoG
verdicts) and ``factual_agreement.py`` (COVID-QA factual correctness): accuracy, Cohen's kappa
(``sklearn.metrics.cohen_kappa_score``) and the confusion matrix (``sklearn.metrics.confusion_matrix``; rows: hand
label, columns: judge, with an ``unjudged`` column for answers the judge left without a verdict)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def report_agreement(
    items: Sequence[dict[str, Any]], classes: Sequence[str], seconds: float, unit: str
) -> tuple[float, float, np.ndarray, list[str]]:
    """Print and return ``(accuracy, kappa, confusion, labels)`` of ``item["judge"]`` against ``item["label"]``.

    Args:
        items: at least one dict with ``label`` (a class) and ``judge`` (a class or ``"unjudged"``).
        classes: the hand labels' classes, in the order of the matrix's rows.
        seconds: wall time the judging took (printed beside its per-item mean).
        unit: what one item is, for the per-item time ("answer", "reply").

    Returns:
        accuracy in [0, 1], Cohen's kappa, the ``(len(classes) + 1, len(classes) + 1)`` int64 confusion matrix and
        its labels (``classes`` then ``"unjudged"``).
    """
    from sklearn.metrics import cohen_kappa_score, confusion_matrix

    truth, pred = [i["label"] for i in items], [i["judge"] for i in items]
    labels = [*classes, "unjudged"]
    accuracy = sum(t == p for t, p in zip(truth, pred, strict=True)) / len(items)
    kappa = float(cohen_kappa_score(truth, pred, labels=labels))
    matrix = confusion_matrix(truth, pred, labels=labels)
    print(
        f"\naccuracy {accuracy:.3f}  Cohen's kappa {kappa:.3f}  ({seconds:.0f} s, {seconds / len(items):.1f} s/{unit})"
    )
    print("confusion (rows: hand label, columns: judge)\n" + " " * 12 + "".join(f"{c:>11}" for c in labels))
    for name, row in zip(labels[: len(classes)], matrix[: len(classes)], strict=True):
        print(f"{name:>12}" + "".join(f"{int(v):>11}" for v in row))
    return accuracy, kappa, matrix, labels
