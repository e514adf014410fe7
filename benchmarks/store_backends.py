"""The two store backends side by side: SQLite + numpy against PostgreSQL + pgvector (exact and HNSW), at 10k and
100k chunks (a script that prints figures; issue 27).

No LLM runs here. Chunks: the first ``--real`` chunks (T = 100 MiniLM tokens) of the texts in /work/shared/data,
with their real MiniLM (ONNX) vectors (embedded once, cached under ``--cache``; ``bench_graph.py`` has the loader),
and beyond them SYNTHETIC chunks: a real chunk's text with a number, and as vector a random real vector plus
Gaussian noise, renormalized (``scale.py``'s rule, ``--noise`` 0.6: cosine ~0.86 to its parent). Queries: the real
questions of MuSiQue and HotpotQA (``--queries`` of them), embedded with MiniLM. GEM's utility questions are
stand-ins (m = ``--m`` per chunk: the chunk's vector plus noise, as ``scale.py``), no summary nodes (those need the
LLM).

For each backend and size, in a fresh memory:

* ``write s``: writing the documents and chunk rows, the ``dense`` build (its chunk vectors through the memory's
  embedding cache, the published arrays and, on PostgreSQL, the pgvector table and its index) and the publish of
  the GEM graph (arrays, edges, the question vectors' pgvector table). The GEM graph itself (kNN graph, Laplacian,
  eigenpairs, the walk weights: numpy, the same on both backends) is computed once per size beforehand, ``graph s``.
* ``dense p50/p90 ms`` and ``gem p50/p90 ms``: ``Memory.retrieve`` of B = ``--budget`` hits per question
  (``gem.search = best_first``), after an untimed pass over the questions (it loads the build and puts the
  questions' vectors in the memory's embedding cache, so the timed pass reads them from there: no MiniLM call is
  timed).
* ``dense_sql`` / ``gem_sql``: SQL statements per retrieval of the timed pass, and ``*_trips`` PostgreSQL round
  trips (``statements.py``: a snapshot's ``BEGIN`` rides with its first read); ``write_sql``: statements of the
  write. Then every PostgreSQL figure divided by SQLite's of the same size and run.
* ``disk MB``: the memory directory (SQLite) or every relation of the memory's schema with its indexes and TOAST
  (``pg_total_relation_size``; the server's WAL and catalogue not counted).
* ``recall@10``: for the HNSW variant, the fraction of the exact top-10 chunks (``dense``'s vector table searched
  exactly) that the HNSW search returns, over the queries.

BLAS runs on one thread (``OPENBLAS_NUM_THREADS=1`` unless set; ``GEMRAG_BENCH_BLAS_THREADS`` changes it): on a
shared 2-core machine under load, OpenBLAS's second thread made one (2000, 384) matrix-vector product 16 ms instead
of 0.2 ms, which would have been measured as the SQLite backend's latency.

The PostgreSQL variants: ``pg-exact`` (``hnsw_above`` above every table: sequential scans), ``pg-hnsw``
(``hnsw_above=1``: every vector table gets an HNSW index, pgvector's m = 16, ef_construction = 64;
``ef_search`` = ``--ef-search``). The server is pgserver's PostgreSQL 16 + pgvector (a fresh data directory under
/tmp, removed after) unless ``--url`` names one.

    python benchmarks/store_backends.py                          # n = 10000 and 100000
    python benchmarks/store_backends.py --sizes 10000 --json     # machine-readable rows
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # before numpy loads OpenBLAS: see --blas-threads
    os.environ.setdefault("OPENBLAS_NUM_THREADS", os.environ.get("GEMRAG_BENCH_BLAS_THREADS", "1"))

import sqlite3  # noqa: E402

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from statements import StatementCounter  # noqa: E402

DIM = 384
CHUNKS_PER_DOC = 100


class LookupEmbedder:
    """The MiniLM vectors computed beforehand, by text (an unknown text is an error: nothing is embedded here)."""

    model_id = "onnx:sentence-transformers/all-MiniLM-L6-v2"
    dim = DIM

    def __init__(self, table: dict[str, np.ndarray]) -> None:
        self.table = table
        self.tokens_used = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), 384)`` float32 rows of the table."""
        self.tokens_used += sum(len(t.split()) for t in texts)
        return np.stack([self.table[t] for t in texts]).astype(np.float32)

    def count_tokens(self, text: str) -> int:
        """Whitespace words (only the usage log reads it)."""
        return len(text.split())


