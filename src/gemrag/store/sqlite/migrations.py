"""Creating the schema of a new memory and upgrading older ones (``meta.schema_version``).

Every upgrade step runs in one ``BEGIN IMMEDIATE`` transaction together with the new ``schema_version``, so a
kill leaves the old version (the step runs again at the next open) or the new one; two processes opening an
old memory at once upgrade it once (the second re-reads the version inside its own transaction).

Schema 7 -> 8 replaces the erase marks by their compact form (:data:`gemrag.store.sqlite.schema.SCHEMA_8`).

Schema 6 -> 7 adds the empty forgetting tables (:data:`gemrag.store.sqlite.schema.SCHEMA_7`).

Schema 5 -> 6 (every chunk's character span in its document's text, found again from the stored texts) is in
:mod:`gemrag.store.migrate_v6`.

Schema 4 -> 5 (one document per content: ``document_sources``) is in :mod:`gemrag.store.sqlite.migrate_v5`.

Schema 3 -> 4 (documents identified by their source, the history of replaced versions) is in
:mod:`gemrag.store.sqlite.migrate_v4`; it rebuilds ``documents``.

Schema 2 -> 3 (strategies' own node and edge kinds, artefacts, sources, build coverage) is in
:mod:`gemrag.store.sqlite.migrate_v3`; it rebuilds ``nodes``, so upgrades run with foreign keys off (checked with
``PRAGMA foreign_key_check`` before the commit).

Schema 1 -> 2 (build generations, see :mod:`gemrag.store.schema`): new columns and tables, edges namespaced
as ``gem``'s, and the unversioned arrays of schema 1 *adopted* as generation 1 when they can be trusted:

* ``gem_*.npy``: shapes agree, every node id exists, the summary nodes in the arrays are exactly the summary
  nodes in the database, and every question id exists and belongs to its owner node;
* ``dense_*.npy``: shapes agree and every id is a chunk;
* ``raptor_vectors.npy`` with the meta ``raptor_tree``: the tree's digest of the vectors matches.

Adopted files are hard-linked (or copied) to their generation names before the commit; the schema-1 files are
removed later by the first builder. An array set that fails a check (an interrupted schema-1 build) is not
adopted: that strategy reports "not indexed" and names the fix (``gemrag index``; cached LLM answers make the
rebuild cost no LLM call). A schema-1 ``bm25/`` index is never adopted (rebuilding it needs no model).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

import numpy as np

from gemrag.errors import GemragError
from gemrag.store.arrays import ArrayEntry, fsync_directory
from gemrag.store.migrate_v6 import upgrade_5_to_6
from gemrag.store.schema import REBUILD_META, SCHEMA_VERSION
from gemrag.store.sqlite.migrate_v3 import upgrade_2_to_3
from gemrag.store.sqlite.migrate_v4 import upgrade_3_to_4
from gemrag.store.sqlite.migrate_v5 import upgrade_4_to_5
from gemrag.store.sqlite.schema import SCHEMA, SCHEMA_7, SCHEMA_8

__all__ = [
    "REBUILD_META",
    "ensure_schema",
    "schema_version",
    "upgrade_1_to_2",
    "upgrade_2_to_3",
    "upgrade_3_to_4",
    "upgrade_4_to_5",
    "upgrade_5_to_6",
]

GEM_AXES = {
    "node_ids": ("n",),
    "node_vectors": ("n", "d"),
    "question_vectors": ("m", "d"),
    "question_owner": ("m",),
    "question_ids": ("m",),
    "weights": ("n", "n"),
}
DENSE_AXES = {"node_ids": ("n",), "vectors": ("n", "d")}


def schema_version(conn: sqlite3.Connection) -> int | None:
    """The recorded schema version, or None for an empty database."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone():
        return None
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return int(json.loads(row[0])) if row else None


