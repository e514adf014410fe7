"""``gemrag info``: what a memory holds and what building it cost, or the versions of one source (``--history``).

Registered in :mod:`gemrag.cli.main` with ``app.command("info")(info_command)``.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from gemrag.cli.options import (
    NO_MODEL_FLAGS,
    ConfigFile,
    MemoryOpt,
    ModelOptions,
    SetOpt,
    build_config,
    memory_target,
    model_options,
    open_memory,
)
from gemrag.console import cli_errors
from gemrag.errors import GemragError

__all__ = ["info_command"]

out = Console()


@model_options()
def info_command(
    memory: MemoryOpt = None,
    config: ConfigFile = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    history: Annotated[
        str | None,
        typer.Option(
            "--history",
            help="Show the versions of one source (its path, id, or the end of its path): when each was added and "
            "when it was replaced, removed, moved or deleted, with its sha256, and the sources holding its document.",
        ),
    ] = None,
    set_: SetOpt = None,
    models: ModelOptions = NO_MODEL_FLAGS,
) -> None:
    """Documents (and which were updated), chunks, summary nodes, models, tokens and seconds per phase, failures,
    and the spectrum report (top eigenvalues, Remark 2's estimated number of themes, Remark 3's Λ = Σλ²)."""
    with cli_errors():
        cfg = build_config(config, sets=set_, models=models)
        memory = memory_target(memory, cfg, existing=True)
        with open_memory(memory, cfg, None) as mem:
            versions = mem.store.document_history(history) if history is not None else None
            stats = mem.stats() if versions is None else {}
        if versions is not None and not versions:
            raise GemragError(f"no source {history!r} in {memory} (see `gemrag info` for the documents)")
    if versions is not None:
        _print_history(versions, as_json)
        return
    if as_json:
        out.print_json(json.dumps(stats, default=str))
        return
    _print_stats(stats)


def _print_history(versions: list[dict[str, Any]], as_json: bool) -> None:
    """The versions of one source, oldest first (``gemrag info --history``)."""
    if as_json:
        out.print_json(json.dumps(versions, default=str))
        return
    import datetime

    def when(t: float | None) -> str:
        return datetime.datetime.fromtimestamp(t).isoformat(" ", "seconds") if t else ""

    table = Table("version", "state", "added", "until", "sha256", "chars", "doc id", "source", title="history")
    for v in versions:
        state = "current" if v["current"] else str(v["reason"])
        table.add_row(
            str(v["version"]), state, when(v["added_at"]), when(v["ended_at"]), str(v["sha256"])[:12],
            str(v["n_chars"]), str(v["id"]), str(v["key"] or v["source"]),
        )  # fmt: skip
    out.print(table)
    for v in versions:
        if v["current"] and len(v.get("sources") or []) > 1:
            out.print(f"document {v['id']} is held by {len(v['sources'])} sources: " + ", ".join(v["sources"]))
    kept = [v for v in versions if v.get("text")]
    for v in kept:
        out.print(f"[bold]version {v['version']} text[/] ({v['n_chars']} chars): {v['text'][:200]}")


def _print_stats(stats: dict[str, Any]) -> None:
    out.print(f"[bold]memory[/] {stats['directory']}  strategy {stats['strategy']}")
    out.print(
        f"documents {len(stats['documents'])}, chunks {stats['chunks']} "
        f"(T = {stats['chunk_tokens']} tokens), summary nodes {stats['summary_nodes']}"
    )
    for d in stats["documents"]:
        updated = f", version {d['version']} (updated)" if int(d.get("version") or 1) > 1 else ""
        also = [h for h in stats.get("sources", {}).get(d["id"], []) if h != d["source"]]
        more = f"; also from {', '.join(also)}" if also else ""
        out.print(f"  [{d['id']}] {d['title']} ({d['n_chars']} chars) from {d['source']}{updated}{more}")
    states = stats.get("strategies") or {}
    if states:
        out.print("strategies: " + "; ".join(f"{name} {state}" for name, state in states.items()))
    titles = stats.get("titles") or {}
    if titles:
        read = ", ".join(f"{name} {'title + text' if on else 'text'}" for name, on in titles.items())
        out.print(f"chunks read as: {read}")
    out.print(f"models: {stats['models']}")
    out.print(f"parameters: {stats['params']}")
    out.print(f"index time (all runs): {stats['index_seconds']:.1f} s")
    rep = stats["strategy_report"] or {}
    if rep.get("phase_seconds"):
        out.print("index phases (all runs, s): " + ", ".join(f"{k} {v:.1f}" for k, v in rep["phase_seconds"].items()))
    table = Table(
        "phase",
        "prompt tokens",
        "completion tokens",
        "embedding tokens",
        "model seconds",
        "calls",
        "cache hits",
        title="usage (spent)",
    )
    for phase, u in stats["usage_by_phase"].items():
        table.add_row(
            phase,
            *(
                f"{u[k]:.1f}" if k == "seconds" else str(int(u[k] or 0))
                for k in (
                    "prompt_tokens",
                    "completion_tokens",
                    "embedding_tokens",
                    "seconds",
                    "calls",
                    "cached",
                )
            ),
        )
    out.print(table)
    spec = rep.get("spectrum")
    if spec:
        eig = ", ".join(f"{x:.4f}" for x in spec.get("top_eigenvalues", [])[:10])
        out.print(f"[bold]spectrum[/] of L (n = {spec.get('n')} chunks): eigenvalues by |λ|: {eig}")
        out.print(
            f"  Remark 2 estimated number of themes: {spec.get('estimated_themes')}; "
            f"Remark 3 Λ = Σλ² = {spec.get('spectral_energy', float('nan')):.4f}; trace {spec.get('trace', 0):.4f}"
        )
    sel = rep.get("eigen_selection")
    if sel:
        chosen = ", ".join(f"{x:.4f}" for x in sel.get("selected_eigenvalues", []))
        neg = ", ".join(f"{x:.4f}" for x in sel.get("negative_selected", [])) or "none"
        out.print(
            f"  summary eigenvectors ({rep.get('graph')} graph, skip_trivial={sel.get('skip_trivial')}): λ = {chosen};"
            f" negative among them: {neg}"
        )
    out.print(f"utility questions: {rep.get('utility_questions')}")
    fails = stats["failures"]
    out.print(f"recorded failures: {len(fails)}")
    for f in fails[-10:]:
        out.print(f"  [{f['phase']}] node {f['node_id']}: {f['message'][:160]}")
