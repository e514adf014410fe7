"""Two real ``gemrag`` processes on one memory (issue 7): two ``index`` runs started together — one builds, the
other stops with a one-line reason (exit code 2) — and ``ask --retrieve-only`` during a build answers from the
previous generation.

The processes run the real CLI with the unit tests' stand-in models (``benchmarks/kill9_index.py --child-cli``,
a ScriptedLLM slowed to ``KILL9_FAKE_DELAY`` s per call), so only the models are doubles.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from test_memory import DOC_A, DOC_B

REPO = Path(__file__).resolve().parents[1]
HARNESS = REPO / "benchmarks" / "kill9_index.py"


def _env(tmp_path: Path, delay: float, hold: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GEMRAG_") and k != "KILL9_HOLD_FILE"}
    env.update(
        KILL9_CALL_LOG=str(tmp_path / "calls.log"),
        KILL9_FAKE_DELAY=str(delay),
        GEMRAG_PROGRESS="false",
        GEMRAG_STRATEGY="gem",  # GEM-RAG's build: its LLM calls are what the stand-in slows
        PYTHONPATH=os.pathsep.join([str(REPO / "src"), str(REPO / "tests")]),
    )
    if hold is not None:
        env["KILL9_HOLD_FILE"] = str(hold)
    return env


def _gemrag(tmp_path: Path, *argv: str, delay: float = 0.0, hold: Path | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(HARNESS), "--child-cli", *argv],
        env=_env(tmp_path, delay, hold),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _texts(out: str) -> str:
    """The texts of the hits of ``gemrag ask --retrieve-only --json``, joined."""
    data = json.loads(out[out.index("{") :])
    return " ".join(h["text"] for h in data["context"])


def _finish(proc: subprocess.Popen[str]) -> tuple[int, str]:
    out, _ = proc.communicate(timeout=300)
    return proc.returncode, out


def test_two_index_processes_one_builds_the_other_says_why(tmp_path: Path) -> None:
    mem = tmp_path / "mem"
    doc = tmp_path / "a.txt"
    doc.write_text(DOC_A, encoding="utf-8")
    first = _gemrag(tmp_path, "index", str(doc), "--memory", str(mem), "-q", delay=1.0)
    second = _gemrag(tmp_path, "index", str(doc), "--memory", str(mem), "-q", delay=1.0)
    (rc1, out1), (rc2, out2) = _finish(first), _finish(second)
    assert sorted([rc1, rc2]) == [0, 2], (out1, out2)
    loser = out1 if rc1 == 2 else out2
    assert "is building the memory" in loser and "--wait SECONDS" in loser, loser
    errors = [ln for ln in loser.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in loser, loser  # one line, no traceback
    # the memory the winner built answers
    rc, out = _finish(
        _gemrag(tmp_path, "ask", "Who gave Amos a silver medal?", "--memory", str(mem), "--retrieve-only", "--json")
    )
    assert rc == 0 and "Amos" in _texts(out), out


def test_ask_during_a_build_answers_from_the_previous_generation(tmp_path: Path) -> None:
    mem = tmp_path / "mem"
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text(DOC_A, encoding="utf-8")
    b.write_text(DOC_B, encoding="utf-8")
    assert _finish(_gemrag(tmp_path, "index", str(a), "--memory", str(mem), "-q"))[0] == 0
    hold = tmp_path / "hold"  # the builder waits after its first logged call until the reader has answered
    hold.touch()  # (a fixed delay was too short when the reader's start took long on a loaded machine)
    builder = _gemrag(tmp_path, "index", str(b), "--memory", str(mem), "-q", delay=0.5, hold=hold)
    try:
        deadline = time.monotonic() + 120
        calls = tmp_path / "calls.log"
        before = calls.read_text().count("\n")
        while calls.read_text().count("\n") <= before:  # the builder has started its LLM calls
            assert builder.poll() is None and time.monotonic() < deadline, "the build ended before it was observed"
            time.sleep(0.1)
        ask = ["ask", "Who released ladybirds into the greenhouse?", "--memory", str(mem), "--retrieve-only", "--json"]
        rc, out = _finish(_gemrag(tmp_path, *ask))
        assert builder.poll() is None, "the build ended before the reader ran: the test proves nothing"
        assert rc == 0, out
        texts = _texts(out)
        assert "Marta" not in texts and "Amos" in texts  # generation 1 holds only the lighthouse story
    finally:
        hold.unlink(missing_ok=True)
        rc_build, out_build = _finish(builder)
    assert rc_build == 0, out_build
    rc, out = _finish(_gemrag(tmp_path, *ask))
    assert rc == 0 and "Marta" in _texts(out), out  # the published generation 2