def ensure_schema(conn: sqlite3.Connection, directory: Path) -> int:
    """Create the schema of a new memory or upgrade an old one to :data:`SCHEMA_VERSION`.

    Returns:
        The version found before (0 for a new memory).

    Raises:
        GemragError: the memory was written by a newer gemrag, or the database holds tables but no gemrag schema
            (it is left unchanged).
    """
    found = schema_version(conn)
    if found == SCHEMA_VERSION:
        return found
    if found is not None and found > SCHEMA_VERSION:
        raise GemragError(
            f"{directory} was written by a newer gemrag (schema {found}, this one knows {SCHEMA_VERSION})"
        )
    conn.execute("PRAGMA foreign_keys=OFF")  # a no-op inside a transaction: set before BEGIN
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            found = schema_version(conn)  # another process may have done it meanwhile
            if found is None and conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table'").fetchone():
                raise GemragError(f"{directory} is not a gemrag memory (its memory.sqlite holds other tables)")
            if found is None:
                for statement in SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                _set_version(conn, SCHEMA_VERSION)
            elif found < SCHEMA_VERSION:
                if found == 1:
                    upgrade_1_to_2(conn, directory)
                if found <= 2:
                    upgrade_2_to_3(conn, directory)
                if found <= 3:
                    upgrade_3_to_4(conn)
                if found <= 4:
                    upgrade_4_to_5(conn)
                if found <= 5:
                    upgrade_5_to_6(conn)
                # schema 7: the forgetting tables, empty; schema 8: the erase marks in their compact form
                for statement in (SCHEMA_7 if found <= 6 else "").split(";") + SCHEMA_8.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                _set_version(conn, SCHEMA_VERSION)
                broken = conn.execute("PRAGMA foreign_key_check").fetchall()
                if broken:
                    raise GemragError(f"upgrading {directory} broke {len(broken)} references: {broken[:3]}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    finally:
        conn.execute("PRAGMA foreign_keys=ON")
    return found or 0


def _set_version(conn: sqlite3.Connection, version: int) -> None:
    conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?)", (json.dumps(version),))


def upgrade_1_to_2(conn: sqlite3.Connection, directory: Path) -> list[str]:
    """Schema 1 -> 2 inside the caller's transaction; returns the strategies whose arrays were adopted."""
    conn.execute("ALTER TABLE nodes ADD COLUMN strategy TEXT")
    conn.execute("ALTER TABLE nodes ADD COLUMN generation INTEGER")
    conn.execute("UPDATE nodes SET strategy = 'gem', generation = 1 WHERE kind = 'summary'")
    conn.execute("ALTER TABLE llm_cache ADD COLUMN writes INTEGER NOT NULL DEFAULT 1")
    conn.execute("ALTER TABLE edges RENAME TO edges_v1")
    for statement in SCHEMA.split(";"):  # the new tables and indexes (CREATE ... IF NOT EXISTS)
        if statement.strip():
            conn.execute(statement)
    conn.execute("INSERT INTO edges(strategy, src, dst, weight) SELECT 'gem', src, dst, weight FROM edges_v1")
    conn.execute("DROP TABLE edges_v1")
    adopted, refused = [], []
    for strategy, adopt in (("gem", _adopt_gem), ("dense", _adopt_dense), ("raptor", _adopt_raptor)):
        result = adopt(conn, directory)
        if result is True:
            adopted.append(strategy)
        elif result is False:
            refused.append(strategy)
    if (directory / "bm25").is_dir():
        refused.append("bm25")
    if refused:
        conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (REBUILD_META, json.dumps(refused)))
    if adopted:
        fsync_directory(directory)
    _set_version(conn, 2)
    return adopted


def _load_legacy(directory: Path, prefix: str, names: list[str]) -> dict[str, np.ndarray] | None:
    arrays = {}
    for name in names:
        path = directory / f"{prefix}{name}.npy"
        if not path.is_file():
            return None
        try:
            arrays[name] = np.load(path, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError):
            return None
    return arrays


def _link(directory: Path, legacy: str, strategy: str, name: str, axes: tuple[str, ...]) -> ArrayEntry:
    """Give a schema-1 file its generation-1 name (hard link, else copy; idempotent) and its manifest entry."""
    source = directory / legacy
    final = directory / f"{strategy}.g1.{name}.npy"
    tmp = directory / f".{final.name}.{os.getpid()}.tmp"
    tmp.unlink(missing_ok=True)
    try:
        os.link(source, tmp)
    except OSError:
        shutil.copyfile(source, tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
    os.replace(tmp, final)
    array = np.load(final, mmap_mode="r", allow_pickle=False)
    return ArrayEntry(name, final.name, tuple(array.shape), array.dtype.str, final.stat().st_size, axes)


def _record(conn: sqlite3.Connection, strategy: str, entries: list[ArrayEntry], meta: dict[str, Any]) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO builds(strategy, generation, published_at, arrays, paths, meta)"
        " VALUES (?, 1, ?, ?, '[]', ?)",
        (strategy, time.time(), json.dumps([e.as_dict() for e in entries]), json.dumps(meta)),
    )