class NoLLM:
    """Fails on any call: the benchmark makes none."""

    model_id = "none"

    def complete(self, *args: Any, **kw: Any) -> Any:
        raise RuntimeError("store_backends.py makes no LLM call")


def load_chunks(n: int, args: argparse.Namespace) -> tuple[list[str], np.ndarray, int]:
    """``n`` chunk texts and their ``(n, 384)`` float32 unit vectors (real first, then synthetic), and how many
    are real."""
    sys.path.insert(0, str(HERE))
    from bench_graph import embed_cached, real_chunks

    texts = real_chunks(args.data, min(n, args.real))
    real = embed_cached(texts, args.cache).astype(np.float32)
    real /= np.linalg.norm(real, axis=1, keepdims=True)
    if len(texts) >= n:
        return texts[:n], real[:n], n
    rng = np.random.default_rng(7)
    out = np.empty((n, DIM), dtype=np.float32)
    out[: len(texts)] = real
    parents = rng.integers(0, len(texts), n - len(texts))
    noise = rng.standard_normal((n - len(texts), DIM), dtype=np.float32) / np.float32(math.sqrt(DIM))
    block = noise * np.float32(args.noise) + real[parents]
    out[len(texts) :] = block / np.linalg.norm(block, axis=1, keepdims=True)
    synthetic = [f"{texts[p]} [{i}]" for i, p in enumerate(parents.tolist(), start=len(texts))]
    return texts + synthetic, out, len(texts)


def load_queries(args: argparse.Namespace) -> tuple[list[str], np.ndarray]:
    """Real MuSiQue and HotpotQA questions and their MiniLM vectors (float32, unit)."""
    sys.path.insert(0, str(HERE))
    from bench_graph import embed_cached

    musique = json.loads((args.data / "multihop" / "musique_train.json").read_text())
    hotpot = json.loads((args.data / "multihop" / "hotpotqa_train.json").read_text())
    questions = [q["question"] for q in musique] + [q["question"] for q in hotpot]
    questions = list(dict.fromkeys(questions))[: args.queries]
    vectors = embed_cached(questions, args.cache).astype(np.float32)
    return questions, vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def gem_graph(V: np.ndarray, m: int, args: argparse.Namespace) -> tuple[dict[str, Any], float]:
    """GEM's graph over the chunks with stand-in utility questions (no summary nodes), as ``GemStrategy.build``
    computes it (``chunk_graph``, ``adjacency_matrix``, the inverted lists above ``gem.ann_above``), and its
    seconds."""
    from gemrag.graph.ann import coarse_partition, list_count
    from gemrag.graph.laplacian import adjacency_matrix
    from gemrag.strategies.gem.graph import chunk_graph, graph_mode
    from gemrag.strategies.gem.settings import GemConfig

    rng = np.random.default_rng(11)
    n = V.shape[0]
    owner = np.repeat(np.arange(n, dtype=np.int64), m)
    raw = V[owner] + rng.standard_normal((n * m, DIM), dtype=np.float32) * np.float32(0.3 / math.sqrt(DIM))
    raw /= np.linalg.norm(raw, axis=1, keepdims=True)
    Q = ((raw + V[owner]) / 2).astype(np.float32)
    cfg = GemConfig(questions=m)
    start = time.perf_counter()
    mode = graph_mode(cfg, n)
    S, _, _, report = chunk_graph(V, Q, owner, mode, cfg)
    W = adjacency_matrix(S, diagonal="zero")
    lists = None
    if mode == "sparse" and n >= cfg.ann_above:
        lists = coarse_partition(Q, list_count(n * m))
    seconds = time.perf_counter() - start
    return {"Q": Q, "owner": owner, "W": W, "mode": mode, "lists": lists, "spectrum": report.as_dict()}, seconds


