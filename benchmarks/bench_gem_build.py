"""Wall time and peak memory of one whole GEM build as the corpus grows (a script that prints figures).

It runs ``Memory.index()`` (strategy ``gem``) end to end on n chunks — chunking, utility questions, embeddings,
the similarity matrix S, the normalized Laplacian L, the eigenpairs, the eigentheme summary nodes, the walk
graph W and everything the build saves — each size in a fresh child process so that its peak resident memory
(``ru_maxrss``) is its own. The models are the unit tests' STAND-INS (``tests/fakes.py``: utility questions
made from the chunk's own sentences, a hashed bag-of-words embedder), so the figures measure gemrag's graph
and store work, not an LLM: with the embedded 1.5B model the utility questions alone cost ~11 s per chunk.

Text: copies of the shipped QuALITY story, each copy's paragraphs shuffled and salted with a copy-specific
word so that no two chunks are identical.

    python benchmarks/bench_gem_build.py                      # n = 1000, 10000
    python benchmarks/bench_gem_build.py --chunks 500 --json  # one size, machine-readable
    python benchmarks/bench_gem_build.py --graph sparse       # force gem.graph (default auto: sparse above 2000)

Prints one row per n: seconds in all and per build phase (``gem_phase_seconds``), peak RSS (MB), the number
of summary nodes, and the bytes the memory directory holds.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
STORY = REPO / "examples" / "quality" / "lost_in_translation.txt"
CHUNKS_PER_COPY = 66  # the story makes 66 chunks of T = 100 tokens


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


def run_one(n_chunks: int, graph: str = "auto") -> dict[str, Any]:
    """Build one memory in this process (``gem.graph = graph``) and return its figures."""
    sys.path.insert(0, str(REPO / "tests"))
    from fakes import HashEmbedder, ScriptedLLM
    from gemrag import Memory, load_config

    gem = {"questions": 5, "eigen": 2, "eigen_top": 5, "graph": graph}
    cfg = load_config(None, {"memory": {"chunk_tokens": 100}, "gem": gem})
    with tempfile.TemporaryDirectory() as tmp:
        with Memory.open(Path(tmp) / "mem", cfg, llm=ScriptedLLM(), embedder=HashEmbedder(dim=384)) as mem:
            for i, text in enumerate(corpus(n_chunks)):
                mem.add_text(text, title=f"copy {i}")
            t0 = time.perf_counter()
            report = mem.index()
            seconds = time.perf_counter() - t0
            stats = mem.stats()
        size = sum(p.stat().st_size for p in Path(tmp).rglob("*") if p.is_file())
    return {
        "chunks": report.chunks,
        "summary_nodes": report.summary_nodes,
        "graph": stats["strategy_report"].get("graph"),
        "seconds": round(seconds, 2),
        "phase_seconds": {k: round(v, 2) for k, v in stats["strategy_report"].get("phase_seconds", {}).items()},
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "directory_mb": round(size / 2**20, 1),
    }


def main() -> None:
    """Parse the arguments, run each size in a child process, print the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chunks", default="1000,10000", help="comma-separated corpus sizes (chunks)")
    ap.add_argument("--json", action="store_true", help="print one JSON object per size")
    ap.add_argument("--graph", default="auto", choices=["auto", "dense", "sparse"], help="gem.graph (default auto)")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(run_one(args.child, args.graph)))
        return
    print(f"{'n':>7} {'chunks':>7} {'graph':>6} {'total s':>8} {'peak MB':>8} {'dir MB':>7} summaries  phases (s)")
    for n in [int(x) for x in args.chunks.split(",") if x]:
        cmd = [sys.executable, __file__, "--child", str(n), "--graph", args.graph]
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if out.returncode != 0:
            print(f"{n:>7} failed: {out.stderr.strip().splitlines()[-1:]}")
            continue
        row = json.loads(out.stdout.strip().splitlines()[-1])
        if args.json:
            print(json.dumps({"n": n, **row}))
            continue
        phases = ", ".join(f"{k} {v}" for k, v in row["phase_seconds"].items())
        print(
            f"{n:>7} {row['chunks']:>7} {row['graph'] or '-':>6} {row['seconds']:>8} {row['peak_rss_mb']:>8}"
            f" {row['directory_mb']:>7}"
            f" {row['summary_nodes']:>9}  {phases}"
        )


if __name__ == "__main__":
    main()
