"""The exclusive build lock of a memory directory (``<memory>/build.lock``, ``fcntl.flock``).

Only one builder at a time writes a memory (adds documents, indexes): the second gets a
:class:`~gemrag.errors.MemoryBusyError` naming the holder's process id, at once or after waiting ``wait``
seconds. Readers never take the lock. The kernel releases an ``flock`` when its holder exits, even on
``kill -9``, so a crashed builder never leaves the memory locked. Two opens of the lock file conflict even
inside one process (``flock`` locks belong to open file descriptions), so two :class:`~gemrag.memory.Memory`
objects on one directory exclude each other too.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gemrag.errors import MemoryBusyError

LOCK_FILE = "build.lock"
POLL_SECONDS = 0.1


class BuildLock:
    """The build lock of one memory directory (not re-entrant; :class:`~gemrag.memory.Memory` counts nesting).

    Args:
        directory: the memory directory (must exist and be writable).
    """

    def __init__(self, directory: str | Path) -> None:
        self.path = Path(directory) / LOCK_FILE
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        """True while this object holds the lock."""
        return self._fd is not None

    def acquire(self, wait: float = 0.0) -> None:
        """Take the lock, waiting up to ``wait`` seconds (0: try once) for another holder to release it.

        Raises:
            MemoryBusyError: another holder kept the lock; the message names its pid when known.
            RuntimeError: this object already holds the lock.
        """
        if self._fd is not None:
            raise RuntimeError("the build lock is already held by this object")
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + max(wait, 0.0)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = _read_pid(fd)
                    os.close(fd)
                    who = f"another process (pid {holder})" if holder else "another process"
                    waited = f" (waited {wait:g} s)" if wait > 0 else ""
                    raise MemoryBusyError(
                        f"{who} is building the memory {self.path.parent}{waited}; wait for it to finish and "
                        "retry, or pass --wait SECONDS"
                    ) from None
                time.sleep(POLL_SECONDS)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        """Release the lock (no-op when not held). The pid is cleared so a stale file names nobody."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.ftruncate(fd, 0)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def __enter__(self) -> BuildLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class BuildLockHolder:
    """A re-entrant hold on a memory's :class:`BuildLock`: nested :meth:`hold` blocks of one holder take the lock
    once and release it when the outermost block ends (:class:`~gemrag.memory.Memory` nests ``add`` inside
    ``index``, for example).

    Args:
        lock: the memory directory (its :class:`BuildLock`), or a function making a new, not yet acquired, lock
            (``store.build_lock``: a PostgreSQL memory's advisory lock).
    """

    def __init__(self, lock: str | Path | Callable[[], Any]) -> None:
        if callable(lock):
            self._make: Callable[[], Any] = lock
        else:
            directory = Path(lock)
            self._make = lambda: BuildLock(directory)
        self._lock: Any = None
        self._depth = 0

    @contextmanager
    def hold(self, wait: float = 0.0) -> Iterator[None]:
        """Hold the lock for the block (``wait``: seconds to wait for another holder, 0 = fail at once).

        Raises:
            MemoryBusyError: another process holds the lock for longer than ``wait``.
        """
        if self._depth == 0:
            lock = self._make()
            lock.acquire(wait)
            self._lock = lock
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0:
                self.release()

    def release(self) -> None:
        """Release the lock now, whatever the nesting (on close)."""
        if self._lock is not None:
            self._lock.release()
        self._lock, self._depth = None, 0


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
