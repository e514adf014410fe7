"""The memory's persistent model caches: LLM answers and embeddings, with the usage log and the failures, and the
purge of removed text from them (:mod:`gemrag.store.erase`): the store's caches part, :class:`CacheRows`.

Both are best-effort writes: skipped on a read-only store and deferred inside a read snapshot; an embedding
that cannot be stored because the database stays locked is dropped (it only costs an embedding later), while
an LLM answer must be stored before it is used (an interrupted build repeats no LLM call), so that error is
raised. ``llm_cache.writes`` counts the backend calls that stored each key: more than one means an LLM call
was repeated (``benchmarks/kill9_index.py`` checks it stays one).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from gemrag.errors import DatabaseLockedError
from gemrag.store.erase import BATCH, Purged, marks_of, response_marks
from gemrag.store.parts import Caches, Connection, Dialect
from gemrag.store.sql_part import SqlPart

UNMARKED: dict[Dialect, tuple[str, ...]] = {
    "sqlite": tuple(
        f"SELECT key FROM llm_cache{w} EXCEPT SELECT key FROM llm_entries{w} ORDER BY key LIMIT {BATCH}"
        for w in ("", " WHERE key > ?")
    ),
    "postgres": tuple(
        f"SELECT c.key FROM llm_cache c WHERE{w} NOT EXISTS (SELECT 1 FROM llm_entries e WHERE e.key = c.key)"
        f" ORDER BY c.key LIMIT {BATCH}"
        for w in ("", " c.key > ? AND")
    ),
}
"""Per database dialect (:attr:`gemrag.store.parts.Database.dialect`), the first :data:`BATCH` cache keys (of all;
of those after ``?``, each ``?`` given that key) that have no row in ``llm_entries``: the entries not marked yet
(:meth:`CacheRows._mark_entries`). The same set on both, written as each database runs it best: SQLite runs the
``EXCEPT`` of two ordered reads as a merge of the keys' two indexes (a ``NOT EXISTS`` there costs a lookup in
``llm_entries``' index per key, ten times slower at 100,000 keys), PostgreSQL the ``NOT EXISTS`` as a hashed anti-join
(its ``EXCEPT`` hashes both sides, about twice as slow).
"""


class CacheRows(SqlPart, Caches):
    """The caches part of a store (:class:`gemrag.store.parts.Caches`): LLM and embedding caches, usage and
    failures, and the purge of removed text from them (arguments: those of :class:`~gemrag.store.sql_part.SqlPart`).
    """

    # -- embeddings -------------------------------------------------------------------------------
    def get_embeddings(self, model: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for start in range(0, len(keys), 500):
            part = list(keys[start : start + 500])
            marks = ",".join("?" * len(part))
            rows = self._query(
                f"SELECT key, dim, vector FROM embeddings WHERE model = ? AND key IN ({marks})",
                [model, *part],
            )
            for key, dim, blob in rows:
                out[key] = np.frombuffer(blob, dtype=np.float32, count=dim).copy()
        return out

    def put_embeddings(self, model: str, items: Iterable[tuple[str, np.ndarray]]) -> None:
        rows = [(k, model, int(v.shape[0]), np.asarray(v, dtype=np.float32).tobytes()) for k, v in items]

        def write() -> None:
            with contextlib.suppress(DatabaseLockedError), self._db.transaction() as c:
                c.executemany("INSERT OR REPLACE INTO embeddings(key, model, dim, vector) VALUES (?,?,?,?)", rows)

        self._best_effort(write)

    # -- llm cache --------------------------------------------------------------------------------
    def get_llm(self, key: str) -> dict[str, Any] | None:
        rows = self._query("SELECT response FROM llm_cache WHERE key = ?", (key,))
        return json.loads(rows[0][0]) if rows else None

    def put_llm(self, key: str, model: str, response: dict[str, Any]) -> None:
        # Stored with its marks (llm_entries, llm_marks: what lets an erase find it by the text it holds,
        # store/erase.py).
        marks = sorted(response_marks(response))

        def write() -> None:
            with self._db.transaction() as c:
                c.execute(
                    "INSERT INTO llm_cache(key, model, response, created) VALUES (?,?,?,?) ON CONFLICT(key) DO UPDATE"
                    " SET model = excluded.model, response = excluded.response, created = excluded.created,"
                    " writes = llm_cache.writes + 1",
                    (key, model, json.dumps(response), time.time()),
                )
                write_marks(c, [(key, marks)])

        self._best_effort(write)

    def cached_llm(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for start in range(0, len(keys), 500):
            part = list(dict.fromkeys(keys[start : start + 500]))
            marks = ",".join("?" * len(part))
            for key, response in self._query(f"SELECT key, response FROM llm_cache WHERE key IN ({marks})", part):
                out[key] = json.loads(response)
        return out

    def recent_llm_responses(self, model: str, limit: int = 5000) -> list[dict[str, Any]]:
        rows = self._query(
            "SELECT response FROM llm_cache WHERE model = ? ORDER BY created DESC LIMIT ?", (model, int(limit))
        )
        return [json.loads(r[0]) for r in rows]

    def llm_cache_counts(self) -> tuple[int, int]:
        keys, writes = self._query("SELECT COUNT(*), COALESCE(SUM(writes), 0) FROM llm_cache")[0]
        return int(keys), int(writes)

    # -- usage and failures -----------------------------------------------------------------------
    def log_usage(self, rows: Sequence[tuple[str, str, str, int, int, int, float, int]]) -> None:
        now = time.time()
        values = [(now, *r) for r in rows]

        def write() -> None:
            with self._db.transaction() as c:
                c.executemany(
                    "INSERT INTO usage(at, phase, kind, model, prompt_tokens, completion_tokens, embedding_tokens,"
                    " seconds, cached) VALUES (?,?,?,?,?,?,?,?,?)",
                    values,
                )

        self._best_effort(write)

    def usage_by_phase(self) -> dict[str, dict[str, float]]:
        rows = self._query(
            "SELECT phase, SUM(prompt_tokens * (1 - cached)), SUM(completion_tokens * (1 - cached)),"
            " SUM(embedding_tokens * (1 - cached)), SUM(seconds), SUM(1 - cached), SUM(cached)"
            " FROM usage GROUP BY phase ORDER BY phase"
        )
        keys = ("prompt_tokens", "completion_tokens", "embedding_tokens", "seconds", "calls", "cached")
        return {r[0]: dict(zip(keys, r[1:], strict=True)) for r in rows}

    def usage_mark(self) -> int:
        rows = self._query("SELECT COALESCE(MAX(id), 0) FROM usage")
        return int(rows[0][0])

    def usage_after(self, mark: int, upto: int | None = None, phase: str = "index") -> dict[str, float]:
        rows = self._query(
            "SELECT COALESCE(SUM(CASE WHEN kind = 'llm' THEN prompt_tokens END), 0),"
            " COALESCE(SUM(CASE WHEN kind = 'llm' THEN completion_tokens END), 0),"
            " COALESCE(SUM(CASE WHEN kind = 'embed' THEN embedding_tokens END), 0),"
            " COALESCE(SUM(CASE WHEN kind = 'llm' THEN 1 ELSE 0 END), 0),"
            " COALESCE(SUM(CASE WHEN kind = 'llm' THEN cached END), 0),"
            " COALESCE(MIN(at), 0.0), COALESCE(MAX(at), 0.0)"
            " FROM usage WHERE phase = ? AND id > ? AND id <= ?",
            (phase, mark, upto if upto is not None else 2**62),
        )
        keys: tuple[str, ...] = ("prompt_tokens", "completion_tokens", "embedding_tokens", "llm_calls", "llm_cached")
        keys += ("first_at", "last_at")
        return dict(zip(keys, rows[0], strict=True))

    def record_failure(self, phase: str, node_id: int | None, message: str) -> None:

        def write() -> None:
            with self._db.transaction() as c:
                c.execute(
                    "INSERT INTO failures(at, phase, node_id, message) VALUES (?,?,?,?)",
                    (time.time(), phase, node_id, message[:2000]),
                )

        self._best_effort(write)

    def failures(self) -> list[dict[str, Any]]:
        rows = self._query("SELECT at, phase, node_id, message FROM failures ORDER BY id")
        return [dict(zip(("at", "phase", "node_id", "message"), r, strict=True)) for r in rows]

    # -- erasing removed text (gemrag.store.erase) -------------------------------------------------
    def forget_marks(self, c: Connection, marks: Iterable[int]) -> None:
        now = time.time()
        c.executemany("INSERT OR IGNORE INTO forgotten(mark, at) VALUES (?,?)", [(int(m), now) for m in marks])

    def forgotten_marks(self) -> set[int]:
        return {int(r[0]) for r in self._query("SELECT mark FROM forgotten")}

    def purge_caches(
        self,
        removed: Collection[int],
        *,
        handled: Collection[int],
        input_key: str,
        keep_embeddings: Collection[str] | None,
    ) -> Purged:
        out = Purged(llm_unverifiable=self._mark_entries(input_key))
        gone = sorted({int(m) for m in removed})
        found: dict[int, str] = {}
        for start in range(0, len(gone), BATCH):
            part = gone[start : start + BATCH]
            rows = self._query(
                "SELECT DISTINCT e.id, e.key FROM llm_marks m JOIN llm_entries e ON e.id = m.entry"
                f" WHERE m.mark IN ({','.join('?' * len(part))})",
                part,
            )
            found.update((int(i), str(k)) for i, k in rows)
        llm, entries = sorted(found.values()), sorted(found)
        out.llm_entries = len(llm)
        out.llm_kept = int(self._query("SELECT COUNT(*) FROM llm_cache")[0][0]) - len(llm)  # the keys' index only
        embeddings: list[str] = []
        if keep_embeddings is not None:
            keys = [str(r[0]) for r in self._query("SELECT key FROM embeddings")]
            embeddings = [k for k in keys if k not in keep_embeddings]
            out.embeddings, out.embeddings_kept = len(embeddings), len(keys) - len(embeddings)
        bad = set(gone)
        failures = [i for i, m in self._rows("failures", "id", "message") if bad & marks_of(str(m), every=True)]
        meta = [k for k, v in self._query("SELECT key, value FROM meta") if bad & marks_of(str(v), every=True)]
        meta = [k for k in meta if k != "schema_version"]
        out.failures, out.meta = len(failures), len(meta)
        out.versions = int(self._query("SELECT COUNT(*) FROM document_versions WHERE text IS NOT NULL")[0][0])
        with self._db.transaction() as c:
            for table, column, ids in (
                ("llm_cache", "key", llm),
                ("llm_marks", "entry", entries),
                ("llm_entries", "id", entries),
                ("embeddings", "key", embeddings),
                ("failures", "id", failures),
                ("meta", "key", meta),
                ("forgotten", "mark", sorted({int(m) for m in handled})),
            ):
                _delete(c, table, column, ids)
            c.execute("UPDATE document_versions SET text = NULL WHERE text IS NOT NULL")
        return out

    def _mark_entries(self, input_key: str) -> int:
        """Mark the LLM cache entries without marks (no row in ``llm_entries``: cached before marks existed, or
        copied in), :data:`BATCH` a transaction; delete those with no recorded input (they cannot be checked). Returns
        how many were deleted.

        The unmarked keys are the set difference of the two tables' keys (:data:`UNMARKED`, reading no response), in
        key order after the last key handled: on SQLite a merge of the keys' two indexes, on PostgreSQL a hashed
        anti-join. A cache whose entries are all marked costs one such pass over the keys; otherwise the pages of
        unmarked keys are followed by one more pass from the first key, so that an entry copied in meanwhile before
        the last key handled is marked too (until a pass finds none)."""
        first, following = UNMARKED[self._db.dialect]
        deleted, after = 0, None
        while True:
            sql = first if after is None else following
            keys = [str(r[0]) for r in self._query(sql, (after,) * sql.count("?"))]
            if not keys:
                if after is None:
                    return deleted
                after = None  # the check from the first key
                continue
            after = keys[-1]
            rows = self._query(f"SELECT key, response FROM llm_cache WHERE key IN ({','.join('?' * len(keys))})", keys)
            unverifiable: list[str] = []
            marked: list[tuple[str, list[int]]] = []
            for key, response in rows:
                try:
                    data = json.loads(response)
                except ValueError:
                    data = None
                if not isinstance(data, dict) or input_key not in data:
                    unverifiable.append(str(key))
                else:
                    marked.append((str(key), sorted(response_marks(data))))
            with self._db.transaction() as c:
                _delete(c, "llm_cache", "key", unverifiable)
                write_marks(c, marked)
            deleted += len(unverifiable)

    def _rows(self, table: str, key: str, *columns: str) -> Iterator[tuple[Any, ...]]:
        """Every row of ``table`` as ``(key, *columns)``, read in batches of :data:`BATCH` in ``key`` order (a
        large cache is never held in memory at once)."""
        after: Any = None
        while True:
            where, args = ("", ()) if after is None else (f" WHERE {key} > ?", (after,))
            rows = self._query(
                f"SELECT {', '.join((key, *columns))} FROM {table}{where} ORDER BY {key} LIMIT {BATCH}", args
            )
            yield from (tuple(r) for r in rows)
            if len(rows) < BATCH:
                return
            after = rows[-1][0]


def write_marks(c: Connection, marked: Sequence[tuple[str, Sequence[int]]]) -> None:
    """Record cache entries' marks inside the transaction ``c``: each key gets its number in ``llm_entries`` (kept
    when it has one), and each of its marks a row ``(mark, number)`` of ``llm_marks``."""
    if not marked:
        return
    keys = [k for k, _ in marked]
    c.executemany("INSERT OR IGNORE INTO llm_entries(key) VALUES (?)", [(k,) for k in keys])
    number: dict[str, int] = {}
    for start in range(0, len(keys), BATCH):
        part = keys[start : start + BATCH]
        rows = c.execute(f"SELECT key, id FROM llm_entries WHERE key IN ({','.join('?' * len(part))})", part)
        number.update((str(k), int(i)) for k, i in rows.fetchall())
    c.executemany(
        "INSERT OR IGNORE INTO llm_marks(mark, entry) VALUES (?,?)",
        [(int(m), number[k]) for k, marks in marked for m in marks],
    )


def _delete(c: Connection, table: str, column: str, ids: Sequence[Any]) -> None:
    """Delete the rows of ``table`` whose ``column`` is one of ``ids``, :data:`BATCH` a statement."""
    for start in range(0, len(ids), BATCH):
        part = list(ids[start : start + BATCH])
        c.execute(f"DELETE FROM {table} WHERE {column} IN ({','.join('?' * len(part))})", part)
