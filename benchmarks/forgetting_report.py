"""The reports of benchmarks/forgetting.py: its two Markdown tables (the leaks per store, strategy and scenario; the
answers of the removal scenarios per reader and prompt) and its record in ``results/`` (``--publish NAME``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from forgetting_erase import removal_of
from results_record import RESULTS, write_record

REMOVALS = ("delete", "sync", "purge", "delete_erase", "erase_reader", "erase_interrupt", "delete_indexing")
"""The scenarios after which no document answers the questions (abstention is measured there)."""


# -- tables ---------------------------------------------------------------------------------------------------------
def _q(m: dict[str, Any], key: str = "leaking_questions") -> str:
    """``k/5`` questions, or ``refused`` when the retrieval raised (e.g. a node resting on removed text)."""
    value = m["hits"].get(key)
    return "refused" if value is None else f"{value}/{m['hits']['questions']}"


def point_cells(m: dict[str, Any], replace: bool) -> list[str]:
    """hits, nodes, answers and caches at one point of a scenario."""
    hits = _q(m) + (f" (new {_q(m, 'edited_questions')})" if replace and m["hits"]["error"] is None else "")
    answers = f"{m['leaking_answers']}/{m['answers_asked']}" if m["answers_asked"] else "–"
    caches = f"{m['caches']['llm_responses']} · {m['caches']['embeddings']}"
    nodes = str(m["nodes"]["total"]) + (f" (chat {m['chat']['total']})" if "chat" in m else "")
    return [hits, nodes, answers, caches]


LEAK_HEADER = (
    "store", "strategy", "scenario", "found before", "hits", "nodes", "answers", "caches (LLM · emb)",
    "rebuilt: hits", "rebuilt: nodes", "rebuilt: answers", "rebuilt: caches", "rebuild calls / full",
    "rows · files open / closed",
)  # fmt: skip


def leak_row(row: dict[str, Any]) -> list[str]:
    """One line of the leak table (:data:`LEAK_HEADER`)."""
    head = [row["backend"], row["strategy"], row["scenario"]]
    width = len(LEAK_HEADER) - len(head)
    if "error" in row:
        return head + [f"error: {row['error'][:100]}"] + [""] * (width - 1)
    s, hits = row["figures"], row.get("base", {}).get("before", {}).get("hits")
    before = f"{hits['leaking_questions']}/{hits['questions']}" if hits else "–"
    if "skipped" in s:
        return head + [before] + ["n/a"] * (width - 1)
    replace = removal_of(row["scenario"]) == "replace"
    calls = f"{s['rebuild']['llm_calls']} / {row['full_build']['llm_calls']}"
    files = f"{sum(s['files_open'].values())} / {sum(s['files_closed'].values())}" if "files_closed" in s else "–"
    end = f"{sum(s['rows_closed'].values())} · {files}"
    cells = point_cells(s["after_removal"], replace) + point_cells(s["after_rebuild"], replace)
    return head + [before, *cells, calls, end]


def markdown(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def leak_table(results: dict[str, Any]) -> str:
    return markdown(LEAK_HEADER, [leak_row(r) for r in results["rows"]])


def abstention_table(results: dict[str, Any]) -> str:
    """Per strategy, reader and prompt, the answers of the removal scenarios (all stores) after the removal and
    after the rebuild: abstained / answered / leaked; and the answers (same prompt) holding a canary string before
    the removal. A total row per reader and prompt."""
    sums: dict[tuple[str, str, str], dict[str, list[int]]] = {}
    for row in results["rows"]:
        s = row.get("figures", {})
        if row["scenario"] not in REMOVALS or "after_removal" not in s:
            continue
        before = row["base"]["before"]["answers"]
        for point in ("after_removal", "after_rebuild"):
            for reader, prompts in s[point]["answers"].items():
                for p, got in prompts.items():
                    for key in ((row["strategy"], reader, p), ("all", reader, p)):
                        cell = sums.setdefault(key, {"after_removal": [0, 0, 0], "after_rebuild": [0, 0, 0],
                                                     "before": [0, 0]})  # fmt: skip
                        add = (got["abstained"], got["answered"], got["leaked"])
                        cell[point] = [x + y for x, y in zip(cell[point], add, strict=True)]
                        if point == "after_removal" and reader in before:
                            b = before[reader][p]
                            cell["before"] = [cell["before"][0] + b["leaked"], cell["before"][1] + len(b["answers"])]
    rows = []
    for (strategy, reader, prompt), cell in sorted(sums.items(), key=lambda kv: (kv[0][0] == "all", kv[0])):
        rows.append([strategy, reader, prompt] + [" / ".join(map(str, cell[p])) for p in ("after_removal",
                    "after_rebuild")] + [f"{cell['before'][0]}/{cell['before'][1]}"])  # fmt: skip
    header = ("strategy", "reader", "prompt", "after removal: abstained / answered / leaked",
              "after rebuild: abstained / answered / leaked", "before: canary in answer")  # fmt: skip
    return markdown(header, rows)


# -- resuming -----------------------------------------------------------------------------------------------------
def row_key(row: dict[str, Any]) -> tuple[str, str, str]:
    """A row's identity: (store, strategy, scenario)."""
    return row["backend"], row["strategy"], row["scenario"]


