"""What the extraction pipeline gives a backend that serves several requests at once (issue 9, point 5).

A GEM build (utility questions for every chunk, two eigentheme summaries and their questions) over one story,
twice, with the unit tests' scripted answers (``tests/fakes.py``) behind a backend that takes ``--latency``
seconds per request (sleeping, so no CPU): once without ``complete_iter`` (the sequential fallback: one request
after another), once with a ``complete_iter`` serving up to ``--slots`` requests at a time (as an HTTP backend with
that many requests in flight, or llama.cpp with that many parallel sequences, would). Prints the wall time of each
build, chunks/s, and whether the stored questions and summaries are equal::

    python benchmarks/extraction_pipeline.py --latency 0.05 --slots 8
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src"), str(REPO / "tests")]

from fakes import HashEmbedder, ScriptedLLM  # noqa: E402
from gemrag import Memory  # noqa: E402
from gemrag.config import load_config  # noqa: E402
from gemrag.errors import GemragError  # noqa: E402
from gemrag.models.base import Completion  # noqa: E402


class SlowLLM(ScriptedLLM):
    """Scripted answers after ``latency`` seconds each, one request at a time."""

    def __init__(self, latency: float) -> None:
        super().__init__()
        self.latency = latency

    def complete(self, messages: Any, **kw: Any) -> Completion:
        time.sleep(self.latency)
        return super().complete(messages, **kw)


class ConcurrentLLM(SlowLLM):
    """:class:`SlowLLM` with a ``complete_iter`` serving ``slots`` requests at once, yielding in completion order."""

    def __init__(self, latency: float, slots: int) -> None:
        super().__init__(latency)
        self.slots = slots

    def complete_iter(self, requests: Sequence[Any]) -> Iterator[tuple[int, Completion | GemragError]]:
        with ThreadPoolExecutor(self.slots) as pool:
            futures = {pool.submit(r.call, self): i for i, r in enumerate(requests)}
            for future in as_completed(futures):
                yield futures[future], future.result()


def build(llm: ScriptedLLM, text: str) -> tuple[float, int, Any]:
    config = load_config(None, {"memory": {"chunk_tokens": 100}, "gem": {"questions": 5, "eigen": 2}})
    with tempfile.TemporaryDirectory() as tmp, Memory.open(tmp, config, llm=llm, embedder=HashEmbedder()) as mem:
        mem.add_text(text, "story")
        start = time.perf_counter()
        mem.index()
        seconds = time.perf_counter() - start
        questions = sorted((n, q) for _, n, q in mem.store.questions())
        summaries = [n.text for n in mem.store.nodes("summary", strategy="gem")]
        return seconds, len(mem.store.nodes("chunk")), (questions, summaries)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per request")
    parser.add_argument("--slots", type=int, default=8, help="requests served at once by the batching backend")
    parser.add_argument("--words", type=int, default=4000, help="words of the story indexed")
    args = parser.parse_args()
    story = (REPO / "examples" / "quality" / "lost_in_translation.txt").read_text(encoding="utf-8")
    text = " ".join(story.split()[: args.words])
    sequential, chunks, stored = build(SlowLLM(args.latency), text)
    batched, _, stored_batched = build(ConcurrentLLM(args.latency, args.slots), text)
    print(f"{chunks} chunks, {args.latency * 1000:.0f} ms per request")
    print(f"sequential: {sequential:6.2f} s  {chunks / sequential:6.1f} chunks/s")
    print(f"{args.slots} slots:    {batched:6.2f} s  {chunks / batched:6.1f} chunks/s  ({sequential / batched:.1f}x)")
    print(f"same questions and summaries: {stored == stored_batched}")


if __name__ == "__main__":
    main()
