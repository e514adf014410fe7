"""Wall time and peak memory of one whole GEM build as the corpus grows (a script that prints figures).

It runs ``Memory.index()`` (strategy ``gem``) end to end on n chunks — chunking, utility questions, embeddings,
the similarity matrix S, the normalized Laplacian L, the eigenpairs, the eigentheme summary nodes, the walk
graph W and everything the build saves — each size in a fresh child process so that its peak resident memory
(``ru_maxrss``) is its own. The models are the unit tests' STAND-INS (``tests/fakes.py``: utility questions
made from the chunk's own sentences, a hashed bag-of-words embedder), so the figures measure gemrag's graph
and store work, not an LLM: with the embedded 1.5B model the utility questions alone cost ~11 s per chunk.

Text: copies of the shipped QuALITY story, each copy's paragraphs shuffled and salted with a copy-specific
word so that no two chunks are identical.

After the build, ``--queries`` GEM retrievals (``Memory.retrieve``, B = 4) of a story sentence each run in the same
child, so the q* step reads the published question vectors as a user's retrieval does: through the store's vector
search below ``gem.ann_above`` (20,000 chunks) and through the inverted lists above it. The first retrieval loads and
prepares the published generation (``first retrieve s``); the others are timed (``retrieve p50 ms``).

Question vectors' dtype (``--question-dtype``): GEM keeps and publishes them in float16 since issue 40
(:data:`gemrag.strategies.gem.strategy.QUESTION_DTYPE`); ``float32`` sets that knob in the child before the build,
so the same build, publish and retrieval run with the float32 vectors of before. Give both
(``--question-dtype float16,float32``) to measure each size with each dtype, each in its own child, and print the
float16/float32 ratios of peak RSS and wall seconds (at 100k chunks, m = 5, d = 384 the vectors themselves are
384 MB in float16 against 768 MB in float32; what the whole build's peak changes is what this measures).

    python benchmarks/bench_gem_build.py                      # n = 1000, 10000
    python benchmarks/bench_gem_build.py --chunks 500 --json  # one size, machine-readable
    python benchmarks/bench_gem_build.py --graph sparse       # force gem.graph (default auto: sparse above 2000)
    python benchmarks/bench_gem_build.py --chunks 100000 --question-dtype float16,float32   # issue 40's peak RSS

Prints one row per n and dtype: seconds in all and per build phase (``gem_phase_seconds``), the peak RSS (MB) when
the build ended and after the retrievals, the retrieval figures, the number of summary nodes, the bytes the memory
directory holds and the dtype the published question vectors have; with two dtypes, their ratios per n.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
STORY = REPO / "examples" / "quality" / "lost_in_translation.txt"
CHUNKS_PER_COPY = 66  # the story makes 66 chunks of T = 100 tokens
DTYPES = ("float16", "float32")


def corpus(n_chunks: int, seed: int = 0) -> list[str]:
    """About ``n_chunks`` chunks' worth of documents (one per story copy)."""
    paragraphs = [p for p in STORY.read_text(encoding="utf-8").split("\n\n") if p.strip()]
    rng = random.Random(seed)
    docs = []
    for copy in range(max(1, round(n_chunks / CHUNKS_PER_COPY))):
        order = paragraphs[:]
        rng.shuffle(order)
        docs.append("\n\n".join(f"{p.strip()} copy{copy}word{i % 7}." for i, p in enumerate(order)))
    return docs


def queries(n: int, seed: int = 1) -> list[str]:
    """``n`` questions: the first sentence of random story paragraphs (the same for every size and dtype)."""
    paragraphs = [p for p in STORY.read_text(encoding="utf-8").split("\n\n") if p.strip()]
    rng = random.Random(seed)
    return [rng.choice(paragraphs).strip().split(". ")[0] for _ in range(n)]