def finished(row: dict[str, Any]) -> bool:
    """A row that ran to its end (skipped included): kept by a resumed run; an error or a failed base is run again."""
    return "error" not in row and row["scenario"] != "base"


def resume(results: dict[str, Any], out: Path, asked: set[tuple[str, str, str]], redo: bool) -> set[tuple[str, ...]]:
    """Join a new run's ``results`` to the figures an earlier run of the same model wrote to ``out``: its finished
    rows are kept (with ``redo``, those the new run asks for are dropped: it runs them again), its strategies,
    scenarios and stores join the new run's, and its runs (command, seconds, load, rows) come before the new one.
    Returns the rows (:func:`row_key`) the new run must not run again.

    Raises:
        ValueError: ``out`` holds another model's figures (a fake run's rows beside a real model's, or the reverse).
    """
    import json

    previous = json.loads(out.read_text(encoding="utf-8")) if out.is_file() else {}
    if previous and (previous.get("model"), previous.get("fake")) != (results["model"], results["fake"]):
        raise ValueError(f"{out} holds the figures of model {previous.get('model')!r}, not {results['model']!r}")
    kept = [r for r in previous.get("rows", []) if finished(r) and not (redo and row_key(r) in asked)]
    for key in ("strategies", "scenarios", "backends"):
        results[key] = list(dict.fromkeys([*previous.get(key, []), *results[key]]))
    results["rows"] = kept
    earlier = [{"command": "an earlier run (its command not recorded)", "seconds": previous.get("wall_seconds")}]
    results["runs"] = previous.get("runs", earlier if previous else []) + results["runs"]
    results["wall_seconds_before"] = previous.get("wall_seconds", 0.0)
    return {row_key(r) for r in kept}


# -- the record --------------------------------------------------------------------------------------------------
def _point(m: dict[str, Any]) -> dict[str, Any]:
    """The leak counts at one point of a scenario (None: the retrieval was refused)."""
    return {
        "hits": m["hits"].get("leaking_questions"),
        "questions": m["hits"]["questions"],
        "nodes": m["nodes"]["total"],
        "answers": m["leaking_answers"],
        "answers_asked": m["answers_asked"],
        "llm_cache": m["caches"]["llm_responses"],
        "embeddings": m["caches"]["embeddings"],
    } | ({"chat": m["chat"]["total"]} if "chat" in m else {})


