"""The examples under ``examples/`` run as a user runs them (``python examples/<name>.py``), so CI keeps them working.

``custom_store.py`` (issue 40) assembles a store from parts: the SQLite rows in one directory, the build arrays in
another; it indexes a short text with ``dense`` and the embedded MiniLM embedder (no LLM) and retrieves with it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from paths import REPO


def test_custom_store_keeps_rows_and_arrays_apart_and_retrieves(tmp_path: Path) -> None:
    rows, arrays = tmp_path / "rows", tmp_path / "arrays"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run(
        [sys.executable, str(REPO / "examples" / "custom_store.py"), str(rows), str(arrays)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "-> The island's puffin colony returns each April" in run.stdout  # the right passage, first
    assert "1 search(es) through the store's vector search part" in run.stdout  # the overridden part answered
    assert sorted(p.name for p in rows.iterdir()) == ["build.lock", "memory.sqlite"]  # no array beside the rows
    assert {"dense.g1.node_ids.npy", "dense.g1.vectors.npy"} <= {p.name for p in arrays.iterdir()}
