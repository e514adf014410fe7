"""A memory survives kill -9 anywhere in a build and two processes at once (issue 7, point 4).

* a build killed (``os._exit`` in a child process) at every stage — inside LLM calls for chunk questions,
  summaries and summary questions, while writing arrays, just before and just after the publishing commit —
  leaves a memory that answers from the previous generation (or the new one once committed), and the next
  ``index`` finishes it without repeating an LLM call;
* retrieval during a build (paused inside an LLM call) answers from the previous generation, and a second
  builder (Memory or ``gemrag index``) gets a clear MemoryBusyError naming the builder's pid;
* a generation replaced (files removed) while a reader reads it is retried with the newer one; missing files
  of the current generation are DamagedMemoryError naming the fix;
* a failed chunk is recorded in one transaction.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from backends import MemoryAt, leftovers, remove_array
from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.cli import app
from gemrag.cli import index as cli
from gemrag.config import Config
from gemrag.errors import DamagedMemoryError, MemoryBusyError
from gemrag.types import Hit
from test_memory import DOC_A, DOC_B

QUESTION = "Who gave Amos a silver medal for his courage?"
QUESTION_B = "What did Marta release to eat the aphids?"
QUESTIONS_PROMPT = "questions that this passage answers"
THEME_PROMPT = "These passages share a theme"
GEM = {"questions": 3, "eigen": 2, "eigen_top": 3}


def prompt_of(messages: Any) -> str:
    return messages[-1]["content"] if len(messages) < 3 else messages[1]["content"]


def open_memory(path: str | Path, config: Config, llm: ScriptedLLM | None = None) -> Memory:
    return Memory.open(path, config, llm=llm or ScriptedLLM(), embedder=HashEmbedder())


def seen(hits: list[Hit]) -> list[tuple[str, str, float]]:
    """What a reader sees, without node ids (summary nodes get new ids in every generation)."""
    return [(h.kind, h.text, round(h.score, 9)) for h in hits]


@pytest.fixture
def first_generation(memory_at: MemoryAt, config: Config) -> tuple[str | Path, list[Hit], list[int]]:
    """A memory holding DOC_A, indexed once (generation 1) on the test's backend: its location, hits for QUESTION,
    summary node ids."""
    path = memory_at("m")
    with open_memory(path, config) as mem:
        mem.add_text(DOC_A, "lighthouse")
        mem.index()
        return path, mem.retrieve(QUESTION, 3), [n.id for n in mem.store.nodes("summary")]


@pytest.fixture
def reference(memory_at: MemoryAt, config: Config) -> tuple[list[tuple[str, str, float]], int]:
    """What an uninterrupted build of DOC_A then DOC_B answers to QUESTION_B, and its number of LLM calls."""
    with open_memory(memory_at("reference"), config) as mem:
        mem.add_text(DOC_A, "lighthouse")
        mem.index()
        mem.add_text(DOC_B, "garden")
        mem.index()
        return seen(mem.retrieve(QUESTION_B, 3)), mem.store.llm_cache_counts()[0]


# -- kill -9 anywhere ---------------------------------------------------------------------------------------
CHILD = r"""
import os, sys
sys.path[:0] = [{src!r}, {tests!r}]
from backends import MemoryAt, leftovers, remove_array
from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.config import load_config
import gemrag.store.publish as publish

memory, step, doc = sys.argv[1], sys.argv[2], open(sys.argv[3]).read()

class Killed(ScriptedLLM):
    theme = 0
    def complete(self, messages, **kw):
        prompt = messages[-1]["content"] if len(messages) < 3 else messages[1]["content"]
        if step == "llm:chunk-questions" and self.calls == 2:
            os._exit(137)
        if {theme!r} in prompt:
            self.theme += 1
            if step == "llm:summary" and self.theme == 2:
                os._exit(137)
        elif step == "llm:summary-questions" and self.theme and {questions!r} in prompt:
            os._exit(137)
        return super().complete(messages, **kw)

def hook(name):
    if name == step:
        os._exit(137)

publish.crash_hook = hook
cfg = load_config(None, {{"strategy": "gem", "memory": {{"chunk_tokens": 30}}, "gem": {gem!r}}})
with Memory.open(memory, cfg, llm=Killed(), embedder=HashEmbedder()) as mem:
    mem.add_text(doc, "garden")
    mem.index()
