"""What an erase costs against the size of the LLM cache: the marks lookup of ``gemrag erase`` against the scan of
every entry that purging did before (reading and searching each cached prompt and answer).

For each size N a fresh SQLite memory gets N cache entries shaped like a build's (a one-shot instruction, a passage of
60 words drawn from a 5,000-word vocabulary, a JSON answer), each stored with its real marks
(:func:`gemrag.store.erase.response_marks`): the rows of ``llm_cache``, ``llm_entries`` and ``llm_marks`` are those
N calls of :meth:`~gemrag.store.caches.CacheRows.put_llm` would write (``tests/test_benchmark_erase_cost.py``
compares them), written in bulk (:func:`fill`: the marks computed in ``--workers`` processes, the rows in one
transaction, the marks sorted), so that a million entries take minutes, not hours. Passages repeat every ``N / 4``
entries, so one passage is held by 4 entries (a chunk's extraction, questions, summary and an answer). Then one
passage is removed (its marks quarantined, as a removal does) and timed:

* ``erase`` - :meth:`~gemrag.store.caches.CacheRows.purge_caches`: the quarantined marks looked up in ``llm_marks``,
  the entries holding one deleted (with the check that every entry is marked, an index-only anti-join);
* ``scan`` - what the purge did before marks: every entry read, decoded and searched for the removed sentences
  (normalised substring search, :mod:`gemrag.store.erase`'s old way), nothing deleted. Above ``--scan-sample``
  entries (100,000) only the first ``--scan-sample`` (in key order) are read and the time is extrapolated linearly
  to N (``scan_entries``: how many were read, ``scan_sample_s``: their time; ``scan_found`` counts theirs);
* ``vacuum`` - the physical erase that follows either (``VACUUM`` and the write-ahead log truncated): it rewrites the
  whole file, so it grows with the database, not with the change.

The marks' storage is measured too (SQLite's ``dbstat``: the pages of ``llm_entries``, ``llm_marks`` and their
indexes, written in order as a ``VACUUM`` leaves them), against the same marks in schema 7's layout (one row
``(mark, key)`` per mark, the 64-character key repeated, an index by key, and one extra row per entry saying it is
marked), built in a scratch database attached beside the memory and deleted before the timings. Each size records
the load average before and after it (``load_start``, ``load``): the figures are wall times on a shared machine.

Run::

    python benchmarks/erase_cost.py --sizes 10000,100000            # figures on stdout
    python benchmarks/erase_cost.py --sizes 10000,100000,1000000 --out erase_cost.json
    python benchmarks/erase_cost.py --sizes 10000,100000,1000000 --publish erase-cost   # results/erase-cost.json

Prints one line per size and the load average of the machine at the end (the figures are wall times on a shared
machine).
"""

from __future__ import annotations

import argparse
import functools
import json
import multiprocessing
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # results_record (benchmarks/ is no package)
from results_record import write_record  # noqa: E402

from gemrag.store import open_store
from gemrag.store.erase import marks_of, strings_of

INSTRUCTION = (
    "You write utility questions. Write 3 different questions that this passage answers. Answer as JSON with the key "
    "questions."
)
PASSAGE_WORDS = 60
VOCABULARY = 5000
_REPEATED = frozenset((INSTRUCTION, "system", "user"))
"""The strings every entry's response holds."""
HOLDERS = 4
"""Cache entries holding each passage."""
BATCH = 5000
MARK_TABLES = ("llm_marks", "llm_marks_entry", "llm_entries", "sqlite_autoindex_llm_entries_1")
"""The marks' tables and indexes (schema 8)."""


def _passages(n: int, rng: random.Random) -> list[str]:
    words = [f"w{i:04d}{chr(97 + i % 26)}" for i in range(VOCABULARY)]
    out = []
    for _ in range(n):
        chosen = rng.choices(words, k=PASSAGE_WORDS)
        sentences = [" ".join(chosen[i : i + 12]).capitalize() + "." for i in range(0, PASSAGE_WORDS, 12)]
        out.append(" ".join(sentences))
    return out


def _entry(passage: str) -> dict[str, Any]:
    answer = {"questions": [f"What about {' '.join(passage.split()[k : k + 6])}?" for k in (0, 12, 24)]}
    return {
        "text": json.dumps(answer),
        "parsed": answer,
        "prompt_tokens": 120,
        "completion_tokens": 30,
        "seconds": 1.0,
        "input": [
            {"role": "system", "content": INSTRUCTION},
            {"role": "user", "content": f'Passage:\n"""\n{passage}\n"""'},
        ],
    }


MODEL = "bench"
"""The model name the entries are cached under."""


