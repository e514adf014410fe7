"""Token accounting of an evaluation in the shape of the UnWeaver paper's Table 1 (section 3, "Experimental
Results"): per method, LLM prompt tokens and LLM completion tokens, each for the index phase and the query phase,
and embedder tokens for the index and the query phase.

The paper reports totals over a dataset's questions (the question count stands in the row header, e.g.
"COVID-QA (1234 questions)", tokens in thousands, "-" where a method makes no LLM call to index). We report the
same totals and, beside them, the totals divided by the run's questions (index tokens amortized over them).

Attribution of builds (the ``index.jsonl`` entries, one per memory and run):

- a build *shared* with an earlier run (a retrieval-only ablation such as ``gem[search=rank]`` or a strategy
  variant such as ``unweaver[rule=pav]``, rebuilt in the same memory from what the first build stored) carries the
  cost of the build it shares and names it in ``shared_with``: its row shows that full cost (the run needs the
  build) and says whose build it is, and the ``distinct builds`` total counts each build once;
- a build served from the LLM cache (``llm_cached`` calls, e.g. a resumed evaluation) counts its calls at their
  original cost, so caching never makes a method look cheaper.

A shared build whose rebuild made LLM calls the cache had not seen (``rebuild.llm_calls > rebuild.llm_cached``:
a variant whose setting changes the build, e.g. a shorter summary length) is flagged ``‡``: its index columns
still show the shared build, and its own from-scratch cost was not measured (the rebuild reused what the first
build stored, such as extracted entities, without counting it); the rebuild's measured cost is ``rebuild``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["TOKEN_KEYS", "token_markdown", "token_table"]

#: The three token counts of every phase: LLM prompt, LLM completion, embedder.
TOKEN_KEYS = ("prompt_tokens", "completion_tokens", "embedding_tokens")
_CALL_KEYS = ("llm_calls", "llm_cached")


def _sum(entries: Sequence[dict[str, Any]], keys: Sequence[str]) -> dict[str, int]:
    return {k: int(sum(e.get(k) or 0 for e in entries)) for k in keys}


def _per(total: dict[str, int], n: int) -> dict[str, float]:
    return {k: (total[k] / n if n else 0.0) for k in TOKEN_KEYS}


def _new_calls(entry: dict[str, Any]) -> int:
    rebuild = entry.get("rebuild") or {}
    return max(int(rebuild.get("llm_calls", 0)) - int(rebuild.get("llm_cached", 0)), 0)


def token_table(
    runs: Sequence[str], records: Sequence[dict[str, Any]], index: Sequence[dict[str, Any]]
) -> dict[str, Any]:
    """The token table of an evaluation (UnWeaver Table 1's columns), from its records and index entries.

    Args:
        runs: the run names, in report order.
        records: per (question, run) records; each has ``strategy``, ``tokens`` (``{prompt_tokens,
            completion_tokens, embedding_tokens}``: retrieval + answer of that question) and optionally
            ``llm_calls`` / ``llm_cached``.
        index: per (memory, run) build entries with ``strategy``, the :data:`TOKEN_KEYS`, ``llm_calls``,
            optionally ``llm_cached``, ``shared_with`` (the run whose build it shares) and ``rebuild`` (the
            measured cost of rebuilding a shared build).

    Returns:
        ``{"runs": {name: row}, "distinct": totals}``. A row: ``questions`` (records), ``builds`` (index
        entries), ``index`` / ``query`` (totals: the :data:`TOKEN_KEYS`, ``llm_calls``, ``llm_cached``; ints),
        ``index_per_question`` / ``query_per_question`` (the :data:`TOKEN_KEYS` divided by ``questions``,
        floats; 0.0 without questions), ``shared_with`` (sorted names of the runs whose builds this row's
        index cost is, ``[]`` when all its builds are its own), ``shared_builds`` (how many) and
        ``rebuild_new_llm_calls`` (uncached LLM calls its shared rebuilds made: > 0 means a build-time
        setting: its index cost is the shared build's, not its own). ``distinct``: ``index`` summed over the builds that
        are not shared (each build once), ``query`` summed over all records, ``questions`` and ``builds``.
    """
    rows: dict[str, dict[str, Any]] = {}
    keys = (*TOKEN_KEYS, *_CALL_KEYS)
    for name in runs:
        recs = [r for r in records if r["strategy"] == name]
        builds = [e for e in index if e["strategy"] == name]
        shared = [e for e in builds if e.get("shared_with")]
        query = {k: int(sum(r["tokens"][k] for r in recs)) for k in TOKEN_KEYS} | _sum(recs, _CALL_KEYS)
        idx = _sum(builds, keys)
        rows[name] = {
            "questions": len(recs),
            "builds": len(builds),
            "index": idx,
            "query": query,
            "index_per_question": _per(idx, len(recs)),
            "query_per_question": _per(query, len(recs)),
            "shared_with": sorted({e["shared_with"] for e in shared}),
            "shared_builds": len(shared),
            "rebuild_new_llm_calls": sum(_new_calls(e) for e in shared),
        }
    own = [e for e in index if e["strategy"] in rows and not e.get("shared_with")]
    chosen = [r for r in records if r["strategy"] in rows]
    distinct = {
        "questions": len(chosen),
        "builds": len(own),
        "index": _sum(own, keys),
        "query": {k: int(sum(r["tokens"][k] for r in chosen)) for k in TOKEN_KEYS} | _sum(chosen, _CALL_KEYS),
    }
    return {"runs": rows, "distinct": distinct}


def _cells(phase_index: dict[str, Any], phase_query: dict[str, Any], no_llm: bool, fmt: str) -> list[str]:
    out = []
    for k in TOKEN_KEYS:
        llm = k != "embedding_tokens"
        out.append("—" if llm and no_llm else format(phase_index[k], fmt))
        out.append(format(phase_query[k], fmt))
    return out


def token_markdown(table: dict[str, Any]) -> list[str]:
    """Markdown lines of :func:`token_table`'s result: a totals table and a per-question table, columns as in
    UnWeaver Table 1 (LLM prompt index / query, LLM completion index / query, embedder index / query), then a
    note on shared and cached builds. "—": the run made no LLM call to index (as the paper's "-")."""
    rows, distinct = table["runs"], table["distinct"]
    if not rows:
        return []
    headers = ["RAG", "questions", "prompt index", "prompt query", "completion index", "completion query"]
    headers += ["embedder index", "embedder query"]
    sep = "|" + "|".join("---" for _ in headers) + "|"
    marks: dict[str, str] = {}
    for name, row in rows.items():
        if row["shared_with"]:
            owners = ", ".join(row["shared_with"])
            marks[name] = f" (†{owners}{' ‡' if row['rebuild_new_llm_calls'] else ''})"
    total_lines = ["| " + " | ".join(headers) + " |", sep]
    per_lines = list(total_lines)
    for name, row in rows.items():
        no_llm = not any(row["index"][k] for k in ("llm_calls", "prompt_tokens", "completion_tokens"))
        label = [name + marks.get(name, ""), str(row["questions"])]
        total_lines.append("| " + " | ".join(label + _cells(row["index"], row["query"], no_llm, ",d")) + " |")
        per = _cells(row["index_per_question"], row["query_per_question"], no_llm, ",.1f")
        per_lines.append("| " + " | ".join(label + per) + " |")
    total = ["all runs, each build once", str(distinct["questions"])]
    total += _cells(distinct["index"], distinct["query"], False, ",d")
    total_lines.append("| " + " | ".join(total) + " |")
    lines = ["", "## Tokens (UnWeaver Table 1 layout)", "", "Totals over the evaluated questions:", ""]
    lines += total_lines + ["", "Per question (index tokens amortized over the run's questions):", ""] + per_lines
    lines += [
        "",
        "LLM prompt / completion and embedder tokens; index: building the run's structures, summed over its "
        "memories; query: retrieval + answer, summed over its questions. LLM cache hits count at their original "
        "cost. †X: the run shares X's build in the same memory (its index columns are X's build, counted once "
        "in the last row). —: no LLM call to index.",
    ]
    if any(row["rebuild_new_llm_calls"] for row in rows.values()):
        lines[-1] += (
            " ‡: rebuilding made new LLM calls (a setting that changes the build): the index columns show the "
            "shared build, not this variant's own from-scratch cost (the rebuild's measured cost is `rebuild` in "
            "the run's index entries of results.json)."
        )
    return lines
