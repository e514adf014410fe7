"""Aggregates, paired comparisons, the reports of an evaluation (``results.json``, ``results.md``) and the
small file helpers of its output directory (``records.jsonl``, ``run.json``).

The markdown table is laid out like the GEM-RAG paper's Tables I/II: one row per strategy with its
embedder, LLM and retrieval method, then accuracy with a 95% bootstrap interval, HARD accuracy, answer F1
and EM, passage Recall@2/@5, build cost (index tokens and seconds), query cost (tokens per question and
retrieval latency) and the share of summary nodes in the context (the paper's Table III). Columns the
dataset has no data for are left out. Below it: the token table in the UnWeaver paper's Table 1 layout
(:mod:`gemrag.eval.tokens`), a paired bootstrap of every strategy against ``gem`` (or the first strategy) and,
for an ablation, the sweep table (the paper's Figure 2 as numbers).
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from gemrag.config import Config
from gemrag.errors import ConfigError
from gemrag.eval.categories import category_tables, per_category
from gemrag.eval.metrics import latency_percentiles
from gemrag.eval.repeats import repeats_markdown, run_spread
from gemrag.eval.results import EvalResults, Summary
from gemrag.eval.stats import bootstrap_ci, paired_bootstrap_diff
from gemrag.eval.tokens import TOKEN_KEYS, token_markdown, token_table
from gemrag.eval.variants import ablation_target, sweep_label, variant_name
from gemrag.memory_settings import EARLIER_METHOD

__all__ = [
    "METRICS",
    "JsonlAppender",
    "Summary",
    "aggregate",
    "check_fingerprint",
    "markdown_report",
    "read_jsonl",
    "redact_config",
    "summarize",
    "write_results",
]

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


# -- markdown ----------------------------------------------------------------------------------------


#: What the report says of free-form answers evaluated without a judge (``gemrag eval`` judges only when one is named).
NOT_JUDGED_NOTE = (
    " Factual correctness: not judged. A judge runs only with --judge-model (or --judge-base-url): the embedded "
    "0.5B judge agreed with hand labels at Cohen's kappa 0.025, no better than chance "
    "(benchmarks/factual_agreement.py, docs/results.md), and judging costs about four LLM calls per answer."
)


def _pct_ci(ci: dict[str, float] | None) -> str | None:
    if ci is None:
        return None
    return f"{100 * ci['mean']:.1f} ({100 * ci['low']:.1f}–{100 * ci['high']:.1f})"


def _pct(ci: dict[str, float] | None) -> str | None:
    return None if ci is None else f"{100 * ci['mean']:.1f}"


def _tokens(values: dict[str, float], digits: int = 0) -> str:
    return " / ".join(f"{values[k]:,.{digits}f}" for k in TOKEN_KEYS)


def _retrieval_calls(name: str, a: dict[str, Any]) -> str | None:
    """Mean LLM calls of a question's retrieval, with its prompt tokens; None when no retrieval called the LLM."""
    spent = a.get("retrieval_llm")
    if not spent or not spent["llm_calls"]:
        return None
    return f"{spent['llm_calls']:.2f} ({spent['prompt_tokens']:,.0f} p)"


