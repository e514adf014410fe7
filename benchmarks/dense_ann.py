"""Dense top-k on the SQLite store, exact against the HNSW artefact (issue 28, item 1; a script that prints figures).

For each ``n``, in a fresh subprocess (so the peak RSS is that size's own): ``n`` synthetic clustered vectors
(``d`` = 384 float32; ``n / 50`` unit centres, each row a centre plus Gaussian noise of 0.06 per coordinate, so a
row's cosine to its centre is ~0.65 and to its nearest neighbour ~0.5 — like MiniLM chunk vectors of related
texts, where isotropic random vectors would have no neighbour structure to find) are published twice in one SQLite
memory through the platform (:func:`gemrag.strategies.platform.common.publish_arrays`): once as a build below the
threshold (no artefact: exact numpy search) and once with ``search=["vectors"]`` above it (the HNSW artefact of
:mod:`gemrag.store.hnsw`). Then ``--queries`` queries drawn the same way go through
:func:`gemrag.strategies.platform.common.nearest` on each build, as ``dense`` retrieval does (with the unit rows
made once per loaded build).

Prints, per ``n``: the publish time of each build (their difference is the HNSW build and write), the artefact's
size, the first ANN query (it reads the artefact), exact and ANN p50/p95 ms with their ratio, recall@k of the ANN
answers against the exact ones, and RSS (after loading the arrays, after the first ANN query, and the process
peak)::

    python benchmarks/dense_ann.py --n 100000 300000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]


def _rss_gb(field: str = "VmRSS") -> float:
    """This process's resident set (``VmRSS``) or peak (``VmHWM``) from /proc, GB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024 / 1e9
    return float("nan")


