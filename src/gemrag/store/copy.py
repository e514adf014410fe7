"""Copying a memory between locations and backends (``gemrag copy SRC DST``: SQLite -> PostgreSQL and back).

Every row keeps its id (node, question and document ids are what hits, edges and artefacts name), so the copy
answers every question exactly as the original: the rows of :data:`COPIED_COLUMNS` are copied in one transaction of the
destination, then each published build is written again through the destination's own ``write_array`` /
``sync_path`` / ``index_vectors`` (files, or database rows and pgvector tables) and its manifest inserted with the
arrays' new entries, in the same transaction as the rows. The source is opened read-only and read in one snapshot,
so a build published meanwhile is copied whole or not at all. The destination must hold no memory yet (or an
empty one) and stay unchanged by anyone else meanwhile; it is verified afterwards by :func:`row_counts`.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from gemrag.errors import GemragError, ReadOnlyMemoryError
from gemrag.store.base import MemoryStore
from gemrag.store.open import Location, as_location, describe_location, location_exists, open_store
from gemrag.store.publish_types import Publication
from gemrag.store.schema import TABLES as SCHEMA_TABLES

COPIED_COLUMNS: dict[str, tuple[str, ...]] = {t.name: t.columns for t in SCHEMA_TABLES if t.copied}
"""The copied tables (in foreign-key order) and their columns (:data:`gemrag.store.schema.TABLES`). ``meta`` is copied
too, except ``schema_version``; ``builds`` are re-published (see the module docstring)."""

COPIED_ID_TABLES = tuple(t.name for t in SCHEMA_TABLES if t.copied and t.generated_id)

SEARCH_META = "vector_search"
"""Manifest ``meta`` key naming a build's searchable arrays (set by ``strategies/platform/common.py``)."""


def row_counts(store: MemoryStore) -> dict[str, int]:
    """Rows per copied table, plus ``builds`` (published strategies), of a memory."""
    counts = {t: int(store.database._query(f"SELECT COUNT(*) FROM {t}")[0][0]) for t in COPIED_COLUMNS}
    counts["builds"] = int(store.database._query("SELECT COUNT(*) FROM builds")[0][0])
    return counts


def _plain(value: Any) -> Any:
    return bytes(value) if isinstance(value, memoryview) else value


def copy_memory(
    source: Location, target: Location, *, progress: Callable[[str], None] | None = None
) -> tuple[dict[str, int], dict[str, int]]:
    """Copy the memory at ``source`` into a new memory at ``target`` (any backends).

    Args:
        source: a memory directory or PostgreSQL URL (opened read-only).
        target: where to create the copy (a directory or a PostgreSQL URL; created).
        progress: called with a short message before each step.

    Returns:
        ``(source row counts, target row counts)`` as :func:`row_counts` (equal when the copy is complete).

    Raises:
        GemragError: the source is not a memory, the target already holds documents, or a backend failed.
    """
    say = progress or (lambda _m: None)
    src = open_store(source, readonly=True)
    try:
        dst = open_store(target, readonly=False)
        try:
            if int(dst.database._query("SELECT COUNT(*) FROM documents")[0][0]) or dst.published_generations():
                raise GemragError(f"{dst.location} already holds a memory: copy into a new location")
            lock = dst.build_lock()
            lock.acquire()
            try:
                with src.snapshot():
                    rows = {t: [tuple(_plain(v) for v in r) for r in src.database._query(_select(t, cols))]
                            for t, cols in COPIED_COLUMNS.items()}  # fmt: skip
                    meta = [
                        tuple(r)
                        for r in src.database._query("SELECT key, value FROM meta WHERE key != 'schema_version'")
                    ]
                    builds = [
                        (src.load_published(s, mmap=False), src.manifest(s))
                        for s in sorted(src.published_generations())
                    ]
                publications = []
                for published, manifest in builds:
                    if published is None or manifest is None:
                        continue
                    say(f"{published.strategy}: generation {published.generation}")
                    axes = {name: e.axes for name, e in manifest.arrays.items()}
                    publications.append(_write_build(dst, published, axes))
                say("rows")

                def insert_rows(c: Any) -> None:
                    c.execute("DELETE FROM meta WHERE key != 'schema_version'")
                    for table, cols in COPIED_COLUMNS.items():
                        marks = ",".join("?" * len(cols))
                        c.executemany(f"INSERT INTO {table}({', '.join(cols)}) VALUES ({marks})", rows[table])
                    c.executemany("INSERT INTO meta(key, value) VALUES (?, ?)", meta)
                    _reset_identities(dst, c)

                dst.publish_many(publications, before=insert_rows)
            finally:
                lock.release()
            return row_counts(src), row_counts(dst)
        finally:
            dst.close()
    finally:
        src.close()


