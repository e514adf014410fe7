"""The build lock of a PostgreSQL memory: a session-level advisory lock on its own connection.

``pg_try_advisory_lock(LOCK_CLASS, key(schema))`` is held by a dedicated connection for as long as the build runs;
PostgreSQL releases it when that session ends, including when the holder is killed with ``kill -9`` (the server
sees the socket close) or its machine disappears (TCP keepalive), so a crashed builder never leaves the memory
locked. The holding connection's ``application_name`` names the process (``gemrag-build pid=N host=H``), which is
what a second builder's :class:`~gemrag.errors.MemoryBusyError` reports (read from ``pg_locks`` and
``pg_stat_activity``). Like :class:`gemrag.store.lock.BuildLock`, two lock objects conflict even inside one
process, and readers never take it.
"""

from __future__ import annotations

import hashlib
import os
import socket
import time
from typing import Any

from gemrag.errors import MemoryBusyError

LOCK_CLASS = 0x67656D00
"""First key of every gemrag build lock (the second is :func:`lock_key` of the schema)."""

POLL_SECONDS = 0.1


def lock_key(schema: str) -> int:
    """The advisory lock's second key for a memory schema (a positive 31-bit int)."""
    return int.from_bytes(hashlib.sha256(schema.encode()).digest()[:4], "big") & 0x7FFFFFFF


class PgBuildLock:
    """The build lock of one PostgreSQL memory (not re-entrant; see :class:`gemrag.store.lock.BuildLockHolder`).

    Args:
        conninfo: libpq connection string or URL of the database (without gemrag's ``schema`` parameter).
        schema: the memory's schema. location: how messages name the memory.
    """

    def __init__(self, conninfo: str, schema: str, location: str) -> None:
        self.conninfo, self.schema, self.location = conninfo, schema, location
        self._conn: Any = None

    @property
    def held(self) -> bool:
        """True while this object holds the lock."""
        return self._conn is not None

    def acquire(self, wait: float = 0.0) -> None:
        """Take the lock, waiting up to ``wait`` seconds (0: try once).

        Raises:
            MemoryBusyError: another session kept the lock; the message names its process when known.
            RuntimeError: this object already holds the lock.
            GemragError: the server cannot be reached.
        """
        from gemrag.store.postgres.connect import connect

        if self._conn is not None:
            raise RuntimeError("the build lock is already held by this object")
        name = f"gemrag-build pid={os.getpid()} host={socket.gethostname()}"[:63]
        conn = connect(self.conninfo, self.schema, self.location, application_name=name)
        key = (LOCK_CLASS, lock_key(self.schema))
        deadline = time.monotonic() + max(wait, 0.0)
        try:
            while not conn.execute("SELECT pg_try_advisory_lock(%s, %s)", key).fetchone()[0]:
                if time.monotonic() >= deadline:
                    holder = self._holder(conn, key)
                    if holder is not None and holder[2] is not None and not _alive(holder[2]):
                        # the holder died (kill -9) and the server has not ended its session yet
                        deadline = max(deadline, time.monotonic() + POLL_SECONDS)
                        time.sleep(POLL_SECONDS)
                        continue
                    who = f"another process ({holder[0]})" if holder else "another process"
                    waited = f" (waited {wait:g} s)" if wait > 0 else ""
                    raise MemoryBusyError(
                        f"{who} is building the memory {self.location}{waited}; wait for it to finish and retry, "
                        "or pass --wait SECONDS"
                    )
                time.sleep(POLL_SECONDS)
        except BaseException:
            conn.close()
            raise
        self._conn = conn

    @staticmethod
    def _holder(conn: Any, key: tuple[int, int]) -> tuple[str, str, int | None] | None:
        """``(description, host, pid on this host or None)`` of the session holding the lock, when it says."""
        row = conn.execute(
            "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
            " WHERE l.locktype = 'advisory' AND l.granted AND l.classid = %s AND l.objid = %s AND l.objsubid = 2"
            " AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())",
            key,
        ).fetchone()
        if not row or not str(row[0]).startswith("gemrag-build "):
            return None
        fields = dict(part.split("=", 1) for part in str(row[0]).split()[1:] if "=" in part)
        pid, host = fields.get("pid", ""), fields.get("host", "")
        if host == socket.gethostname() and pid.isdigit():
            return f"pid {pid}", host, int(pid)
        return f"pid {pid} on {host}", host, None

    def release(self) -> None:
        """Release the lock (no-op when not held) by closing its session."""
        if self._conn is None:
            return
        conn, self._conn = self._conn, None
        try:  # at once: the server ends a closed session asynchronously, a new builder could still find it
            conn.execute("SELECT pg_advisory_unlock(%s, %s)", (LOCK_CLASS, lock_key(self.schema)))
        except Exception:  # noqa: BLE001 - the connection is gone: so is the lock
            pass
        finally:
            conn.close()

    def __enter__(self) -> PgBuildLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _alive(pid: int) -> bool:
    """True when a process ``pid`` exists on this machine."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
