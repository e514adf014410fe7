"""Aggregates and paired comparisons of an evaluation (:func:`summarize`, the :class:`gemrag.eval.results.Summary`
that ``results.json`` and ``results.md`` report, :mod:`gemrag.eval.report`).

Per run: every metric of :data:`METRICS` with a 95% percentile-bootstrap interval over questions, retrieval latency,
answer seconds, query and index tokens, the retrieval's own LLM calls and the share of summary nodes in the context
(the GEM-RAG paper's Table III) (:func:`aggregate`); then the token table in the UnWeaver paper's Table 1 layout
(:mod:`gemrag.eval.tokens`), the per-category figures, the spread over repeated runs, a paired bootstrap of every
run against the reference run (``--reference``, else the first) and, for an ablation, the sweep (the GEM-RAG paper's
Figure 2 as numbers).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gemrag.eval.categories import per_category
from gemrag.eval.metrics import latency_percentiles
from gemrag.eval.repeats import run_spread
from gemrag.eval.results import EvalResults, Summary
from gemrag.eval.stats import bootstrap_ci, paired_bootstrap_diff
from gemrag.eval.tokens import TOKEN_KEYS, token_table
from gemrag.eval.variants import ablation_target, variant_name
from gemrag.memory_settings import EARLIER_METHOD

__all__ = ["LEGACY_STRATEGY", "METRICS", "aggregate", "configured_strategy", "summarize"]

#: Per-question score metrics, in the order the primary metric is chosen: record key -> table header.
METRICS = {
    "accuracy": "Acc",
    "f1": "F1",
    "recall@5": "R@5",
    "recall@2": "R@2",
    "evidence_recall": "EvR",
    "citation_recall": "CitR",
    "citation_precision": "CitP",
    "em": "EM",
    "hard_accuracy": "HARD Acc",
    "judged": "Judged",
}


def _scores(records: Sequence[dict[str, Any]], metric: str) -> dict[str, float]:
    """``{question id: score}`` of ``metric`` for the records that have it (0/1 for accuracy); a question answered
    in several runs (``--runs``) scores the mean over its runs."""
    out: dict[str, list[float]] = {}
    for r in records:
        if metric == "accuracy":
            value = r.get("correct")
        elif metric == "hard_accuracy":
            value = r.get("correct") if r.get("difficult") is True else None
        else:
            value = r.get(metric)
        if value is not None:
            out.setdefault(r["question_id"], []).append(float(value))
    return {q: sum(v) / len(v) for q, v in out.items()}


def _answer_cached(record: dict[str, Any]) -> bool:
    """Whether a record's answer (not its retrieval) came from the LLM cache.

    ``llm_cached`` counts every cached call of the question (retrieval and answer); ``retrieval_llm.llm_cached`` the
    retrieval's own. Records written before ``retrieval_llm`` existed count all their cached calls as the answer's.
    """
    retrieval = record.get("retrieval_llm") or {}
    return (record.get("llm_cached") or 0) - (retrieval.get("llm_cached") or 0) > 0


def _ci(values: Sequence[float], n_resamples: int, seed: int) -> dict[str, float] | None:
    if not values:
        return None
    mean, low, high = bootstrap_ci(values, n_resamples=n_resamples, seed=seed)
    return {"mean": mean, "low": low, "high": high, "n": len(values)}


def aggregate(
    records: Sequence[dict[str, Any]],
    index: Sequence[dict[str, Any]],
    *,
    n_resamples: int = 10000,
    seed: int = 0,
) -> dict[str, Any]:
    """Aggregate one run's per-question ``records`` and its per-memory ``index`` builds.

    Returns:
        ``n`` (records), ``errors``; per metric of :data:`METRICS` a dict ``{mean, low, high, n}`` (scores
        in [0, 1], 95% percentile-bootstrap interval) or None when no question has it; ``latency``
        ``{p50, p95, mean}`` of retrieval seconds; ``answer_seconds`` (mean over the answers not served from the
        LLM cache, or None: a record counts as cached when its answer call was, not its retrieval's); ``query_tokens``
        (mean per question of each of :data:`TOKEN_KEYS`); ``retrieval_llm`` (mean per question of the timed
        retrieval's own ``llm_calls``, ``llm_cached``, ``prompt_tokens``, ``completion_tokens``; None for records
        without it); ``summary_share`` (summary nodes / context nodes,
        in [0, 1], None without context); ``index`` (sums over memories: ``seconds``, tokens, ``memories``,
        ``chunks``, ``summary_nodes``).
    """
    out: dict[str, Any] = {"n": len(records), "errors": sum(1 for r in records if r.get("error"))}
    for metric in METRICS:
        out[metric] = _ci(list(_scores(records, metric).values()), n_resamples, seed)
    judged = [r for r in records if "judged" in r]
    out["unjudged"] = sum(1 for r in judged if r["judged"] is None) if judged else None
    out["latency"] = latency_percentiles([r["retrieval_seconds"] for r in records])
    # answer generation time, over the answers the LLM computed (a cached answer takes ~0 s); a retrieval served
    # from the cache (a variant sharing another run's steps) does not make its answer a cached one
    answered = [r["answer_seconds"] for r in records if r.get("answer_seconds") is not None and not _answer_cached(r)]
    out["answer_seconds"] = sum(answered) / len(answered) if answered else None
    n = max(len(records), 1)
    out["query_tokens"] = {k: sum(r["tokens"][k] for r in records) / n for k in TOKEN_KEYS}
    spent = [r["retrieval_llm"] for r in records if r.get("retrieval_llm")]  # absent in records before it existed
    out["retrieval_llm"] = {k: sum(c[k] for c in spent) / len(spent) for k in spent[0]} if spent else None
    hits = sum(r["context_hits"] for r in records)
    out["summary_share"] = sum(r["summary_hits"] for r in records) / hits if hits else None
    keys = ("seconds", *TOKEN_KEYS, "chunks", "summary_nodes")
    out["index"] = {k: sum(e.get(k, 0) for e in index) for k in keys} | {"memories": len(index)}
    return out


def summarize(results: EvalResults, *, n_resamples: int = 10000, seed: int = 0) -> Summary:
    """Aggregates per run, paired bootstrap differences against the reference run, and ablation sweeps."""
    by_run = {name: [r for r in results.records if r["strategy"] == name] for name in results.runs}
    aggregates = {
        name: aggregate(recs, [e for e in results.index if e["strategy"] == name], n_resamples=n_resamples, seed=seed)
        for name, recs in by_run.items()
    }
    summary = Summary(aggregates=aggregates, categories=per_category(results.records, results.runs))
    summary.tokens = token_table(results.runs, results.records, results.index)
    repeats = getattr(results, "repeats", 1)
    if repeats > 1:
        summary.repeats = {name: run_spread(recs, repeats) for name, recs in by_run.items()}
    if not results.runs:
        return summary
    chosen = getattr(results, "reference", None)
    ref = chosen if chosen in results.runs else results.runs[0]  # --reference, else the first run given
    summary.reference = ref
    primary = ("accuracy", "f1", "recall@5", "recall@2", "evidence_recall")
    metric = next((m for m in primary if aggregates[ref][m]), None) or next(
        (m for m in primary if any(a[m] for a in aggregates.values())), None
    )
    summary.metric = metric
    if metric is None:
        return summary
    # Recall@5 comes with Recall@2 (HippoRAG and REMem report both).
    metrics = [metric] + (["recall@2"] if metric == "recall@5" and aggregates[ref]["recall@2"] else [])
    metrics += ["judged"] if metric != "judged" and aggregates[ref]["judged"] else []  # UnWeaver's metric
    for metric_name, name in ((m, n) for m in metrics for n in results.runs):
        if name == ref:
            continue
        ref_scores = _scores(by_run[ref], metric_name)
        scores = _scores(by_run[name], metric_name)
        common = sorted(set(scores) & set(ref_scores))
        if not common:
            continue
        diff, low, high, p = paired_bootstrap_diff(
            [scores[q] for q in common], [ref_scores[q] for q in common], n_resamples=n_resamples, seed=seed
        )
        summary.comparisons.append(
            {
                "strategy": name,
                "reference": ref,
                "metric": metric_name,
                "n": len(common),
                "diff": diff,
                "low": low,
                "high": high,
                "p": p,
            }
        )
    default = configured_strategy(results)
    for param, values in results.ablation.items():
        rows = []
        strategy, key = ablation_target(param, default)
        for value in values:
            name = variant_name(strategy, {key: value})
            agg = aggregates.get(name)
            if agg is not None:
                rows.append(
                    {
                        "value": value,
                        "strategy": name,
                        "metric": agg[metric],
                        "summary_share": agg["summary_share"],
                        "n": agg["n"],
                    }
                )
        summary.sweeps[param] = rows
    return summary


#: What an evaluation that recorded no ``config.strategy`` (results written by early releases) was configured with.
LEGACY_STRATEGY = EARLIER_METHOD


def configured_strategy(results: EvalResults) -> str:
    """The strategy an evaluation was configured with (``config.strategy``; :data:`LEGACY_STRATEGY` when absent, the
    default of the releases that did not record it): its ablation keys without a strategy (``questions``) are that
    strategy's settings (:func:`gemrag.eval.variants.ablation_target`).
    """
    return str(results.config.get("strategy") or LEGACY_STRATEGY)