def _select(table: str, cols: tuple[str, ...]) -> str:
    order = "id" if "id" in cols else ", ".join(cols[:2])
    return f"SELECT {', '.join(cols)} FROM {table} ORDER BY {order}"


def _write_build(dst: MemoryStore, published: Any, axes: dict[str, tuple[str, ...] | None]) -> Publication:
    """Write a source build's arrays and artefacts into ``dst`` under the same generation (not yet published).
    Its nodes, edges and covered chunks come with the copied rows (``carry``-free: the rows are inserted as
    they are)."""
    strategy, generation = published.strategy, published.generation
    entries = [dst.write_array(strategy, generation, name, a, axes.get(name)) for name, a in published.arrays.items()]
    indexes: list[str] = []  # artefacts the destination's vector search made (its own index of a search array)
    for name in published.meta.get(SEARCH_META, []):
        if name in published.arrays:
            indexes += dst.index_vectors(strategy, generation, name, np.asarray(published.arrays[name]))
    for name, path in published.paths.items():
        if name in indexes:
            continue
        target = dst.artifact_path(strategy, generation, name)
        if Path(path).is_dir():
            shutil.copytree(path, target)
        else:
            shutil.copy2(path, target)
        dst.sync_path(target)
    return Publication(
        strategy,
        generation,
        entries,
        published.meta,
        tuple(dict.fromkeys([*published.paths, *indexes])),
        None,
        "keep",
        published.params,
        published.models,
        True,
        (),
    )


def _reset_identities(dst: MemoryStore, c: Any) -> None:
    """On PostgreSQL, move each identity column's sequence past the copied ids (SQLite does it itself)."""
    if dst.database.dialect != "postgres":
        return
    for table in COPIED_ID_TABLES:
        c.raw.execute(
            f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), COALESCE((SELECT MAX(id) FROM {table}), 0) + 1,"
            " false)"
        )


def import_caches(store: MemoryStore, other: Location) -> tuple[int, int]:
    """Copy another memory's LLM responses and embeddings into ``store``'s caches (entries already there are kept).

    Used by ``gemrag eval`` so that an ablation memory (same documents, another parameter) answers the model calls it
    shares with its base memory from the cache. Any backends: ``other`` is opened read-only.

    Args:
        store: the memory to fill (writable).
        other: another memory (a directory or a PostgreSQL URL).

    Returns:
        ``(llm_rows, embedding_rows)`` inserted (ints).

    Raises:
        GemragError: ``other`` is not a gemrag memory, or is ``store`` itself.
        ReadOnlyMemoryError: ``store`` is read-only.
    """
    if store.readonly:
        raise ReadOnlyMemoryError(f"the memory {store.location} is open read-only")
    shown = describe_location(other)
    if not location_exists(other) or _same_place(shown, store.location):
        raise GemragError(f"{shown} is not another gemrag memory")
    try:
        source = open_store(other, readonly=True)
    except GemragError as exc:
        raise GemragError(f"cannot read the caches of {shown}: {exc}") from exc
    try:
        with source.snapshot():
            llm = source.database._query("SELECT key, model, response, created FROM llm_cache")
            emb = source.database._query("SELECT key, model, dim, vector FROM embeddings")
    finally:
        source.close()
    added = [0, 0]
    with store.transaction() as c:
        for i, (target, rows) in enumerate(
            (
                ("llm_cache(key, model, response, created)", llm),
                ("embeddings(key, model, dim, vector)", [(k, m, d, bytes(v)) for k, m, d, v in emb]),
            )
        ):
            marks = ",".join("?" * (target.count(",") + 1))
            for row in rows:
                added[i] += c.execute(f"INSERT OR IGNORE INTO {target} VALUES ({marks})", tuple(row)).rowcount
    return added[0], added[1]


def _same_place(a: str, b: str) -> bool:
    """True when two stores' locations name one memory (directories compared resolved)."""
    la, lb = as_location(a), as_location(b)
    if isinstance(la, Path) and isinstance(lb, Path):
        return la.resolve() == lb.resolve()
    return la == lb
