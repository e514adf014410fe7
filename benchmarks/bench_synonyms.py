"""Cost of HippoRAG 2's synonym edges (``graph.synonyms.synonym_pairs``), exact vs faiss HNSW (a script, not a test).

For each size n and method it prints the wall seconds, the peak memory and the number of directed pairs
(cosine >= --threshold, at most --top-k per row), and where both methods ran, HNSW's recall of the exact
pairs (``recall``); ``sampled`` is HNSW's recall against brute force on 1,000 random rows (any n, untimed).
Each (n, method) runs in a fresh subprocess so that its peak RSS (``resource.getrusage``, ru_maxrss) is its
own; the figure printed is the peak RSS minus the RSS once the vectors exist (``rss+``), plus tracemalloc's
peak of numpy allocations (``numpy``; faiss's C++ memory is not traced).

Data: synthetic unit vectors (d = 384, float32) standing in for entity embeddings: n // 10 random cluster
centres with ~8 members each (per-cluster noise sigma uniform in [0.35, 0.9], so the members' expected
cosine 1 / (1 + sigma^2) spans 0.55-0.89 and some clusters, not all, reach 0.8) plus 20 % unclustered
random vectors. Random centres are nearly orthogonal in 384 dimensions, so pairs come from within clusters.

    python benchmarks/bench_synonyms.py                                  # n = 10000, both methods
    python benchmarks/bench_synonyms.py --n 10000 100000 --methods exact hnsw
    python benchmarks/bench_synonyms.py --n 100000 --methods hnsw

Measured on 2 shared, busy cores (load ~5): n = 10,000 exact 3.5-5.5 s, hnsw 12-22 s (recall 1.0);
n = 20,000 exact 20 s, hnsw 48 s; n = 100,000 hnsw 251 s (sampled recall 0.999). Exact grows as n^2 d
(~500 s expected at 100,000, not run), HNSW as ~n log n; most of HNSW's time is building the index.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

DIM = 384


def clustered_vectors(n: int, seed: int = 0, chunk: int = 10000) -> np.ndarray:
    """(n, 384) float32 unit vectors as described in the module docstring, built ``chunk`` rows at a time."""
    rng = np.random.default_rng(seed)
    n_centres = max(1, n // 10)
    centres = rng.standard_normal((n_centres, DIM)).astype(np.float32) / np.sqrt(DIM)
    sigma = rng.uniform(0.35, 0.9, n_centres).astype(np.float32)
    label = rng.integers(0, n_centres, n)
    lone = rng.random(n) < 0.2
    out = np.empty((n, DIM), dtype=np.float32)
    for lo in range(0, n, chunk):
        hi = min(n, lo + chunk)
        noise = rng.standard_normal((hi - lo, DIM)).astype(np.float32) / np.float32(np.sqrt(DIM))
        lab = label[lo:hi]
        block = np.where(lone[lo:hi, None], noise, centres[lab] + sigma[lab, None] * noise)
        out[lo:hi] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def run_one(n: int, method: str, threshold: float, top_k: int, out: Path) -> dict[str, float]:
    """Build the vectors, time one ``synonym_pairs`` call, save its pairs in ``out`` (.npz)."""
    from gemrag.graph.synonyms import synonym_pairs

    x = clustered_vectors(n)
    rss0 = _rss_mb()
    tracemalloc.start()
    start = time.perf_counter()
    src, dst, sim = synonym_pairs(x, threshold, top_k, method=method)  # type: ignore[arg-type]
    seconds = time.perf_counter() - start
    numpy_peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    np.savez(out, src=src, dst=dst)
    per_row = np.bincount(src, minlength=n)
    sampled = _sampled_recall(x, src, dst, threshold, top_k) if method == "hnsw" else float("nan")
    return {
        "sampled_recall": sampled,
        "seconds": seconds,
        "rss_plus_mb": _rss_mb() - rss0,
        "numpy_peak_mb": numpy_peak,
        "pairs": int(src.shape[0]),
        "rows_with_pair": float((per_row > 0).mean()),
        "rows_at_top_k": float((per_row >= top_k).mean()),
        "mean_sim": float(sim.mean()) if sim.size else float("nan"),
    }


def _sampled_recall(
    x: np.ndarray, src: np.ndarray, dst: np.ndarray, threshold: float, top_k: int, rows: int = 1000
) -> float:
    """Recall of (src, dst) against brute force on ``rows`` random source rows (not timed)."""
    pick = np.sort(np.random.default_rng(1).choice(x.shape[0], min(rows, x.shape[0]), replace=False))
    sims = x[pick] @ x.T
    sims[np.arange(pick.size), pick] = -np.inf
    found = set(zip(src.tolist(), dst.tolist(), strict=True))
    want = hit = 0
    for i, row in zip(pick.tolist(), sims, strict=True):
        cols = np.flatnonzero(row >= threshold)
        cols = cols[np.argsort(-row[cols], kind="stable")][:top_k]
        want += cols.size
        hit += sum((i, int(j)) in found for j in cols)
    return hit / want if want else 1.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, nargs="+", default=[10000])
    ap.add_argument("--methods", nargs="+", choices=["exact", "hnsw"], default=["exact", "hnsw"])
    ap.add_argument("--threshold", type=float, default=0.8)
    ap.add_argument("--top-k", type=int, default=100)
    ap.add_argument("--one", nargs=3, metavar=("N", "METHOD", "OUT"), help=argparse.SUPPRESS)  # child mode
    args = ap.parse_args()
    if args.one:
        n, method, out = int(args.one[0]), args.one[1], Path(args.one[2])
        print(json.dumps(run_one(n, method, args.threshold, args.top_k, out)))
        return
    print(f"threshold {args.threshold}, top_k {args.top_k}, d {DIM}, cores {len(os.sched_getaffinity(0))}")
    print(f"{'n':>8} {'method':>6} {'seconds':>8} {'rss+ MB':>8} {'numpy MB':>9} {'pairs':>9} "
          f"{'rows w/ pair':>12} {'rows at k':>9} {'recall':>7} {'sampled':>7}")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.n:
            files: dict[str, Path] = {}
            for method in args.methods:
                files[method] = Path(tmp) / f"{n}-{method}.npz"
                cmd = [sys.executable, __file__, "--threshold", str(args.threshold), "--top-k", str(args.top_k)]
                done = subprocess.run([*cmd, "--one", str(n), method, str(files[method])], capture_output=True,
                                      text=True, check=True)  # fmt: skip
                r = json.loads(done.stdout.strip().splitlines()[-1])
                recall = ""
                if method == "hnsw" and "exact" in files:
                    recall = f"{_recall(files['exact'], files['hnsw']):.4f}"
                print(f"{n:>8} {method:>6} {r['seconds']:>8.2f} {r['rss_plus_mb']:>8.0f} {r['numpy_peak_mb']:>9.0f} "
                      f"{r['pairs']:>9} {r['rows_with_pair']:>12.3f} {r['rows_at_top_k']:>9.3f} {recall:>7} "
                      f"{r['sampled_recall']:>7.4f}", flush=True)  # fmt: skip


def _recall(exact: Path, approx: Path) -> float:
    """Share of the exact (src, dst) pairs that the approximate run also found."""
    e, a = np.load(exact), np.load(approx)
    n = int(max(e["src"].max(initial=0), e["dst"].max(initial=0), a["src"].max(initial=0), a["dst"].max(initial=0)))
    ek = e["src"] * (n + 1) + e["dst"]
    ak = a["src"] * (n + 1) + a["dst"]
    return float(np.isin(ek, ak).mean()) if ek.size else 1.0


if __name__ == "__main__":
    main()
