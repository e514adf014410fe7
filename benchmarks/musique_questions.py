"""GEM's utility questions over the MuSiQue multi-hop corpus: seconds per chunk with the embedded model.

The corpus is ``../shared/data/multihop/musique_train_corpus.json`` (1,890 Wikipedia paragraphs, ``title`` +
``text``; see ``../shared/data/README.md``). Each paragraph is one document; ``gemrag index --strategy gem``
generates m = 5 utility questions per chunk (GEM-RAG section III.B.1) through the extraction pipeline, then the
graph and the eigentheme summaries. The script prints the paragraphs and chunks indexed, wall seconds (whole
build and the utility-question phase), seconds per chunk, LLM tokens and aggregate rates, failures, and the
time the whole corpus would take at that rate. It is resumable: run it again on the same ``--memory`` and the
LLM cache answers every question already generated. Figures, no pass/fail::

    python benchmarks/musique_questions.py --limit 200                       # the embedded 1.5B model
    GEMRAG_LLM__MODEL=qwen2.5-coder-0.5b python benchmarks/musique_questions.py --limit 200
    python benchmarks/musique_questions.py --limit 200 --set llm.n_parallel=1   # single stream, to compare
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "data" / "multihop" / "musique_train_corpus.json"


def main() -> int:
    """Index the first ``--limit`` paragraphs with GEM and print the figures (exit 2 without the corpus)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--limit", type=int, default=200, help="paragraphs to index (default 200 of 1,890)")
    ap.add_argument("--memory", type=Path, help="memory directory (default: a new temporary one)")
    ap.add_argument("--set", dest="sets", action="append", default=[], help="section.key=value (repeatable)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = ap.parse_args()
    if not args.corpus.is_file():
        print(f"{args.corpus} not found (see ../shared/data/README.md)", file=sys.stderr)
        return 2

    from gemrag import Memory, load_config
    from gemrag.progress import rich_progress

    paragraphs = json.loads(args.corpus.read_text(encoding="utf-8"))
    chosen = paragraphs[: args.limit]
    config = load_config(None, None, args.sets)
    directory = args.memory or Path(tempfile.mkdtemp(prefix="gemrag-musique-"))
    with Memory.open(directory, config, progress=rich_progress()) as mem:
        for p in chosen:
            mem.add_text(f"{p['title']}\n\n{p['text']}", p["title"], source=f"musique:{p['title']}")
        t0 = time.perf_counter()
        report = mem.index("gem")
        seconds = time.perf_counter() - t0
        stats = mem.stats()
    phases: dict[str, float] = stats["strategy_report"].get("phase_seconds", {})
    questions_s = float(phases.get("utility_questions", seconds))
    chunks = report.chunks
    per_chunk = questions_s / max(1, report.new_chunks or chunks)
    total_chunks = round(chunks * len(paragraphs) / max(1, len(chosen)))
    out: dict[str, Any] = {
        "paragraphs": len(chosen),
        "chunks": chunks,
        "new_chunks": report.new_chunks,
        "llm": stats.get("models", {}).get("llm") or config.llm.model,
        "n_parallel": getattr(config.llm, "n_parallel", None),
        "seconds": round(seconds, 1),
        "utility_question_seconds": round(questions_s, 1),
        "seconds_per_chunk": round(per_chunk, 2),
        "prompt_tokens": report.usage.prompt_tokens,
        "completion_tokens": report.usage.completion_tokens,
        "completion_tokens_per_second": round(report.usage.completion_tokens / max(questions_s, 1e-9), 1),
        "llm_calls": report.llm_calls,
        "failures": report.failures,
        "whole_corpus_chunks_estimate": total_chunks,
        "whole_corpus_hours_estimate": round(per_chunk * total_chunks / 3600, 2),
        "memory": str(directory),
    }
    for key, value in out.items():
        print(f"{key:<34} {value}")
    if args.json:
        print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
