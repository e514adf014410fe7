"""Evaluation layer: dataset loaders, metrics, bootstrap statistics, and the ``gemrag eval`` runner.

The datasets, metrics and statistics depend on nothing else in gemrag except :mod:`gemrag.errors`; the
runner, report and plots (which use :class:`gemrag.Memory`) are imported lazily on first use of their names.

* :mod:`gemrag.eval.datasets` — the normalized schema (:class:`Document`, :class:`Question`,
  :class:`Dataset`) and :func:`load_dataset` (kinds: ``quality``, ``qasper``, ``musique``,
  ``hotpotqa``, ``2wiki``, ``hipporag``, ``covid_qa``, ``locomo``);
* :mod:`gemrag.eval.loaders` — one module per dataset family;
* :mod:`gemrag.eval.metrics` — accuracy, SQuAD EM / F1, Recall@k, latency percentiles, choice matching;
* :mod:`gemrag.eval.stats` — percentile bootstrap CI and paired bootstrap difference;
* :mod:`gemrag.eval.runner` — :func:`run_eval`: every strategy side by side on a dataset, resumable;
* :mod:`gemrag.eval.plan` — the runs of an evaluation (strategies, variants, gem ablations);
* :mod:`gemrag.eval.variants` — ``name[key=value]`` strategy variants;
* :mod:`gemrag.eval.aggregates` — aggregates with bootstrap intervals, paired comparisons, sweeps;
* :mod:`gemrag.eval.report` — ``results.json`` / ``results.md``; :mod:`gemrag.eval.run_files` — the output
  directory's files (JSON Lines records, ``run.json``'s fingerprint);
* :mod:`gemrag.eval.publish` — a run published as ``results/NAME.json`` (``python -m gemrag.eval.publish``), over
  :mod:`~gemrag.eval.publish_records`, :mod:`~gemrag.eval.publish_settings` and :mod:`~gemrag.eval.publish_origin`;
* :mod:`gemrag.eval.plots` — PNG plots with bootstrap error bars (matplotlib);
* the ``gemrag eval`` command is :mod:`gemrag.cli.eval` (the command line), over this harness.
* :mod:`gemrag.eval.acceptance` — HLGraphRAG's acceptance test on CMU DoG (``gemrag eval cmu_dog``): its runner,
  reply prompt and reports (:mod:`~gemrag.eval.acceptance.report`), with :mod:`~gemrag.eval.judging.judge` and
  :mod:`~gemrag.eval.loaders.cmu_dog`;
* :mod:`gemrag.eval.judging` — the LLM judges (the acceptance test's, the factual-correctness judge of free-form
  answers) and blind judging sheets.
"""

from __future__ import annotations

import importlib
from typing import Any

from gemrag.eval.datasets import Dataset, Document, Question, QuestionGroup, register_loader
from gemrag.eval.loading import available_kinds, load_dataset
from gemrag.eval.metrics import (
    accuracy,
    exact_match,
    hard_accuracy,
    latency_percentiles,
    match_choice,
    normalize_answer,
    recall_at_k,
    token_f1,
)
from gemrag.eval.stats import bootstrap_ci, paired_bootstrap_diff

_LAZY = {
    "EvalResults": "gemrag.eval.results",
    "run_eval": "gemrag.eval.runner",
    "Summary": "gemrag.eval.results",
    "markdown_report": "gemrag.eval.report",
    "summarize": "gemrag.eval.aggregates",
    "write_results": "gemrag.eval.report",
    "write_plots": "gemrag.eval.plots",
}


def __getattr__(name: str) -> Any:
    """Import the runner, report and plot names on first use (they pull in the whole library)."""
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Dataset",
    "Document",
    "EvalResults",
    "Question",
    "QuestionGroup",
    "Summary",
    "accuracy",
    "available_kinds",
    "bootstrap_ci",
    "exact_match",
    "hard_accuracy",
    "latency_percentiles",
    "load_dataset",
    "markdown_report",
    "match_choice",
    "normalize_answer",
    "paired_bootstrap_diff",
    "recall_at_k",
    "register_loader",
    "run_eval",
    "summarize",
    "token_f1",
    "write_plots",
    "write_results",
]