def record_row(row: dict[str, Any]) -> dict[str, Any]:
    """One scenario's figures for the record (``results/NAME.json``): the leak counts after the removal and after
    the rebuild, the rows and files at the end, the erase's runs, and the delete's wait while another process
    built."""
    out: dict[str, Any] = {k: row[k] for k in ("backend", "strategy", "scenario", "seconds", "load")}
    if "error" in row:
        return out | {"error": row["error"]}
    s = row["figures"]
    if "skipped" in s:
        return out | {"skipped": s["skipped"]}
    out |= {
        "found_before": row["base"]["before"]["hits"]["leaking_questions"],
        "after_removal": _point(s["after_removal"]),
        "after_rebuild": _point(s["after_rebuild"]),
        "rebuild_llm_calls": s["rebuild"]["llm_calls"],
        "full_build_llm_calls": row["full_build"]["llm_calls"],
        "rows_at_end": sum(s["rows_closed"].values()),
        "files_open": sum(s["files_open"].values()) if "files_open" in s else None,
        "files_at_end": sum(s["files_closed"].values()) if "files_closed" in s else None,
    }
    if "erase" in s:
        out["erase"] = {k: v for k, v in s["erase"].items() if k != "erase"} | {"final": s["erase"]["erase"]}
    out |= {k: s[k] for k in ("equal_without", "checks") if k in s}
    if row["scenario"] == "delete_indexing":
        out["delete"] = {k: s["removal"][k] for k in ("busy", "canary_kept_while_busy", "waited_seconds")}
    return out


GRID_NOTE = (
    "every scenario runs for every strategy on both stores; merged_relation's paid_nodes check concerns the strategies "
    "that merge a relation stated twice (hlgraph), edge_only's fact_edges those with fact edges between entities "
    "(the REMem strategies), elsewhere they are empty or null; both compare every strategy with a build without "
    "the removed document"
)
"""What the record says of which scenario applies to which strategy."""


def not_run(
    rows: Sequence[dict[str, Any]], strategies: Sequence[str], scenarios: Sequence[str]
) -> dict[str, list[str]]:
    """Per strategy, the ``store:scenario`` rows of the grid (``strategies`` x both stores x ``scenarios``) that no
    run finished."""
    done = {row_key(r) for r in rows if finished(r)}
    missing: dict[str, list[str]] = {}
    for s in strategies:
        for b in ("sqlite", "postgres"):
            missing.setdefault(s, []).extend(f"{b}:{c}" for c in scenarios if (b, s, c) not in done)
    return {s: m for s, m in missing.items() if m}


def publish(
    results: dict[str, Any],
    name: str,
    argv: Sequence[str] | None,
    root: Path = RESULTS,
    grid: tuple[Sequence[str], Sequence[str]] | None = None,
    not_run_why: str | None = None,
) -> Path:
    """Write the run as the record ``results/NAME.json`` (:mod:`results_record`): the run's settings, the runs that
    made it (a resumed run's pieces), one entry per scenario (:func:`record_row`, ordered by strategy, store and
    scenario), the leak totals at the end (every leak column summed; 0 is the goal), and, of the ``grid``
    (strategies, scenarios; default: those of the results), the rows no run finished (``not_run``, with
    ``not_run_why``)."""
    strategies, scenarios = grid or (results["strategies"], results["scenarios"])
    order = {k: i for i, k in enumerate([*strategies, "sqlite", "postgres", *scenarios])}
    ordered = sorted(results["rows"], key=lambda r: tuple(order.get(k, len(order)) for k in
                                                          (r["strategy"], r["backend"], r["scenario"])))  # fmt: skip
    rows = [record_row(r) for r in ordered]
    done = [r for r in rows if "after_rebuild" in r]
    equal = [r["equal_without"] for r in done if "equal_without" in r]
    totals = {
        "scenarios": len(rows),
        "errors": sum("error" in r for r in rows),
        "leaks_after_rebuild": sum(
            (r["after_rebuild"]["hits"] or 0)
            + r["after_rebuild"]["nodes"]
            + r["after_rebuild"]["answers"]
            + r["after_rebuild"].get("chat", 0)
            for r in done
        ),
        "chat_after_removal": sum(r["after_removal"].get("chat", 0) for r in done),
        "not_equal_to_a_build_without": sum(
            not (e["at_removal"]["equal"] and e["after_rebuild"]["equal"]) for e in equal
        ),
        "rows_at_end_after_erase": sum(r["rows_at_end"] for r in done if "erase" in r or r["scenario"] == "purge"),
        "files_at_end_after_erase": sum(
            r["files_at_end"] or 0 for r in done if "erase" in r or r["scenario"] == "purge"
        ),
    }
    figures = {k: results[k] for k in ("fake", "model", "readers", "strategies", "scenarios", "backends", "documents")}
    figures |= {"canary": results["canary"], "totals": totals, "rows": rows}
    figures |= {"grid": GRID_NOTE, "runs": results.get("runs", [])}
    if results.get("reruns"):  # scenarios run again by a later command, their rows replacing the first run's
        figures["reruns"] = results["reruns"]
    missing = not_run(results["rows"], strategies, scenarios)
    if missing:
        figures["not_run"] = {"rows": missing, "why": not_run_why or "not run"}
    load = [*results.get("load_average_start", [0.0])[:1], *results.get("load_average_end", [0.0])[:1]]
    starts = [r["load_start"] for r in results.get("runs", []) if "load_start" in r]
    ends = [r["load_end"] for r in results.get("runs", []) if "load_end" in r]
    if starts and ends:  # a run in pieces: the first piece's start, the last one's end
        load = [starts[0], ends[-1]]
    return write_record(name, "forgetting", figures, argv=argv, seconds=results["wall_seconds"], load=load, root=root)


