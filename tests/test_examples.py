"""The examples under ``examples/`` run as a user runs them (``python examples/<name>.py``), so CI keeps them working.

- ``custom_store.py`` assembles a store from parts passed as objects (no subclass): the SQLite rows in one directory,
  the build arrays in another, and a counting vector search; it indexes a short text with ``dense`` and the embedded
  MiniLM embedder (no LLM) and retrieves with it, every search through the counting part.
- ``custom_llm.py`` passes a rule-based LLM (the ``LLM`` protocol) to ``Memory.open``: GEM-RAG's utility questions and
  summaries and the cited answer come from it; a second run on the same memory reaches it no more (the LLM cache).
- ``custom_strategy.py`` registers a strategy with its own ``[overlap]`` section, builds and retrieves over the chunks
  through the strategy platform, and forgets a deleted document's chunk at once.

The README names all three as the extension points; each runs offline in seconds."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from paths import REPO


def run_example(name: str, *args: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python examples/<name> ARGS`` with the checkout's ``src`` first on the path; fails on a non-zero exit."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run(
        [sys.executable, str(REPO / "examples" / name), *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    return run


def test_custom_store_keeps_rows_and_arrays_apart_and_retrieves(tmp_path: Path) -> None:
    rows, arrays = tmp_path / "rows", tmp_path / "arrays"
    run = run_example("custom_store.py", rows, arrays, cwd=tmp_path)
    assert "-> The island's puffin colony returns each April" in run.stdout  # the right passage, first
    # the part passed in answered the retrieval's search (it counts only what reaches it)
    assert "1 search(es) through the store's vector search part (CountingSearch)" in run.stdout
    assert sorted(p.name for p in rows.iterdir()) == ["build.lock", "memory.sqlite"]  # no array beside the rows
    assert {"dense.g1.node_ids.npy", "dense.g1.vectors.npy"} <= {p.name for p in arrays.iterdir()}


def test_custom_llm_builds_gem_and_answers_with_a_citation(tmp_path: Path) -> None:
    memory = tmp_path / "memory"
    first = run_example("custom_llm.py", memory, cwd=tmp_path)
    assert "indexed 3 chunks" in first.stdout and "0 LLM calls" not in first.stdout  # the build called it
    assert "-> The island's puffin colony returns each April" in first.stdout  # the answer, from the right passage
    assert "cited: 'Gull Rock', chunk 1, characters" in first.stdout  # cited, with its span in the document
    assert "0 request(s) reached the LLM" not in first.stdout
    again = run_example("custom_llm.py", memory, cwd=tmp_path)
    assert "0 LLM calls" in again.stdout and "0 request(s) reached the LLM" in again.stdout  # all from the cache
    assert "-> The island's puffin colony returns each April" in again.stdout


def test_custom_strategy_registers_builds_retrieves_and_forgets(tmp_path: Path) -> None:
    run = run_example("custom_strategy.py", tmp_path / "memory", cwd=tmp_path)
    lines = run.stdout.splitlines()
    hits = [line for line in lines if line.startswith("  -> ")]
    assert hits[0].startswith("  -> [Lighthouse] The lighthouse on Gull Rock")  # the best chunk first
    assert hits[1].startswith("  -> [Puffins]")  # shares "island" only
    assert "report: {'chunks': 3," in run.stdout  # its report, through Memory.stats()
    after = lines[lines.index(next(line for line in lines if line.startswith("after deleting"))) :]
    assert "stale: 1 deleted chunk" in after[0]
    assert [line for line in after[1:] if "lighthouse" in line.lower()] == []  # forgotten without a rebuild
    assert after[1].startswith("  -> The island's puffin colony")
