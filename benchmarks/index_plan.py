"""How close ``gemrag index``'s cost plan comes to the build it plans (issue 54, item 4): estimate against actual.

For each run (a corpus, a strategy, a model) the script opens a memory of its own under ``--out``, puts the corpus,
prints the plan (:func:`gemrag.memory.index_plan.plan_index`, calibrated: the model's rates are measured once per
machine), runs ``Memory.index`` and prints estimate / actual / ratio for LLM calls, prompt tokens, completion tokens and
minutes. Actual calls and tokens are the build's backend calls (the memory's ``usage`` rows after the plan, cache
hits excluded); actual minutes are the build's wall-clock time, and beside it the LLM's own seconds (the rows'
``seconds``: for llama.cpp each call's share of the engine's time). The goal: each ratio within 0.75-1.25.

Corpora (``--corpus``): ``story`` (the demo's QuALITY story), ``covid`` (the first ``--documents`` COVID-QA papers of
the shared data, default 4), ``locomo`` (the first LoCoMo conversation), or a path to a .txt/.md file or directory;
``--skip N`` starts at the N+1-th paper or conversation (a plan priced from a model's answers to another one).

Resumable: each run's plan is written to ``OUT/<run>/plan.json`` before its build and its result appended to
``OUT/results.jsonl``; running the same command again skips finished runs and finishes an interrupted build (the
LLM cache answers what it already did; the calls, tokens and seconds of every attempt count, as do the wall-clock
times of the attempts, the last usage row ending an interrupted one).

    python benchmarks/index_plan.py --corpus story --strategy gem --model qwen2.5-coder-0.5b
    python benchmarks/index_plan.py --corpus covid --strategy unweaver,remem --model qwen2.5-coder-1.5b
    python benchmarks/index_plan.py --corpus locomo --strategy remem_gist --model qwen2.5-coder-0.5b
    python benchmarks/index_plan.py --fake --out /tmp/plan-fake      # test doubles, seconds (its own test)

Real-model runs take from minutes (the story, 0.5B) to hours (remem on COVID-QA, 1.5B) on 2 cores: run them alone.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
STORY = REPO / "examples" / "quality" / "lost_in_translation.txt"
DATA = REPO.parent / "shared" / "data"
COVID = DATA / "covid_qa" / "covid_qa_dev30.json"
LOCOMO = DATA / "locomo" / "locomo_dev3.json"
KEYS = ("calls", "prompt_tokens", "completion_tokens", "minutes")


def corpus(name: str, documents: int, skip: int = 0) -> list[tuple[str, str, str]]:
    """The corpus ``name`` as ``(id, title, text)`` documents (COVID-QA papers and LoCoMo conversations from the
    ``skip``-th on)."""
    if name == "story":
        return [("story", "Lost in Translation", STORY.read_text(encoding="utf-8"))]
    if name in ("covid", "locomo"):
        from gemrag.eval import load_dataset

        data = load_dataset("covid_qa" if name == "covid" else "locomo", COVID if name == "covid" else LOCOMO)
        docs = data.documents[skip : skip + (documents if name == "covid" else 1)]
        return [(d.id, d.title or d.id, d.text) for d in docs]
    path = Path(name)
    files = sorted(p for p in path.rglob("*") if p.suffix in (".txt", ".md")) if path.is_dir() else [path]
    return [(str(p), p.stem, p.read_text(encoding="utf-8")) for p in files]


def usage(memory: Path, mark: int) -> dict[str, Any]:
    """The index-phase LLM backend calls logged after usage row ``mark``: calls, tokens, seconds, first/last time."""
    with sqlite3.connect(memory / "memory.sqlite") as db:
        row = db.execute(
            "SELECT COUNT(*), COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0),"
            " COALESCE(SUM(seconds), 0), MIN(at), MAX(at) FROM usage"
            " WHERE id > ? AND phase = 'index' AND kind = 'llm' AND cached = 0",
            (mark,),
        ).fetchone()
    keys = ("calls", "prompt_tokens", "completion_tokens", "llm_seconds", "first_at", "last_at")
    return dict(zip(keys, row, strict=True))


def wall_seconds(memory: Path, starts: list[float], end: float) -> float:
    """The build's wall-clock seconds over its attempts (Unix start times): the last one ends at ``end``, an earlier
    (interrupted) one at its last usage row before the next attempt began."""
    total = end - starts[-1]
    with sqlite3.connect(memory / "memory.sqlite") as db:
        for start, following in zip(starts, starts[1:], strict=False):
            last = db.execute("SELECT MAX(at) FROM usage WHERE at >= ? AND at < ?", (start, following)).fetchone()[0]
            total += (last or start) - start
    return total


def open_memory(path: Path, model: str | None, fake: bool) -> Any:
    """The run's memory: the test doubles with ``fake``, else the configured models with ``model`` as the LLM."""
    from gemrag import Memory, load_config

    if fake:
        sys.path.insert(0, str(REPO / "tests"))
        from fakes import HashEmbedder, ScriptedLLM

        config = load_config(None, {"memory": {"chunk_tokens": 30}})
        return Memory.open(path, config, llm=ScriptedLLM(), embedder=HashEmbedder())
    overrides = {"llm": {"model": model}} if model else None
    return Memory.open(path, load_config(None, overrides))