def peak_rss_mb() -> float:
    """This process's peak resident memory so far (``ru_maxrss``, KiB on Linux), in MB."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def run_one(n_chunks: int, graph: str = "auto", question_dtype: str = "float16", n_queries: int = 20) -> dict[str, Any]:
    """Build one memory in this process (``gem.graph = graph``, question vectors in ``question_dtype``), run
    ``n_queries`` GEM retrievals on it and return its figures (seconds, MB).

    Raises:
        ValueError: ``question_dtype`` is not float16 or float32.
    """
    if question_dtype not in DTYPES:
        raise ValueError(f"question dtype must be one of {DTYPES}, not {question_dtype!r}")
    sys.path.insert(0, str(REPO / "tests"))
    import numpy as np

    import gemrag.strategies.gem.strategy as gem_strategy
    from fakes import HashEmbedder, ScriptedLLM
    from gemrag import Memory, load_config

    gem_strategy.QUESTION_DTYPE = np.dtype(question_dtype)  # read by node_graph_inputs and GemGraph.publish
    gem = {"questions": 5, "eigen": 2, "eigen_top": 5, "graph": graph}
    cfg = load_config(None, {"memory": {"chunk_tokens": 100}, "gem": gem})
    with tempfile.TemporaryDirectory() as tmp:
        with Memory.open(Path(tmp) / "mem", cfg, llm=ScriptedLLM(), embedder=HashEmbedder(dim=384)) as mem:
            for i, text in enumerate(corpus(n_chunks)):
                mem.add_text(text, title=f"copy {i}")
            t0 = time.perf_counter()
            report = mem.index()
            seconds = time.perf_counter() - t0
            build_peak = peak_rss_mb()
            stats = mem.stats()
            published = mem.store.load_published("gem")
            stored_dtype = str(published.arrays["question_vectors"].dtype) if published else None
            times = []
            for q in queries(n_queries):
                t0 = time.perf_counter()
                mem.retrieve(q, strategy="gem")
                times.append(time.perf_counter() - t0)
        size = sum(p.stat().st_size for p in Path(tmp).rglob("*") if p.is_file())
    return {
        "chunks": report.chunks,
        "summary_nodes": report.summary_nodes,
        "graph": stats["strategy_report"].get("graph"),
        "question_dtype": stored_dtype,
        "seconds": round(seconds, 2),
        "phase_seconds": {k: round(v, 2) for k, v in stats["strategy_report"].get("phase_seconds", {}).items()},
        "build_peak_rss_mb": build_peak,
        "peak_rss_mb": peak_rss_mb(),
        "first_retrieve_s": round(times[0], 3) if times else None,
        "retrieve_p50_ms": round(statistics.median(times[1:]) * 1000, 2) if len(times) > 1 else None,
        "directory_mb": round(size / 2**20, 1),
    }


def ratio(a: Any, b: Any) -> str:
    """``a / b`` to two decimals, ``-`` when either is missing or ``b`` is 0."""
    return f"{a / b:.2f}" if a is not None and b else "-"


def dtypes(text: str) -> list[str]:
    """The ``--question-dtype`` list: comma-separated float16 / float32, each once.

    Raises:
        argparse.ArgumentTypeError: an unknown or repeated dtype, or none.
    """
    names = [x.strip() for x in text.split(",") if x.strip()]
    if not names or any(x not in DTYPES for x in names) or len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(f"give float16, float32 or both (comma-separated), not {text!r}")
    return names


def main() -> None:
    """Parse the arguments, run each size and dtype in a child process, print the table (and the ratios)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chunks", default="1000,10000", help="comma-separated corpus sizes (chunks)")
    ap.add_argument("--json", action="store_true", help="print one JSON object per size and dtype")
    ap.add_argument("--graph", default="auto", choices=["auto", "dense", "sparse"], help="gem.graph (default auto)")
    ap.add_argument(
        "--question-dtype",
        type=dtypes,
        default=["float16"],
        help="GEM's question vectors: float16 (default, as GEM stores them), float32, or float16,float32 (both)",
    )
    ap.add_argument("--queries", type=int, default=20, help="GEM retrievals after the build (the first is untimed)")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(run_one(args.child, args.graph, args.question_dtype[0], args.queries)))
        return
    if not args.json:
        print(
            f"{'n':>7} {'dtype':>7} {'chunks':>7} {'graph':>6} {'total s':>8} {'build MB':>8} {'peak MB':>8}"
            f" {'1st ret s':>9} {'ret p50 ms':>10} {'dir MB':>7} summaries  phases (s)"
        )
    for n in [int(x) for x in args.chunks.split(",") if x]:
        rows: dict[str, dict[str, Any]] = {}
        for dtype in args.question_dtype:
            cmd = [sys.executable, __file__, "--child", str(n), "--graph", args.graph]
            cmd += ["--question-dtype", dtype, "--queries", str(args.queries)]
            out = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if out.returncode != 0:
                print(f"{n:>7} {dtype:>7} failed: {out.stderr.strip().splitlines()[-1:]}")
                continue
            row = rows[dtype] = json.loads(out.stdout.strip().splitlines()[-1])
            if args.json:
                print(json.dumps({"n": n, "requested_dtype": dtype, **row}))
                continue
            phases = ", ".join(f"{k} {v}" for k, v in row["phase_seconds"].items())
            print(
                f"{n:>7} {row['question_dtype'] or '-':>7} {row['chunks']:>7} {row['graph'] or '-':>6}"
                f" {row['seconds']:>8} {row['build_peak_rss_mb']:>8} {row['peak_rss_mb']:>8}"
                f" {row['first_retrieve_s'] or '-':>9} {row['retrieve_p50_ms'] or '-':>10} {row['directory_mb']:>7}"
                f" {row['summary_nodes']:>9}  {phases}"
            )
        if len(rows) == 2:
            half, full = rows["float16"], rows["float32"]
            figures = {
                "peak_rss": ratio(half["peak_rss_mb"], full["peak_rss_mb"]),
                "build_peak_rss": ratio(half["build_peak_rss_mb"], full["build_peak_rss_mb"]),
                "seconds": ratio(half["seconds"], full["seconds"]),
                "retrieve_p50": ratio(half["retrieve_p50_ms"], full["retrieve_p50_ms"]),
            }
            if args.json:
                print(json.dumps({"n": n, "float16_over_float32": figures}))
            else:
                print(f"{n:>7} float16/float32: " + ", ".join(f"{k} {v}" for k, v in figures.items()))


if __name__ == "__main__":
    main()
