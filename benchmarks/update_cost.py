"""What re-indexing an edited file costs: the demo's 66-chunk story, one paragraph edited, GEM.

Steps, each timed, with its LLM backend calls (cache misses) and generated tokens counted:

1. index the story (``examples/quality/lost_in_translation.txt``, T = 100, m = 5, k = 2, e = 5: the demo's
   parameters) with ``--strategy`` (default gem);
2. append one sentence to paragraph ``--paragraph`` (default 80 of 166; ``--paragraphs N`` keeps only the story's
   first N paragraphs, for a shorter run) and index the file again: the file's
   identity is its path, so its document is updated in place (``gemrag.memory.sources``): the chunks whose text survives
   are kept, and only the new chunks (and GEM's summaries whose members changed) cost LLM calls;
3. index once more without a change: no LLM call.

Real models (default): the configuration's embedded LLM (``GEMRAG_LLM__MODEL=qwen2.5-coder-0.5b`` is quicker) and
MiniLM. ``--fake``: the unit tests' stand-ins (``tests/fakes.py``), seconds instead of minutes::

    python benchmarks/update_cost.py --fake
    GEMRAG_LLM__MODEL=qwen2.5-coder-0.5b python benchmarks/update_cost.py --out update_cost.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
STORY = REPO / "examples" / "quality" / "lost_in_translation.txt"
ADDED = " He thought about it for a long while, and then he decided to say nothing at all to the guard."


def open_memory(directory: Path, fake: bool) -> Any:
    from gemrag import Memory
    from gemrag.config import load_config

    config = load_config(None, {"memory": {"chunk_tokens": 100}, "gem": {"questions": 5, "eigen": 2, "eigen_top": 5}})
    if fake:
        sys.path.insert(0, str(REPO / "tests"))
        from fakes import HashEmbedder, ScriptedLLM

        return Memory.open(directory, config, llm=ScriptedLLM(), embedder=HashEmbedder(dim=384))
    return Memory.open(directory, config)


def run_index(mem: Any, strategy: str, name: str, results: dict[str, Any]) -> None:
    """``index`` the strategy, recording seconds, LLM calls and tokens under ``name``."""
    mark, t0 = mem.store.usage_mark(), time.perf_counter()
    report = mem.index(strategy)
    used = mem.store.usage_after(mark)
    results[name] = {
        "seconds": round(time.perf_counter() - t0, 2),
        "llm_calls": report.llm_calls,
        "llm_cache_hits": int(used["llm_cached"]),
        "prompt_tokens": report.usage.prompt_tokens,
        "completion_tokens": report.usage.completion_tokens,
        "chunks": report.chunks,
        "summary_nodes": report.summary_nodes,
    }
    row = results[name]
    print(
        f"{name:<26} {row['llm_calls']:>4} LLM calls ({row['llm_cache_hits']} cache hits), "
        f"{row['prompt_tokens']} prompt + {row['completion_tokens']} completion tokens, {row['seconds']:.1f} s",
        flush=True,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fake", action="store_true", help="stand-in models (tests/fakes.py)")
    parser.add_argument("--strategy", default="gem")
    parser.add_argument("--paragraph", type=int, default=80, help="the paragraph edited (0-based, of 166)")
    parser.add_argument("--paragraphs", type=int, help="use the story's first N paragraphs only (a shorter run)")
    parser.add_argument("--memory", type=Path, help="memory directory (default: a temporary one)")
    parser.add_argument("--out", type=Path, help="write the figures as JSON")
    args = parser.parse_args(argv)
    work = args.memory or Path(tempfile.mkdtemp(prefix="gemrag-update-cost-"))
    story = work / "story.txt"
    work.mkdir(parents=True, exist_ok=True)
    text = STORY.read_text(encoding="utf-8")
    if args.paragraphs:
        text = "\n\n".join(text.split("\n\n")[: args.paragraphs])
    story.write_text(text, encoding="utf-8")
    results: dict[str, Any] = {"strategy": args.strategy, "paragraph": args.paragraph, "fake": args.fake}
    results["paragraphs"] = args.paragraphs or len(text.split("\n\n"))
    with open_memory(work / "memory", args.fake) as mem:
        mem.add([story])
        run_index(mem, args.strategy, "1. index the story", results)
        chunks = {n.text for n in mem.store.nodes("chunk")}
        summaries = {n.text for n in mem.store.nodes("summary", strategy=args.strategy)}
        paragraphs = story.read_text(encoding="utf-8").split("\n\n")
        paragraphs[args.paragraph] = paragraphs[args.paragraph].rstrip() + ADDED
        story.write_text("\n\n".join(paragraphs), encoding="utf-8")
        report = mem.add([story])
        results["update"] = {
            "status": [c.status for c in report.changes],
            "chunks_kept": report.chunks_kept,
            "chunks_new": report.chunks_new,
            "chunks_deleted": report.chunks_deleted,
            "seconds": round(report.seconds, 3),
        }
        print(f"{'2a. the edited file':<26} {report.describe()}; {results['update']}", flush=True)
        run_index(mem, args.strategy, "2b. index the edit", results)
        results["new_chunk_texts"] = len({n.text for n in mem.store.nodes("chunk")} - chunks)
        new_summaries = {n.text for n in mem.store.nodes("summary", strategy=args.strategy)} - summaries
        results["new_summary_texts"] = len(new_summaries)
        mem.add([story])
        run_index(mem, args.strategy, "3. index again, no change", results)
    print(
        f"edit: {results['new_chunk_texts']} new chunk text(s), {results['new_summary_texts']} new summary text(s); "
        f"LLM calls {results['2b. index the edit']['llm_calls']} vs {results['1. index the story']['llm_calls']} "
        "for the whole story"
    )
    if args.out:
        args.out.write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
