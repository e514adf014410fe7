"""``gemrag ask`` streams with the embedded model (issue 41, "done when"): the real CLI in a child process with the
small Qwen2.5-Coder-0.5B GGUF (llama.cpp) and MiniLM, over the opening of the shipped story built with ``dense`` (no
LLM call to build); the test reads the child's standard output as it comes and sees the answer's first piece before
its last one is written."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gemrag import Memory, load_config
from realparts import require_small_model

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[1]
STORY = REPO / "examples" / "quality" / "lost_in_translation.txt"
MODEL = ["--set", "llm.model=qwen2.5-coder-0.5b", "--set", "llm.n_ctx=2048"]


def test_gemrag_ask_streams_with_the_embedded_model(tmp_path: Path) -> None:
    require_small_model()
    text = STORY.read_text(encoding="utf-8")
    with Memory.open(tmp_path / "mem", load_config(None, {"strategy": "dense"})) as mem:
        mem.add_text(text[: text.find("\n\n", 4000)], "lost in translation (opening)")
        mem.index()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    question = "Describe in two sentences who Korvin is and where he is held."
    argv = ["ask", question, "--memory", str(tmp_path / "mem"), "--strategy", "dense", "--stream", *MODEL]
    proc = subprocess.Popen(
        [sys.executable, "-m", "gemrag", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp_path
    )
    assert proc.stdout is not None
    chunks: list[tuple[float, bytes]] = []  # (seconds since start, bytes read at once), as the child writes them
    start = time.monotonic()
    while data := os.read(proc.stdout.fileno(), 4096):
        chunks.append((time.monotonic() - start, data))
    stderr = proc.communicate(timeout=600)[1].decode(errors="replace")
    assert proc.returncode == 0, stderr
    raw = b"".join(data for _, data in chunks)
    out = raw.decode()
    assert out.startswith("answer: ") and "context" in out, out
    begin, end = len(b"answer: "), raw.index(b"\n")  # the answer's bytes
    assert len(raw[begin:end].split()) >= 3, out
    arrived, seen = [], 0  # when each chunk holding some of the answer's bytes was read
    for t, data in chunks:
        if seen < end and seen + len(data) > begin:
            arrived.append(t)
        seen += len(data)
    assert len(arrived) >= 3, chunks
    assert arrived[-1] - arrived[0] > 0.1, chunks  # the first piece was read well before the last was written
