"""GEM's graph math at 10k, 100k and 1M chunks: wall time and peak memory per phase (a script that prints figures).

No LLM runs here. Chunk vectors: real MiniLM (ONNX) vectors of chunks (T = 100 tokens) of the texts in
/work/shared/data, as many as ``--real`` (embedded once and cached under ``--cache``; ``bench_graph.py`` has the
loader), and beyond that SYNTHETIC unit vectors: a random real vector plus Gaussian noise (``--noise``, relative to
a unit vector's spread over d = 384 dimensions: 0.6 gives cosine ~0.86 to its parent), renormalized, so the
synthetic corpus keeps the real one's topic structure; the parent is a random mix of two real vectors
(``--synthetic mix``, default) or one real vector (``copies``, ~100 near-copies of each at 1M: see
:func:`chunk_vectors`). Utility questions: m stand-ins per chunk, the chunk's
vector plus small noise, combined as ``v_ij = (E(q) + v_i) / 2`` (as ``bench_graph.py``), generated in blocks as
unit rows of float32 or, with ``--q-dtype float16``, float16 (3.9 GB instead of 7.7 GB at 1M; up to
``--half-check-max`` chunks the float16 graph is compared with the float32 one in the same run: rows with the same
neighbour set, the largest value difference, the top eigenvectors' |cosine|). Each n runs in a fresh child
process, so its peak RSS is its own.

Phases, as a GEM build runs them above ``gem.ann_above`` (``strategies/gem/graph.py``, ``strategy.py``):

* ``S``        the kNN similarity graph through the HNSW index (``graph.knn_ann``), k = ``--knn`` (GEM's 32);
* ``L``        the sparse normalized Laplacian (zero diagonal);
* ``eig``      its top 10 eigenpairs by Lanczos (``eigsh``, as the spectrum report asks for; tol 1e-6, 64 Lanczos
               vectors, at most 100 restarts and then LOBPCG, as GEM's large path; ``eigsh capped`` says whether
               the cap was reached);
* ``W``        the walk weights (clipped, zero diagonal);
* ``lists``    the inverted-file partition of the question vectors (``graph.ann.coarse_partition``);
* ``prepare``  the retrieval arrays (``AnnPreparedGraph.prepare_ann``, once per opened memory);
* retrieval    p50/p95 ms per query: GEM (``gem.search = best_first``: candidates from the lists, the walk on the
               touched nodes) and dense top-B (exact float32 cosine over all chunk vectors + argpartition, what
               the ``dense`` strategy computes), over ``--queries`` prompts (a chunk vector plus noise).

Agreement, measured at every n: ``S recall@k`` of ``--sample`` rows (their exact symmetric rows computed one at a
time); ``walk agreement``, the fraction of queries whose GEM retrieval order through the lists equals the exact
walk's (every question scanned) on the same graph. Up to ``--exact-max`` chunks also the exact kNN graph
(``knn_similarity_matrix``, all pairs): its time, and the top eigenvectors of both graphs (|cosine|, the smallest
of the top 4).

    python benchmarks/scale.py                        # n = 10000, 100000
    python benchmarks/scale.py --sizes 1000000 --q-dtype float16   # 1M: see docs/results.md for time and memory
    python benchmarks/scale.py --sizes 10000 --json   # machine-readable rows

Prints one table row per n, growth exponents between sizes, and the machine's load average beside them.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
DIM = 384


def rss_mb() -> tuple[float, float]:
    """(current RSS, peak RSS) of this process in MB."""
    with open("/proc/self/statm") as fh:
        current = int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    return current, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def chunk_vectors(n: int, args: argparse.Namespace, rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """``(n, 384)`` float32 unit chunk vectors (real first, then synthetic) and how many are real.

    Synthetic rows (``--synthetic``): ``mix`` (default) = ``w a + (1 - w) b`` of two random real vectors ``a, b``
    with ``w ~ U(0, 1)``, plus noise, renormalized: a continuum between topics, as a large corpus has; ``copies`` =
    one random real vector plus noise, so that at 1M chunks each real vector has ~100 near-copies, tight clusters
    whose near-equal top eigenvalues (one per cluster, all near 1) make Lanczos slow to separate them."""
    sys.path.insert(0, str(HERE))
    from bench_graph import embed_cached, real_chunks

    real = np.zeros((0, DIM), dtype=np.float32)
    if args.real > 0:
        real = embed_cached(real_chunks(args.data, min(n, args.real)), args.cache).astype(np.float32)
    if real.shape[0] >= n:
        return real[:n], n
    out = np.empty((n, DIM), dtype=np.float32)
    out[: real.shape[0]] = real
    base = real if real.shape[0] else None
    for lo in range(real.shape[0], n, 65536):
        hi = min(n, lo + 65536)
        noise = rng.standard_normal((hi - lo, DIM), dtype=np.float32) / np.float32(math.sqrt(DIM))
        block = noise * np.float32(args.noise)
        if base is not None:
            parent = base[rng.integers(0, base.shape[0], hi - lo)]
            if args.synthetic == "mix":
                w = rng.uniform(0.0, 1.0, (hi - lo, 1)).astype(np.float32)
                parent = w * parent + (1 - w) * base[rng.integers(0, base.shape[0], hi - lo)]
            block += parent
        out[lo:hi] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out, real.shape[0]


def question_vectors(V: np.ndarray, m: int, dtype: type = np.float32, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """``(n m, d)`` unit rows of ``v_ij = (E(q) + v_i) / 2`` with ``E(q)`` = the chunk vector + noise (unit), in
    ``dtype`` (float16 halves the 7.7 GB of float32 at 1M chunks, m = 5), and the ``(n m,)`` int64 owners. The
    same ``seed`` gives the same rows in either dtype (before the cast)."""
    rng = np.random.default_rng(seed)
    n, d = V.shape
    owner = np.repeat(np.arange(n, dtype=np.int64), m)
    Q = np.empty((n * m, d), dtype=dtype)
    for lo in range(0, n * m, 262144):
        hi = min(n * m, lo + 262144)
        raw = V[owner[lo:hi]] + rng.standard_normal((hi - lo, d), dtype=np.float32) * np.float32(0.3 / math.sqrt(d))
        raw /= np.linalg.norm(raw, axis=1, keepdims=True)
        raw += V[owner[lo:hi]]
        raw /= np.linalg.norm(raw, axis=1, keepdims=True)
        Q[lo:hi] = raw
    return Q, owner


def exact_rows(Vn: np.ndarray, Qs: np.ndarray, rows: np.ndarray, k: int) -> list[set[int]]:
    """The exact top-k off-diagonal columns of the symmetric part of S for a few rows."""
    out = []
    for t in rows.tolist():
        sym = (Vn @ Qs[t] + Qs @ Vn[t]) / 2
        sym[t] = -np.inf
        out.append(set(np.argpartition(-sym, k - 1)[:k].tolist()))
    return out


def one_size(n: int, args: argparse.Namespace) -> dict[str, Any]:
    """Every phase for n chunks, in this process."""
    from gemrag.graph.ann import coarse_partition, list_count
    from gemrag.graph.knn_ann import approximate_knn_similarity_matrix
    from gemrag.graph.laplacian import adjacency_matrix, normalized_laplacian
    from gemrag.graph.similarity import _prepare32, knn_similarity_matrix
    from gemrag.graph.spectrum import eigenpairs
    from gemrag.strategies.gem.ann_search import AnnPreparedGraph
    from gemrag.strategies.gem.graph import LARGE_EIGSH_MAXITER, LARGE_EIGSH_NCV, LARGE_EIGSH_TOL
    from gemrag.strategies.gem.search import _walk

    rng = np.random.default_rng(0)
    half = args.q_dtype == "float16"
    row: dict[str, Any] = {"n": n, "m": args.m, "knn": args.knn, "synthetic": args.synthetic, "q_dtype": args.q_dtype}
    t0 = time.perf_counter()
    V, row["real"] = chunk_vectors(n, args, rng)
    Q, owner = question_vectors(V, args.m, np.float16 if half else np.float32)
    row["data_s"] = time.perf_counter() - t0
    row["data_rss"] = rss_mb()[0]
    print(
        f"  n={n} data: {row['data_s']:.1f} s, RSS {row['data_rss']:.0f} MB, load {os.getloadavg()[0]:.1f}", flush=True
    )

    clock = [time.perf_counter()]

    def done(name: str) -> None:
        """Record the phase that started at the last call (time, RSS after it, peak RSS so far, load)."""
        row[f"{name}_s"] = time.perf_counter() - clock[0]
        row[f"{name}_rss"], row[f"{name}_peak"] = rss_mb()
        row[f"{name}_load"] = round(os.getloadavg()[0], 1)
        print(
            f"  n={n} {name}: {row[f'{name}_s']:.1f} s, RSS {row[f'{name}_rss']:.0f} MB, "
            f"peak {row[f'{name}_peak']:.0f} MB, load {row[f'{name}_load']}",
            flush=True,
        )
        clock[0] = time.perf_counter()

    clock[0] = time.perf_counter()
    S = approximate_knn_similarity_matrix(V, Q, owner, args.knn)
    done("S")
    row["S_nnz_per_row"] = S.nnz / n
    L = normalized_laplacian(S, diagonal="zero")
    done("L")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        values, vectors = eigenpairs(
            L,
            10,
            method="sparse",
            tol=LARGE_EIGSH_TOL,
            ncv=LARGE_EIGSH_NCV,
            maxiter=args.eig_maxiter or LARGE_EIGSH_MAXITER,
        )
    row["eig_fallback"] = any("did not converge" in str(w.message) for w in caught)
    done("eig")
    row["top_eigenvalues"] = [round(float(v), 5) for v in values]
    W = adjacency_matrix(S, diagonal="zero")
    done("W")

    sample = rng.choice(n, min(args.sample, n), replace=False)
    Vn, Qs = _prepare32(V, Q, owner)
    want = exact_rows(Vn, Qs, sample, args.knn)
    del Vn, Qs
    got = [set(S.indices[S.indptr[t] : S.indptr[t + 1]].tolist()) - {t} for t in sample.tolist()]
    row["S_recall"] = float(np.mean([len(w & g) / len(w) for w, g in zip(want, got, strict=True)]))
    if half and n <= args.half_check_max:
        # the same graph from float32 questions (the same unit rows before the cast): what float16 changes
        Q32, _ = question_vectors(V, args.m, np.float32)
        S32 = approximate_knn_similarity_matrix(V, Q32, owner, args.knn)
        del Q32
        same = [
            set(S.indices[S.indptr[t] : S.indptr[t + 1]].tolist())
            == set(S32.indices[S32.indptr[t] : S32.indptr[t + 1]].tolist())
            for t in range(n)
        ]
        row["half_rows_same"] = float(np.mean(same))
        both = S.astype(bool).multiply(S32.astype(bool))  # the pairs both graphs keep
        row["half_value_maxdiff"] = float(abs((S - S32).multiply(both)).max())
        _, x32 = eigenpairs(
            normalized_laplacian(S32, diagonal="zero"), 10, method="sparse", tol=LARGE_EIGSH_TOL, ncv=LARGE_EIGSH_NCV
        )
        row["half_eigvec_cos_min"] = float(np.min(np.abs(np.sum(x32[:, :4] * vectors[:, :4], axis=0))))
        del S32, x32
    if n <= args.exact_max:
        clock[0] = time.perf_counter()
        E = knn_similarity_matrix(V, Q, owner, args.knn)
        done("S_exact")
        _, xe = eigenpairs(normalized_laplacian(E, diagonal="zero"), 10, method="sparse")  # exact graph, defaults
        row["eigvec_cos_min"] = float(np.min(np.abs(np.sum(xe[:, :4] * vectors[:, :4], axis=0))))
        del E, xe
    del S, L, vectors

    queries = V[rng.choice(n, args.queries, replace=False)] + rng.standard_normal((args.queries, DIM)).astype(
        np.float32
    ) * np.float32(0.5 / math.sqrt(DIM))
    clock[0] = time.perf_counter()
    centroids, lists = coarse_partition(Q, list_count(len(owner)))  # reads Q a block at a time (no copy)
    done("lists")
    graph = AnnPreparedGraph.prepare_ann(Q, owner, V, W, centroids, lists)
    del Q, V, W
    done("prepare")
    gem_ms, dense_ms, same_order = [], [], 0
    Vd = graph.unit_nodes
    for q in queries:
        start = time.perf_counter()
        order, _ = graph.search(q, args.budget)
        gem_ms.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        p = (q / np.linalg.norm(q)).astype(np.float32)
        scores = Vd @ p
        top = np.argpartition(-scores, args.budget)[: args.budget]
        top[np.argsort(-scores[top])]
        dense_ms.append((time.perf_counter() - start) * 1000)
        rel = graph.relevance(q)  # every question: the exact walk on the same graph
        exact_order, _ = _walk(rel, graph.weights, graph.scale, int(np.argmax(rel)), args.budget)
        same_order += exact_order.tolist() == order.tolist()
    row["gem_p50_ms"], row["gem_p95_ms"] = np.percentile(gem_ms, [50, 95]).tolist()
    row["dense_p50_ms"], row["dense_p95_ms"] = np.percentile(dense_ms, [50, 95]).tolist()
    row["gem_over_dense_p50"] = row["gem_p50_ms"] / row["dense_p50_ms"]
    row["walk_agreement"] = same_order / len(queries)
    row["query_load"] = round(os.getloadavg()[0], 1)
    row["graph_eig_s"] = row["S_s"] + row["L_s"] + row["eig_s"]
    row["build_s"] = row["graph_eig_s"] + row["W_s"] + row["lists_s"]
    row["peak_rss_mb"] = rss_mb()[1]
    return row


COLUMNS = [
    ("n", "n"),
    ("real", "real vectors"),
    ("S_s", "S s"),
    ("L_s", "L s"),
    ("eig_s", "eigsh s"),
    ("W_s", "W s"),
    ("lists_s", "lists s"),
    ("build_s", "build s"),
    ("prepare_s", "prepare s"),
    ("S_recall", "S recall@k"),
    ("S_exact_s", "exact S s"),
    ("eigvec_cos_min", "eigvec |cos| min"),
    ("eig_fallback", "eigsh capped"),
    ("half_rows_same", "fp16 rows = fp32"),
    ("half_eigvec_cos_min", "fp16 eigvec |cos| min"),
    ("gem_p50_ms", "GEM p50 ms"),
    ("gem_p95_ms", "GEM p95 ms"),
    ("dense_p50_ms", "dense p50 ms"),
    ("dense_p95_ms", "dense p95 ms"),
    ("gem_over_dense_p50", "GEM/dense p50"),
    ("walk_agreement", "walk = exact"),
    ("peak_rss_mb", "peak RSS MB"),
]


def fmt(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"
    return str(v)


def main() -> None:
    """Parse the arguments, run each size in a child process, print the table and growth exponents."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",") if x], default=[10000, 100000])
    ap.add_argument("--m", type=int, default=5, help="stand-in utility questions per chunk")
    ap.add_argument("--knn", type=int, default=32, help="neighbours per node (gem.knn)")
    ap.add_argument("--real", type=int, default=10000, help="real MiniLM vectors at most (0: synthetic only)")
    ap.add_argument("--noise", type=float, default=0.6, help="synthetic vectors' noise around a real one")
    ap.add_argument("--synthetic", choices=["mix", "copies"], default="mix", help="how synthetic vectors are made")
    ap.add_argument("--q-dtype", choices=["float32", "float16"], default="float32", help="question vectors' dtype")
    ap.add_argument("--half-check-max", type=int, default=100000, help="largest n where float16 is compared to float32")
    ap.add_argument("--eig-maxiter", type=int, default=0, help="eigsh restarts at most (0: GEM's large-path cap)")
    ap.add_argument("--queries", type=int, default=100, help="prompts timed per size")
    ap.add_argument("--budget", type=int, default=4, help="B, nodes per retrieval")
    ap.add_argument("--sample", type=int, default=200, help="rows whose exact neighbour lists give the recall")
    ap.add_argument("--exact-max", type=int, default=20000, help="largest n for the exact all-pairs kNN graph")
    ap.add_argument("--data", type=Path, default=Path("/work/shared/data"))
    ap.add_argument("--cache", type=Path, default=Path("/tmp/gemrag-bench"))
    ap.add_argument("--json", action="store_true", help="print JSON rows")
    ap.add_argument("--one", type=int, default=0, help=argparse.SUPPRESS)  # child process: one size
    args = ap.parse_args()
    if args.one:
        print("ROW " + json.dumps(one_size(args.one, args)), flush=True)
        return
    rows = []
    for n in args.sizes:
        load = os.getloadavg()
        passed, skip = [], False
        for a in sys.argv[1:]:
            if skip or a.startswith("--sizes="):
                skip = False
                continue
            if a == "--sizes":
                skip = True
                continue
            passed.append(a)
        cmd = [sys.executable, __file__, "--one", str(n), *passed]
        start = time.perf_counter()
        line, code = _run_child(cmd)
        if line is None:
            print(f"n={n}: failed (exit {code})", flush=True)
            continue
        row = json.loads(line[4:])
        row["wall_s"] = time.perf_counter() - start
        row["load_before"], row["load_after"] = [round(x, 1) for x in load], [round(x, 1) for x in os.getloadavg()]
        rows.append(row)
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print("| " + " | ".join(h for _, h in COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    for row in rows:
        print("| " + " | ".join(fmt(row.get(k)) for k, _ in COLUMNS) + " |")
    for row in rows:
        print(
            f"n={row['n']}: load average before {row['load_before']}, after {row['load_after']}; "
            f"peak RSS {row['peak_rss_mb']:.0f} MB; top eigenvalues {row['top_eigenvalues']}"
        )
    if len(rows) >= 2:
        xs = np.log([r["n"] for r in rows])
        parts = []
        for key in ("S_s", "eig_s", "build_s", "gem_p50_ms", "dense_p50_ms", "peak_rss_mb"):
            ys = np.log([max(r[key], 1e-9) for r in rows])
            parts.append(f"{key}: n^{np.polyfit(xs, ys, 1)[0]:.2f}")
        print("growth exponents (least squares on log-log): " + "; ".join(parts))


def _run_child(cmd: list[str]) -> tuple[str | None, int]:
    """Run one size's child process, passing its phase lines on to stderr as they come (a 1M run takes an hour: its
    finished phases stay visible if it is stopped); return its ``ROW`` line (None if it printed none) and exit code."""
    row = None
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) as child:
        assert child.stdout is not None
        for x in child.stdout:
            if x.startswith("ROW "):
                row = x.rstrip("\n")
            else:
                sys.stderr.write(x)
                sys.stderr.flush()
    return row, child.returncode


if __name__ == "__main__":
    main()