@functools.lru_cache(maxsize=16)
def _string_marks(text: str) -> frozenset[int]:
    """:func:`gemrag.store.erase.marks_of` of one string, remembered for the strings every entry repeats (the
    instruction, the roles)."""
    return frozenset(marks_of(text))


def _marks(passage: str) -> list[int]:
    """The marks ``put_llm`` writes for the entry holding ``passage``: :func:`gemrag.store.erase.response_marks`,
    the union of :func:`~gemrag.store.erase.marks_of` over the response's strings, with the repeated strings' marks
    remembered (``tests/test_benchmark_erase_cost.py`` checks they are equal)."""
    out: set[int] = set()
    for text in strings_of(_entry(passage)):
        out |= _string_marks(text) if text in _REPEATED else marks_of(text)
    return sorted(out)


def passage_marks(passages: list[str], workers: int = 1) -> list[list[int]]:
    """Each passage's entry's marks (:func:`_marks`), computed in ``workers`` processes (forked; 1: in this one)."""
    if workers <= 1:
        return [_marks(p) for p in passages]
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        return pool.map(_marks, passages, chunksize=max(1, min(2000, len(passages) // (4 * workers))))


def fill(store: Any, n: int, passages: list[str], workers: int = 1) -> tuple[float, int]:
    """Store ``n`` entries in an empty memory exactly as ``n`` calls of
    :meth:`~gemrag.store.caches.CacheRows.put_llm` in key order would (the same rows of ``llm_cache``, ``llm_entries``
    and ``llm_marks``; ``tests/test_benchmark_erase_cost.py`` checks it), at the cost of a bulk load: entry ``i`` (key
    ``i`` in 64 hex digits) holds passage ``i % len(passages)``, whose marks are computed once
    (:func:`passage_marks`); the rows go in one transaction, the marks as one ``INSERT ... SELECT`` sorted by mark
    with ``llm_marks``'s secondary index dropped and made again after (sorted inserts fill whole pages, as the
    ``VACUUM`` of every erase leaves them).

    Returns:
        (seconds, mark rows written).

    Raises:
        ValueError: the memory's LLM cache is not empty.
    """
    start = time.perf_counter()
    marks = passage_marks(passages, workers)
    texts = [json.dumps(_entry(p)) for p in passages]
    conn = store.database.conn
    cache_size = conn.execute("PRAGMA cache_size").fetchone()[0]
    conn.execute("PRAGMA cache_size = -262144")  # 256 MiB for the sorts; the connection's own setting again after
    try:
        with store.transaction() as c:
            if c.execute("SELECT EXISTS (SELECT 1 FROM llm_cache) OR EXISTS (SELECT 1 FROM llm_entries)").fetchone()[0]:
                raise ValueError("fill needs an empty LLM cache")
            for first in range(0, n, BATCH):
                now, ids = time.time(), range(first, min(n, first + BATCH))
                rows = [(f"{i:064x}", MODEL, texts[i % len(texts)], now) for i in ids]
                c.executemany("INSERT INTO llm_cache(key, model, response, created) VALUES (?,?,?,?)", rows)
                c.executemany("INSERT INTO llm_entries(id, key) VALUES (?,?)", [(i + 1, f"{i:064x}") for i in ids])
            c.execute(
                "CREATE TEMP TABLE passage_marks (passage INTEGER NOT NULL, mark INTEGER NOT NULL,"
                " PRIMARY KEY (passage, mark)) WITHOUT ROWID"
            )
            c.executemany(
                "INSERT INTO temp.passage_marks VALUES (?,?)", ((j, m) for j, ms in enumerate(marks) for m in ms)
            )
            indexes = c.execute(
                "SELECT name, sql FROM sqlite_master"
                " WHERE type = 'index' AND tbl_name = 'llm_marks' AND sql IS NOT NULL"
            ).fetchall()
            for name, _ in indexes:
                c.execute(f"DROP INDEX {name}")
            c.execute(
                "INSERT INTO llm_marks(mark, entry) SELECT p.mark, e.id FROM llm_entries e"
                " JOIN temp.passage_marks p ON p.passage = (e.id - 1) % ? ORDER BY p.mark, e.id",
                (len(passages),),
            )
            for _, sql in indexes:
                c.execute(sql)
            c.execute("DROP TABLE temp.passage_marks")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.execute(f"PRAGMA cache_size = {int(cache_size)}")
    rows = sum(len(marks[i % len(marks)]) for i in range(len(marks))) * (n // len(marks))
    rows += sum(len(marks[i]) for i in range(n % len(marks)))
    return time.perf_counter() - start, rows


def scan(store: Any, removed: str, limit: int | None = None) -> tuple[float, int, int]:
    """The old purge's search: every entry (the first ``limit`` in key order; None: all) read, decoded and searched
    for the removed text's sentences, nothing deleted; (seconds, entries holding a sentence, entries read)."""
    fragments = [" ".join(s.casefold().split()) for s in removed.split(". ") if len(s) >= 12]
    start, found, read, after = time.perf_counter(), 0, 0, ""
    while limit is None or read < limit:
        size = 500 if limit is None else min(500, limit - read)
        rows = store.database._query(
            "SELECT key, response FROM llm_cache WHERE key > ? ORDER BY key LIMIT ?", (after, size)
        )
        for _, response in rows:
            data = json.loads(response)
            text = " ".join(json.dumps(data, ensure_ascii=False).casefold().split())
            found += any(f in text for f in fragments)
        read += len(rows)
        if len(rows) < size:
            break
        after = rows[-1][0]
    return time.perf_counter() - start, found, read


def _schema7_bytes(store: Any, scratch: Path) -> int:
    """Bytes the same marks take in schema 7's layout (module docstring), built in a scratch database ``scratch``
    attached beside the memory (the memory's file is left as it was), then deleted."""
    conn = store.database.conn
    conn.execute("ATTACH DATABASE ? AS scratch", (str(scratch),))
    try:
        conn.execute("BEGIN")
        conn.execute(
            "CREATE TABLE scratch.old_marks (mark INTEGER NOT NULL, key TEXT NOT NULL, PRIMARY KEY (mark, key))"
            " WITHOUT ROWID"
        )
        conn.execute("INSERT INTO scratch.old_marks SELECT m.mark, e.key FROM llm_marks m JOIN llm_entries e"
                     " ON e.id = m.entry ORDER BY m.mark, e.key")  # fmt: skip
        conn.execute("INSERT INTO scratch.old_marks SELECT 0, key FROM llm_entries ORDER BY key")
        conn.execute("CREATE INDEX scratch.old_marks_key ON old_marks(key)")
        conn.execute("COMMIT")
        return _table_bytes(store, ("old_marks", "old_marks_key"), schema="scratch")
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        conn.execute("DETACH DATABASE scratch")
        scratch.unlink(missing_ok=True)


def _table_bytes(store: Any, names: tuple[str, ...], schema: str = "main") -> int:
    """Bytes of the pages of these tables and indexes of the attached database ``schema`` (SQLite's ``dbstat``), 0
    where ``dbstat`` is missing."""
    try:
        rows = store.database._query(
            f"SELECT SUM(pgsize) FROM dbstat(?) WHERE name IN ({','.join('?' * len(names))})", (schema, *names)
        )
    except Exception:  # noqa: BLE001 - a SQLite built without dbstat
        return 0
    return int(rows[0][0] or 0)


def _file_bytes(directory: Path) -> int:
    """Bytes of ``memory.sqlite`` with its write-ahead log."""
    return sum(p.stat().st_size for p in directory.iterdir() if p.name.startswith("memory.sqlite"))


def measure(n: int, root: Path, *, seed: int = 0, workers: int = 2, scan_sample: int = 100_000) -> dict[str, Any]:
    """Fill, remove one passage, time the erase, the old scan (of at most ``scan_sample`` entries, extrapolated
    linearly to ``n``) and the vacuum, for ``n`` entries; the figures of one size (module docstring)."""
    rng = random.Random(seed)
    passages = _passages(max(1, n // HOLDERS), rng)
    directory = root / f"m{n}"
    store = open_store(directory)
    try:
        filled, mark_rows = fill(store, n, passages, workers)
        size = _file_bytes(directory)
        marks_bytes = _table_bytes(store, MARK_TABLES)
        old_bytes = _schema7_bytes(store, root / f"scratch{n}.sqlite")
        removed = passages[len(passages) // 2]
        quarantined = marks_of(removed, every=True)
        with store.transaction() as c:
            store.forget_marks(c, quarantined)
        sampled, scan_found, scanned = scan(store, removed, None if n <= scan_sample else scan_sample)
        start = time.perf_counter()
        with store.secure_deletes():
            purged = store.purge_caches(quarantined, handled=quarantined, input_key="input", keep_embeddings=None)
        erased = time.perf_counter() - start
        start = time.perf_counter()
        erasure = store.erase_physically()
        vacuumed = time.perf_counter() - start
    finally:
        store.close()
        shutil.rmtree(directory, ignore_errors=True)
    return {
        "entries": n,
        "mark_rows": mark_rows,
        "database_mb": round(size / 1e6, 1),
        "marks_mb": round(marks_bytes / 1e6, 1),
        "marks_bytes_per_entry": round(marks_bytes / max(n, 1)),
        "schema7_marks_mb": round(old_bytes / 1e6, 1),
        "schema7_marks_bytes_per_entry": round(old_bytes / max(n, 1)),
        "fill_s": round(filled, 2),
        "fill_workers": workers,
        "erase_s": round(erased, 4),
        "erased_entries": purged.llm_entries,
        "scan_s": round(sampled * n / max(scanned, 1), 3),
        "scan_entries": scanned,
        "scan_sample_s": round(sampled, 3),
        "scan_found": scan_found,
        "vacuum_s": round(vacuumed, 2),
        "vacuum_complete": erasure.complete,
        "database_mb_after": round(erasure.bytes_after / 1e6, 1),
    }


def table(record: dict[str, Any]) -> str:
    """The Markdown table of a record (``--publish``): per size the marks' storage (schema 8 against schema 7's
    layout), the erase's lookup against the old scan, the vacuum and the load average."""
    lines = [
        "| cache entries | marks | marks' storage: schema 7 → 8 (per entry) | erase | old scan | scan / erase | vacuum "
        "| load |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in record["results"]:
        lines.append(
            f"| {r['entries']:,} | {r['mark_rows']:,} | {r['schema7_marks_mb']} MB → {r['marks_mb']} MB "
            f"({r['schema7_marks_bytes_per_entry']:,} B → {r['marks_bytes_per_entry']:,} B) | {r['erase_s']:.2f} s "
            f"| {r['scan_s']:.1f} s | {r['scan_s'] / r['erase_s']:.0f}× | {r['vacuum_s']:.1f} s | {r['load']} |"
        )
    load = record["machine"]["load"]
    lines += ["", f"From `results/{record['name']}.json` ({record['machine']['cpus']} CPUs, load average "
              f"{' to '.join(f'{x:.1f}' for x in load)})."]  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    """Parse the arguments, measure each size, print and optionally write the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated cache sizes (entries)")
    parser.add_argument("--workdir", type=Path, help="where the memories are made (default: a temporary directory)")
    parser.add_argument("--out", type=Path, help="also write the figures as JSON")
    parser.add_argument("--publish", metavar="NAME", help="also write the record results/NAME.json")
    parser.add_argument("--workers", type=int, default=2, help="processes computing the marks of the fill")
    parser.add_argument(
        "--scan-sample",
        type=int,
        default=100_000,
        metavar="N",
        help="entries the old scan reads at most (its time extrapolated linearly to the size)",
    )
    parser.add_argument("--table", type=Path, metavar="RECORD", help="print the Markdown table of a record and exit")
    args = parser.parse_args()
    if args.table:
        print(table(json.loads(args.table.read_text(encoding="utf-8"))))
        return
    root = args.workdir or Path(tempfile.mkdtemp(prefix="gemrag-erase-cost-"))
    started, load_start = time.perf_counter(), os.getloadavg()[0]
    results = []
    for n in (int(s) for s in args.sizes.split(",")):
        before = os.getloadavg()[0]
        r = measure(n, root, workers=args.workers, scan_sample=args.scan_sample)
        r["load_start"], r["load"] = round(before, 2), round(os.getloadavg()[0], 2)
        results.append(r)
        scanned = (
            "" if r["scan_entries"] == n else f", extrapolated from {r['scan_entries']:,} in {r['scan_sample_s']} s"
        )
        print(
            f"{r['entries']:>9,} entries ({r['mark_rows']:,} marks, {r['marks_mb']} MB of them, "
            f"{r['marks_bytes_per_entry']} B an entry; schema 7: {r['schema7_marks_mb']} MB; "
            f"{r['database_mb']} MB): erase {r['erase_s']} s "
            f"({r['erased_entries']} entries erased), old scan {r['scan_s']} s ({r['scan_found']} found{scanned}), "
            f"vacuum {r['vacuum_s']} s; fill {r['fill_s']} s; load {r['load_start']} to {r['load']}",
            flush=True,
        )
        if args.publish:  # after each size: a later size that fails keeps the earlier ones
            seconds, load_now = time.perf_counter() - started, os.getloadavg()[0]
            figures = {"results": results}
            path = write_record(
                args.publish, "erase-cost", figures, argv=None, seconds=seconds, load=(load_start, load_now)
            )
            print(f"record: {path}", flush=True)
    if not args.workdir:
        shutil.rmtree(root, ignore_errors=True)
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs")
    if args.out:
        args.out.write_text(json.dumps({"results": results, "loadavg": load}, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