def _columns(results: EvalResults) -> list[tuple[str, Callable[[str, dict[str, Any]], str | None]]]:
    models = results.models
    return [
        ("Embedding", lambda name, a: models.get("embedder", "")),
        ("LLM", lambda name, a: models.get("llm", "") if results.answer else "—"),
        ("RAG", lambda name, a: name),
        ("Acc (95% CI)", lambda name, a: _pct_ci(a["accuracy"])),
        ("HARD Acc", lambda name, a: _pct(a["hard_accuracy"])),
        ("F1 (95% CI)", lambda name, a: _pct_ci(a["f1"])),
        ("EM", lambda name, a: _pct(a["em"])),
        ("Judged % (95% CI)", lambda name, a: _pct_ci(a["judged"])),
        ("R@2", lambda name, a: _pct(a["recall@2"])),
        ("R@5 (95% CI)", lambda name, a: _pct_ci(a["recall@5"])),
        ("Evidence R (95% CI)", lambda name, a: _pct_ci(a["evidence_recall"])),
        ("Citation R (95% CI)", lambda name, a: _pct_ci(a["citation_recall"])),
        ("Citation P (95% CI)", lambda name, a: _pct_ci(a["citation_precision"])),
        ("index tokens p / c / e", lambda name, a: _tokens(a["index"])),
        ("query tokens / q p / c / e", lambda name, a: _tokens(a["query_tokens"], 1)),
        ("retrieval LLM calls / q", _retrieval_calls),
        ("index s", lambda name, a: f"{a['index']['seconds']:.1f}"),
        (
            "latency p50 / p95 ms",
            lambda name, a: f"{1000 * a['latency']['p50']:.1f} / {1000 * a['latency']['p95']:.1f}" if a["n"] else None,
        ),
        ("answer s / q", lambda name, a: None if a["answer_seconds"] is None else f"{a['answer_seconds']:.1f}"),
        ("% summary", lambda name, a: None if a["summary_share"] is None else f"{100 * a['summary_share']:.1f}"),
    ]


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def markdown_report(results: EvalResults) -> str:
    """The report as markdown: header, the main table, the paired comparisons and the ablation sweeps."""
    s, d = results.summary, results.dataset
    mode = "answers by the LLM" if results.answer else "retrieval only"
    lines = [
        f"# gemrag eval: {d['name']} ({d['kind']})",
        "",
        f"{d['questions']} questions in {d['groups']} memories ({d['documents']} documents); budget B = "
        f"{results.budget} nodes; {mode}; {results.seconds:.1f} s this run.",
        "",
    ]
    aggs = s.aggregates
    columns = [(h, f) for h, f in _columns(results) if any(f(n, aggs[n]) is not None for n in results.runs)]
    rows = [[f(name, aggs[name]) or "—" for _, f in columns] for name in results.runs]
    lines += _table([h for h, _ in columns], rows)
    lines += [
        "",
        "Scores in %, 95% percentile-bootstrap intervals over questions. Index tokens: prompt / completion / "
        "embedding tokens to build, summed over the memories, cache hits counted at their original cost; "
        "query tokens: mean per question (retrieval + answer); retrieval LLM calls / q: mean LLM calls (and prompt "
        "tokens) of the retrieval alone; latency: retrieval only; answer s / q: mean "
        "seconds to generate an answer (LLM cache hits excluded); % summary: share of "
        "summary nodes in the LLM's context (GEM-RAG Table III). Recall@k: the gold documents among the documents "
        "of the first k passages (chunks) of one ranking of max(B, 5) nodes per strategy, read the same way for "
        "every strategy, committees included; derived nodes (summaries, relations, gists) take no rank. Index "
        "seconds: wall-clock of the first build in this output directory (a strategy built after another reuses "
        "its cached chunk embeddings); an ablation of a setting that changes retrieval alone (gem's search, the "
        "budget) shares its strategy's build.",
    ]
    if any(a["evidence_recall"] for a in aggs.values()):
        lines[-1] += (
            " Evidence R: share of a question's gold evidence turns whose line overlaps one of the B context "
            "nodes (summary nodes through their member chunks)."
        )
    if any(a["citation_recall"] for a in aggs.values()):
        lines[-1] += (
            " Citation R / P (cited answers, ALCE's citation recall and precision with gold passages as the judge): "
            "R = 1 if a passage the answer cites contains gold evidence (a gold document, or for LoCoMo a gold turn), "
            "P = share of cited passages that do (questions citing nothing are left out of P)."
        )
    if results.dataset.get("kind") == "qa":  # the user's own questions (gemrag.eval.loaders.qa_file)
        lines[-1] += (
            " Here R@k is per question: of the documents its sources name; without sources, 1 if one of its evidence "
            "passages and a chunk of a k-node retrieval overlap; without either, 1 if a gold answer occurs in one."
        )
    elif any("answer span" in str(r.get("recall_from")) for r in results.records):
        lines[-1] += (
            " Here R@k is answer recall (DPR's top-k accuracy): 1 if a gold answer span occurs in one "
            "of the first k passages, the gold passage being the whole paper."
        )
    if any(a["judged"] for a in aggs.values()):
        lines[-1] += (
            f" Judged %: RAGAS-style factual correctness (claim F1 against the reference answer, judged by "
            f"{results.models.get('judge', 'the LLM')}; UnWeaver section 3), over the judged answers "
            f"({sum(a['unjudged'] or 0 for a in aggs.values())} unjudged: malformed judge output)."
        )
    earlier = sum(1 for r in results.records if r.get("recall@2") is not None and "recall_rule" not in r)
    if earlier:  # resumed from records written under the earlier Recall@k rule
        lines[-1] += (
            f" {earlier} records hold Recall@k by the earlier rule (the first k distinct documents; a k-chunk "
            "election for committees): re-score them with benchmarks/rescore_recall.py."
        )
    if results.answer and "judge" not in results.models and any(a["f1"] for a in aggs.values()):
        lines[-1] += NOT_JUDGED_NOTE
    lines += repeats_markdown(s.repeats, getattr(results, "repeats", 1))
    lines += token_markdown(s.tokens) if s.tokens else []
    lines += category_tables(s.categories, d["kind"])
    for metric in dict.fromkeys(c["metric"] for c in s.comparisons):
        lines += ["", f"## Paired bootstrap vs {s.reference} ({METRICS.get(metric, metric)})", ""]
        rows = [
            [
                c["strategy"],
                f"{100 * c['diff']:+.1f}",
                f"{100 * c['low']:+.1f} – {100 * c['high']:+.1f}",
                f"{c['p']:.3f}",
                str(c["n"]),
            ]
            for c in s.comparisons
            if c["metric"] == metric
        ]
        lines += _table(["RAG", "Δ (points)", "95% CI", "p", "questions"], rows)
    for param, sweep in s.sweeps.items():
        lines += ["", f"## Ablation: {sweep_label(param, configured_strategy(results))}", ""]
        rows = [
            [
                str(r["value"]),
                _pct_ci(r["metric"]) or "—",
                "—" if r["summary_share"] is None else f"{100 * r['summary_share']:.1f}",
                str(r["n"]),
            ]
            for r in sweep
        ]
        lines += _table([param, f"{METRICS.get(s.metric or '', 'score')} (95% CI)", "% summary nodes", "n"], rows)
    return "\n".join(lines) + "\n"


