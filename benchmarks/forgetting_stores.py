"""Where benchmarks/forgetting.py keeps its memories: a SQLite directory per strategy and scenario, or a PostgreSQL
schema per model, strategy and scenario on a PostgreSQL server."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from forgetting_corpus import slug


def drop_schema(url: str) -> None:
    """Drop the schema of a PostgreSQL memory URL (its tables and rows), if it exists."""
    import psycopg

    from gemrag.store.postgres.connect import PgLocation

    loc = PgLocation.parse(url)
    with psycopg.connect(loc.conninfo, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{loc.schema}" CASCADE')


def schema_url(base: str, schema: str) -> str:
    """``base`` with ``schema=`` set (replacing one it had)."""
    base = re.sub(r"([?&])schema=[^&]*&?", r"\1", base).rstrip("?&")
    return f"{base}{'&' if '?' in base else '?'}schema={schema}"


def fresh_location(root: Path, pg_url: str | None, model: str, backend: str, strategy: str, name: str) -> str | Path:
    """An empty memory location for scenario ``name`` of ``strategy``: ``root/sqlite/<strategy>/<name>`` (removed
    first), or the PostgreSQL schema ``fg_<model>_<strategy>_<name>`` (at most 63 characters; dropped first).

    Raises:
        ValueError: ``backend`` is postgres and there is no server URL.
    """
    if backend == "sqlite":
        target = root / "sqlite" / strategy / name
        shutil.rmtree(target, ignore_errors=True)
        return target
    if pg_url is None:
        raise ValueError("no PostgreSQL server")
    url = schema_url(pg_url, f"fg_{slug(model)[:20]}_{slug(strategy)}_{name}"[:63])
    drop_schema(url)
    return url
