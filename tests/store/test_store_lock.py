"""The build lock (fcntl.flock, holder's pid in the message) and SQLite busy errors as gemrag errors."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from gemrag.errors import DatabaseLockedError, GemragError, MemoryBusyError
from gemrag.models.base import Usage
from gemrag.models.meter import UsageMeter
from gemrag.store import BuildLock, Store

HOLDER = """
import sys
sys.path.insert(0, {src!r})
from gemrag.store.lock import BuildLock
lock = BuildLock(sys.argv[1])
lock.acquire()
print("locked", flush=True)
sys.stdin.read()  # hold until the parent closes our stdin
"""


def src_dir() -> str:
    import gemrag

    return str(Path(gemrag.__file__).resolve().parents[1])


def test_second_holder_gets_the_first_ones_pid(tmp_path: Path) -> None:
    first = BuildLock(tmp_path)
    first.acquire()
    assert first.held and (tmp_path / "build.lock").read_text().strip() == str(os.getpid())
    with pytest.raises(MemoryBusyError, match=rf"another process \(pid {os.getpid()}\) is building"):
        BuildLock(tmp_path).acquire()
    first.release()
    assert not first.held and (tmp_path / "build.lock").read_text() == ""
    with BuildLock(tmp_path) as again:  # free again
        assert again.held
    assert issubclass(MemoryBusyError, GemragError)


def test_lock_held_by_another_process(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER.format(src=src_dir()), str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
        with pytest.raises(MemoryBusyError, match=rf"pid {proc.pid}\).*--wait"):
            BuildLock(tmp_path).acquire()
        t0 = time.monotonic()
        with pytest.raises(MemoryBusyError, match="waited 0.3 s"):
            BuildLock(tmp_path).acquire(wait=0.3)
        assert time.monotonic() - t0 >= 0.3
        threading.Timer(0.3, proc.stdin.close).start()  # type: ignore[union-attr]
        lock = BuildLock(tmp_path)
        lock.acquire(wait=30)  # the holder exits; its lock goes with it
        lock.release()
    finally:
        proc.kill()
        proc.wait()


def test_a_killed_holder_leaves_no_lock(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER.format(src=src_dir()), str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    proc.kill()  # SIGKILL
    proc.wait()
    with BuildLock(tmp_path) as lock:
        assert lock.held


def test_database_locked_is_a_clear_error(tmp_path: Path) -> None:
    holder = Store(tmp_path)
    other = Store(tmp_path, busy_timeout=0.2)
    other.set_meta("x", 0)
    with holder.transaction():  # another connection holds the write lock
        holder.set_meta("x", 1)
        t0 = time.monotonic()
        with pytest.raises(DatabaseLockedError, match=r"stayed locked by another process for more than 0.2 s"):
            other.set_meta("x", 2)
        assert time.monotonic() - t0 >= 0.15
        assert other.get_meta("x") == 0  # WAL: reads go on
        other.put_embeddings("m", [("k", np.ones(3, dtype=np.float32))])  # a cache write gives up quietly
        meter = UsageMeter(other)
        with meter.phase("query"):
            meter.record("embed", "m", Usage(embedding_tokens=3), cached=False)
        assert meter.flush() == 0  # the usage row stays pending
    assert other.get_meta("x") == 1 and other.get_embeddings("m", ["k"]) == {}
    assert meter.flush() == 1 and other.usage_by_phase()["query"]["embedding_tokens"] == 3
    assert issubclass(DatabaseLockedError, MemoryBusyError)


def test_query_usage_is_batched_and_flushed(tmp_path: Path) -> None:
    store = Store(tmp_path)
    meter = UsageMeter(store, max_pending=3)
    with meter.phase("query"):
        meter.record("embed", "m", Usage(embedding_tokens=1), cached=False)
        meter.record("embed", "m", Usage(), cached=True)
        assert store.usage_by_phase() == {}  # buffered
        meter.record("embed", "m", Usage(embedding_tokens=1), cached=False)  # the third row flushes the batch
    assert store.usage_by_phase()["query"]["calls"] == 2
    meter.record("llm", "m", Usage(3, 1, seconds=0.1), cached=False)  # index rows are written at once
    assert store.usage_by_phase()["index"]["prompt_tokens"] == 3
