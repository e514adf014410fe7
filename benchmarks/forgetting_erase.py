"""The erase scenarios of benchmarks/forgetting.py: a removal, the rebuild, then later, from a new session (as
another process would), ``Memory.erase()``:

* ``edit_erase``: the canary edited (as ``replace``), then an erase;
* ``delete_erase``: a plain delete (as ``delete``), then an erase;
* ``erase_reader``: a plain delete, then an erase while another connection reads the memory (SQLite: a read
  transaction holding the old pages; PostgreSQL: a session holding a lock on ``llm_cache``): it must say it is
  incomplete and name what held it; the reader goes, and the erase run again completes;
* ``erase_interrupt``: a plain delete, then an erase interrupted (Ctrl-C) after its cache transaction, before the
  physical rewrite; the erase run again completes.

The harness then counts canary strings in every row and file as for the other scenarios: after an erase scenario
they must be 0.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ERASE_SCENARIOS = {
    "edit_erase": "replace",
    "delete_erase": "delete",
    "erase_reader": "delete",
    "erase_interrupt": "delete",
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


@contextlib.contextmanager
def reader(location: str | Path) -> Iterator[None]:
    """Another process's reader for the block: a SQLite read transaction (old pages pinned), or a PostgreSQL
    session holding a share lock on ``llm_cache`` (``VACUUM (FULL)`` waits for it)."""
    if isinstance(location, Path):
        conn = sqlite3.connect(location / "memory.sqlite", isolation_level=None)
        conn.execute("BEGIN")
        conn.execute("SELECT COUNT(*) FROM llm_cache").fetchone()
        try:
            yield
        finally:
            conn.execute("COMMIT")
            conn.close()
        return
    import psycopg

    from gemrag.store.postgres.connect import PgLocation

    loc = PgLocation.parse(str(location))
    with psycopg.connect(loc.conninfo) as pg:
        pg.execute(f'LOCK TABLE "{loc.schema}"."llm_cache" IN ACCESS SHARE MODE')
        yield
        pg.rollback()


def erase_later(models: Any, location: str | Path, scenario: str) -> dict[str, Any]:
    """The erase step of ``scenario`` (module docstring) on the memory at ``location``, from a new session."""
    with models.session(location) as (mem, _):
        if scenario in ("edit_erase", "delete_erase"):
            return {"erase": _report(mem.erase())}
        if scenario == "erase_reader":
            with reader(location):
                first = _report(mem.erase())
            return {"first": first, "erase": _report(mem.erase())}
        database = type(mem.store.parts.database)
        real = database.erase_physically

        def interrupted(self: Any) -> Any:
            raise KeyboardInterrupt

        database.erase_physically = interrupted  # type: ignore[method-assign]
        try:
            mem.erase()
            first: dict[str, Any] = {"interrupted": False}
        except KeyboardInterrupt:
            first = {"interrupted": True}
        finally:
            database.erase_physically = real  # type: ignore[method-assign]
        return {"first": first, "erase": _report(mem.erase())}
