"""Forgetting, measured: a canary document is deleted, replaced and synced away; does any of its text remain?

A canary harness over every registered strategy (``fused`` and ``iterative`` included) on both stores. The corpus
is a folder of ``--background`` background documents (the first passage, about ``--chars`` characters, of each of
the first QuALITY dev stories in ``../shared/data/quality/quality_dev5.jsonl``; without that file, consecutive
passages of ``examples/quality/lost_in_translation.txt``) and one canary document written here
(``vault-note.txt``: a made-up maintenance note full of invented names and codes — ``MAGENTA-4471``,
``Ilse Varga``, ``Zephyr station``, ``Quillon Maru``, ``14 March 2031`` ...). Five differently worded questions ask
about the canary; none of them names a canary string, so a canary string in anything the memory returns came
from the canary's text.

Per strategy, one **base** memory (SQLite) is built over the folder (``Memory.add([folder])`` then ``index``) and
asked the five questions: ``found before`` is how many of their contexts hold a canary string (the check means
nothing if the canary was never retrievable), and the answers, cached in the memory, are there for a purge to
erase. Then every **scenario** runs on its own copy of the base (a directory copy; on PostgreSQL
``gemrag.store.copy.copy_memory`` into a fresh schema), so the scenarios are independent while all reuse the
base's LLM cache:

* ``delete``: ``Memory.delete(<the canary's path>)``;
* ``replace``: the canary file is rewritten with an EDITED note (other names and codes: its own strings may
  appear, the original's must not) and the folder added again (``Memory.add([folder])``: the source is updated);
* ``sync``: the canary file is removed and the folder added with ``sync=True`` (``gemrag index --sync``);
* ``purge``: ``Memory.delete(<path>, purge=True)`` (the text erased from caches, kept versions and, physically, from
  files and rows); ``n/a`` while ``Memory.delete`` has no ``purge`` keyword;
* ``edit_erase``, ``delete_erase``, ``erase_reader``, ``erase_interrupt``, ``delete_indexing``: ``replace`` or
  ``delete`` (``delete_indexing``: while another process indexes), then after the rebuild, from a new session,
  ``Memory.erase()`` (with another process reading, or interrupted by ``SIGINT``, then run again:
  ``benchmarks/forgetting_erase.py``); their rows and files at the end are counted after the erase;
* ``chat``, ``merged_relation``, ``edge_only`` (``benchmarks/forgetting_derived.py``: each on a small memory of its
  own, not a copy of the base): a chat reply rephrasing a note's vault code, the note deleted (exchanges in the live
  session's window, in a new session's history and among the documents are counted too); a relation two documents
  state, the one that worded it first deleted; an edge only the deleted document made. The last two set every
  strategy's published structures and hits against a build without the document (stand-in models only).

After the removal (no rebuild yet), then after ``index`` rebuilt the strategy, canary strings are counted
(case-insensitively) in: the hits of the five questions and the chunk texts of their provenance passages; every
node a reader sees (derived nodes' text and meta, chunks) and every utility question; the answers to the five
questions (each reader, two prompts: the default answer prompt, which asks for a best guess when the context lacks
the answer, and the ``abstain`` prompt, which asks to say it is not mentioned); the memory's LLM cache (responses)
and embedding cache (entries whose key is the embedding of a text holding a canary string: the texts are not
stored there); and every row of every table of the memory. At the end (memory closed), every file of a SQLite
memory directory is searched byte by byte. The rebuild's LLM backend calls (cache misses) are set against those
of a full build of the same remaining documents in a fresh memory with a cold cache (a property of the strategy
and the documents, so measured once, on SQLite).

Answers after a removal are cached in a separate store shared by all scenarios (``<workdir>/answer-cache``), so
identical contexts (delete, sync and purge on both stores usually give the same) cost one answer; the answers
asked before the removal go to the memory's own cache, as a user's would.

Abstention: for ``delete``, ``sync`` and ``purge`` the questions can only be answered from the removed document;
an answer *abstains* when it is empty or says the answer is not there (``not mentioned`` — the wording the
``abstain`` prompt asks for — ``not in the context``, ``no information``, ``does not say``, ``I don't know``,
``cannot determine`` ..., :data:`ABSTAINS`), else it *answers* (invents, or guesses); it *leaks* when it holds a
canary string. With ``--readers`` several reader models answer over the same contexts (the build uses the
configured model).

Run (fake: the unit tests' stand-ins ``tests/fakes.py``, RAPTOR reducing by PCA, exact call counts, seconds per
strategy; real: the configured embedded models)::

    python benchmarks/forgetting.py --fake --strategies gem,dense,bm25 --backends sqlite
    python benchmarks/forgetting.py --fake --out forgetting-fake.json           # every strategy, both stores
    GEMRAG_LLM__MODEL=qwen2.5-coder-0.5b python benchmarks/forgetting.py --workdir /tmp/forget \\
        --readers qwen2.5-coder-0.5b,qwen2.5-coder-1.5b --out forgetting.json

Resumable: the rows already in ``--out`` (default ``<workdir>/forgetting.json``) that finished are kept and not run
again (``--redo`` runs the rows asked again; ``--no-run`` runs none: it prints and publishes what ``--out`` holds),
so a grid is run in pieces, each command listed under ``runs``.
``--workdir`` keeps the memories (one folder per LLM model): a rerun reuses the base memories, the full-build
counts and the answer cache, and redoes the scenarios (fresh copies), so after a change it costs little;
``--publish NAME`` also writes the record ``results/NAME.json`` (the leak counts of every scenario, the erase runs,
the totals, and under ``not_run`` the rows of the grid that no run finished, with ``--not-run-why``: with ``--fake``
every strategy x both stores x every scenario, else the strategies and scenarios asked for; :func:`publish`).
``--fresh`` starts that model's folder over (needed when a change alters what a build makes). PostgreSQL:
``--postgres-url postgresql://...`` (one schema per scenario, ``fg_<model>_<strategy>_<scenario>``, replaced on each
run), else a pgserver started here in a fresh ``/tmp`` directory, removed at the end.

Columns of the first table (per store, strategy and scenario; the goal is 0 in every leak column):

* ``found before``: questions whose context held a canary string before the removal (k/5);
* ``hits``: questions whose context (hit texts and their passages' chunk texts) holds a canary string after the
  removal, no rebuild yet; ``refused`` when the retrieval raised instead (a strategy refusing to return a node
  that rests on removed text until it is rebuilt: the error is in the JSON); replace: ``new k/5`` counts the
  contexts holding the edited note's strings;
* ``nodes``: nodes a reader sees (derived nodes' text and meta, chunks) and utility questions holding a canary
  string;
* ``answers``: answers holding a canary string, of all answers (every reader, both prompts; ``–``: none asked,
  the retrieval was refused);
* ``caches (LLM · emb)``: LLM cache responses (their stored prompts included) holding a canary string · embedding
  cache entries of texts holding one;
* ``rebuilt: ...``: the same four after ``index`` rebuilt the strategy;
* ``rebuild calls / full``: LLM backend calls of that ``index`` / of a full build from scratch;
* ``rows · files open / closed``: at the end, rows of the memory's tables holding a canary string · occurrences
  of canary strings in the files of a SQLite memory directory with the memory still open (its WAL included) /
  after it was closed.

The second table gives, per strategy, reader and prompt, the answers of the removal scenarios, whose questions
only the removed document could answer (``delete``, ``sync``, ``purge``; every store), after the removal and
after the rebuild: abstained / answered / leaked; and how many answers held a canary string before the removal
(the reader did use the canary: an abstention after it is forgetting, not a reader that never answers). A total row
per reader and prompt ends it. The load average and wall times are printed beside each step; ``--out`` writes
every figure, the answers' texts included.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import os
import shlex
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling modules (benchmarks/ is no package)
from forgetting_corpus import (  # noqa: E402
    CANARY,
    DATA,
    EDITED,
    EDITED_NEEDLES,
    NEEDLES,
    QUESTIONS,
    Corpus,
    Models,
    background_documents,
    make_models,
    slug,
    write_corpus,
)
from forgetting_derived import DERIVED_SCENARIOS, run_derived  # noqa: E402
from forgetting_erase import ERASE_SCENARIOS, delete_while_indexing, erase_later, removal_of  # noqa: E402
from forgetting_report import abstention_table, leak_row, leak_table, publish, resume  # noqa: E402
from forgetting_scan import measure, measure_answers, measure_hits, measure_nodes, retrieve_all, scan_files, scan_rows  # noqa: E402
from forgetting_stores import fresh_location  # noqa: E402
from pg_server import postgres_server  # noqa: E402

SCENARIOS = ("delete", "replace", "sync", "purge", *ERASE_SCENARIOS, *DERIVED_SCENARIOS)


def load_average() -> float:
    """The 1-minute load average (0 where the system has none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return 0.0


# -- steps ----------------------------------------------------------------------------------------------------------
@dataclass
class Run:
    """What every step needs: arguments, models, corpus, the working folder, the PostgreSQL URL, and the
    results so far (written to ``out`` after each step)."""

    args: argparse.Namespace
    models: Models
    corpus: Corpus
    root: Path
    pg_url: str | None
    results: dict[str, Any]
    out: Path
    purge: bool
    started: float = field(default_factory=time.perf_counter)
    kept: int = 0
    """Rows an earlier run finished (kept from ``out``)."""
    entry: dict[str, Any] = field(default_factory=dict)
    """This run's entry in ``results["runs"]`` (command, commit, seconds, load, rows run)."""

    def save(self) -> None:
        seconds = time.perf_counter() - self.started
        self.entry |= {"seconds": round(seconds, 1), "load_end": load_average(),
                       "rows": len(self.results["rows"]) - self.kept}  # fmt: skip
        self.results["wall_seconds"] = round(self.results.get("wall_seconds_before", 0.0) + seconds, 1)
        self.out.write_text(json.dumps(self.results, indent=2, ensure_ascii=False), encoding="utf-8")

    def say(self, message: str) -> None:
        wall = time.perf_counter() - self.started
        print(f"[{wall:8.1f} s, load {load_average():5.2f}] {message}", flush=True)


def build_base(run: Run, strategy: str) -> dict[str, Any]:
    """The strategy's base memory (SQLite): the corpus added and indexed, the questions retrieved and answered
    (answers cached in the memory). Reused from ``base.json`` when a previous run finished it."""
    folder = run.root / "sqlite" / strategy
    directory, saved = folder / "base", folder / "base.json"
    if saved.is_file() and directory.is_dir():
        return dict(json.loads(saved.read_text(encoding="utf-8"))) | {"reused": True}
    resumed = directory.exists()
    t0 = time.perf_counter()
    with run.models.session(directory) as (mem, llm):
        mem.add([run.corpus.folder])
        report = mem.index(strategy)
        calls, seconds = llm.calls, time.perf_counter() - t0
        hits, error = retrieve_all(mem, strategy, run.args.budget)
        if hits is None:
            raise RuntimeError(f"the base memory does not answer: {error}")
        before = {
            "hits": measure_hits(mem, hits, error),
            "nodes": measure_nodes(mem.store),
            "answers": measure_answers(run.models, mem, hits, None),
        }
        chunks = len(mem.store.nodes("chunk"))
    base = {"build_llm_calls": calls, "build_report_llm_calls": report.llm_calls, "build_seconds": round(seconds, 2),
            "resumed": resumed, "chunks": chunks, "before": before}  # fmt: skip
    saved.write_text(json.dumps(base, indent=2, ensure_ascii=False), encoding="utf-8")
    return base


def full_build(run: Run, strategy: str, variant: str) -> dict[str, Any]:
    """LLM calls of a build from scratch (fresh memory, cold cache) of the documents a scenario leaves: the
    background (``rest``) or the background and the edited canary (``edited``). Reused when saved."""
    folder = run.root / "sqlite" / strategy
    directory, saved = folder / f"scratch-{variant}", folder / f"scratch-{variant}.json"
    if saved.is_file():
        return dict(json.loads(saved.read_text(encoding="utf-8")))
    shutil.rmtree(directory, ignore_errors=True)  # a cold cache: an interrupted build would count too few calls
    files = [*run.corpus.background, *([run.corpus.edited] if variant == "edited" else [])]
    t0 = time.perf_counter()
    with run.models.session(directory) as (mem, llm):
        mem.add(files)
        report = mem.index(strategy)
        figures = {"llm_calls": llm.calls, "report_llm_calls": report.llm_calls,
                   "seconds": round(time.perf_counter() - t0, 2)}  # fmt: skip
    shutil.rmtree(directory, ignore_errors=True)
    saved.write_text(json.dumps(figures, indent=2), encoding="utf-8")
    return figures


def scenario_location(run: Run, backend: str, strategy: str, scenario: str) -> str | Path:
    """A fresh copy of the strategy's base memory for one scenario: a directory copy, or a new PostgreSQL schema."""
    base = run.root / "sqlite" / strategy / "base"
    target = fresh_location(run.root, run.pg_url, run.results["model"], backend, strategy, scenario)
    if isinstance(target, Path):
        shutil.copytree(base, target)
    else:
        from gemrag.store.copy import copy_memory

        copy_memory(base, target)
    return target


def remove_canary(run: Run, mem: Any, location: str | Path, strategy: str, scenario: str) -> dict[str, Any]:
    """The scenario's removal; what it reported."""
    if scenario == "delete_indexing":
        return delete_while_indexing(run.args, run.models, mem, location, strategy, str(run.corpus.canary))
    corpus, scenario = run.corpus, removal_of(scenario)
    if scenario in ("delete", "purge"):
        kwargs = {"purge": True} if scenario == "purge" else {}
        report = mem.delete(str(corpus.canary), **kwargs)
        return {"chunks": report.chunks, "derived_nodes": report.derived_nodes, "pruned": report.pruned,
                "withdrawn": report.withdrawn, "report_llm_calls": report.llm_calls}  # fmt: skip
    with corpus.changed(EDITED if scenario == "replace" else None):
        source = mem.add([corpus.folder], sync=scenario == "sync")
    return {"sources": source.describe(removed=scenario == "sync"), "chunks_deleted": source.chunks_deleted,
            "chunks_new": source.chunks_new, "derived_nodes": source.derived_nodes, "pruned": source.pruned,
            "withdrawn": source.withdrawn}  # fmt: skip


def run_scenario(run: Run, backend: str, strategy: str, scenario: str) -> dict[str, Any]:
    """One scenario on a fresh copy of the base: the removal, the counts, the rebuild, the counts again, and the
    rows and files at the end."""
    if scenario == "purge" and not run.purge:
        return {"skipped": "Memory.delete has no purge keyword yet"}
    location = scenario_location(run, backend, strategy, scenario)
    figures: dict[str, Any] = {"location": str(location) if backend == "sqlite" else str(location).split("@")[-1]}
    with run.models.session(location) as (mem, llm):
        t0 = time.perf_counter()
        figures["removal"] = remove_canary(run, mem, location, strategy, scenario)
        figures["removal"] |= {"llm_calls": llm.calls, "seconds": round(time.perf_counter() - t0, 3)}
        figures["after_removal"] = measure(
            run.models, mem, location, strategy, run.args.budget, run.models.answer_cache
        )
        calls, t0 = llm.calls, time.perf_counter()
        report = mem.index(strategy)
        figures["rebuild"] = {"llm_calls": llm.calls - calls, "report_llm_calls": report.llm_calls,
                              "seconds": round(time.perf_counter() - t0, 2), "load": load_average()}  # fmt: skip
        figures["after_rebuild"] = measure(
            run.models, mem, location, strategy, run.args.budget, run.models.answer_cache
        )
        if backend == "sqlite":
            figures["files_open"] = scan_files(Path(location))
    if scenario in ERASE_SCENARIOS:
        figures["erase"] = erase_later(run.models, location, scenario)
    figures["rows_closed"] = scan_rows(location)
    if backend == "sqlite":
        figures["files_closed"] = scan_files(Path(location))
    return figures


def prepare(run: Run, strategy: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The strategy's base memory and its full builds from scratch (``rest``, ``edited``); empty dicts, and a row
    saying why, when they failed (one strategy failing must not lose the others' figures)."""
    try:
        t0 = time.perf_counter()
        base = build_base(run, strategy)
        took = "reused" if base.get("reused") else f"{time.perf_counter() - t0:.1f} s"
        found_before = base["before"]["hits"]["leaking_questions"]
        run.say(f"{strategy}: base built ({base['build_llm_calls']} LLM calls, {base['chunks']} chunks, "
                f"{took}); canary found before {found_before}/{len(QUESTIONS)}")  # fmt: skip
        full = {v: full_build(run, strategy, v) for v in ("rest", "edited")}
        run.say(f"{strategy}: full builds from scratch {full['rest']['llm_calls']} / "
                f"{full['edited']['llm_calls']} LLM calls")  # fmt: skip
        return base, full
    except Exception as exc:
        run.say(f"{strategy}: FAILED {type(exc).__name__}: {exc}")
        run.results["rows"].append({"backend": "-", "strategy": strategy, "scenario": "base", "error": repr(exc),
                                    "traceback": traceback.format_exc(limit=-4)})  # fmt: skip
        run.save()
        return {}, {}


def run_row(run: Run, backend: str, strategy: str, scenario: str, base: dict[str, Any], full: dict[str, Any]) -> None:
    """One row (store, strategy, scenario): run, timed, appended to the results and saved; its leak line printed."""
    row: dict[str, Any] = {"backend": backend, "strategy": strategy, "scenario": scenario}
    t0 = time.perf_counter()
    try:
        if scenario in DERIVED_SCENARIOS:
            model = run.results["model"]
            row |= run_derived(run.models, lambda name: fresh_location(run.root, run.pg_url, model, backend,
                                                                       strategy, name), strategy, scenario)  # fmt: skip
        else:
            row |= {"base": base, "full_build": full["edited" if removal_of(scenario) == "replace" else "rest"]}
            row["figures"] = run_scenario(run, backend, strategy, scenario)
    except Exception as exc:
        row["error"] = f"{type(exc).__name__}: {exc}"
        row["traceback"] = traceback.format_exc(limit=-4)
    finally:
        run.corpus.restore()
    row["seconds"] = round(time.perf_counter() - t0, 2)
    row["load"] = load_average()
    run.results["rows"].append(row)
    run.save()
    run.say(f"{backend} · {strategy} · {scenario}: {row['seconds']:.1f} s | {' | '.join(leak_row(row)[3:])}")


# -- main -----------------------------------------------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fake", action="store_true", help="stand-in models (tests/fakes.py)")
    parser.add_argument("--strategies", help="comma-separated (default: every registered strategy)")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS), help=f"comma-separated of {', '.join(SCENARIOS)}")
    parser.add_argument("--backends", default="sqlite,postgres", help="sqlite, postgres or both (default both)")
    parser.add_argument("--postgres-url", help="a PostgreSQL server (default: pgserver in a fresh /tmp directory)")
    parser.add_argument("--data", type=Path, default=DATA, help="QuALITY jsonl of the background stories")
    parser.add_argument("--background", type=int, default=3, help="background documents (default 3)")
    parser.add_argument("--chars", type=int, default=2500, help="characters per background document (default 2500)")
    parser.add_argument("--budget", type=int, help="context nodes (default: each strategy's default)")
    parser.add_argument("--llm-model", help="the LLM that builds and reads (default: the configuration's)")
    parser.add_argument("--readers", help="more reader models answering over the same contexts (comma-separated)")
    parser.add_argument("--workdir", type=Path, help="where the memories live (default: a temporary folder)")
    parser.add_argument("--out", type=Path, help="write every figure as JSON (default: <workdir>/forgetting.json)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars for the builds")
    parser.add_argument("--publish", metavar="NAME", help="also write the record results/NAME.json")
    parser.add_argument(
        "--fresh", action="store_true", help="start over: delete this model's memories, counts and caches first"
    )
    parser.add_argument(
        "--redo", action="store_true", help="run the rows asked again even when --out holds them (else kept, skipped)"
    )
    parser.add_argument("--no-run", action="store_true", help="run no row: print (and publish) what --out holds")
    parser.add_argument("--not-run-why", help="the record's reason for the rows of the grid no run has finished")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    from gemrag.eval.publish_origin import check_publish_name, code_version
    from gemrag.memory import Memory
    from gemrag.store import open_store
    from gemrag.strategies import available

    strategies = [s.strip() for s in (args.strategies or ",".join(available())).split(",") if s.strip()]
    unknown = sorted(set(strategies) - set(available()))
    scenarios = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    if unknown or set(scenarios) - set(SCENARIOS) or set(backends) - {"sqlite", "postgres"}:
        print(f"unknown strategy, scenario or backend in {strategies + scenarios + backends}", file=sys.stderr)
        return 2
    if args.publish:
        check_publish_name(args.publish)  # before the run, not after it
    models = make_models(args)
    model = "fake" if args.fake else str(models.config.llm.model)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="gemrag-forgetting-"))
    root = workdir / slug(model)
    if args.fresh:
        shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True, exist_ok=True)
    if args.fake and (args.readers or args.llm_model):
        print("--fake: --readers and --llm-model are ignored (the stand-in LLM builds and reads)", flush=True)
    out = args.out or workdir / "forgetting.json"
    purge = "purge" in inspect.signature(Memory.delete).parameters
    docs = background_documents(args.data, args.background, args.chars)
    corpus = write_corpus(root, docs)
    keys_file = root / "canary_embedding_keys.json"
    if keys_file.is_file():
        models.canary_keys.update(json.loads(keys_file.read_text(encoding="utf-8")))
    results: dict[str, Any] = {
        "fake": args.fake, "model": model, "readers": list(models.readers), "strategies": strategies,
        "scenarios": scenarios, "backends": backends, "purge_supported": purge, "workdir": str(workdir),
        "documents": [{"title": t, "chars": len(x)} for t, x in docs] + [{"title": "vault-note (canary)",
                                                                          "chars": len(CANARY)}],
        "canary": {"needles": list(NEEDLES), "edited_needles": list(EDITED_NEEDLES), "questions": list(QUESTIONS)},
        "load_average_start": list(os.getloadavg()) if hasattr(os, "getloadavg") else [], "rows": [],
        "runs": [{"command": shlex.join(["python", "benchmarks/forgetting.py", *(sys.argv[1:] if argv is None
                                                                                else argv)]),
                  "code": code_version()["commit"][:12], "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                  "load_start": load_average()}],
    }  # fmt: skip
    asked = {(b, s, c) for s in strategies for b in backends for c in scenarios}
    try:
        done = resume(results, out, asked, args.redo and not args.no_run)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    with contextlib.ExitStack() as stack:
        pg_url = (
            stack.enter_context(postgres_server(args.postgres_url, "gemrag-forgetting-pg-"))
            if "postgres" in backends
            else None
        )
        if "postgres" in backends and pg_url is None:
            print("postgres: skipped (pgserver is not installed and --postgres-url is not given)", flush=True)
            backends.remove("postgres")
            results["skipped_backends"] = {"postgres": "pgserver not installed, no --postgres-url"}
        models.answer_cache = open_store(root / "answer-cache")
        stack.callback(models.answer_cache.close)
        run = Run(args, models, corpus, root, pg_url, results, out, purge, kept=len(results["rows"]),
                  entry=results["runs"][-1])  # fmt: skip
        run.say(
            f"forgetting: {len(strategies)} strategies x {len(scenarios)} scenarios x {backends}, model {model}, "
            f"readers {list(models.readers)}, purge {'supported' if purge else 'n/a'}; workdir {workdir}"
        )
        for strategy in [] if args.no_run else strategies:
            todo = [(b, c) for b in backends for c in scenarios if (b, strategy, c) not in done]
            if not todo:
                run.say(f"{strategy}: every row asked is in {out} already (kept)")
                continue
            base, full = prepare(run, strategy) if any(c not in DERIVED_SCENARIOS for _, c in todo) else ({}, {})
            for backend, scenario in todo:
                if scenario not in DERIVED_SCENARIOS and not base:
                    continue  # the base failed: its row says why
                run_row(run, backend, strategy, scenario, base, full)
                keys_file.write_text(json.dumps(sorted(models.canary_keys)), encoding="utf-8")
    results["load_average_end"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else []
    if len(results["rows"]) == run.kept:  # no row ran (e.g. --no-run): no run to list
        results["runs"].remove(run.entry)
    run.save()
    print()
    print(leak_table(results))
    print()
    print(abstention_table(results))
    print(f"\nwall {results['wall_seconds']:.0f} s; load average now {results['load_average_end']}; figures in {out}")
    if args.publish:
        grid = (available(), SCENARIOS) if args.fake else None  # a real model: the rows it was asked for
        print(f"record: {publish(results, args.publish, argv, grid=grid, not_run_why=args.not_run_why)}")
    return 1 if any("error" in r for r in results["rows"]) else 0


if __name__ == "__main__":
    sys.exit(main())
