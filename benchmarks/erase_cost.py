"""What an erase costs against the size of the LLM cache: the marks lookup of ``gemrag erase`` against the scan of
every entry that purging did before (reading and searching each cached prompt and answer).

For each size N a fresh SQLite memory gets N cache entries shaped like a build's (a one-shot instruction, a passage of
60 words drawn from a 5,000-word vocabulary, a JSON answer), each stored with its real marks
(:func:`gemrag.store.erase.response_marks`, as :meth:`~gemrag.store.caches.CacheRows.put_llm` does). Passages
repeat every ``N / 4`` entries, so one passage is held by 4 entries (a chunk's extraction, questions, summary and an
answer). Then one passage is removed (its marks quarantined, as a removal does) and timed:

* ``erase`` - :meth:`~gemrag.store.caches.CacheRows.purge_caches`: the quarantined marks looked up in ``llm_marks``,
  the entries holding one deleted (with the check that every entry is marked, an index-only anti-join);
* ``scan`` - what the purge did before marks: every entry read, decoded and searched for the removed sentences
  (normalised substring search, :mod:`gemrag.store.erase`'s old way), nothing deleted;
* ``vacuum`` - the physical erase that follows either (``VACUUM`` and the write-ahead log truncated): it rewrites the
  whole file, so it grows with the database, not with the change.

The marks' storage is measured too (SQLite's ``dbstat``: the pages of ``llm_entries``, ``llm_marks`` and their
indexes), against the same marks in schema 7's layout (one row ``(mark, key)`` per mark, the 64-character key
repeated, an index by key, and one extra row per entry saying it is marked), built from them in a scratch table and
dropped before the timings.

Run::

    python benchmarks/erase_cost.py --sizes 10000,100000            # figures on stdout
    python benchmarks/erase_cost.py --sizes 10000,100000,1000000 --out erase_cost.json
    python benchmarks/erase_cost.py --sizes 10000,100000 --publish erase-cost   # results/erase-cost.json

Prints one line per size and the load average of the machine at the end (the figures are wall times on a shared
machine).
"""

from __future__ import annotations

import argparse
import json
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
from gemrag.store.caches import write_marks
from gemrag.store.erase import marks_of, response_marks

INSTRUCTION = (
    "You write utility questions. Write 3 different questions that this passage answers. Answer as JSON with the key "
    "questions."
)
PASSAGE_WORDS = 60
VOCABULARY = 5000
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


def fill(store: Any, n: int, passages: list[str]) -> tuple[float, int]:
    """Store ``n`` entries with their marks (each passage's response marked once: its ``HOLDERS`` entries differ by
    key only, as one chunk's calls of several passes would by their instructions); (seconds, mark rows)."""
    start, marks = time.perf_counter(), 0
    memo: dict[int, tuple[str, set[int]]] = {}
    for first in range(0, n, BATCH):
        rows, marked = [], []
        for i in range(first, min(n, first + BATCH)):
            j = i % len(passages)
            if j not in memo:
                response = _entry(passages[j])
                memo[j] = (json.dumps(response), sorted(response_marks(response)))
            text, entry_marks = memo[j]
            key = f"{i:064x}"
            rows.append((key, "bench", text, time.time()))
            marked.append((key, entry_marks))
        with store.transaction() as c:
            c.executemany("INSERT INTO llm_cache(key, model, response, created) VALUES (?,?,?,?)", rows)
            write_marks(c, marked)  # as put_llm writes them
        marks += sum(len(m) for _, m in marked)
    return time.perf_counter() - start, marks


def scan(store: Any, removed: str) -> tuple[float, int]:
    """The old purge's search: every entry read, decoded and searched for the removed text's sentences."""
    fragments = [" ".join(s.casefold().split()) for s in removed.split(". ") if len(s) >= 12]
    start, found, after = time.perf_counter(), 0, ""
    while True:
        rows = store.database._query(
            "SELECT key, response FROM llm_cache WHERE key > ? ORDER BY key LIMIT 500", (after,)
        )
        for _, response in rows:
            data = json.loads(response)
            text = " ".join(json.dumps(data, ensure_ascii=False).casefold().split())
            found += any(f in text for f in fragments)
        if len(rows) < 500:
            return time.perf_counter() - start, found
        after = rows[-1][0]