def clustered(n: int, d: int, queries: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(n, d)`` float32 rows and ``(queries, d)`` float32 queries around ``max(1, n // 50)`` unit centres."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((max(1, n // 50), d)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    rows = np.empty((n, d), dtype=np.float32)
    for lo in range(0, n, 65536):  # blocks: no float64 (n, d) temporary
        hi = min(n, lo + 65536)
        rows[lo:hi] = centres[rng.integers(0, len(centres), hi - lo)]
        rows[lo:hi] += 0.06 * rng.standard_normal((hi - lo, d), dtype=np.float32)
    qs = centres[rng.integers(0, len(centres), queries)] + 0.06 * rng.standard_normal((queries, d), dtype=np.float32)
    return rows, qs


def one(n: int, d: int, queries: int, k: int, efs: list[int]) -> dict[str, Any]:
    """Measure one size in this process; returns the figures."""
    sys.path[:0] = [str(REPO / "tests")]
    from fakes import HashEmbedder, ScriptedLLM
    from gemrag import Memory, load_config
    from gemrag.graph.ann import unit_rows32
    from gemrag.store import hnsw as vector_index
    from gemrag.strategies.platform.common import nearest, publish_arrays

    rows, qs = clustered(n, d, queries)
    out: dict[str, Any] = {"n": n, "d": d, "queries": queries, "k": k, "threshold": vector_index.ANN_ABOVE}
    cfg = load_config(None, {"progress": False})
    with (
        tempfile.TemporaryDirectory() as tmp,
        Memory.open(Path(tmp) / "m", cfg, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem,
    ):
        ctx, builds = mem.ctx, {}
        for name, search in (("exact", []), ("ann", ["vectors"])):
            generation = mem.store.begin_build(name)
            t0 = time.perf_counter()
            publish_arrays(ctx, name, generation, {"vectors": rows}, axes={"vectors": ("n", "d")}, search=search)
            out[f"publish_{name}_s"] = time.perf_counter() - t0
            builds[name] = generation
        del rows
        artefact = mem.store.load_published("ann").paths.get("vectors-hnsw")
        out["artefact_bytes"] = artefact.stat().st_size if artefact else 0
        loaded = {name: np.asarray(mem.store.load_published(name).arrays["vectors"]) for name in builds}
        unit = unit_rows32(loaded["exact"])  # the same rows in both builds: one unit copy, as dense keeps per build
        out["rss_loaded_gb"] = _rss_gb()
        names = ["exact"] + [f"ef{ef}" for ef in efs]
        times: dict[str, list[float]] = {name: [] for name in names}
        answers: dict[str, list[np.ndarray]] = {name: [] for name in names}
        t0 = time.perf_counter()
        nearest(ctx, ("ann", builds["ann"]), "vectors", loaded["ann"], qs[0], k, unit=unit)
        out["first_ann_query_s"] = time.perf_counter() - t0  # reads the artefact
        out["rss_after_first_ann_gb"] = _rss_gb()
        for q in qs:
            for name in names:
                build = "exact" if name == "exact" else "ann"
                if name != "exact":
                    vector_index.EF_SEARCH = int(name[2:])
                t0 = time.perf_counter()
                got, _ = nearest(ctx, (build, builds[build]), "vectors", loaded[build], q, k, unit=unit)
                times[name].append(time.perf_counter() - t0)
                answers[name].append(got)
    out["efs"] = efs
    for name in names:
        out[f"{name}_p50_ms"] = float(np.percentile(times[name], 50) * 1e3)
        out[f"{name}_p95_ms"] = float(np.percentile(times[name], 95) * 1e3)
        if name != "exact":
            pairs = list(zip(answers[name], answers["exact"], strict=True))
            recall = [len(set(a.tolist()) & set(e.tolist())) / k for a, e in pairs]
            out[f"{name}_recall"] = float(np.mean(recall))
            out[f"{name}_recall_min"] = float(np.min(recall))
            out[f"{name}_top1_same"] = float(np.mean([a[0] == e[0] for a, e in pairs]))
    out["peak_rss_gb"] = _rss_gb("VmHWM")
    return out


def main() -> None:
    """Run each size in a subprocess and print the figures."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, nargs="+", default=[100_000])
    ap.add_argument("--d", type=int, default=384)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--ef", type=int, nargs="+", default=[64, 128, 256], help="HNSW candidate lists to measure")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.n[0], args.d, args.queries, args.k, args.ef)))
        return
    for n in args.n:
        cmd = [sys.executable, __file__, "--one", "--n", str(n), "--d", str(args.d)]
        cmd += ["--queries", str(args.queries), "--k", str(args.k), "--ef", *map(str, args.ef)]
        load = os.getloadavg()[0]
        done = subprocess.run(cmd, check=True, capture_output=True, text=True)
        r = json.loads(done.stdout.strip().splitlines()[-1])
        print(
            f"n {n:,} d {r['d']}: publish exact {r['publish_exact_s']:.1f} s, with HNSW {r['publish_ann_s']:.1f} s "
            f"(HNSW build + write {r['publish_ann_s'] - r['publish_exact_s']:.1f} s, artefact "
            f"{r['artefact_bytes'] / 1e6:.0f} MB); first ANN query (reads it) {r['first_ann_query_s'] * 1e3:.0f} ms"
        )
        print(
            f"  top-{r['k']} over {r['queries']} queries: exact p50 {r['exact_p50_ms']:.2f} / p95 "
            f"{r['exact_p95_ms']:.2f} ms"
        )
        for ef in r["efs"]:
            e = f"ef{ef}"
            print(
                f"  HNSW ef_search {ef}: p50 {r[e + '_p50_ms']:.2f} / p95 {r[e + '_p95_ms']:.2f} ms, exact / ANN p50 = "
                f"{r['exact_p50_ms'] / r[e + '_p50_ms']:.1f}x; recall@{r['k']} {r[e + '_recall']:.3f} (min "
                f"{r[e + '_recall_min']:.1f}), same top-1 {r[e + '_top1_same']:.3f}"
            )
        print(
            f"  RSS: loaded {r['rss_loaded_gb']:.2f} GB, after the first ANN query {r['rss_after_first_ann_gb']:.2f} "
            f"GB, peak {r['peak_rss_gb']:.2f} GB; load average {load:.1f} -> {os.getloadavg()[0]:.1f}"
        )


if __name__ == "__main__":
    main()
