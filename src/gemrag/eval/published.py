"""Published results: the record of one evaluation run kept in the repository's ``results/`` directory, its schema,
its loader, and the scoring that turns its per-question records into the figures the documentation shows.

A published run is two files in ``results/``:

* ``NAME.json``: a :class:`PublishedRun`: the command, code version, date, machine and load, models, dataset (with
  the SHA-256 of its file), the settings that differed from the defaults, and per strategy each metric with n and
  its 95 % interval, the paired tests between strategies, and per question category the same;
* ``NAME.records.jsonl.gz``: one line per (question, strategy): the question's gold ids, its ranking (node id, kind,
  and the dataset documents of each hit; for answer-span recall also its text and the gold answers), the dialog turns
  each context node covers, and the scores the run gave it.

The figures of ``NAME.json`` are computed from the per-question scores by :func:`score_records` (the same
percentile bootstrap, seed and question order as ``gemrag eval``'s report, :mod:`gemrag.eval.aggregates`), and the
scores themselves can be recomputed from the rankings by :func:`rescore_record`, so any published figure is
re-scored from the committed files alone, without a model or a memory (``benchmarks/rescore_recall.py --published``).
Written by :mod:`gemrag.eval.publish`; the documentation's marked figures are generated from these records by
:mod:`gemrag.eval.publish_docs`.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Iterable, Sequence
from itertools import combinations
from pathlib import Path
from typing import Any, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gemrag.errors import InputError
from gemrag.eval.metrics import RECALL_KS, recall_at_ks
from gemrag.eval.published_costs import Costs, answer_costs
from gemrag.eval.stats import bootstrap_ci, paired_bootstrap_diff
from gemrag.types import Hit, NodeKind

__all__ = [
    "SCHEMA_VERSION",
    "SCORED_METRICS",
    "Comparison",
    "DatasetInfo",
    "Interval",
    "Machine",
    "PublishedRun",
    "StrategyResult",
    "load_published",
    "per_question",
    "load_records",
    "published_names",
    "refresh_costs",
    "rescore_record",
    "score_records",
]

#: Version of the :class:`PublishedRun` layout; a loader refuses a record of a newer layout.
SCHEMA_VERSION = 1
#: Per-question metrics a published record scores (in [0, 1]; ``accuracy`` is the record's ``correct``).
SCORED_METRICS = ("accuracy", "f1", "em", "recall@2", "recall@5", "evidence_recall", "judged")
#: Bootstrap resamples and seed of every interval and paired test (those of ``gemrag eval``'s report).
N_RESAMPLES, SEED = 10000, 0


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Interval(_Model):
    """A mean with its 95 % percentile-bootstrap interval over questions (scores in [0, 1]).

    Attributes:
        mean, low, high: the mean and the interval bounds, in [0, 1].
        n: questions scored.
    """

    mean: float
    low: float
    high: float
    n: int


class Comparison(_Model):
    """A paired bootstrap of ``strategy`` minus ``reference`` over the questions both scored.

    Attributes:
        strategy, reference: the two runs (``strategy`` comes later in the run's order).
        metric: the per-question metric (a key of :data:`SCORED_METRICS`).
        n: shared questions. diff, low, high: mean difference and its 95 % interval, in [-1, 1].
        p: two-sided paired-bootstrap p-value (:func:`gemrag.eval.stats.paired_bootstrap_diff`).
    """

    strategy: str
    reference: str
    metric: str
    n: int
    diff: float
    low: float
    high: float
    p: float


class StrategyResult(_Model):
    """One strategy's figures in a published run.

    Attributes:
        records: per-question records of this strategy. errors: records whose retrieval failed.
        setting: the variant's settings (``fused[window=20]`` -> ``{"window": 20}``; ``{}`` for the strategy as
            configured).
        metrics: per metric of :data:`SCORED_METRICS` the strategy has, its :class:`Interval`.
        categories: per question category (LoCoMo's "1".."5"), the same metrics; ``{}`` without categories.
        latency_ms: retrieval latency percentiles ``p50`` and ``p95`` in milliseconds.
        costs: what answering cost per answer (LLM calls, tokens, median seconds, words shown;
            :mod:`gemrag.eval.published_costs`), computed from the records; ``None`` in a record published before
            the block existed (``python -m gemrag.eval.publish --refresh-costs NAME`` adds it).
    """

    records: int
    errors: int = 0
    setting: dict[str, Any] = Field(default_factory=dict)
    metrics: dict[str, Interval] = Field(default_factory=dict)
    categories: dict[str, dict[str, Interval]] = Field(default_factory=dict)
    latency_ms: dict[str, float] = Field(default_factory=dict)
    costs: Costs | None = None


class Machine(_Model):
    """Where and under what load the run was made.

    Attributes:
        cpus: logical CPUs. memory_gb: physical memory in GB (0 when unknown). platform: OS and architecture.
        python: the Python version. load: the 1-minute load average when the run started and ended (``[]`` when
            not sampled, e.g. a run directory published afterwards).
    """

    cpus: int
    memory_gb: float
    platform: str
    python: str
    load: list[float] = Field(default_factory=list)


class DatasetInfo(_Model):
    """The dataset a run read.

    Attributes:
        kind, name: the loader kind and the dataset's name. file: the file name. sha256: the SHA-256 of the file's
            bytes (hex; "" when the file was not readable at publication). questions, groups, documents: what the
            run evaluated. options: loader options (``per_question_corpus``) and the selection (``limit``,
            ``documents``, ``categories``, ``per_category``) when known.
    """

    kind: str
    name: str
    file: str
    sha256: str
    questions: int
    groups: int
    documents: int
    options: dict[str, Any] = Field(default_factory=dict)


class PublishedRun(_Model):
    """The record of one published evaluation run (``results/NAME.json``).

    Attributes:
        schema_version: :data:`SCHEMA_VERSION`. name: the record's name (its file name without ``.json``).
        command: the command that made the run. code: the git commit of the code (with ``-dirty`` when it had
            uncommitted changes) and the package version. date: when the record was written (ISO 8601, UTC).
        seconds: wall-clock seconds of the run's last invocation.
        machine: :class:`Machine`. models: ``embedder`` and ``llm`` ids (``llm`` is unused without answers).
        dataset: :class:`DatasetInfo`. budget: B, context nodes. answer: whether an LLM answered.
        non_default: dotted setting -> value for every setting of the run's configuration (and the evaluation's own
            protocol: budget, answer form ...) that differed from the defaults when it was published; ``{}`` means the
            run describes the defaults of ``code``.
        reference: the run's reference strategy. strategies: per run name, :class:`StrategyResult`, in run order.
        comparisons: paired tests of every later strategy against every earlier one, per metric.
        records_file: the per-question records beside this file (``NAME.records.jsonl.gz``), or where a larger one
            lives. records_sha256: SHA-256 of that file's decompressed text.
    """

    schema_version: int = SCHEMA_VERSION
    name: str
    command: str
    code: dict[str, str]
    date: str
    seconds: float
    machine: Machine
    models: dict[str, str]
    dataset: DatasetInfo
    budget: int
    answer: bool
    non_default: dict[str, Any] = Field(default_factory=dict)
    reference: str | None = None
    strategies: dict[str, StrategyResult]
    comparisons: list[Comparison] = Field(default_factory=list)
    records_file: str
    records_sha256: str

    def metric(self, strategy: str, metric: str, category: str | None = None) -> Interval:
        """One strategy's :class:`Interval` of one metric (over all questions, or one category).

        Raises:
            KeyError: the run has no such strategy, category or metric (the message names what it has).
        """
        if strategy not in self.strategies:
            raise KeyError(f"{self.name}: no strategy {strategy!r} (has {', '.join(self.strategies)})")
        result = self.strategies[strategy]
        table = result.metrics if category is None else result.categories.get(category)
        if table is None:
            raise KeyError(f"{self.name}: {strategy} has no category {category!r} (has {', '.join(result.categories)})")
        if metric not in table:
            raise KeyError(f"{self.name}: {strategy} has no {metric!r} (has {', '.join(table) or 'no metric'})")
        return table[metric]

    def comparison(self, strategy: str, reference: str, metric: str) -> Comparison:
        """The paired test of ``strategy`` minus ``reference`` (computed the other way round and negated when the
        run compared them in the other order; ``p`` is two-sided, so it is the same).

        Raises:
            KeyError: no such comparison in the record.
        """
        for c in self.comparisons:
            if c.metric != metric:
                continue
            if (c.strategy, c.reference) == (strategy, reference):
                return c
            if (c.strategy, c.reference) == (reference, strategy):
                return Comparison(
                    strategy=strategy, reference=reference, metric=metric, n=c.n, diff=-c.diff, low=-c.high,
                    high=-c.low, p=c.p,
                )  # fmt: skip
        raise KeyError(f"{self.name}: no paired test of {strategy} against {reference} on {metric!r}")


# -- loading -------------------------------------------------------------------------------------------


def published_names(root: Path) -> list[str]:
    """The names of the published runs in ``root`` (``results/``), sorted. A benchmark's record there (a JSON object
    with a ``kind``, which a :class:`PublishedRun` never has: ``forgetting``, ``erase-cost``) is not a run."""
    if not root.is_dir():
        return []
    names = []
    for path in sorted(root.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = None  # load_published names the broken file
        if not (isinstance(data, dict) and "kind" in data):
            names.append(path.name[: -len(".json")])
    return names


def load_published(name: str, root: Path) -> PublishedRun:
    """Read ``root/NAME.json``.

    Raises:
        InputError: the file is missing, not JSON, of a newer schema, or not a :class:`PublishedRun` (the message
            names the file).
    """
    path = root / f"{name}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        have = ", ".join(published_names(root)) or "none"
        raise InputError(f"{path}: no published result named {name!r} (published: {have})") from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: not a readable JSON record ({exc})") from exc
    if isinstance(data, dict) and int(data.get("schema_version", 0)) > SCHEMA_VERSION:
        raise InputError(f"{path}: schema version {data['schema_version']} is newer than {SCHEMA_VERSION}")
    try:
        return PublishedRun.model_validate(data)
    except ValidationError as exc:
        raise InputError(
            f"{path}: not a published result: {exc.errors()[0]['msg']} at {exc.errors()[0]['loc']}"
        ) from exc


def load_records(run: PublishedRun, root: Path) -> list[dict[str, Any]]:
    """The per-question records of a published run (``root/<records_file>``), in the run's order.

    Raises:
        InputError: the file is missing or unreadable.
    """
    path = root / run.records_file
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]
    except (OSError, EOFError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: cannot read the per-question records of {run.name} ({exc})") from exc


def refresh_costs(name: str, root: Path) -> PublishedRun:
    """Recompute the :class:`~gemrag.eval.published_costs.Costs` of every strategy of the published run ``root/NAME``
    from its per-question records alone, and rewrite ``root/NAME.json`` with them (nothing else changes; the records
    file is only read, so ``records_sha256`` stays its hash).

    Raises:
        InputError: the record or its records file is missing or unreadable, or the records file is not the one the
            record names (its SHA-256 differs from ``records_sha256``).
    """
    run = load_published(name, root)
    path = root / run.records_file
    try:
        with gzip.open(path, "rb") as f:
            data = f.read()
    except (OSError, EOFError) as exc:
        raise InputError(f"{path}: cannot read the per-question records of {name} ({exc})") from exc
    if hashlib.sha256(data).hexdigest() != run.records_sha256:
        raise InputError(f"{path}: not the records {name}.json was published with (its SHA-256 differs)")
    records = [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]
    for strategy, result in run.strategies.items():
        result.costs = answer_costs(r for r in records if r["strategy"] == strategy)
    (root / f"{name}.json").write_text(run.model_dump_json(indent=1) + "\n", encoding="utf-8")
    return run


# -- scoring -------------------------------------------------------------------------------------------


def _value(record: dict[str, Any], metric: str) -> float | None:
    """A record's score under ``metric`` (a multiple-choice answer's ``accuracy`` is stored as a bool), or None."""
    scores = record.get("scores", {})
    value = scores.get(metric)
    if value is None and metric == "accuracy":
        value = scores.get("correct")
    return None if value is None else float(value)


def per_question(records: Iterable[dict[str, Any]], metric: str) -> dict[str, float]:
    """``{question id: score}`` in record order; a question answered in several runs scores their mean (as the
    report's ``_scores``)."""
    out: dict[str, list[float]] = {}
    for r in records:
        value = _value(r, metric)
        if value is not None:
            out.setdefault(str(r["question_id"]), []).append(value)
    return {q: sum(v) / len(v) for q, v in out.items()}


def _intervals(records: Sequence[dict[str, Any]]) -> dict[str, Interval]:
    out = {}
    for metric in SCORED_METRICS:
        values = list(per_question(records, metric).values())
        if values:
            mean, low, high = bootstrap_ci(values, n_resamples=N_RESAMPLES, seed=SEED)
            out[metric] = Interval(mean=mean, low=low, high=high, n=len(values))
    return out


def _category_key(category: str) -> tuple[int, float, str]:
    try:
        return (0, float(category), category)
    except ValueError:
        return (1, 0.0, category)


def _latency(records: Sequence[dict[str, Any]]) -> dict[str, float]:
    import numpy as np

    seconds = [float(r["retrieval_seconds"]) for r in records if r.get("retrieval_seconds") is not None]
    if not seconds:
        return {}
    p50, p95 = np.percentile(seconds, [50, 95])
    return {"p50": round(1000 * float(p50), 3), "p95": round(1000 * float(p95), 3)}


def score_records(
    records: Sequence[dict[str, Any]], runs: Sequence[str]
) -> tuple[dict[str, StrategyResult], list[Comparison]]:
    """The figures of a published run from its per-question records.

    Args:
        records: published per-question records (``question_id``, ``strategy``, ``category``, ``setting``,
            ``scores``, ``error``, ``retrieval_seconds``), in the run's order.
        runs: run names in order (a strategy later in it is compared with every earlier one).

    Returns:
        ``(strategies, comparisons)``: per run its :class:`StrategyResult` (metrics over all questions and per
        category), and a paired test of every later run against every earlier one for each metric both scored,
        over the questions both scored, in sorted question-id order (as ``gemrag eval``'s report).
    """
    by_run = {name: [r for r in records if r["strategy"] == name] for name in runs}
    strategies: dict[str, StrategyResult] = {}
    for name, mine in by_run.items():
        cats = sorted({str(r["category"]) for r in mine if r.get("category") is not None}, key=_category_key)
        strategies[name] = StrategyResult(
            records=len(mine),
            errors=sum(1 for r in mine if r.get("error")),
            setting=next((r.get("setting") or {} for r in mine), {}),
            metrics=_intervals(mine),
            categories={c: _intervals([r for r in mine if str(r.get("category")) == c]) for c in cats},
            latency_ms=_latency(mine),
            costs=answer_costs(mine),
        )
    comparisons = []
    for reference, name in combinations(runs, 2):
        for metric in SCORED_METRICS:
            a, b = per_question(by_run[name], metric), per_question(by_run[reference], metric)
            common = sorted(set(a) & set(b))
            if not common:
                continue
            diff, low, high, p = paired_bootstrap_diff(
                [a[q] for q in common], [b[q] for q in common], n_resamples=N_RESAMPLES, seed=SEED
            )
            comparisons.append(
                Comparison(strategy=name, reference=reference, metric=metric, n=len(common), diff=diff, low=low,
                           high=high, p=p)
            )  # fmt: skip
    return strategies, comparisons


def rescore_record(record: dict[str, Any], kind: str | None = None) -> dict[str, float]:
    """Recompute the scores of one published per-question record from its ranking and its answer alone.

    * ``recall@k`` (k in :data:`gemrag.eval.metrics.RECALL_KS`), when the record has ``gold_documents``: the one
      Recall@k rule of ``gemrag eval`` (:func:`gemrag.eval.metrics.recall_at_ks`) over ``retrieved``, each hit's
      ``docs`` naming the dataset documents it comes from;
    * ``recall@k`` when it has ``gold_answers`` instead (COVID-QA): whether a gold answer span occurs in one of the
      first k passages' ``text`` (:func:`gemrag.eval.metrics.answer_recall`);
    * ``evidence_recall``, when it has ``gold_turns``: the share of them among the turns the context nodes cover
      (``context_turns``, one list per context node; :mod:`gemrag.eval.evidence`).

    * ``em`` and ``f1`` of a free-form answer, when ``kind`` (the dataset kind, e.g. ``"covid_qa"``, ``"locomo"``) is
      given and the record has ``answer`` and ``gold_answers``: the scorer ``gemrag eval`` used
      (:func:`gemrag.eval.categories.score_free_form`: SQuAD EM / token F1, LoCoMo's official rules per category).

    * ``accuracy`` of a multiple-choice answer (a record scored on ``accuracy``): whether the chosen option's text is
      the gold option's (``gold_answers``).

    A record whose retrieval failed (``error``) scores 0 recall by documents (as the runner scores it).

    Returns:
        ``{metric: value in [0, 1]}`` for the metrics the record can be re-scored on (``{}`` for none).
    """
    out: dict[str, float] = {}
    gold, answers = record.get("gold_documents") or [], record.get("gold_answers") or []
    if gold and record.get("error"):
        out.update({f"recall@{k}": 0.0 for k in RECALL_KS})
    elif (gold or answers) and not record.get("error"):
        hits = record.get("retrieved") or []
        docs = {int(h["id"]): list(h.get("docs") or []) for h in hits}
        ranking = [Hit(int(h["id"]), cast(NodeKind, str(h["kind"])), 0.0, str(h.get("text", ""))) for h in hits]
        by_docs = lambda hit: docs.get(hit.node_id, [])  # noqa: E731
        out.update(recall_at_ks(ranking, RECALL_KS, by_docs, gold=gold, answers=[] if gold else answers))
    turns = record.get("gold_turns") or []
    if turns and not record.get("error"):
        covered = {t for node in record.get("context_turns") or [] for t in node}
        out["evidence_recall"] = sum(1 for t in turns if t in covered) / len(turns)
    scored = record.get("scores") or {}
    if "accuracy" in scored and record.get("answer") is not None and answers:
        out["accuracy"] = float(str(record["answer"]) in answers)
    if kind is not None and record.get("answer") is not None and answers and "f1" in scored:
        from gemrag.eval.categories import score_free_form
        from gemrag.eval.datasets import Question

        category = record.get("category")
        question = Question(
            id=str(record.get("question_id") or "q"),
            doc_ids=["-"],
            question="",
            answers=list(answers),
            category=category,
        )
        out["em"], out["f1"] = score_free_form(kind, question, str(record["answer"]))
    return out
