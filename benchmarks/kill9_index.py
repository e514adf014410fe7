"""Kill-9 harness: ``gemrag index`` killed with SIGKILL at random moments must leave a readable memory and,
restarted, finish without repeating an LLM call (issue 7, point 4).

The text is the first ``--chars`` characters of the shipped QuALITY story, split into ``--parts`` documents.
Each round starts ``gemrag index --strategy gem`` (GEM-RAG's build, whatever the configured default) on the first
k parts (k grows after each completed build, so later rounds have new work) as a child process, runs a concurrent
reader half-way, and SIGKILLs the child's process group at a random moment in ``[0, window]`` s unless it finished
first (the window starts at ``--max-delay`` and becomes the duration of the last completed build, so kills keep
landing inside builds); after every round a reader opens the memory and retrieves (``gemrag ask --strategy gem
--retrieve-only``). Once ``--kills`` kills were made, a last run indexes every part to completion. The report:

* builds completed (rounds that exited 0) and kills made;
* memories unreadable after a kill, or during a build (must be 0): a check fails unless the retrieval
  succeeds, or — before the first publish only — says cleanly that the memory is not indexed yet;
* LLM calls repeated (must be 0): ``llm_cache.writes`` counts the backend calls that stored each key, so
  ``sum(writes) - count(keys)`` are results computed twice. Cross-checks: uncached ``llm`` usage rows minus
  cache keys (a lower bound: a kill between storing an answer and logging its usage loses the usage row), and
  with ``--fake`` the exact count from a log the fake backend appends to (fsync'd) after every call.

Modes:
    python benchmarks/kill9_index.py --fake                               # stand-in models, no llama.cpp
    python benchmarks/kill9_index.py --llm-model qwen2.5-coder-0.5b        # real: `python -m gemrag index`
    python benchmarks/kill9_index.py --fake --memory "$(gemrag pg start --schema kill9)"   # a PostgreSQL memory

``--fake`` runs the real CLI (``gemrag index`` / ``gemrag ask``) in the child with the unit tests' stand-ins
injected (``tests/fakes.py``: ScriptedLLM slowed by ``--fake-delay`` s per call, HashEmbedder). The real mode
sets ``GEMRAG_LLM__MODEL`` and ``GEMRAG_LLM__N_CTX=2048`` and uses the embedded MiniLM embedder.
Exit code 0 when nothing was unreadable and no LLM call was repeated, else 1.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
STORY = REPO / "examples" / "quality" / "lost_in_translation.txt"
QUESTION = "Why was Korvin's door left unlocked?"
NOT_INDEXED = ("no GEM graph yet", "holds no text", "has not been built in this memory", "holds no gemrag memory")
"""Phrases of gemrag's MemoryNotIndexedError: acceptable only before the first publish."""
CHILD_FLAG = "--child-cli"


# -- the child (fake models) ----------------------------------------------------------------------------------
def child_cli(argv: list[str]) -> None:
    """Run ``gemrag <argv>`` with the stand-in models injected (the ``--fake`` child)."""
    sys.path.insert(0, str(REPO / "tests"))
    from fakes import HashEmbedder, ScriptedLLM
    from gemrag.cli import app, ask, index  # the command modules, whose open_memory is replaced
    from gemrag.memory import Memory

    log = Path(os.environ["KILL9_CALL_LOG"])
    delay = float(os.environ.get("KILL9_FAKE_DELAY", "0.15"))
    hold = Path(os.environ["KILL9_HOLD_FILE"]) if os.environ.get("KILL9_HOLD_FILE") else None

    class LoggingLLM(ScriptedLLM):
        """ScriptedLLM that takes ``delay`` s per call and logs each finished call's request digest; after a
        logged call it waits while the file ``KILL9_HOLD_FILE`` exists (at most 300 s), so a test can keep a
        build running until it has observed what it needs."""

        def complete(self, messages: Any, **kwargs: Any) -> Any:
            time.sleep(delay)
            result = super().complete(messages, **kwargs)
            request = json.dumps({"messages": list(messages), **kwargs}, sort_keys=True, default=str)
            with open(log, "a", encoding="utf-8") as fh:
                fh.write(hashlib.sha256(request.encode()).hexdigest() + "\n")
                fh.flush()
                os.fsync(fh.fileno())
            deadline = time.monotonic() + 300
            while hold is not None and hold.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            return result

    def open_fake(memory: Path, config: Any, progress: Any) -> Memory:
        return Memory.open(memory, config, llm=LoggingLLM(), embedder=HashEmbedder(dim=384))

    index.open_memory = ask.open_memory = open_fake  # type: ignore[assignment]
    app(argv, prog_name="gemrag")


