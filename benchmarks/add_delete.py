"""Incremental add and delete on a real 20-document memory: LLM calls and seconds, and retrieval equality.

The 20 documents are the 5 QuALITY dev stories of ``../shared/data/quality/quality_dev5.jsonl``, each cut into
4 consecutive passages of about ``--chars`` characters (at paragraph boundaries). Steps, each timed and with its
LLM backend calls counted (cache misses only: the memory's LLM cache answers repeated prompts):

1. initial build: add documents 1-19, ``index`` every strategy in ``--strategies``;
2. add document 20, ``index`` every strategy;
3. delete document 20 (``Memory.delete``; no LLM call by design), then ``index`` every strategy again;
4. retrieval equality: for every strategy, the hit texts of the stories' own questions after step 3 equal those
   after step 1 (the memory built without document 20).

Real models (default): the embedded LLM of the configuration (``GEMRAG_LLM__MODEL=qwen2.5-coder-0.5b`` is fine)
and the embedded MiniLM embedder. ``--fake``: the unit tests' stand-ins (``tests/fakes.py``: ScriptedLLM,
HashEmbedder), which makes the LLM-call counts exact and the run take seconds::

    python benchmarks/add_delete.py --fake
    GEMRAG_LLM__MODEL=qwen2.5-coder-0.5b python benchmarks/add_delete.py --out add_delete.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "quality" / "quality_dev5.jsonl"


class CountingLLM:
    """Wraps an LLM backend and counts its ``complete`` calls (the memory's cache sits above it)."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.backend, name)

    def complete(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.backend.complete(*args, **kwargs)


def passages(article: str, parts: int, chars: int) -> list[str]:
    """``parts`` consecutive passages of about ``chars`` characters from the start of ``article`` (whitespace
    normalized), each ending at the first sentence end after ``chars`` characters."""
    text = " ".join(article.split())
    out: list[str] = []
    start = 0
    while len(out) < parts and start < len(text):
        end = text.find(". ", start + chars)
        end = len(text) if end < 0 else end + 1
        out.append(text[start:end].strip())
        start = end + 1
    return out


def load_documents(path: Path, parts: int, chars: int) -> tuple[list[tuple[str, str]], list[str]]:
    """``(title, text)`` documents (stories x parts) and the stories' questions."""
    docs, questions = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        title = " ".join(record["title_guess"].split()).title()
        for i, text in enumerate(passages(record["article"], parts, chars)):
            docs.append((f"{title} ({i + 1}/{parts})", text))
        questions += [q["question"] for q in record["questions"]]
    return docs, questions


def open_memory(directory: Path, fake: bool) -> tuple[Any, CountingLLM]:
    from gemrag import Memory
    from gemrag.config import load_config

    config = load_config()
    if fake:
        sys.path.insert(0, str(REPO / "tests"))
        from fakes import HashEmbedder, ScriptedLLM

        llm = CountingLLM(ScriptedLLM())
        return Memory.open(directory, config, llm=llm, embedder=HashEmbedder(dim=384)), llm
    from gemrag.models.factory import build_llm

    llm = CountingLLM(build_llm(config.llm, config.cache_dir))
    return Memory.open(directory, config, llm=llm), llm


def step(name: str, llm: CountingLLM, action: Callable[[], Any], results: dict[str, Any]) -> Any:
    """Run ``action``, recording its seconds and LLM calls under ``name``."""
    calls, t0 = llm.calls, time.perf_counter()
    value = action()
    results[name] = {"llm_calls": llm.calls - calls, "seconds": round(time.perf_counter() - t0, 3)}
    print(f"{name:<28} {results[name]['llm_calls']:>6} LLM calls {results[name]['seconds']:>10.2f} s", flush=True)
    return value


def note_strategies(results: dict[str, Any], name: str, by_strategy: dict[str, int]) -> None:
    """Record (and print) the LLM calls of each strategy's ``index`` within step ``name``."""
    results[name]["llm_calls_by_strategy"] = dict(by_strategy)
    print(f"{'':<28} by strategy: {by_strategy}", flush=True)


def retrievals(mem: Any, strategies: Sequence[str], questions: Sequence[str], budget: int) -> dict[str, Any]:
    return {s: [[h.text for h in mem.retrieve(q, budget, strategy=s)] for q in questions] for s in strategies}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fake", action="store_true", help="stand-in models (tests/fakes.py)")
    parser.add_argument("--data", type=Path, default=DATA, help="QuALITY jsonl (default: the 5 dev stories)")
    parser.add_argument("--parts", type=int, default=4, help="documents per story (default 4: 20 documents)")
    parser.add_argument("--chars", type=int, default=2000, help="characters per document (default 2000)")
    parser.add_argument("--strategies", default="gem,dense,bm25", help="comma-separated (raptor needs umap)")
    parser.add_argument("--questions", type=int, default=12, help="questions for the equality check")
    parser.add_argument("--budget", type=int, default=4)
    parser.add_argument("--memory", type=Path, help="memory directory (default: a temporary one)")
    parser.add_argument("--out", type=Path, help="write the figures as JSON")
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(f"{args.data} not found (see ../shared/data/README.md)", file=sys.stderr)
        return 2
    docs, questions = load_documents(args.data, args.parts, args.chars)
    questions = questions[:: max(1, len(questions) // args.questions)][: args.questions]
    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    work = args.memory or Path(tempfile.mkdtemp(prefix="gemrag-add-delete-"))
    results: dict[str, Any] = {"documents": len(docs), "strategies": strategies, "fake": args.fake}
    mem, llm = open_memory(work, args.fake)
    with mem:
        by_strategy: dict[str, int] = {}

        def build() -> None:
            by_strategy.clear()
            for name in strategies:
                calls = llm.calls
                mem.index(name)
                by_strategy[name] = llm.calls - calls

        def initial() -> None:
            for title, text in docs[:-1]:
                mem.add_text(text, title, source=title)
            build()

        def add_last() -> None:
            mem.add_text(docs[-1][1], docs[-1][0], source=docs[-1][0])
            build()

        step("1. initial build (19 docs)", llm, initial, results)
        note_strategies(results, "1. initial build (19 docs)", by_strategy)
        results["chunks"] = len(mem.store.nodes("chunk"))
        before = retrievals(mem, strategies, questions, args.budget)
        step("2. add 1 doc + index", llm, add_last, results)
        note_strategies(results, "2. add 1 doc + index", by_strategy)
        results["chunks_of_added_doc"] = len(mem.store.nodes("chunk")) - results["chunks"]
        report = step("3a. delete it", llm, lambda: mem.delete(docs[-1][0]), results)
        results["delete"] = {"chunks": report.chunks, "derived_nodes": report.derived_nodes, "pruned": report.pruned}
        results["states_after_delete"] = {n: s.describe() for n, s in mem.strategy_states().items()}
        step("3b. index after delete", llm, build, results)
        note_strategies(results, "3b. index after delete", by_strategy)
        after = retrievals(mem, strategies, questions, args.budget)
        equal = {s: before[s] == after[s] for s in strategies}
        results["retrieval_equal_after_delete"] = equal
        results["questions"] = len(questions)
    print(f"chunks: {results['chunks']} (+{results['chunks_of_added_doc']} for the added document)")
    print(f"retrieval equal to the memory built without it ({len(questions)} questions): {equal}")
    if args.out:
        args.out.write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0 if all(equal.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
