"""Scores per question category (LoCoMo's five categories), adversarial scoring and running averages.

LoCoMo (Maharana et al., "Evaluating Very Long-Term Conversational Memory of LLM Agents", ACL 2024, Table 3)
reports answer F1 per category: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial.
Answers are scored as LoCoMo's official scorer does (:mod:`gemrag.eval.locomo_scoring`): category 5 asks about
something the conversation never says, and an answer scores F1 = EM = 1 iff it says "not mentioned" or "no
information available", else 0 — not a token F1 against the placeholder gold text
:data:`gemrag.eval.loaders.locomo.NOT_MENTIONED`.

:func:`per_category` aggregates any dataset whose questions have a ``category`` (also the multi-hop kinds'
hop types and Qasper's answer types); :func:`category_tables` renders it for ``results.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from gemrag.eval.datasets import Question
from gemrag.eval.locomo_scoring import locomo_em_f1
from gemrag.eval.metrics import exact_match, token_f1

__all__ = [
    "ABSTAIN_KINDS",
    "CATEGORY_METRICS",
    "LOCOMO_CATEGORIES",
    "SHORT_ANSWER_KINDS",
    "category_tables",
    "is_adversarial",
    "is_unanswerable",
    "per_category",
    "running_note",
    "score_free_form",
]

LOCOMO_CATEGORIES = {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop", "5": "adversarial"}
#: Dataset kinds whose answer prompt lets the model say the answer is not mentioned (they have unanswerable
#: questions), unless ``gemrag eval --no-abstain`` drops that line (:class:`gemrag.eval.protocol.AnswerProtocol`);
#: every other kind keeps the default prompt, and so its LLM cache keys.
ABSTAIN_KINDS = frozenset({"locomo"})
#: Dataset kinds whose official scorers compare a short answer span with the gold (SQuAD-style EM / token F1):
#: ``gemrag eval`` answers them with the short answer prompt by default (``--answer-form``).
SHORT_ANSWER_KINDS = frozenset({"locomo", "musique", "hotpotqa", "2wiki", "hipporag", "covid_qa", "qasper", "qa"})
#: Per-question record keys averaged per category.
CATEGORY_METRICS = ("f1", "em", "accuracy", "evidence_recall", "recall@5")


def is_adversarial(kind: str, question: Question) -> bool:
    """Whether a question is unanswerable by design (LoCoMo category 5)."""
    return kind == "locomo" and question.category == "5"


def is_unanswerable(kind: str, question: Question) -> bool:
    """Whether the dataset labels a question unanswerable from its documents: LoCoMo's adversarial category 5, a
    SQuAD 2.0 ``is_impossible`` question (the COVID-QA loader keeps it in ``metadata``), or a question whose every
    gold answer is "Unanswerable" (Qasper, Dasigi et al., NAACL 2021, section 2: the official loader writes that text
    for an annotator who marked the question unanswerable, L-Eval's Qasper keeps it as the reference). A Qasper
    question that some annotators answered counts as answerable, as the official evaluator scores an answer against
    the best-matching annotator. A question with no gold answer at all (a test split) is not unanswerable."""
    if is_adversarial(kind, question) or question.metadata.get("is_impossible"):
        return True
    return bool(question.answers) and all(a.strip().lower() == "unanswerable" for a in question.answers)


def score_free_form(kind: str, question: Question, answer: str) -> tuple[float, float]:
    """``(em, f1)`` of a free-form answer: SQuAD EM / token F1 against the gold answers; for LoCoMo its official
    scorer's rules per category (:func:`gemrag.eval.locomo_scoring.locomo_em_f1`: stemmed tokens, comma-separated
    multi-hop answers, category 5 correct iff it says "not mentioned" or "no information available")."""
    if kind == "locomo":
        return locomo_em_f1(answer, question.answers, question.category)
    return exact_match(answer, question.answers), token_f1(answer, question.answers)


def _value(record: dict[str, Any], metric: str) -> float | None:
    value = record.get("correct") if metric == "accuracy" else record.get(metric)
    return None if value is None else float(value)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def per_category(records: Sequence[dict[str, Any]], runs: Sequence[str]) -> dict[str, dict[str, dict[str, Any]]]:
    """Mean scores per run and question category.

    Args:
        records: per-question records (``strategy``, ``category`` and the metrics of :data:`CATEGORY_METRICS`).
        runs: run names, in report order.

    Returns:
        ``{run: {category: {"n": questions, metric: mean in [0, 1] or None}}}`` with categories sorted (numbers
        numerically) plus ``"all"``; ``{}`` when no record has a category.
    """
    if not any(r.get("category") is not None for r in records):
        return {}
    cats = sorted({str(r["category"]) for r in records if r.get("category") is not None}, key=_cat_key)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for run in runs:
        mine = [r for r in records if r["strategy"] == run]
        groups = {c: [r for r in mine if str(r.get("category")) == c] for c in cats} | {"all": mine}
        out[run] = {
            c: {"n": len(rs)} | {m: _mean([v for r in rs if (v := _value(r, m)) is not None]) for m in CATEGORY_METRICS}
            for c, rs in groups.items()
        }
    return out


def _cat_key(cat: str) -> tuple[int, float, str]:
    try:
        return (0, float(cat), cat)
    except ValueError:
        return (1, math.inf, cat)


def _label(kind: str, cat: str) -> str:
    if cat == "all":
        return "all"
    name = LOCOMO_CATEGORIES.get(cat) if kind == "locomo" else None
    return f"{cat} {name}" if name else cat


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}"


def category_tables(table: dict[str, dict[str, dict[str, Any]]], kind: str) -> list[str]:
    """Markdown lines: one table per metric with data (F1 / EM, accuracy, evidence recall, Recall@5), rows =
    runs, columns = categories with their question counts; ``[]`` for an empty ``table``."""
    if not table:
        return []
    first = next(iter(table.values()))
    cats = list(first)
    headers = ["RAG"] + [f"{_label(kind, c)} (n={first[c]['n']})" for c in cats]
    lines = ["", "## Per category", ""]
    sections = [
        ("F1 / EM", lambda a: f"{_pct(a['f1'])} / {_pct(a['em'])}", "f1"),
        ("Accuracy", lambda a: _pct(a["accuracy"]), "accuracy"),
        ("Evidence recall (gold turns in the context)", lambda a: _pct(a["evidence_recall"]), "evidence_recall"),
        ("Recall@5", lambda a: _pct(a["recall@5"]), "recall@5"),
    ]
    for title, cell, key in sections:
        if not any(a[key] is not None for per in table.values() for a in per.values()):
            continue
        lines += [f"{title}, in %:", "", "| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        lines += ["| " + " | ".join([run] + [cell(per[c]) for c in cats]) + " |" for run, per in table.items()]
        lines.append("")
    if kind == "locomo":
        lines.append(
            "Category 5 (adversarial): F1 = EM = 100 iff the answer says the information is not available. "
            "Evidence recall: share of the gold evidence turns overlapped by the B context nodes (summaries "
            "through their member chunks)."
        )
    return lines[:-1] if lines[-1] == "" else lines


def running_note(records: Sequence[dict[str, Any]]) -> str:
    """A short progress note of the running averages so far (REMem's per-sample ``Avg``), e.g.
    ``"F1 43.2 · EM 30.0 · EvR 61.5"``: F1 / EM / accuracy / evidence recall / Recall@5 over the records that
    have them (in %), ``""`` for none."""
    parts = []
    labels = {"f1": "F1", "em": "EM", "accuracy": "Acc", "evidence_recall": "EvR", "recall@5": "R@5"}
    for key, label in labels.items():
        mean = _mean([v for r in records if (v := _value(r, key)) is not None])
        if mean is not None:
            parts.append(f"{label} {100 * mean:.1f}")
    return " · ".join(parts)
