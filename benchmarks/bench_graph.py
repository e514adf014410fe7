"""How GEM-RAG's graph math scales with the number of chunks n (a script that prints figures, not a test).

For each size n it times, and measures the peak traced memory of:

* ``S``      the dense similarity matrix (``graph.similarity.similarity_matrix``; it materializes an
             (M, n) float64 product, M = m·n utility questions);
* ``L``      the normalized Laplacian of its symmetric part (``graph.laplacian.normalized_laplacian``);
* ``eigh``   all eigenpairs, dense LAPACK (``graph.spectrum.eigenpairs(method="dense")``), n <= --dense-eig-max;
* ``eigsh``  the top-k eigenpairs by Lanczos on the dense L;
* ``S_knn``  the k-nearest-neighbour sparse S built block by block (``knn_similarity_matrix``), its sparse
             Laplacian ``L_knn`` and ``eigsh_knn`` (the path for corpora too large for dense matrices);
* retrieval latency per query: ``gem`` = rel(u) over the utility questions + best-first search over W
  (``graph.search.PreparedGraph``, prepared once per memory as the strategy does; the one-time ``prepare``
  cost is printed apart), dense W up to --dense-max and the kNN W above; ``dense`` = top-B by cosine.

Then a log-log growth exponent of each cost against n (least squares over the sizes measured).

Data. ``real``: chunks (T = 100 MiniLM tokens) of real text from ``/work/shared/data`` (MuSiQue and HotpotQA
corpora, Qasper and COVID-QA papers, QuALITY stories, LoCoMo and CMU-DoG conversations), embedded with the
real MiniLM ONNX embedder (cached in a .npy under --cache; ~50 chunks/s on 2 cores the first time).
No LLM runs here: utility-question vectors are STAND-INS, each chunk's vector plus small Gaussian noise (m
per chunk), combined as v_ij = (E(q) + v_i)/2. ``synthetic``: random unit vectors (d = 384) with m stand-in
questions each. Skips the real part cleanly when the data or the embedder is absent.

    python benchmarks/bench_graph.py                       # real 1000,10000; synthetic 1000,10000,30000
    python benchmarks/bench_graph.py --real 1000 --synthetic 1000,10000 --queries 20 --blas-threads 1
    python benchmarks/bench_graph.py --real "" --synthetic 100000   # the kNN path only; ~15 min on 2 cores

About 7 minutes on 2 idle cores with the defaults once the embeddings are cached (embedding 10,000 chunks
adds 3-4 minutes the first time, ~11 on a loaded machine). The kNN similarity is still O(n^2 d) work (the
block products), so n = 100,000 costs ~15 minutes more. On a loaded machine, ``--blas-threads 1`` avoids
OpenBLAS's multi-threaded eigh slowing down ~20x.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import resource
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from gemrag.graph.laplacian import adjacency_matrix, normalized_laplacian, symmetrize
from gemrag.graph.similarity import knn_similarity_matrix, similarity_matrix, utility_question_vectors
from gemrag.graph.spectrum import eigenpairs
from gemrag.strategies.gem.search import PreparedGraph

DIM = 384


def measure(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    """Run ``fn``; return (result, seconds, peak traced MB during the call)."""
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    start = time.perf_counter()
    out = fn()
    seconds = time.perf_counter() - start
    return out, seconds, (tracemalloc.get_traced_memory()[1] - base) / 2**20


# -- data --------------------------------------------------------------------------------------------


def _texts(data: Path) -> Iterator[str]:
    def load(rel: str) -> Any:
        path = data / rel
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None

    def lines(rel: str) -> list[Any]:
        path = data / rel
        return (
            [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()] if path.exists() else []
        )

    yield from (p["text"] for p in load("multihop/musique_train_corpus.json") or [])
    yield from (
        " ".join(v) if isinstance(v, list) else v for v in (load("multihop/hotpotqa_train_corpus.json") or {}).values()
    )
    yield from (r["input"] for r in lines("qasper/qasper_leval_dev8.jsonl"))
    yield from (
        p["context"] for d in (load("covid_qa/covid_qa_dev30.json") or {}).get("data", []) for p in d["paragraphs"]
    )
    yield from (r["article"] for r in lines("quality/quality_dev5.jsonl"))
    for conv in load("locomo/locomo_dev3.json") or []:
        c = conv["conversation"]
        for key, turns in c.items():
            if key.startswith("session_") and isinstance(turns, list):
                yield "\n".join(f"{t['speaker']}: {t['text']}" for t in turns)
    for movie in (load("cmu_dog/wikidata.json") or {}).values():
        yield from (v for k, v in movie.items() if k in ("1", "2", "3") and isinstance(v, str))
    for rel in ("cmu_dog/valid.jsonl", "cmu_dog/train.jsonl"):
        yield from ("\n".join(t["text"] for t in r["history"]) for r in lines(rel))


def real_chunks(data: Path, n: int) -> list[str]:
    """Up to ``n`` chunks of T = 100 MiniLM tokens from the shared data sets, in a fixed order."""
    from gemrag.ingest import chunk_text, minilm_tokenizer

    tok, chunks = minilm_tokenizer(), []
    for text in _texts(data):
        chunks.extend(" ".join(c.text.split()) for c in chunk_text(text, tok, 100))
        if len(chunks) >= n:
            break
    return chunks[:n]


def embed_cached(texts: list[str], cache: Path) -> np.ndarray:
    """MiniLM ONNX vectors (n, 384) float32 of ``texts``, cached by content hash in ``cache``."""
    key = hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:16]
    path = cache / f"minilm-{len(texts)}-{key}.npy"
    if path.exists():
        return np.load(path)
    from gemrag.models.onnx_embedder import OnnxMiniLMEmbedder

    emb, start = OnnxMiniLMEmbedder(), time.perf_counter()
    vectors = np.concatenate([emb.embed(texts[i : i + 256]) for i in range(0, len(texts), 256)])
    print(f"  embedded {len(texts)} chunks in {time.perf_counter() - start:.0f} s (cached in {path})", flush=True)
    cache.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


def stand_in_questions(vectors: np.ndarray, m: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """m noisy copies of every node vector as E(q) stand-ins -> (v_ij (M, d) float32, owner (M,))."""
    owner = np.repeat(np.arange(len(vectors), dtype=np.int64), m)
    raw = vectors[owner] + rng.normal(0, 0.3 / math.sqrt(vectors.shape[1]), (len(owner), vectors.shape[1]))
    raw = (raw / np.linalg.norm(raw, axis=1, keepdims=True)).astype(np.float32)
    return utility_question_vectors(raw, vectors, owner), owner


# -- one size ----------------------------------------------------------------------------------------


def retrieval_ms(
    V: np.ndarray, Q: np.ndarray, owner: np.ndarray, W: Any, queries: np.ndarray, budget: int
) -> dict[str, float]:
    """Mean ms per query as the gem strategy runs it: the arrays prepared once (``PreparedGraph``: unit
    question vectors, validated W; ``prep_ms``, paid once per opened memory), then per query rel(u) over the
    questions + best-first over W (``gem_ms``; the walk alone ``walk_ms``); and dense = top-B cosine over the
    node vectors."""
    t0 = time.perf_counter()
    graph = PreparedGraph.prepare(Q, owner, V, W)
    prep = (time.perf_counter() - t0) * 1000
    rel_s = gem_s = 0.0
    for p in queries:
        t0 = time.perf_counter()
        graph.relevance(p)
        t1 = time.perf_counter()
        graph.search(p, budget)  # rel(u) again, then the walk
        rel_s, gem_s = rel_s + t1 - t0, gem_s + time.perf_counter() - t1
    gem, walk = gem_s / len(queries) * 1000, max(gem_s - rel_s, 0.0) / len(queries) * 1000
    Vn = V / np.linalg.norm(V, axis=1, keepdims=True)
    start = time.perf_counter()
    for p in queries:
        scores = Vn @ (p / np.linalg.norm(p))
        top = np.argpartition(-scores, budget)[:budget]
        top[np.argsort(-scores[top])]
    dense = (time.perf_counter() - start) / len(queries) * 1000
    return {"gem_ms": gem, "walk_ms": walk, "prep_ms": prep, "dense_ms": dense}


def bench_size(V: np.ndarray, args: argparse.Namespace, m: int, rng: np.random.Generator) -> dict[str, Any]:
    n = len(V)
    Q, owner = stand_in_questions(V, m, rng)
    noise = rng.normal(0, 0.02, (args.queries, V.shape[1]))
    queries = (V[rng.choice(n, size=args.queries, replace=n < args.queries)] + noise).astype(np.float32)
    row: dict[str, Any] = {"n": n, "M": len(Q)}
    if n <= args.dense_max:
        S, row["S_s"], row["S_MB"] = measure(lambda: similarity_matrix(V, Q, owner))
        L, row["L_s"], row["L_MB"] = measure(lambda: normalized_laplacian(symmetrize(S), diagonal="zero"))
        if n <= args.dense_eig_max:
            _, row["eigh_s"], row["eigh_MB"] = measure(lambda: eigenpairs(L, method="dense"))
        _, row["eigsh_s"], row["eigsh_MB"] = measure(lambda: eigenpairs(L, args.eigen, method="sparse"))
        W = adjacency_matrix(symmetrize(S), diagonal="zero")
        del S, L
        row.update({f"{k}_denseW": v for k, v in retrieval_ms(V, Q, owner, W, queries, args.budget).items()})
        del W
    K, row["S_knn_s"], row["S_knn_MB"] = measure(lambda: knn_similarity_matrix(V, Q, owner, args.knn))
    Lk, row["L_knn_s"], row["L_knn_MB"] = measure(lambda: normalized_laplacian(K, diagonal="zero"))
    _, row["eigsh_knn_s"], row["eigsh_knn_MB"] = measure(lambda: eigenpairs(Lk, args.eigen, method="sparse"))
    Wk = adjacency_matrix(K, diagonal="zero")
    row.update({f"{k}_knnW": v for k, v in retrieval_ms(V, Q, owner, Wk, queries, args.budget).items()})
    row["rss_MB"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return row


# -- report ------------------------------------------------------------------------------------------

COLUMNS = [
    ("S_s", "S s"), ("L_s", "L s"), ("eigh_s", "eigh s"), ("eigsh_s", "eigsh s"), ("S_knn_s", "S_knn s"),
    ("L_knn_s", "L_knn s"), ("eigsh_knn_s", "eigsh_knn s"), ("gem_ms_denseW", "gem ms"),
    ("walk_ms_denseW", "of which walk ms"), ("prep_ms_denseW", "gem prepare ms (once)"),
    ("gem_ms_knnW", "gem ms (kNN W)"), ("walk_ms_knnW", "walk ms (kNN W)"), ("prep_ms_knnW", "prepare ms (kNN W)"),
    ("dense_ms_knnW", "dense top-B ms"),
    ("S_MB", "S MB"), ("eigh_MB", "eigh MB"), ("S_knn_MB", "S_knn MB"), ("rss_MB", "process max RSS MB"),
]  # fmt: skip


def print_table(title: str, rows: list[dict[str, Any]]) -> None:
    cols = [(k, h) for k, h in COLUMNS if any(k in r for r in rows)]
    print(f"\n## {title}\n")
    print("| n | M | " + " | ".join(h for _, h in cols) + " |")
    print("|" + "---|" * (len(cols) + 2))
    for r in rows:
        cells = [f"{r[k]:.3g}" if k in r else "—" for k, _ in cols]
        print(f"| {r['n']} | {r['M']} | " + " | ".join(cells) + " |")
    exps = []
    for k, h in cols:
        pts = [(r["n"], r[k]) for r in rows if k in r and r[k] > 0]
        if len(pts) >= 2 and k != "rss_MB":
            slope = np.polyfit(np.log([p[0] for p in pts]), np.log([p[1] for p in pts]), 1)[0]
            exps.append(f"{h}: n^{slope:.2f}")
    if exps:
        print("\nlog-log growth exponents (cost ~ n^x over the sizes measured): " + "; ".join(exps))
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ints = lambda s: [int(x) for x in s.split(",") if x.strip()]  # noqa: E731
    ap.add_argument("--real", type=ints, default=[1000, 10000], help="sizes of real text (chunks)")
    ap.add_argument(
        "--synthetic", type=ints, default=[1000, 10000, 30000], help="sizes of random vectors (100000: ~15 min more)"
    )
    ap.add_argument("--questions", type=int, default=5, help="m stand-in utility questions per real chunk")
    ap.add_argument("--synthetic-questions", type=int, default=1, help="m per synthetic node (cost ~ m)")
    ap.add_argument("--dense-max", type=int, default=10000, help="largest n for the dense S / L / W path")
    ap.add_argument("--dense-eig-max", type=int, default=5000, help="largest n for dense eigh (O(n^3))")
    ap.add_argument("--knn", type=int, default=20, help="neighbours per node of the sparse graph")
    ap.add_argument("--eigen", type=int, default=10, help="top-k eigenpairs by Lanczos")
    ap.add_argument("--budget", type=int, default=4, help="B, nodes per retrieval")
    ap.add_argument("--queries", type=int, default=50, help="queries timed per size")
    ap.add_argument("--data", type=Path, default=Path("/work/shared/data"))
    ap.add_argument("--cache", type=Path, default=Path("/tmp/gemrag-bench"))
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--blas-threads", type=int, default=0, help="limit BLAS threads (0 = library default)")
    args = ap.parse_args(argv)
    if args.blas_threads:
        from threadpoolctl import threadpool_limits  # installed with scikit-learn (the eval extra)

        threadpool_limits(args.blas_threads)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    rng = np.random.default_rng(0)
    tracemalloc.start()
    results: dict[str, list[dict[str, Any]]] = {"real": [], "synthetic": []}
    blas = "default" if not args.blas_threads else str(args.blas_threads)
    print(f"# bench_graph: numpy {np.__version__}, BLAS threads {blas}, {os.cpu_count()} CPUs, load average {load}")
    print("# utility questions are stand-ins (chunk vector + noise): no LLM runs here", flush=True)
    if args.real:
        chunks = real_chunks(args.data, max(args.real)) if args.data.exists() else []
        if not chunks:
            print(f"\nreal text: skipped ({args.data} not found)")
        else:
            try:
                vectors = embed_cached(chunks, args.cache)
            except Exception as exc:  # the embedder is an optional runtime here
                print(f"\nreal text: skipped (embedder unavailable: {exc})")
                vectors = None
            for n in (s for s in args.real if vectors is not None):
                if n > len(vectors):
                    print(f"real text: only {len(vectors)} chunks available, skipping n = {n}")
                    continue
                print(f"real n = {n} ...", flush=True)
                results["real"].append(bench_size(vectors[:n], args, args.questions, rng))
            if results["real"]:
                print_table(
                    f"real text (MiniLM ONNX, m = {args.questions} stand-in questions per chunk)", results["real"]
                )
    for n in args.synthetic:
        print(f"synthetic n = {n} ...", flush=True)
        V = rng.normal(size=(n, DIM)).astype(np.float32)
        V /= np.linalg.norm(V, axis=1, keepdims=True)
        results["synthetic"].append(bench_size(V, args, args.synthetic_questions, rng))
        del V
    if results["synthetic"]:
        print_table(f"synthetic unit vectors (d = {DIM}, m = {args.synthetic_questions})", results["synthetic"])
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