def _first_run(rows: Sequence[dict[str, Any]]) -> str:
    """What the erase scenario's first run(s) did, over its rows (one store)."""
    scenario = rows[0]["scenario"]
    erases = [r["erase"] for r in rows if "erase" in r]
    if scenario == "erase_reader":
        held = sum(not e["first"]["complete"] for e in erases)
        named = sum(("memory.sqlite" in e["first"]["detail"]) or ("llm_cache" in e["first"]["detail"]) for e in erases)
        return f"incomplete {held}/{len(erases)}, reader named {named}/{len(erases)}; again: complete"
    if scenario == "erase_interrupt":
        kept = sum(e["first"].get("quarantine_kept", False) and e["first"].get("cache_kept", False) for e in erases)
        return f"SIGINT in the transaction: all kept {kept}/{len(erases)}; SIGINT before the rewrite; third: complete"
    if scenario == "delete_indexing":
        busy = sum(r["delete"]["busy"] for r in rows)
        waited = max(r["delete"]["waited_seconds"] for r in rows)
        return f"busy {busy}/{len(rows)}, then ran (waited at most {waited:.1f} s)"
    return "complete" if erases else "–"


def summary_table(record: dict[str, Any]) -> str:
    """The record's leaks per scenario and store, summed over its strategies (Markdown): canary strings in the hits
    after the removal, in hits, nodes and answers after the rebuild, in a chat's exchanges after the removal and after
    the rebuild (the ``chat`` scenario; ``–`` where a scenario counts no chat), in the rows and the (SQLite) files at
    the end, and what an erase scenario's first run did. Every complete erase ends the row with 0 rows and 0 files."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in record["rows"]:
        groups.setdefault((r["scenario"], r["backend"]), []).append(r)
    header = ("scenario", "store", "strategies", "hits after removal", "hits · nodes · answers after rebuild",
              "chat after removal · rebuild", "rows · files at end", "erase")  # fmt: skip
    lines = []
    for (scenario, backend), rows in groups.items():
        done = [r for r in rows if "after_rebuild" in r]
        errors = len(rows) - len(done)
        removal = sum(r["after_removal"]["hits"] or 0 for r in done)
        rebuilt = [sum(r["after_rebuild"][k] or 0 for r in done) for k in ("hits", "nodes", "answers")]
        files = "–" if backend != "sqlite" else str(sum(r["files_at_end"] or 0 for r in done))
        chats = [r for r in done if "chat" in r["after_removal"]]
        chat = " · ".join(str(sum(r[p].get("chat", 0) for r in chats)) for p in ("after_removal", "after_rebuild"))
        cells = [scenario, backend, f"{len(done)}" + (f" ({errors} errors)" if errors else ""), str(removal),
                 " · ".join(map(str, rebuilt)), chat if chats else "–",
                 f"{sum(r['rows_at_end'] for r in done)} · {files}",
                 _first_run(done) if done else "–"]  # fmt: skip
        lines.append(cells)
    return markdown(header, lines)


if __name__ == "__main__":
    import json
    import sys

    print(summary_table(json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))))