def _schema7_bytes(store: Any) -> int:
    """Bytes the same marks take in schema 7's layout (module docstring), built in a scratch table then dropped."""
    with store.transaction() as c:
        c.execute(
            "CREATE TABLE old_marks (mark INTEGER NOT NULL, key TEXT NOT NULL, PRIMARY KEY (mark, key)) WITHOUT ROWID"
        )
        c.execute("CREATE INDEX old_marks_key ON old_marks(key)")
        c.execute("INSERT INTO old_marks SELECT m.mark, e.key FROM llm_marks m JOIN llm_entries e ON e.id = m.entry")
        c.execute("INSERT INTO old_marks SELECT 0, key FROM llm_entries")
    size = _table_bytes(store, ("old_marks", "old_marks_key"))
    with store.transaction() as c:
        c.execute("DROP TABLE old_marks")
    return size


def _table_bytes(store: Any, names: tuple[str, ...]) -> int:
    """Bytes of the pages of these tables and indexes (SQLite's ``dbstat``), 0 where ``dbstat`` is missing."""
    try:
        rows = store.database._query(
            f"SELECT SUM(pgsize) FROM dbstat WHERE name IN ({','.join('?' * len(names))})", names
        )
    except Exception:  # noqa: BLE001 - a SQLite built without dbstat
        return 0
    return int(rows[0][0] or 0)


def measure(n: int, root: Path, seed: int = 0) -> dict[str, Any]:
    """Fill, remove one passage, time the erase, the old scan and the vacuum, for ``n`` entries."""
    rng = random.Random(seed)
    passages = _passages(max(1, n // HOLDERS), rng)
    directory = root / f"m{n}"
    store = open_store(directory)
    try:
        filled, mark_rows = fill(store, n, passages)
        size = sum(p.stat().st_size for p in directory.iterdir() if p.name.startswith("memory.sqlite"))
        marks_bytes = _table_bytes(store, MARK_TABLES)
        old_bytes = _schema7_bytes(store)
        store.erase_physically()  # the scratch table's pages go before the timings
        removed = passages[len(passages) // 2]
        quarantined = marks_of(removed, every=True)
        with store.transaction() as c:
            store.forget_marks(c, quarantined)
        scanned, scan_found = scan(store, removed)
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
        "erase_s": round(erased, 4),
        "erased_entries": purged.llm_entries,
        "scan_s": round(scanned, 3),
        "scan_found": scan_found,
        "vacuum_s": round(vacuumed, 2),
        "vacuum_complete": erasure.complete,
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
    parser.add_argument("--table", type=Path, metavar="RECORD", help="print the Markdown table of a record and exit")
    args = parser.parse_args()
    if args.table:
        print(table(json.loads(args.table.read_text(encoding="utf-8"))))
        return
    root = args.workdir or Path(tempfile.mkdtemp(prefix="gemrag-erase-cost-"))
    started, load_start = time.perf_counter(), os.getloadavg()[0]
    results = []
    for n in (int(s) for s in args.sizes.split(",")):
        r = measure(n, root)
        r["load"] = round(os.getloadavg()[0], 2)
        results.append(r)
        print(
            f"{r['entries']:>9,} entries ({r['mark_rows']:,} marks, {r['marks_mb']} MB of them, "
            f"{r['marks_bytes_per_entry']} B an entry; schema 7: {r['schema7_marks_mb']} MB; "
            f"{r['database_mb']} MB): erase {r['erase_s']} s "
            f"({r['erased_entries']} entries erased), old scan {r['scan_s']} s ({r['scan_found']} found), "
            f"vacuum {r['vacuum_s']} s; fill {r['fill_s']} s",
            flush=True,
        )
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs")
    if args.out:
        args.out.write_text(json.dumps({"results": results, "loadavg": load}, indent=2) + "\n", encoding="utf-8")
    if args.publish:
        seconds = time.perf_counter() - started
        path = write_record(args.publish, "erase-cost", {"results": results}, argv=None, seconds=seconds,
                            load=(load_start, load[0]))  # fmt: skip
        print(f"record: {path}")


if __name__ == "__main__":
    main()
