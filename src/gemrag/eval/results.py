"""What an evaluation produced: :class:`EvalResults` (the runner's output, also ``results.json``) and its
:class:`Summary` (aggregates, paired comparisons, sweeps). Plain records, so that the runner, the report, the
plots and the merge all import them from here and none imports another."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Summary:
    """What :func:`gemrag.eval.aggregates.summarize` computes.

    Attributes:
        aggregates: per run name, see :func:`gemrag.eval.aggregates.aggregate`.
        reference: the run the others are compared with (``--reference``, else the first run).
        metric: the per-question metric of the comparisons and sweeps (``accuracy``, ``f1``, ``recall@5``
            or ``recall@2``: the first the reference has data for), or None when there is none.
        comparisons: one dict per other run: ``strategy``, ``reference``, ``metric``, ``n`` (shared
            questions), ``diff`` (mean difference, run minus reference, in [-1, 1]), ``low``, ``high``
            (95% interval) and ``p`` (two-sided paired-bootstrap p-value).
        sweeps: per ablated parameter, one dict per value: ``value``, ``strategy``, ``metric`` (a CI dict
            or None), ``summary_share`` and ``n``.
        categories: per run and question category, ``n`` and mean scores (``{}`` without categories), see
            :func:`gemrag.eval.categories.per_category` (LoCoMo's F1 per category).
        tokens: the token table in UnWeaver Table 1's shape (index / query LLM prompt, completion and embedder
            tokens, totals and per question), see :func:`gemrag.eval.tokens.token_table`.
        repeats: per run name, each answer score's mean and spread over the ``--runs`` repetitions
            (:func:`gemrag.eval.repeats.run_spread`); ``{}`` for a single run.
    """

    aggregates: dict[str, dict[str, Any]] = field(default_factory=dict)
    reference: str | None = None
    metric: str | None = None
    comparisons: list[dict[str, Any]] = field(default_factory=list)
    sweeps: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    categories: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    tokens: dict[str, Any] = field(default_factory=dict)
    repeats: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)


@dataclass
class EvalResults:
    """Everything an evaluation produced (also written to ``results.json``).

    Attributes:
        out_dir: the output directory.
        dataset: ``name``, ``kind``, ``path``, numbers of ``questions``, ``groups`` and ``documents``.
        config: the configuration (API keys redacted). models: ``embedder`` and ``llm`` ids.
        budget: B, context nodes given to the LLM. answer: whether answers were generated.
        runs: display names of the runs, in order. ablation: ``{param: [values]}``.
        records: one dict per (question, run), see :func:`gemrag.eval.runner.run_eval`. index: one dict per (group,
        run) build.
        summary: aggregates, paired comparisons and sweeps (:class:`Summary`).
        seconds: wall-clock seconds of this invocation.
        reference: the run chosen for the paired comparisons (None: the first run).
        repeats: how many times every question was answered (``--runs``; records carry ``run``, 0-based).
    """

    out_dir: Path
    dataset: dict[str, Any]
    config: dict[str, Any]
    models: dict[str, str]
    budget: int
    answer: bool
    runs: list[str]
    ablation: dict[str, list[Any]]
    records: list[dict[str, Any]]
    index: list[dict[str, Any]]
    summary: Summary = field(default_factory=Summary)
    seconds: float = 0.0
    reference: str | None = None
    repeats: int = 1