def _meta(conn: sqlite3.Connection, key: str) -> Any:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return json.loads(row[0]) if row else None


def _adopt_gem(conn: sqlite3.Connection, directory: Path) -> bool | None:
    """Adopt ``gem_*.npy`` (True), refuse them (False), or None when there are none."""
    if not any((directory / f"gem_{n}.npy").exists() for n in GEM_AXES):
        return None
    a = _load_legacy(directory, "gem_", list(GEM_AXES))
    if a is None or not _gem_consistent(conn, a):
        return False
    entries = [_link(directory, f"gem_{n}.npy", "gem", n, axes) for n, axes in GEM_AXES.items()]
    meta = {"spectrum": _meta(conn, "gem_spectrum"), "questions_m": _meta(conn, "gem_questions_m"), "schema1": True}
    _record(conn, "gem", entries, meta)
    return True


def _gem_consistent(conn: sqlite3.Connection, a: dict[str, np.ndarray]) -> bool:
    ids, vectors, qvec, owner, qids, weights = (a[n] for n in GEM_AXES)
    n, m = len(ids), len(qids)
    shapes_ok = (
        ids.ndim == 1
        and vectors.ndim == 2
        and vectors.shape[0] == n
        and weights.shape == (n, n)
        and qvec.ndim == 2
        and qvec.shape == (m, vectors.shape[1])
        and owner.shape == (m,)
        and (m == 0 or (int(owner.min()) >= 0 and int(owner.max()) < n))
    )
    if not shapes_ok:
        return False
    kinds = dict(conn.execute("SELECT id, kind FROM nodes").fetchall())
    id_list = [int(i) for i in ids.tolist()]
    if any(i not in kinds for i in id_list):
        return False
    if {i for i in id_list if kinds[i] == "summary"} != {i for i, k in kinds.items() if k == "summary"}:
        return False
    question_node = dict(conn.execute("SELECT id, node_id FROM questions").fetchall())
    return all(question_node.get(int(q)) == id_list[int(o)] for q, o in zip(qids.tolist(), owner.tolist(), strict=True))


def _adopt_dense(conn: sqlite3.Connection, directory: Path) -> bool | None:
    if not any((directory / f"dense_{n}.npy").exists() for n in DENSE_AXES):
        return None
    a = _load_legacy(directory, "dense_", list(DENSE_AXES))
    if a is None or a["node_ids"].ndim != 1 or a["vectors"].ndim != 2 or len(a["node_ids"]) != len(a["vectors"]):
        return False
    chunks = {int(r[0]) for r in conn.execute("SELECT id FROM nodes WHERE kind = 'chunk'")}
    if not {int(i) for i in a["node_ids"].tolist()} <= chunks:
        return False
    entries = [_link(directory, f"dense_{n}.npy", "dense", n, axes) for n, axes in DENSE_AXES.items()]
    _record(conn, "dense", entries, {"schema1": True})
    return True


def _adopt_raptor(conn: sqlite3.Connection, directory: Path) -> bool | None:
    tree = _meta(conn, "raptor_tree")
    path = directory / "raptor_vectors.npy"
    if tree is None and not path.exists():
        return None
    if tree is None or not path.is_file():
        return False
    try:
        vectors = np.load(path, allow_pickle=False)
    except (OSError, ValueError):
        return False
    digest = hashlib.sha256(np.ascontiguousarray(vectors, dtype=np.float32).tobytes()).hexdigest()
    if tree.get("digest") != digest or len(tree.get("node_ids", [])) != len(vectors):
        return False
    entry = _link(directory, "raptor_vectors.npy", "raptor", "vectors", ("n", "d"))
    _record(conn, "raptor", [entry], tree)
    conn.execute("DELETE FROM meta WHERE key = 'raptor_tree'")
    return True
