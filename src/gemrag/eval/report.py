"""The reports of an evaluation: ``results.md`` (:func:`markdown_report`) and ``results.json``
(:func:`write_results`), over the aggregates and comparisons of :mod:`gemrag.eval.aggregates`.

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
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from gemrag.eval.aggregates import METRICS, configured_strategy
from gemrag.eval.categories import category_tables
from gemrag.eval.repeats import repeats_markdown
from gemrag.eval.results import EvalResults
from gemrag.eval.run_files import json_ready
from gemrag.eval.selection_bias import selection_bias_markdown
from gemrag.eval.tokens import TOKEN_KEYS, token_markdown
from gemrag.eval.variants import sweep_label

__all__ = ["NOT_JUDGED_NOTE", "markdown_report", "write_results"]


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
    """The report as markdown: header, the main table, the categories, a multiple-choice run's selection bias
    (:mod:`gemrag.eval.selection_bias`), the paired comparisons and the ablation sweeps."""
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
    lines += selection_bias_markdown(results.runs, results.records) if results.answer else []
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
    json_path.write_text(json.dumps(json_ready(payload), indent=1, ensure_ascii=False), encoding="utf-8")
    md_path.write_text(markdown_report(results), encoding="utf-8")
    return json_path, md_path
