"""The erase scenarios of benchmarks/forgetting.py: a removal, the rebuild, then later, from a new session (as
another process would), ``Memory.erase()``:

* ``edit_erase``: the canary edited (as ``replace``), then an erase;
* ``delete_erase``: a plain delete (as ``delete``), then an erase;
* ``erase_reader``: a plain delete, then an erase while another process reads the memory (a Python process of its
  own holding, on SQLite, a read transaction on the old pages; on PostgreSQL, a session with a share lock on
  ``llm_cache``): it must say it is incomplete and name what held it; the reader ends, and the erase run again
  completes;
* ``erase_interrupt``: a plain delete, then an erase interrupted by a real ``SIGINT`` (Ctrl-C) sent to this process
  in the middle of its cache transaction (after the cache rows were deleted, before the quarantine was), then a
  second erase interrupted the same way after that transaction, before the physical rewrite; the first must leave
  the quarantine whole, and the erase run a third time completes;
* ``delete_indexing``: a delete while another process indexes the memory (a process of its own holding the build
  lock while it builds ``bm25``, or ``dense`` for ``bm25``): the delete without waiting says the memory is busy and
  changes nothing; waiting, it runs once the build is published (whose nodes rest on the canary's chunks too: the
  delete withdraws them); an erase follows.

The harness then counts canary strings in every row and file as for the other scenarios: after an erase scenario
they must be 0.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ERASE_SCENARIOS = {
    "edit_erase": "replace",
    "delete_erase": "delete",
    "erase_reader": "delete",
    "erase_interrupt": "delete",
    "delete_indexing": "delete",
}
"""Each erase scenario and the removal it starts with (a scenario of benchmarks/forgetting.py)."""


def removal_of(scenario: str) -> str:
    """The removal a scenario starts with (itself for the scenarios that do not erase later)."""
    return ERASE_SCENARIOS.get(scenario, scenario)


def _report(report: Any) -> dict[str, Any]:
    e, p = report.erasure, report.purged
    return {
        "complete": e.complete,
        "detail": e.detail,
        "marks": report.fragments,
        "quarantined": report.quarantined,
        "llm_entries": p.llm_entries,
        "llm_kept": p.llm_kept,
        "embeddings": p.embeddings,
        "versions": p.versions,
        "bytes_before": e.bytes_before,
        "bytes_after": e.bytes_after,
        "seconds": round(report.seconds, 3),
    }


_READER = """
import sys
location = sys.argv[1]
if location.startswith("postgres"):
    import psycopg
    conninfo, schema = sys.argv[2:4]
    conn = psycopg.connect(conninfo)
    conn.execute(f'LOCK TABLE "{schema}"."llm_cache" IN ACCESS SHARE MODE')
else:
    import sqlite3
    conn = sqlite3.connect(location + "/memory.sqlite", isolation_level=None)
    conn.execute("BEGIN")
    conn.execute("SELECT COUNT(*) FROM llm_cache").fetchone()
print("reading", flush=True)
sys.stdin.read()
conn.rollback() if location.startswith("postgres") else conn.execute("COMMIT")
conn.close()
"""


@contextlib.contextmanager
def reader(location: str | Path) -> Iterator[int]:
    """Another process reading the memory for the block (:data:`_READER`: a SQLite read transaction pinning the old
    pages, or a PostgreSQL session holding a share lock on ``llm_cache``, which ``VACUUM (FULL)`` waits for); yields
    its process id. It ends when its standard input closes. (It imports only ``sqlite3`` or ``psycopg``: the
    PostgreSQL location is parsed here, so the reader starts in a fraction of a second.)"""
    argv = [str(location)]
    if isinstance(location, str):
        from gemrag.store.postgres.connect import PgLocation

        loc = PgLocation.parse(location)
        argv += [loc.conninfo, loc.schema]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.Popen(
        [sys.executable, "-c", _READER, *argv],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "reading", "the reader did not start"
        yield proc.pid
    finally:
        proc.communicate("", timeout=60)


@contextlib.contextmanager
def sigint_at(target: Any, name: str, after_calls: int) -> Iterator[dict[str, int]]:
    """Send this process a real ``SIGINT`` (what Ctrl-C sends) from inside ``target.name`` on its ``after_calls``-th
    call, after that call did its work (Python raises ``KeyboardInterrupt`` at the next instruction). Python's own
    handler is installed for the block: a process started in the background by a shell ignores ``SIGINT``, as a
    terminal's Ctrl-C would not."""
    real = getattr(target, name)
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    seen = {"calls": 0}

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        seen["calls"] += 1
        if seen["calls"] == after_calls:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)  # the handler runs before this returns
        return out

    setattr(target, name, wrapped)
    try:
        yield seen
    finally:
        setattr(target, name, real)
        signal.signal(signal.SIGINT, handler)