def run_one(out: Path, name: str, docs: list[tuple[str, str, str]], strategy: str, args: argparse.Namespace) -> dict:
    """Plan, build and compare one run (resuming an interrupted one); returns its result line."""
    from rich.console import Console

    from gemrag.cli.plan import print_plan

    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    state_path = folder / "plan.json"
    state = json.loads(state_path.read_text(encoding="utf-8")) if state_path.exists() else None
    with open_memory(folder / "memory", args.model, args.fake) as mem:
        if state is None:
            for doc_id, title, text in docs:
                mem.add_text(text, title, source=doc_id, id=doc_id)
            plan = mem.plan_index(strategy)
            print_plan(Console(), plan)
            state = {"plan": plan.model_dump(mode="json"), "mark": mem.store.usage_mark(), "attempts": []}
        state["attempts"].append(time.time())
        state_path.write_text(json.dumps(state), encoding="utf-8")
        mem.index(strategy)
        end = time.time()
    actual = usage(folder / "memory", state["mark"])
    starts = state["attempts"]
    wall = wall_seconds(folder / "memory", starts, end)
    actual["minutes"] = wall / 60
    actual["llm_minutes"] = actual["llm_seconds"] / 60
    plan = state["plan"]
    result = {"run": name, "strategy": strategy, "model": plan["model"], "rates": plan["rates"]["source"]}
    result |= {"estimate": {k: plan[k] for k in KEYS}, "actual": {k: actual[k] for k in (*KEYS, "llm_minutes")}}
    result["ratio"] = {k: (plan[k] / actual[k] if plan[k] is not None and actual[k] else None) for k in KEYS}
    result["exact"], result["attempts"] = plan["exact"], len(starts)
    return result


def show(result: dict) -> None:
    """One run's estimate, actual and ratio as a small table."""
    print(f"\n{result['run']} ({result['model']}, rates: {result['rates']}, {result['attempts']} attempt(s))")
    print(f"{'':<20}{'estimate':>12}{'actual':>12}{'ratio':>8}")
    for k in KEYS:
        est, act, ratio = result["estimate"][k], result["actual"][k], result["ratio"][k]
        fmt = ".1f" if k == "minutes" else ",.0f"
        est_s = "?" if est is None else format(est, fmt)
        ratio_s = "?" if ratio is None else f"{ratio:.2f}"
        print(f"{k:<20}{est_s:>12}{format(act, fmt):>12}{ratio_s:>8}")
    print(f"{'LLM minutes':<20}{'':>12}{result['actual']['llm_minutes']:>12.1f}")


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, run (or resume) every (corpus, strategy) run, print and append the results."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default="story", help="story, covid, locomo, or a .txt/.md file or directory")
    parser.add_argument("--strategy", default="gem", help="comma-separated strategies, one run (memory) each")
    parser.add_argument("--model", default=None, help="the LLM (llm.model), e.g. qwen2.5-coder-0.5b")
    parser.add_argument("--documents", type=int, default=4, help="COVID-QA papers (--corpus covid)")
    parser.add_argument("--skip", type=int, default=0, help="COVID-QA papers or LoCoMo conversations to skip first")
    parser.add_argument("--out", type=Path, default=Path("bench-out/index-plan"), help="output directory")
    parser.add_argument("--fake", action="store_true", help="test doubles instead of the models (seconds)")
    args = parser.parse_args(argv)
    docs = corpus(args.corpus, args.documents, args.skip)
    args.out.mkdir(parents=True, exist_ok=True)
    results_path = args.out / "results.jsonl"
    done = {}
    if results_path.exists():
        for line in results_path.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            done[entry["run"]] = entry
    model = "fake" if args.fake else (args.model or "default")
    for strategy in [s.strip() for s in args.strategy.split(",") if s.strip()]:
        name = f"{Path(args.corpus).name}{f'+{args.skip}' if args.skip else ''}-{strategy}-{model}"
        result = done.get(name) or run_one(args.out, name, docs, strategy, args)
        if name not in done:
            with results_path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(result) + "\n")
        show(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
