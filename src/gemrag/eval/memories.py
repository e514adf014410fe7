"""Where ``gemrag eval`` keeps its memories: directories under ``--out`` (the default), under another directory, or
PostgreSQL schemas (:func:`gemrag.store.memory_root`).

Every evaluation memory has a name, ``<dataset>-<group>[-<param>-<value>]`` (``cmu_dog-<movie>`` for the acceptance
test). By default it is the directory ``out_dir/memories/<name>``. Given ``--memory DIR``, it is ``DIR/<name>``;
given ``--memory postgresql://...?schema=PREFIX``, it is a schema of that database: ``PREFIX_<name lower-cased, other
characters as _>_<8 hex of its SHA-1>``, at most 63 characters (names differing only in case or punctuation stay
distinct), the mapping ``gemrag serve`` uses for its namespaces. Records, results, ``index.jsonl`` and
``attempts.jsonl`` stay under ``out_dir`` either way, and they name a memory by its name, so they do not depend on
where the memories are.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from pathlib import Path

from gemrag.errors import ConfigError, GemragError
from gemrag.eval.datasets import QuestionGroup
from gemrag.memory import Memory
from gemrag.store import Location, MemoryRoot, describe_location, import_caches, memory_root

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


def check_memory_root(root: Location) -> MemoryRoot:
    """Check ``gemrag eval --memory``: where the evaluation's memories go, one per name (checked without
    connecting): a directory (memories ``ROOT/<name>``) or a PostgreSQL URL naming the schema prefix of their
    schemas (``postgresql://user@host:port/db?schema=PREFIX``, memories ``PREFIX_<name>``).

    Returns:
        The root (see :func:`gemrag.store.memory_root`).

    Raises:
        ConfigError: a file, a malformed URL (bad port), a URL without ``schema=``, or a prefix that is not a
            lower-case SQL identifier of at most 44 characters (one line, naming the value).
    """
    try:
        shown = describe_location(root)
    except GemragError:
        shown = str(root).split("@")[-1]
    try:
        return memory_root(root, require_prefix=True)
    except GemragError as exc:
        raise ConfigError(f"--memory {shown!r}: {exc}") from None


class EvalMemories:
    """The memories of one evaluation, by name.

    Args:
        out_dir: the evaluation's output directory (by default the memories go to ``out_dir/memories/<name>``).
        root: None (the default), or where the memories go instead (see :func:`check_memory_root`).

    Raises:
        ConfigError: a bad ``root`` (see :func:`check_memory_root`).
    """

    def __init__(self, out_dir: Path, root: Location | None = None) -> None:
        self.out_dir = out_dir
        self.root = check_memory_root(root) if root is not None else memory_root(out_dir / "memories")

    def location(self, name: str) -> Location:
        """The memory ``name``'s location: its directory, or its PostgreSQL URL (not created)."""
        return self.root.child(name, distinct=True)

    def exists(self, name: str) -> bool:
        """True when the memory ``name`` has been created.

        Raises:
            GemragError: the PostgreSQL server cannot be reached.
        """
        return self.root.exists(name, distinct=True)

    def check_server(self) -> None:
        """Reach the root's server once (nothing for a directory), so that an unreachable server is a one-line
        error before anything is built or written.

        Raises:
            GemragError: the server cannot be reached or refuses the login.
        """
        self.root.check()

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
                import_caches(mem.store, self.location(sibling))