def _interrupted(run: Any) -> bool:
    try:
        run()
    except KeyboardInterrupt:
        return True
    return False


def _index_holding_the_lock(
    args: argparse.Namespace, location: str, strategy: str, ready: Any, go: Any, keys: Any
) -> None:
    """The other process of ``delete_indexing``: open the memory, hold its build lock, index ``strategy``, keep the
    lock until ``go`` (at most 120 s); the embedding keys of the canary texts it embedded go to ``keys``."""
    from forgetting_corpus import make_models

    models = make_models(args)
    with models.session(location if "://" in location else Path(location)) as (mem, _), mem.building():
        ready.set()
        mem.index(strategy)
        keys.put(sorted(mem.embedder.key(t) for t in models.embedder.canary_texts))
        go.wait(120)


def delete_while_indexing(
    args: argparse.Namespace, models: Any, mem: Any, location: str | Path, strategy: str, canary: str
) -> dict[str, Any]:
    """``delete_indexing`` (module docstring) on the memory ``mem`` open at ``location``, built with ``strategy``:
    the canary (a source path) deleted while another process indexes; what happened. The canary texts the other
    process embedded join ``models.canary_keys``."""
    from gemrag.errors import MemoryBusyError

    other = "dense" if strategy == "bm25" else "bm25"
    ctx = multiprocessing.get_context("forkserver")  # a fresh process, forked from a server that imported gemrag once
    ctx.set_forkserver_preload(["gemrag.memory", "gemrag.strategies", "forgetting_corpus"])
    ready, go, keys = ctx.Event(), ctx.Event(), ctx.Queue()
    proc = ctx.Process(target=_index_holding_the_lock, args=(args, str(location), other, ready, go, keys))
    proc.start()
    out: dict[str, Any] = {"other_process_builds": other}
    try:
        if not ready.wait(300):
            raise RuntimeError("the indexing process did not start")
        try:
            mem.delete(canary, wait=0)
            out["busy"] = False
        except MemoryBusyError as exc:
            out["busy"], out["busy_message"] = True, str(exc)
        out["canary_kept_while_busy"] = any(str(d["source"]).endswith(Path(canary).name) for d in mem.store.documents())
        models.canary_keys.update(keys.get(timeout=300))
        go.set()
        t0 = time.perf_counter()
        report = mem.delete(canary, wait=300)
        out["waited_seconds"] = round(time.perf_counter() - t0, 2)
        out |= {"chunks": report.chunks, "derived_nodes": report.derived_nodes, "pruned": report.pruned,
                "withdrawn": report.withdrawn}  # fmt: skip
    finally:
        go.set()
        proc.join(300)
    out["other_exit_code"] = proc.exitcode
    return out


def erase_later(models: Any, location: str | Path, scenario: str, config: Any = None) -> dict[str, Any]:
    """The erase step of ``scenario`` (module docstring) on the memory at ``location``, from a new session (opened
    with ``config``, default the run's)."""
    with models.session(location, config=config) as (mem, _):
        if scenario in ("edit_erase", "delete_erase", "delete_indexing"):
            return {"erase": _report(mem.erase())}
        if scenario == "erase_reader":
            with reader(location) as pid:
                first = _report(mem.erase()) | {"reader_pid": pid}
            return {"first": first, "erase": _report(mem.erase())}
        from gemrag.store import caches

        quarantined = len(mem.store.forgotten_marks())
        entries = mem.store.llm_cache_counts()[0]
        with sigint_at(caches, "_delete", 3):  # llm_cache and llm_marks deleted, the quarantine not yet
            first = {"interrupted": _interrupted(mem.erase)}
        first |= {"quarantine_kept": len(mem.store.forgotten_marks()) == quarantined,
                  "cache_kept": mem.store.llm_cache_counts()[0] == entries}  # fmt: skip
        with sigint_at(type(mem.store.parts.caches), "purge_caches", 1):  # the transaction done, no rewrite yet
            second = {"interrupted": _interrupted(mem.erase)}
        second["quarantine_left"] = len(mem.store.forgotten_marks())
        return {"first": first, "second": second, "erase": _report(mem.erase())}