print("finished")
"""

KILL_STEPS = [
    "llm:chunk-questions",
    "llm:summary",
    "llm:summary-questions",
    "write:weights",
    "written:node_ids",
    "publish:before_commit",
    "publish:committed",
]


def run_killed_child(path: str | Path, step: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    import gemrag

    doc = tmp_path / "doc_b.txt"
    doc.write_text(DOC_B)
    code = CHILD.format(
        src=str(Path(gemrag.__file__).resolve().parents[1]),
        tests=str(Path(__file__).resolve().parent),
        theme=THEME_PROMPT,
        questions=QUESTIONS_PROMPT,
        gem=GEM,
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("GEMRAG_")}
    return subprocess.run(
        [sys.executable, "-c", code, str(path), step, str(doc)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("step", KILL_STEPS)
def test_kill_9_anywhere_in_a_build(
    first_generation: tuple[str | Path, list[Hit], list[int]],
    reference: tuple[list[tuple[str, str, float]], int],
    config: Config,
    tmp_path: Path,
    step: str,
) -> None:
    path, before, summary_ids = first_generation
    expected, llm_calls = reference
    child = run_killed_child(path, step, tmp_path)
    assert child.returncode == 137, child.stdout + child.stderr
    committed = step == "publish:committed"
    with open_memory(path, config) as mem:  # a reader right after the kill
        assert mem.store.published_generation("gem") == (2 if committed else 1)
        if committed:
            assert seen(mem.retrieve(QUESTION_B, 3)) == expected
        else:
            assert seen(mem.retrieve(QUESTION, 3)) == seen(before)  # the previous memory, whole
            assert [n.id for n in mem.store.nodes("summary")] == summary_ids
            assert mem.stats()["strategy_report"]["summary_nodes"] == 2
    llm = ScriptedLLM()
    with open_memory(path, config, llm) as mem:  # the next `gemrag index` finishes the work
        mem.index()
        assert seen(mem.retrieve(QUESTION_B, 3)) == expected
        assert not leftovers(mem.store)
        keys, calls = mem.store.llm_cache_counts()
        assert calls == keys == llm_calls  # the killed build and this one made the calls of one build, none twice


# -- two processes at once --------------------------------------------------------------------------------
class PausingLLM(ScriptedLLM):
    """Pauses (once) inside the first LLM call for which ``when(self, prompt)`` holds, until ``resume``."""

    def __init__(self, when: Callable[[PausingLLM, str], bool]) -> None:
        super().__init__()
        self.when = when
        self.themes = 0
        self.paused = threading.Event()
        self.resume = threading.Event()

    def complete(self, messages: Any, **kwargs: Any) -> Any:
        prompt = prompt_of(messages)
        if THEME_PROMPT in prompt:
            self.themes += 1
        if not self.paused.is_set() and self.when(self, prompt):
            self.paused.set()
            assert self.resume.wait(60)
        return super().complete(messages, **kwargs)


PAUSES: dict[str, Callable[[PausingLLM, str], bool]] = {
    "chunk questions": lambda llm, prompt: QUESTIONS_PROMPT in prompt,
    "summary questions": lambda llm, prompt: llm.themes > 0 and QUESTIONS_PROMPT in prompt,  # new nodes exist
}


@pytest.mark.parametrize("pause", list(PAUSES))
def test_retrieve_during_a_build_and_a_second_builder(
    first_generation: tuple[str | Path, list[Hit], list[int]],
    config: Config,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    pause: str,
) -> None:
    path, before, summary_ids = first_generation
    llm = PausingLLM(PAUSES[pause])
    errors: list[BaseException] = []

    def build() -> None:
        try:
            with open_memory(path, config, llm) as mem:
                mem.add_text(DOC_B, "garden")
                mem.index()
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    builder = threading.Thread(target=build)
    builder.start()
    try:
        assert llm.paused.wait(60), errors
        with open_memory(path, config) as reader:
            assert seen(reader.retrieve(QUESTION, 3)) == seen(before)  # the previous generation
            assert [n.id for n in reader.store.nodes("summary")] == summary_ids
            with pytest.raises(MemoryBusyError, match=rf"another process \(pid {os.getpid()}\) is building"):
                reader.index()
            with pytest.raises(MemoryBusyError):
                reader.add_text("Another document. It has words.")
            monkeypatch.setattr(cli, "open_memory", lambda memory, cfg, progress: open_memory(memory, config))
            doc = tmp_path / "more.txt"
            doc.write_text("Another document. It has words.")
            result = CliRunner().invoke(app, ["index", str(doc), "--memory", str(path), "-q"])
            assert result.exit_code == 2
            assert result.output.strip() == (
                f"error: another process (pid {os.getpid()}) is building the memory {reader.store.location}; "
                "wait for it to finish and retry, or pass --wait SECONDS"
            )
            llm.resume.set()
            builder.join(60)
            assert not errors, errors
            assert reader.store.published_generation("gem") == 2
            hits = reader.retrieve(QUESTION_B, 2)  # the same reader now sees the new generation
            assert "ladybirds" in hits[0].text
            assert [n.id for n in reader.store.nodes("summary")] != summary_ids
    finally:
        llm.resume.set()
        builder.join(60)


def test_index_waits_for_the_other_builder(
    first_generation: tuple[str | Path, list[Hit], list[int]], config: Config
) -> None:
    path, _, _ = first_generation
    with open_memory(path, config) as other:
        holder = other.store.build_lock()  # another process's lock: a file lock, or a PostgreSQL session's
    holder.acquire()
    with open_memory(path, config) as waiter:
        with pytest.raises(MemoryBusyError, match="waited 0.2 s"):
            waiter.index(wait=0.2)
        threading.Timer(0.3, holder.release).start()
        waiter.build_wait = 30.0
        assert waiter.index().chunks > 0


# -- a failed chunk -------------------------------------------------------------------------------------------
def test_a_failed_chunk_is_recorded_in_one_transaction(tmp_path: Path, config: Config) -> None:
    llm = ScriptedLLM(fail=lambda i, p: "puffins" in p and QUESTIONS_PROMPT in p)
    with open_memory(tmp_path / "m", config, llm) as mem:
        mem.add_text(DOC_A)
        commits: list[str] = []
        real = mem.store.fail_questions

        def traced(*args: Any) -> None:
            mem.store.database.conn.set_trace_callback(
                lambda sql: commits.append(sql) if sql.startswith("COMMIT") else None
            )
            try:
                real(*args)
            finally:
                mem.store.database.conn.set_trace_callback(None)

        mem.store.fail_questions = traced  # type: ignore[method-assign]
        mem.index()
        assert commits == ["COMMIT"]  # the failure row, no questions and status -1: one transaction
        puffin = next(n for n in mem.store.nodes("chunk") if "puffins" in n.text)
        assert puffin.questions_done == -1
        assert [f["node_id"] for f in mem.store.failures()] == [puffin.id]


# -- a publish racing a reader --------------------------------------------------------------------------------
def test_a_generation_replaced_while_it_is_read_is_retried(
    first_generation: tuple[str | Path, list[Hit], list[int]], config: Config, backend: str
) -> None:
    """SQLite: the reader's files are removed by the publish, it retries with the newer generation. PostgreSQL: the
    reader's snapshot keeps the generation it started with whole, so there is nothing to retry."""
    path, _, _ = first_generation
    with open_memory(path, config) as reader:
        real = reader.store.load_published
        calls: list[int] = []

        def racing(strategy: str, **kwargs: Any) -> Any:
            calls.append(1)
            if len(calls) == 1:  # another process publishes generation 2 (and removes generation 1's files)
                with open_memory(path, config) as builder:
                    builder.add_text(DOC_B, "garden")
                    builder.index()
            return real(strategy, **kwargs)

        reader.store.load_published = racing  # type: ignore[method-assign]
        hits = reader.retrieve(QUESTION_B, 2)  # generation 1 is gone mid-read: read generation 2
        if backend == "sqlite":
            assert len(calls) == 2 and "ladybirds" in hits[0].text
            assert reader.ctx.state["published:gem"][0] == 2
        else:
            assert len(calls) == 1 and hits  # read from one whole generation, no retry
            assert "ladybirds" in reader.retrieve(QUESTION_B, 2)[0].text  # the next read: generation 2
            assert reader.ctx.state["published:gem"][0] == 2


def test_missing_files_of_the_current_generation_are_damage(
    first_generation: tuple[str | Path, list[Hit], list[int]], config: Config
) -> None:
    path, _, _ = first_generation
    with open_memory(path, config) as mem:
        remove_array(mem.store, "gem", "weights")
    with open_memory(path, config) as mem, pytest.raises(DamagedMemoryError, match="gemrag index"):
        mem.retrieve(QUESTION, 2)
    with open_memory(path, config) as mem:  # the fix the message names
        mem.index()
        assert mem.retrieve(QUESTION, 2)