def _clean(value: Any) -> Any:
    """Replace NaN / inf by None (JSON has no NaN) and paths by strings, recursively."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


def write_results(results: EvalResults) -> tuple[Path, Path]:
    """Write ``results.json`` (dataset, config, models, every record, index builds, summary) and
    ``results.md`` (:func:`markdown_report`) into ``results.out_dir``.

    Returns:
        The two paths.
    """
    payload = {
        "dataset": results.dataset,
        "config": results.config,
        "models": results.models,
        "budget": results.budget,
        "answer": results.answer,
        "runs": results.runs,
        "ablation": results.ablation,
        "seconds": results.seconds,
        "summary": asdict(results.summary),
        "index": results.index,
        "records": results.records,
    }
    json_path, md_path = results.out_dir / "results.json", results.out_dir / "results.md"
    json_path.write_text(json.dumps(_clean(payload), indent=1, ensure_ascii=False), encoding="utf-8")
    md_path.write_text(markdown_report(results), encoding="utf-8")
    return json_path, md_path


# -- files of the output directory ---------------------------------------------------------------------


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The records of a JSON Lines file (``[]`` when it does not exist).

    A line that is not valid JSON (a torn last line after an interruption) is skipped.
    """
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


class JsonlAppender:
    """Appends one JSON object per line to ``path`` and flushes each line, safely from several threads.

    If the file ends in a torn line (no final newline), a newline is written first so the next record
    starts on its own line.
    """

    def __init__(self, path: Path) -> None:
        self._lock = threading.Lock()
        torn = path.exists() and path.stat().st_size > 0 and not path.read_bytes().endswith(b"\n")
        self._file = path.open("a", encoding="utf-8")
        if torn:
            self._file.write("\n")

    def write(self, record: dict[str, Any]) -> None:
        """Append ``record`` (JSON-serializable) as one line and flush."""
        with self._lock:
            self._file.write(json.dumps(_clean(record), ensure_ascii=False) + "\n")
            self._file.flush()

    def close(self) -> None:
        """Close the file."""
        self._file.close()


def redact_config(config: Config) -> dict[str, Any]:
    """The configuration as JSON-ready data with API keys replaced by ``"***"``."""
    data = config.model_dump(mode="json")
    for section in ("llm", "embedder"):
        if data.get(section, {}).get("api_key"):
            data[section]["api_key"] = "***"
    return data


def check_fingerprint(out_dir: Path, fingerprint: dict[str, Any]) -> None:
    """Refuse to mix results of different configurations in one output directory.

    ``fingerprint`` (what the records depend on: dataset, budget, models, gem parameters...) is compared
    with ``out_dir/run.json`` from an earlier run, then written there.

    Raises:
        ConfigError: ``run.json`` exists and differs (the message names the differing keys).
    """
    path = out_dir / "run.json"
    if path.exists():
        old = json.loads(path.read_text(encoding="utf-8"))
        changed = sorted(k for k in set(old) | set(fingerprint) if old.get(k) != fingerprint.get(k))
        if changed:
            raise ConfigError(
                f"{out_dir} holds results of another configuration (differs in {', '.join(changed)}); "
                "use another --out directory or delete it"
            )
    path.write_text(json.dumps(fingerprint, indent=2), encoding="utf-8")