def write_memory(
    location: str,
    texts: list[str],
    V: np.ndarray,
    graph: dict[str, Any],
    queries: dict[str, np.ndarray],
    counter: StatementCounter | None = None,
) -> Any:
    """A memory at ``location`` holding the chunks, a ``dense`` build and the GEM graph; returns the open Memory
    (its embedder knows the chunks' and the questions' vectors; ``counter`` counts a SQLite memory's statements
    from its opening on)."""
    from gemrag.config import load_config
    from gemrag.memory import Memory
    from gemrag.store.rows import sha256_text
    from gemrag.strategies import get_strategy
    from gemrag.strategies.gem.search import top_k_edges
    from gemrag.strategies.gem.settings import gem_config
    from gemrag.strategies.gem.strategy import EDGES_PER_NODE, GemGraph

    table = dict(zip(texts, V, strict=True)) | queries
    m = int(graph["Q"].shape[0] // len(texts))
    cfg = load_config(None, {"strategy": "gem", "memory": {"chunk_titles": False}, "gem": {"questions": m}})
    mem = Memory.open(location, cfg, llm=NoLLM(), embedder=LookupEmbedder(table))  # type: ignore[arg-type]
    store = mem.store
    if counter is not None and isinstance(getattr(store.database, "conn", None), sqlite3.Connection):
        counter.watch_sqlite(store.database.conn)
    store.set_meta("chunk_tokens", 100)
    for lo in range(0, len(texts), CHUNKS_PER_DOC):
        part = texts[lo : lo + CHUNKS_PER_DOC]
        body = "\n".join(part)
        with store.transaction() as c:
            store.insert_document(
                c, f"bench/{lo}", f"part {lo}", body, sha256_text(body), chunks=[(t, 100) for t in part]
            )
    get_strategy("dense").build(mem.ctx)
    chunk_ids = np.array([n.id for n in store.nodes("chunk")], dtype=np.int64)
    generation = store.begin_build("gem")
    qids = np.arange(graph["Q"].shape[0], dtype=np.int64)
    g = GemGraph(chunk_ids, V, graph["Q"], graph["owner"], qids, graph["W"])
    if graph["lists"] is not None:
        g.list_centroids, g.question_list = graph["lists"]
    src, dst, weight = top_k_edges(graph["W"], min(EDGES_PER_NODE, len(chunk_ids) - 1))
    meta = {"spectrum": graph["spectrum"], "questions_m": gem_config(cfg).questions, "graph": graph["mode"]}
    g.publish(mem.ctx, generation, meta, (chunk_ids[src], chunk_ids[dst], weight))
    return mem


def latencies(
    mem: Any, strategy: str, questions: list[str], budget: int, counter: StatementCounter
) -> tuple[list[float], float, float]:
    """Milliseconds per ``Memory.retrieve`` of each question (after one untimed pass: see the module docstring),
    and the mean statements and round trips per retrieval of the timed pass."""
    for q in questions:
        mem.retrieve(q, budget, strategy=strategy)
    out = []
    statements, trips = counter.statements, counter.round_trips
    for q in questions:
        start = time.perf_counter()
        mem.retrieve(q, budget, strategy=strategy)
        out.append((time.perf_counter() - start) * 1000)
    n = max(len(questions), 1)
    return out, (counter.statements - statements) / n, (counter.round_trips - trips) / n


def disk_mb(location: str) -> float:
    """MB of a memory: its directory, or every relation of its schema (indexes and TOAST included)."""
    from gemrag.store.postgres.connect import PgLocation, connect, is_postgres_url

    if not is_postgres_url(location):
        return sum(f.stat().st_size for f in Path(location).rglob("*") if f.is_file()) / 2**20
    loc = PgLocation.parse(location)
    conn = connect(loc.conninfo, loc.schema, loc.display)
    try:
        row = conn.execute(
            "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
            " JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = %s AND c.relkind IN ('r', 'm')",
            (loc.schema,),
        ).fetchone()
        return float(row[0]) / 2**20
    finally:
        conn.close()


def recall_at_10(mem: Any, Vq: np.ndarray) -> float:
    """Mean |HNSW top-10 ∩ exact top-10| / 10 over the queries, on the ``dense`` build's vector table."""
    from gemrag.strategies.baselines.dense import _prepared
    from gemrag.strategies.platform.common import load_published

    store = mem.store
    generation, _, vectors, _ = load_published(mem.ctx, "dense", _prepared)  # as the dense strategy loaded it
    hits = 0
    for v in Vq:
        approx, _ = store.nearest("dense", generation, "vectors", vectors, v, 10)
        exact, _ = store.nearest("dense", generation, "vectors", vectors, v, 10, exact=True)
        hits += len(set(approx.tolist()) & set(exact.tolist()))
    return hits / (10 * len(Vq))


def pct(values: list[float], q: float) -> float:
    """The q-th percentile."""
    return float(np.percentile(np.asarray(values), q))


def one_run(
    backend: str, location: str, texts: list[str], V: np.ndarray, graph: dict[str, Any], questions: list[str],
    Vq: np.ndarray, args: argparse.Namespace,
) -> dict[str, Any]:  # fmt: skip
    """Every figure of one backend at one size."""
    counter = StatementCounter()
    with counter.installed():
        start = time.perf_counter()
        mem = write_memory(location, texts, V, graph, dict(zip(questions, Vq, strict=True)), counter)
        write = time.perf_counter() - start
        written = counter.statements
        try:
            dense, dense_sql, dense_trips = latencies(mem, "dense", questions, args.budget, counter)
            gem, gem_sql, gem_trips = latencies(mem, "gem", questions, args.budget, counter)
            recall = recall_at_10(mem, Vq) if backend == "pg-hnsw" else None
        finally:
            mem.close()
    return {
        "backend": backend,
        "n": len(texts),
        "write_s": write,
        "write_sql": written,
        "dense_p50_ms": pct(dense, 50),
        "dense_p90_ms": pct(dense, 90),
        "dense_sql": dense_sql,
        "dense_trips": dense_trips,
        "gem_p50_ms": pct(gem, 50),
        "gem_p90_ms": pct(gem, 90),
        "gem_sql": gem_sql,
        "gem_trips": gem_trips,
        "disk_mb": disk_mb(location),
        "recall_at_10": recall,
    }


def ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each PostgreSQL row's write time and latencies divided by those of the SQLite row of the same size (the
    same run, so the same load)."""
    base = {r["n"]: r for r in rows if r["backend"] == "sqlite"}
    out = []
    for r in rows:
        b = base.get(r["n"])
        if b is None or r["backend"] == "sqlite":
            continue
        keys = ("write_s", "dense_p50_ms", "dense_p90_ms", "gem_p50_ms", "gem_p90_ms")
        out.append({"n": r["n"], "backend": r["backend"]} | {k: r[k] / b[k] if b[k] else None for k in keys})
    return out


def start_server(url: str | None) -> tuple[str, Any, Path | None]:
    """A PostgreSQL URL (``url``, or a pgserver in a fresh /tmp directory) and what to clean up."""
    if url:
        return url, None, None
    import pgserver

    directory = Path(tempfile.mkdtemp(prefix="gemrag-bench-pg-"))
    server = pgserver.get_server(directory, cleanup_mode="stop")
    return server.get_uri(), server, directory


def with_params(base: str, **params: Any) -> str:
    """``base`` with query parameters added."""
    extra = "&".join(f"{k}={v}" for k, v in params.items())
    return f"{base}{'&' if '?' in base else '?'}{extra}"


def fmt(v: Any) -> str:
    """A table cell."""
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.3f}" if v < 1 else f"{v:.1f}"
    return str(v)


def main(argv: list[str] | None = None) -> int:
    """Run every backend at every size and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000", help="chunk counts, comma-separated")
    ap.add_argument("--real", type=int, default=10000, help="real chunks (the rest synthetic)")
    ap.add_argument("--noise", type=float, default=0.6)
    ap.add_argument("--m", type=int, default=5, help="stand-in utility questions per chunk")
    ap.add_argument("--queries", type=int, default=200, help="real questions timed (MuSiQue + HotpotQA)")
    ap.add_argument("--budget", type=int, default=10, help="hits per retrieval")
    ap.add_argument("--ef-search", type=int, default=100)
    ap.add_argument("--backends", default="sqlite,pg-exact,pg-hnsw")
    ap.add_argument("--url", help="a PostgreSQL server (default: pgserver in a fresh /tmp directory)")
    ap.add_argument("--data", type=Path, default=HERE.parents[1] / "shared" / "data")
    ap.add_argument("--cache", type=Path, default=Path("/tmp/gemrag-bench"))
    ap.add_argument("--json", action="store_true", help="print the rows as JSON lines too")
    args = ap.parse_args(argv)
    backends = args.backends.split(",")
    questions, Vq = load_queries(args)
    print(f"{len(questions)} real questions; load average {os.getloadavg()[0]:.2f}", flush=True)
    url, server, pgdir = start_server(args.url) if any(b.startswith("pg") for b in backends) else ("", None, None)
    rows: list[dict[str, Any]] = []
    work = Path(tempfile.mkdtemp(prefix="gemrag-bench-store-"))
    wall = time.perf_counter()
    try:
        for n in [int(s) for s in args.sizes.split(",")]:
            texts, V, n_real = load_chunks(n, args)
            graph, graph_s = gem_graph(V, args.m, args)
            print(f"n = {n}: {n_real} real chunks, {n - n_real} synthetic; GEM graph {graph_s:.1f} s", flush=True)
            for backend in backends:
                tag = hashlib.sha256(f"{backend}{n}{time.time()}".encode()).hexdigest()[:8]
                if backend == "sqlite":
                    location = str(work / f"m{n}_{tag}")
                else:
                    hnsw_above = 1 if backend == "pg-hnsw" else 10**9
                    location = with_params(
                        url, schema=f"bench_{n}_{tag}", hnsw_above=hnsw_above, ef_search=args.ef_search
                    )
                row = one_run(backend, location, texts, V, graph, questions, Vq, args)
                row |= {"real": n_real, "graph_s": graph_s, "load": os.getloadavg()[0]}
                rows.append(row)
                print("  " + json.dumps({k: fmt(v) for k, v in row.items()}), flush=True)
                if backend == "sqlite":
                    shutil.rmtree(location, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if server is not None:
            server.cleanup()
            shutil.rmtree(pgdir or "", ignore_errors=True)
    cols = ["n", "backend", "write_s", "dense_p50_ms", "dense_p90_ms", "gem_p50_ms", "gem_p90_ms", "dense_sql",
            "dense_trips", "gem_sql", "gem_trips", "write_sql", "disk_mb", "recall_at_10", "load"]  # fmt: skip
    print("\n(*_sql: statements per retrieval / per write; *_trips: PostgreSQL round trips per retrieval)")
    table(rows, cols)
    print("\nPostgreSQL / SQLite, same run:")
    table(ratios(rows), ["n", "backend", "write_s", "dense_p50_ms", "dense_p90_ms", "gem_p50_ms", "gem_p90_ms"])
    print(f"\nwall {time.perf_counter() - wall:.0f} s; load average now {os.getloadavg()}; "
          f"CPU cores {os.cpu_count()}; git {git_head()}")  # fmt: skip
    if args.json:
        for r in rows:
            print(json.dumps(r))
    return 0


def table(rows: list[dict[str, Any]], cols: list[str]) -> None:
    """Print rows as a Markdown table."""
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(fmt(r.get(c)) for c in cols) + " |")


def git_head() -> str:
    """The repository's HEAD commit (short)."""
    try:
        return subprocess.run(
            ["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


if __name__ == "__main__":
    sys.exit(main())
