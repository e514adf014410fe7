"""Opening a memory's database while another connection or process holds it (gemrag.store.sqlite.connection)."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from gemrag.errors import DatabaseLockedError
from gemrag.store import Store
from gemrag.store.sqlite.connection import open_connection


def _hold_write_lock(path: Path) -> sqlite3.Connection:
    """A rollback-journal connection holding the write (RESERVED) lock of a new database at ``path``."""
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("CREATE TABLE t(x)")
    holder.execute("BEGIN IMMEDIATE")
    return holder


def test_the_switch_to_wal_waits_for_a_writer_instead_of_failing_at_once(tmp_path: Path) -> None:
    """SQLite refuses the WAL switch at once (no busy handler) while another connection writes; the open waits."""
    path = tmp_path / "memory.sqlite"
    holder = _hold_write_lock(path)
    committed = threading.Event()

    def commit() -> None:
        committed.set()  # before the COMMIT: the open cannot return between the two and see it unset
        holder.execute("COMMIT")

    release = threading.Timer(0.4, commit)
    release.start()
    conn = open_connection(path, readonly=False)
    # it waited for the writer rather than racing past it (an order, not a duration: load cannot break it)
    returned_after_commit = committed.is_set()
    release.join()
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert returned_after_commit
    conn.close()
    holder.close()


def test_the_switch_to_wal_gives_up_after_the_busy_timeout(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite"
    holder = _hold_write_lock(path)
    start = time.monotonic()
    with pytest.raises(DatabaseLockedError, match="stayed locked"):
        open_connection(path, readonly=False, busy_timeout=0.3)
    assert 0.25 <= time.monotonic() - start < 5
    holder.execute("ROLLBACK")
    holder.close()


def _open(directory: Path, barrier: Any, results: Any) -> None:
    barrier.wait()
    try:
        store = Store(directory)
        store.set_meta("embedder", "x")
        store.close()
        results.put("ok")
    except Exception as exc:  # reported to the parent, which asserts on it
        results.put(f"{type(exc).__name__}: {exc}")


def test_two_processes_creating_one_memory_at_the_same_moment_both_open_it(tmp_path: Path) -> None:
    """Before the retry, about a quarter of such pairs failed with 'database is locked' after 0 s."""
    ctx = mp.get_context("fork")
    outcomes = []
    for i in range(30):
        barrier, results = ctx.Barrier(2), ctx.Queue()
        procs = [ctx.Process(target=_open, args=(tmp_path / f"mem{i}", barrier, results)) for _ in range(2)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        outcomes += [results.get(timeout=5) for _ in procs]
    assert outcomes == ["ok"] * 60, [o for o in outcomes if o != "ok"][:3]
