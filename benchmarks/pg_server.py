"""The PostgreSQL server of a benchmark: the user's (a URL), or the ``pgserver`` wheel's PostgreSQL 16 + pgvector
started in a fresh ``/tmp`` directory and removed at the end (as the tests start it, ``tests/backends.py``: run as
root, pgserver runs PostgreSQL as an unprivileged user, which cannot enter a private temporary directory)."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def postgres_server(url: str | None, prefix: str = "gemrag-bench-pg-") -> Iterator[str | None]:
    """Yield the PostgreSQL URL: ``url``, or that of a pgserver started in a fresh ``/tmp/PREFIX*`` directory
    (stopped and removed on exit); None when ``url`` is None and pgserver is not installed."""
    if url:
        yield url
        return
    try:
        import pgserver
    except ImportError:
        yield None
        return
    directory = Path(tempfile.mkdtemp(prefix=prefix))
    server = pgserver.get_server(directory, cleanup_mode="stop")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()
        shutil.rmtree(directory, ignore_errors=True)
