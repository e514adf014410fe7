"""Forgetting while other processes use the memory, with the test doubles, on both stores: an erase another
process's reader keeps from finishing says so (naming the file or table) and completes when run again after the
reader ends; a real ``SIGINT`` (Ctrl-C) inside the erase's transaction loses nothing and the next erase finishes; a
delete while another process indexes says the memory is busy, and waiting, withdraws what that build made of the
removed text too."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from backends import MemoryAt
from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.config import Config
from gemrag.errors import MemoryBusyError
from gemrag.store import caches
from test_forgetting_erase import PASSWORD, PASSWORD_NOTE, byte_leaks

KEEPER = "The lighthouse keeper paints the railings every spring."

READER = """
import sys
location = sys.argv[1]
if "://" in location:
    import psycopg
    from gemrag.store.postgres.connect import PgLocation
    loc = PgLocation.parse(location)
    conn = psycopg.connect(loc.conninfo)
    conn.execute(f'LOCK TABLE "{loc.schema}"."llm_cache" IN ACCESS SHARE MODE')
else:
    import sqlite3
    conn = sqlite3.connect(location + "/memory.sqlite", isolation_level=None)
    conn.execute("BEGIN")
    conn.execute("SELECT COUNT(*) FROM nodes").fetchone()
print("reading", flush=True)
sys.stdin.read()
conn.close()
"""
"""Another process reading the memory until its standard input closes: a SQLite read transaction (its snapshot
pins the old pages), or a PostgreSQL session holding a share lock on ``llm_cache``."""


def _open(location: str | Path, config: Config) -> Memory:
    return Memory.open(location, config, llm=ScriptedLLM(), embedder=HashEmbedder())


def _deleted_note(location: str | Path, config: Config, strategy: str = "gem") -> None:
    """A memory of the password note and a keeper note, built with ``strategy``, the password note deleted."""
    with _open(location, config) as mem:
        doc_id, _ = mem.add_text(PASSWORD_NOTE, "note")
        mem.add_text(KEEPER, "keeper")
        mem.index(strategy)
        mem.delete(doc_id)
        assert byte_leaks(mem, PASSWORD)  # the caches keep it until an erase


@contextmanager
def reading(location: str | Path) -> Iterator[None]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.Popen(
        [sys.executable, "-c", READER, str(location)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "reading"
        yield
    finally:
        proc.communicate("", timeout=60)
    assert proc.returncode == 0


def test_an_erase_another_process_reads_through_completes_when_run_again(memory_at: MemoryAt, config: Config) -> None:
    location = memory_at("m")
    _deleted_note(location, config)
    with _open(location, config) as mem:
        with reading(location):
            first = mem.erase()
        assert not first.erasure.complete
        sqlite = isinstance(location, Path)
        assert ("memory.sqlite" if sqlite else "llm_cache") in first.erasure.detail
        if sqlite:  # the reader's snapshot kept the old pages: the write-ahead log still holds the password
            assert byte_leaks(mem, PASSWORD)
        second = mem.erase()
        assert second.erasure.complete, second.erasure.detail
        assert byte_leaks(mem, PASSWORD) == []
        assert mem.retrieve("lighthouse railings", 1, "gem")[0].text.startswith("The lighthouse keeper")


def test_ctrl_c_inside_the_erase_transaction_loses_nothing(memory_at: MemoryAt, config: Config) -> None:
    """A real SIGINT after the erase deleted the cache rows, before it deleted the quarantine, in one transaction:
    the transaction leaves nothing behind, and the next erase finishes."""
    location = memory_at("m")
    _deleted_note(location, config)
    with _open(location, config) as mem:
        quarantined, entries = mem.store.forgotten_marks(), mem.store.llm_cache_counts()[0]
        real, calls = caches._delete, []

        def delete_then_sigint(*args: Any) -> None:
            real(*args)
            calls.append(args[1])
            if len(calls) == 3:  # llm_cache and llm_marks deleted, in the open transaction
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(5)  # the KeyboardInterrupt arrives before this ends

        caches._delete = delete_then_sigint  # type: ignore[assignment]
        handler = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal, also when run in the
        try:  # background (where a shell makes a process ignore SIGINT)
            with pytest.raises(KeyboardInterrupt):
                mem.erase()
        finally:
            caches._delete = real  # type: ignore[assignment]
            signal.signal(signal.SIGINT, handler)
        assert calls[:2] == ["llm_cache", "llm_marks"]
        assert mem.store.forgotten_marks() == quarantined and mem.store.llm_cache_counts()[0] == entries
        report = mem.erase()
        assert report.erasure.complete and report.fragments > 0 and mem.store.forgotten_marks() == set()
        assert byte_leaks(mem, PASSWORD) == []
        assert mem.retrieve("lighthouse railings", 1, "gem")[0].text.startswith("The lighthouse keeper")


def _index_holding_the_lock(location: str, config: Config, ready: Any, go: Any) -> None:
    """The other process: hold the build lock while it builds ``bm25`` (over the password note too), until ``go``."""
    place: str | Path = location if "://" in location else Path(location)
    with _open(place, config) as mem, mem.building():
        mem.index("bm25")
        ready.set()
        go.wait(120)


def test_a_delete_while_another_process_indexes(memory_at: MemoryAt, config: Config) -> None:
    location = memory_at("m")
    with _open(location, config) as mem:
        doc_id, _ = mem.add_text(PASSWORD_NOTE, "note")
        mem.add_text(KEEPER, "keeper")
        mem.index("dense")
    ctx = multiprocessing.get_context("spawn")
    ready, go = ctx.Event(), ctx.Event()
    other = ctx.Process(target=_index_holding_the_lock, args=(str(location), config, ready, go))
    other.start()
    try:
        assert ready.wait(120), "the indexing process did not start"
        with _open(location, config) as mem:
            with pytest.raises(MemoryBusyError):
                mem.delete(doc_id, wait=0)
            assert doc_id in {int(d["id"]) for d in mem.store.documents()}  # nothing changed
            go.set()
            report = mem.delete(doc_id, wait=120)  # once the other build is published
            assert "bm25" in {*report.pruned, *report.withdrawn}
            for strategy in ("dense", "bm25"):
                assert not any("tr0ub4dor" in h.text.casefold() for h in mem.retrieve("bank password", 4, strategy))
                mem.index(strategy)
            assert mem.erase().erasure.complete
            assert byte_leaks(mem, PASSWORD) == []
    finally:
        go.set()
        other.join(120)
    assert other.exitcode == 0