# -- the parent -------------------------------------------------------------------------------------------------
def split_parts(text: str, parts: int) -> list[str]:
    """``text`` cut at paragraph boundaries into ``parts`` documents of similar length."""
    paragraphs = [p.strip() for p in text.split("\n\n") if p.strip()]
    size = max(1, sum(map(len, paragraphs)) // parts)
    docs: list[list[str]] = [[]]
    for p in paragraphs:
        if sum(map(len, docs[-1])) >= size and len(docs) < parts:
            docs.append([])
        docs[-1].append(p)
    return ["\n\n".join(d) for d in docs if d]


class Harness:
    """One harness run (see the module docstring)."""

    def __init__(self, args: argparse.Namespace, work: Path) -> None:
        self.args = args
        self.work = work
        self.memory: str | Path = args.memory or work / "mem"
        self.call_log = work / "backend_calls.log"
        self.rng = random.Random(args.seed)
        self.window = args.max_delay
        text = STORY.read_text(encoding="utf-8")[: args.chars]
        self.docs = []
        for i, part in enumerate(split_parts(text, args.parts)):
            path = work / f"part{i + 1}.txt"
            path.write_text(part, encoding="utf-8")
            self.docs.append(path)
        env = {k: v for k, v in os.environ.items() if not k.startswith("GEMRAG_")}
        env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        env["GEMRAG_PROGRESS"] = "false"
        if args.fake:
            env["KILL9_CALL_LOG"] = str(self.call_log)
            env["KILL9_FAKE_DELAY"] = str(args.fake_delay)
        else:
            env["GEMRAG_LLM__MODEL"] = args.llm_model
            env["GEMRAG_LLM__N_CTX"] = "2048"
        self.env = env
        self.figures: dict[str, Any] = {
            "kills": 0,
            "rounds": 0,
            "builds_completed": 0,
            "builds_failed": 0,
            "checks_after_kill": 0,
            "unreadable_after_kill": 0,
            "checks_during_build": 0,
            "unreadable_during_build": 0,
            "not_indexed_yet": 0,
            "problems": [],
        }

    def gemrag(self, argv: Sequence[str]) -> list[str]:
        """The command running ``gemrag <argv>`` in a child process."""
        if self.args.fake:
            return [sys.executable, str(Path(__file__).resolve()), CHILD_FLAG, *argv]
        return [sys.executable, "-m", "gemrag", *argv]

    def index_command(self, n_docs: int) -> list[str]:
        argv = ["index", *map(str, self.docs[:n_docs]), "--memory", str(self.memory), "--strategy", "gem", "-q"]
        return self.gemrag(argv)

    def _rows(self, sql: str) -> list[Any] | None:
        """Rows of a query on the memory opened read-only (SQLite or PostgreSQL); None when it is no memory yet."""
        from gemrag.errors import GemragError
        from gemrag.store import memory_exists, open_store

        try:
            if not memory_exists(self.memory):
                return None
            store = open_store(self.memory, readonly=True)
        except GemragError:
            return None
        try:
            return store.database._query(sql)
        finally:
            store.close()

    def published(self) -> bool:
        """True once a GEM generation was published (read-only look at the database)."""
        return bool(self._rows("SELECT 1 FROM builds WHERE strategy = 'gem'"))

    def check(self, during_build: bool) -> None:
        """Open the memory and retrieve; count it as unreadable unless it answers (or cleanly is not indexed
        yet, before the first publish)."""
        key = "during_build" if during_build else "after_kill"
        self.figures[f"checks_{key}"] += 1
        was_published = self.published()
        run = subprocess.run(
            self.gemrag(
                ["ask", QUESTION, "--memory", str(self.memory), "--strategy", "gem", "--retrieve-only", "--json"]
            ),
            env=self.env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        output = (run.stdout + run.stderr).strip()
        if run.returncode == 0 and '"context"' in run.stdout:
            return
        if run.returncode == 2 and not was_published and any(p in output for p in NOT_INDEXED):
            self.figures["not_indexed_yet"] += 1
            return
        self.figures[f"unreadable_{key}"] += 1
        self.figures["problems"].append(f"unreadable ({key}, exit {run.returncode}): {output[-400:]}")

    def round(self, n_docs: int, delay: float | None) -> bool:
        """Run ``gemrag index`` on the first ``n_docs`` parts, killed after ``delay`` s (None: never).

        Returns:
            True when the build completed (exit 0).
        """
        self.figures["rounds"] += 1
        log = self.work / "index.stderr.log"  # a file, not a pipe: llama.cpp's load logs would fill a pipe
        with open(log, "w", encoding="utf-8") as stderr:
            proc = subprocess.Popen(
                self.index_command(n_docs),
                env=self.env,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                start_new_session=True,  # its own process group: the kill reaches any child it started
            )
        start, reader = time.monotonic(), None
        while proc.poll() is None and (delay is None or time.monotonic() - start < delay):
            if delay is not None and reader is None and time.monotonic() - start >= delay / 2:
                reader = threading.Thread(target=self.check, args=(True,))  # a reader beside the builder
                reader.start()
            time.sleep(0.01)
        killed = proc.poll() is None
        if killed:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        if reader is not None:
            reader.join()
        if killed:
            self.figures["kills"] += 1
            return False
        if proc.returncode == 0:
            self.figures["builds_completed"] += 1
            self.window = min(self.args.max_delay, max(0.5, time.monotonic() - start))
            return True
        self.figures["builds_failed"] += 1
        tail = log.read_text(encoding="utf-8", errors="replace").strip()[-400:]
        self.figures["problems"].append(f"index exited {proc.returncode}: {tail}")
        return False

    def llm_figures(self) -> dict[str, Any]:
        """Cache keys, backend calls that stored them, and the cross-checks (see the module docstring)."""
        keys, writes = (self._rows("SELECT COUNT(*), COALESCE(SUM(writes), 0) FROM llm_cache") or [(0, 0)])[0]
        keys, writes = int(keys), int(writes)
        usage = int((self._rows("SELECT COUNT(*) FROM usage WHERE kind = 'llm' AND cached = 0") or [(0,)])[0][0])
        generation = (self._rows("SELECT generation FROM builds WHERE strategy = 'gem'") or [None])[0]
        out: dict[str, Any] = {
            "llm_cache_keys": keys,
            "llm_backend_calls_stored": writes,
            "llm_calls_repeated": writes - keys,
            "llm_usage_rows_uncached": usage,
            "llm_calls_repeated_by_usage_rows": usage - keys,
            "gem_generation": generation[0] if generation else None,
        }
        if self.args.fake:
            lines = self.call_log.read_text().split() if self.call_log.exists() else []
            out["backend_log_calls"] = len(lines)
            out["llm_calls_repeated_by_backend_log"] = len(lines) - len(set(lines))
        return out

    def run(self) -> dict[str, Any]:
        """All rounds, the final build and the report."""
        t0 = time.monotonic()
        done = 0  # parts indexed by a completed build
        while self.figures["kills"] < self.args.kills:
            n_docs = min(done + 1, len(self.docs))
            if self.round(n_docs, self.rng.uniform(0.0, self.window)):
                done = n_docs
            self.check(during_build=False)
        final_ok = self.round(len(self.docs), None)
        self.check(during_build=False)
        self.figures.update(self.llm_figures())
        self.figures["final_build_completed"] = final_ok
        self.figures["parts"] = len(self.docs)
        self.figures["seconds"] = round(time.monotonic() - t0, 1)
        return self.figures


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run the harness, print the report; 0 when nothing was unreadable or repeated."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == [CHILD_FLAG]:
        child_cli(argv[1:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fake", action="store_true", help="stand-in models (no llama.cpp, no MiniLM)")
    parser.add_argument("--llm-model", default="qwen2.5-coder-0.5b", help="real mode: GEMRAG_LLM__MODEL")
    parser.add_argument("--kills", type=int, default=20, help="SIGKILLs to make (default 20)")
    parser.add_argument("--chars", type=int, default=12000, help="characters of the story to index (12000)")
    parser.add_argument("--parts", type=int, default=3, help="documents the text is split into (3)")
    parser.add_argument("--max-delay", type=float, default=None, help="kill within [0, s] (fake 4, real 90)")
    parser.add_argument("--fake-delay", type=float, default=0.15, help="seconds per fake LLM call (0.15)")
    parser.add_argument("--seed", type=int, default=0, help="random seed of the kill moments")
    parser.add_argument("--work", type=Path, default=None, help="working directory (default: a temporary one)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--memory", help="the memory: a postgresql://...?schema=NAME URL (a new schema) or a directory (default: "
        "WORK/mem)"
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.max_delay is None:
        args.max_delay = 4.0 if args.fake else 90.0
    if args.work is not None:
        args.work.mkdir(parents=True, exist_ok=True)
        figures = Harness(args, args.work).run()
    else:
        with tempfile.TemporaryDirectory(prefix="kill9-") as tmp:
            figures = Harness(args, Path(tmp)).run()
    figures["mode"] = "fake" if args.fake else f"real ({args.llm_model})"
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        for key, value in figures.items():
            if key != "problems":
                print(f"{key:34s} {value}")
        for problem in figures["problems"]:
            print(f"problem: {problem}")
    ok = (
        figures["unreadable_after_kill"] == 0
        and figures["unreadable_during_build"] == 0
        and figures["llm_calls_repeated"] == 0
        and figures.get("llm_calls_repeated_by_backend_log", 0) == 0
        and figures["final_build_completed"]
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
