"""Where ``gemrag eval`` keeps its memories: directories under ``--out`` (SQLite, the default) or PostgreSQL schemas.

Every evaluation memory has a name, ``<dataset>-<group>[-<param>-<value>]`` (``cmu_dog-<movie>`` for the acceptance
test). By default it is the directory ``out_dir/memories/<name>``. Given ``--memory postgresql://...?schema=PREFIX``,
it is instead the schema :func:`~gemrag.store.postgres.connect.child_schema` ``(PREFIX, name, distinct=True)`` of that
database (``PREFIX_<name lower-cased, other characters as _>_<8 hex of its SHA-1>``, at most 63 characters), the
mapping ``gemrag serve`` uses for its namespaces. Records, results, ``index.jsonl`` and ``attempts.jsonl`` stay
under ``out_dir`` either way, and they name a memory by its name, so they do not depend on the backend.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from gemrag.errors import ConfigError, GemragError
from gemrag.eval.datasets import QuestionGroup
from gemrag.memory import Memory
from gemrag.store import is_postgres_url, memory_exists
from gemrag.store.postgres.connect import MAX_PREFIX, PgLocation, connect

__all__ = ["EvalMemories", "check_memory_root", "group_id"]


def group_id(group: QuestionGroup) -> str:
    """The id of a question group in memory names and records: its document id (one document) or first id and
    count, characters other than ``A-Z a-z 0-9 . _ -`` as ``_``, cut to 48, then ``-`` and 8 hex of the SHA-1 of
    the ids when that changed the id or there are several documents."""
    ids = group.doc_ids
    raw = ids[0] if len(ids) == 1 else f"{ids[0]}+{len(ids) - 1}"
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", raw)[:48]
    if slug != raw or len(ids) > 1:
        slug += "-" + hashlib.sha1(json.dumps(list(ids)).encode()).hexdigest()[:8]
    return slug


def check_memory_root(url: str) -> PgLocation:
    """Check ``gemrag eval --memory``: a PostgreSQL URL naming the schema prefix of the evaluation's memories
    (checked without connecting).

    Returns:
        The parsed URL (its ``schema`` is the prefix).

    Raises:
        ConfigError: not a ``postgresql://`` URL, a malformed one (bad port), no ``schema=`` parameter, or a
            prefix that is not a lower-case SQL identifier of at most 44 characters (one line, naming the value).
    """
    shown = url.split("@")[-1] if is_postgres_url(url) else url
    if not is_postgres_url(url):
        raise ConfigError(
            f"--memory {url!r}: give a postgresql://user@host:port/db?schema=PREFIX URL (one schema PREFIX_<memory> "
            "per evaluation memory); without --memory the memories are directories under --out"
        )
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number in 0-65535
        location = PgLocation.parse(url)
    except (ValueError, GemragError) as exc:
        raise ConfigError(f"--memory {shown!r} is not a valid PostgreSQL URL: {exc}") from None
    if not any(key == "schema" for key, _ in parse_qsl(parts.query, keep_blank_values=True)):
        raise ConfigError(f"--memory {shown!r} names no schema: add ?schema=PREFIX (memories go to PREFIX_<name>)")
    if len(location.schema) > MAX_PREFIX:
        raise ConfigError(
            f"--memory {shown!r}: the schema prefix {location.schema!r} is longer than {MAX_PREFIX} characters"
        )
    return location


class EvalMemories:
    """The memories of one evaluation, by name.

    Args:
        out_dir: the evaluation's output directory (SQLite memories go to ``out_dir/memories/<name>``).
        root: None (SQLite), or a ``postgresql://...?schema=PREFIX`` URL (one schema per memory).

    Raises:
        ConfigError: a bad ``root`` (see :func:`check_memory_root`).
    """

    def __init__(self, out_dir: Path, root: str | None = None) -> None:
        self.out_dir = out_dir
        self.root = check_memory_root(root) if root is not None else None

    def location(self, name: str) -> Path | str:
        """The memory ``name``'s location: its directory, or its PostgreSQL URL (not created)."""
        if self.root is None:
            return self.out_dir / "memories" / name
        return self.root.child(name, distinct=True)

    def exists(self, name: str) -> bool:
        """True when the memory ``name`` has been created (a ``memory.sqlite``, or a schema with gemrag's tables).

        Raises:
            GemragError: the PostgreSQL server cannot be reached.
        """
        if self.root is None:
            return (self.out_dir / "memories" / name / "memory.sqlite").is_file()
        return memory_exists(self.location(name))

    def check_server(self) -> None:
        """Connect once to the PostgreSQL server (nothing for SQLite), so that an unreachable server is a one-line
        error before anything is built or written.

        Raises:
            GemragError: the server cannot be reached or refuses the login.
        """
        if self.root is not None:
            connect(self.root.conninfo, "public", self.root.display).close()

    def seed_caches(self, mem: Memory, name: str, siblings: Iterable[str]) -> None:
        """Copy the LLM and embedding caches of the existing memories named ``siblings`` (other than ``name``) into
        ``mem``, the memory ``name``: an ablation memory then repeats only the model calls its parameter changes
        (e.g. ``eigen=4`` re-summarizes but reuses every utility question). Costs stay those of the original calls
        (see :mod:`gemrag.eval.costs`); the build seconds of a seeded memory are not its cold cost.

        Raises:
            GemragError: a sibling cannot be read.
        """
        for sibling in dict.fromkeys(siblings):
            if sibling != name and self.exists(sibling):
                mem.store.import_caches(self.location(sibling))
