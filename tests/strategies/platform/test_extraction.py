"""The extraction pipeline (issue 9, point 5): every LLM pass (GEM's utility questions and eigentheme summaries,
RAPTOR's summaries, a user strategy's artefacts) runs through ``strategies/platform/extraction.py``: batches to a
backend's
own ``complete_iter``, results equal to the sequential path, every answer cached before use, resumable, failures
recorded, fatal errors stop, progress with token counts."""

from __future__ import annotations

import dataclasses
import io
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from rich.console import Console
from test_strategy_raptor import pca, story

from fakes import BatchingLLM, HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.config import Config
from gemrag.errors import GemragError, ModelCrashError
from gemrag.models.base import Completion, Usage
from gemrag.progress import rich_progress
from gemrag.store import NodeRecord
from gemrag.strategies.base import StrategyContext
from gemrag.strategies.gem.settings import gem_config
from gemrag.strategies.gem.utility_questions import PHASE
from gemrag.strategies.platform.extraction import BATCH_SIZE, Extraction, extract_artifacts, run_extraction
from gemrag.strategies.platform.titles import indexed_text_of
from gemrag.strategies.raptor.strategy import RaptorParams, RaptorStrategy
from test_memory import DOC_A, DOC_B

QUESTIONS_PROMPT = "questions that this passage answers"


def open_memory(path: Path, config: Config, llm: ScriptedLLM) -> Memory:
    return Memory.open(path, config, llm=llm, embedder=HashEmbedder())


def with_gem(config: Config, **gem: object) -> Config:
    memory = {k: gem.pop(k) for k in ("chunk_tokens", "budget", "chunk_titles") if k in gem}  # [memory]'s
    gem_part, memory_part = gem_config(config).model_copy(update=gem), config.memory.model_copy(update=memory)
    return config.model_copy(update={"gem": gem_part, "memory": memory_part})


def puffins_fail(i: int, prompt: str) -> bool:
    return "puffins" in prompt and QUESTIONS_PROMPT in prompt


# -- (a) + (b): batched GEM and RAPTOR builds equal the sequential ones ------------------------------------------
def gem_snapshot(mem: Memory) -> dict[str, Any]:
    """What a GEM build stored (questions per node, summary nodes in id order, failures) and what it retrieves."""
    questions: dict[int, list[str]] = {}
    for _, node, text in mem.store.questions():
        questions.setdefault(node, []).append(text)
    summaries = [(n.id, n.text, n.meta) for n in mem.store.nodes("summary", strategy="gem")]
    failures = [(f["phase"], f["node_id"]) for f in mem.store.failures()]
    status = {n.id: n.questions_done for n in mem.store.nodes()}
    hits = [[(h.node_id, h.kind, round(h.score, 9)) for h in mem.retrieve(q, 4)] for q in ("puffins", "tomatoes")]
    return {"questions": questions, "summaries": summaries, "failures": failures, "status": status, "hits": hits}


def build_gem(path: Path, config: Config, llm: ScriptedLLM) -> dict[str, Any]:
    with open_memory(path, with_gem(config, chunk_tokens=16), llm) as mem:
        mem.add_text(DOC_A)
        mem.add_text(DOC_B, "garden")
        mem.index()
        return gem_snapshot(mem)


def test_batched_gem_build_equals_the_sequential_build(tmp_path: Path, config: Config) -> None:
    plain = ScriptedLLM(fail=puffins_fail)
    batching = BatchingLLM(fail=puffins_fail)
    sequential = build_gem(tmp_path / "plain", config, plain)
    batched = build_gem(tmp_path / "batched", config, batching)
    assert batched == sequential
    assert len(sequential["summaries"]) == 2 and len(sequential["questions"]) > 10
    assert {p for p, _ in sequential["failures"]} == {PHASE}  # the puffin chunk (and a summary quoting it)
    assert batching.calls == plain.calls  # the same requests, only grouped
    sizes = [len(b) for b in batching.batches]
    assert max(sizes) > 1 and sum(sizes) == batching.calls  # (b) the backend got batches, nothing else
    chunks = len(sequential["status"]) - 2
    assert chunks > BATCH_SIZE and sizes[:2] == [BATCH_SIZE, 1]  # round 1 of the first batch of chunks: greedy


def raptor_snapshot(path: Path, config: Config, llm: ScriptedLLM) -> dict[str, Any]:
    with open_memory(path, config, llm) as mem:
        mem.add_text(story(1500), "story")
        mem.index(strategy="full")
        RaptorStrategy(RaptorParams(reducer=pca)).build(mem.ctx)
        nodes = [(n.id, n.text, n.meta) for n in mem.store.nodes("summary", strategy="raptor")]
        edges = sorted(mem.store.edge_list("raptor"))
        return {"nodes": nodes, "edges": edges}


def test_batched_raptor_tree_equals_the_sequential_tree(tmp_path: Path, config: Config) -> None:
    config = with_gem(config, chunk_tokens=100, questions=0, eigen=0)
    batching = BatchingLLM()
    sequential = raptor_snapshot(tmp_path / "plain", config, ScriptedLLM())
    batched = raptor_snapshot(tmp_path / "batched", config, batching)
    assert batched == sequential and len(sequential["nodes"]) > 1
    assert max(len(b) for b in batching.batches) > 1


# -- a user-style artefact extraction ---------------------------------------------------------------------------
class Names(BaseModel):
    names: list[str]


NAMES_PROMPT = "List the capitalized words of this text as JSON"


def names_prompt(node: NodeRecord) -> list[Any]:
    return [{"role": "user", "content": f"{NAMES_PROMPT}:\n{node.text}"}]


class NamesLLM(BatchingLLM):
    """Answers the names prompt (and fails on texts containing ``bad``); the rest as a ScriptedLLM."""

    def __init__(self, bad: str = "\0", **kw: Any) -> None:
        super().__init__(**kw)
        self.bad = bad

    def complete(self, messages: Any, **kw: Any) -> Completion:
        content = messages[0]["content"]
        if not content.startswith(NAMES_PROMPT):
            return super().complete(messages, **kw)
        if self.interrupt_after is not None and self.calls >= self.interrupt_after:
            raise KeyboardInterrupt
        self.calls += 1
        self.prompts.append(content)
        text = content.split(":\n", 1)[1]
        if self.bad in text:
            return Completion("no names, sorry", None, Usage(7, 3))
        names = sorted({w.strip(".,") for w in text.split() if w[:1].isupper()})
        return Completion(Names(names=names).model_dump_json(), None, Usage(len(text.split()), len(names) + 2))


NAMES = Extraction("names", names_prompt, Names, max_tokens=64)


@contextmanager
def chunked(path: Path, config: Config, llm: ScriptedLLM) -> Iterator[tuple[Memory, list[NodeRecord]]]:
    with open_memory(path, with_gem(config, chunk_tokens=16), llm) as mem:
        mem.add_text(DOC_A)
        mem.add_text(DOC_B, "garden")
        mem.index(strategy="full")  # chunks only
        yield mem, mem.store.nodes("chunk")


def with_llm(mem: Memory, llm: ScriptedLLM) -> StrategyContext:
    """The memory's context with another backend behind the same cache."""
    mem._llm, mem._llm_backend = None, llm
    return mem.ctx


def test_user_artefacts_through_the_pipeline_resume_after_an_interruption(tmp_path: Path, config: Config) -> None:
    with chunked(tmp_path / "m", config, NamesLLM(interrupt_after=6)) as (mem, chunks):
        assert len(chunks) > 8
        with pytest.raises(KeyboardInterrupt):  # the backend dies inside the second batch of 4
            extract_artifacts(
                mem.ctx, chunks, NAMES, strategy="mine", kind="names", version="v1", titles=False, batch_size=4
            )
        assert len(mem.store.artifacts("mine", "names", Names, "v1")) == 4  # the first batch, committed
        llm = NamesLLM()
        report = extract_artifacts(
            with_llm(mem, llm), chunks, NAMES, strategy="mine", kind="names", version="v1", titles=False, batch_size=4
        )
        assert report.items == report.saved == len(chunks) - 4 == llm.calls
        got = mem.store.artifacts("mine", "names", Names, "v1")
        assert set(got) == {c.id for c in chunks}
        amos = next(c for c in chunks if "Amos Reed" in c.text)
        assert "Amos" in got[amos.id].names and "Reed" in got[amos.id].names
        plain = {"strategy": "mine", "kind": "names", "titles": False}
        assert extract_artifacts(mem.ctx, chunks, NAMES, version="v1", **plain).items == 0
        again = extract_artifacts(mem.ctx, chunks, NAMES, version="v2", **plain)
        assert again.saved == len(chunks) and llm.calls == len(chunks) - 4  # new version; same prompt: cache hits


def test_failed_artefacts_are_recorded_and_retried_boundedly(tmp_path: Path, config: Config) -> None:
    llm = NamesLLM(bad="puffins")
    with chunked(tmp_path / "m", config, llm) as (mem, chunks):
        args = {"strategy": "mine", "kind": "names", "version": "v1", "titles": False, "retries": 1}
        first = extract_artifacts(mem.ctx, chunks, NAMES, **args)
        assert (first.failed, first.saved) == (1, len(chunks) - 1)
        puffin = next(c for c in chunks if "puffins" in c.text)
        failures = mem.store.failures()
        assert [(f["phase"], f["node_id"]) for f in failures] == [("index/mine/names@v1", puffin.id)]
        assert "after 3 attempts" in failures[0]["message"]
        calls = llm.calls
        assert extract_artifacts(mem.ctx, chunks, NAMES, **args).failed == 1  # one retry, with new attempts ...
        assert llm.calls == calls + 3
        assert extract_artifacts(mem.ctx, chunks, NAMES, **args).items == 0  # ... then no more
        assert len(mem.store.failures()) == 2 and puffin.id not in mem.store.artifacts("mine", "names", Names, "v1")


# -- (c) every answer is cached before it is used; a crash mid-batch loses no answer already returned ------------
def test_every_answer_is_in_the_cache_before_the_pipeline_uses_it(tmp_path: Path, config: Config) -> None:
    with chunked(tmp_path / "m", config, NamesLLM()) as (mem, chunks):
        llm = mem.ctx.get_llm()
        seen: list[int] = []

        def save(node: NodeRecord, value: Names) -> None:
            key = llm.key(names_prompt(node), schema=Names.model_json_schema(), max_tokens=64)  # type: ignore[attr-defined]
            assert mem.store.get_llm(key) is not None
            seen.append(node.id)

        report = run_extraction(mem.ctx, chunks, NAMES, save=save, fail=lambda n, e: pytest.fail(str(e)), batch_size=5)
        assert sorted(seen) == sorted(c.id for c in chunks) and report.saved == len(chunks)


def test_a_rerun_after_a_crash_mid_batch_repeats_no_answered_call(tmp_path: Path, config: Config) -> None:
    crashing = NamesLLM(crash_after=6)
    with chunked(tmp_path / "m", config, crashing) as (mem, chunks):
        saved: list[int] = []

        def save(node: NodeRecord, value: Names) -> None:
            if len(saved) == 5:  # the consumer dies after the answer is cached, before committing it
                raise KeyboardInterrupt
            saved.append(node.id)

        with pytest.raises(KeyboardInterrupt) as stopped:
            run_extraction(mem.ctx, chunks, NAMES, save=save, fail=lambda n, e: None, batch_size=4)
        assert stopped.traceback and crashing.closed == 2  # the abandoned batch was closed at once, not by the GC
        answered = {r.messages[0]["content"] for r in crashing.returned}
        assert len(answered) == 6 and len(saved) == 5
        healthy = NamesLLM()
        with pytest.raises(RuntimeError):  # the backend dies in the middle of a batch
            run_extraction(with_llm(mem, crashing), chunks, NAMES, save=lambda n, v: None, fail=lambda n, e: None)
        answered |= {r.messages[0]["content"] for r in crashing.returned}
        run_extraction(with_llm(mem, healthy), chunks, NAMES, save=lambda n, v: None, fail=lambda n, e: None)
        asked = {r.messages[0]["content"] for b in healthy.batches for r in b}
        assert not asked & answered  # nothing answered before was asked again
        assert asked | answered == {names_prompt(c)[0]["content"] for c in chunks}


def test_gem_resumes_after_a_crash_mid_batch_without_repeating_calls(tmp_path: Path, config: Config) -> None:
    crashing = BatchingLLM(crash_after=5)
    cfg = with_gem(config, chunk_tokens=16)
    with open_memory(tmp_path / "m", cfg, crashing) as mem:
        mem.add_text(DOC_A)
        with pytest.raises(RuntimeError):
            mem.index()
        done = sum(1 for n in mem.store.nodes("chunk") if n.questions_done == 1)
        assert done == 5
    healthy = BatchingLLM()
    with open_memory(tmp_path / "m", cfg, healthy) as mem:
        mem.index()
        answered = {r.messages[1]["content"] for r in crashing.returned}
        assert not answered & {r.messages[1]["content"] for b in healthy.batches for r in b}
        assert all(n.questions_done == 1 for n in mem.store.nodes("chunk"))


# -- (d) failures and fatal errors ------------------------------------------------------------------------------
def test_backend_errors_are_recorded_per_item_and_fatal_ones_stop_the_pass(tmp_path: Path, config: Config) -> None:
    class Flaky(NamesLLM):
        def complete(self, messages: Any, **kw: Any) -> Completion:
            if "garden" in messages[0]["content"] or "greenhouse" in messages[0]["content"]:
                raise GemragError("HTTP 400: context overflow")
            return super().complete(messages, **kw)

    with chunked(tmp_path / "m", config, Flaky()) as (mem, chunks):
        report = extract_artifacts(mem.ctx, chunks, NAMES, strategy="mine", kind="names", version="v1", titles=True)
        text_of = indexed_text_of(mem.ctx, titles=True)  # the prompt holds DOC_B's title "garden" on its chunks
        failed = [c.id for c in chunks if "greenhouse" in text_of(c) or "garden" in text_of(c)]
        assert failed and report.failed == len(failed) and report.saved == len(chunks) - len(failed)
        rows = mem.store.failures()
        assert sorted(f["node_id"] for f in rows) == sorted(failed) and all("HTTP 400" in f["message"] for f in rows)
        crashing = NamesLLM(crash_after=3, crash=ModelCrashError("llama.cpp crashed"))
        longer = dataclasses.replace(NAMES, max_tokens=65)  # other requests: no cache hits
        with pytest.raises(ModelCrashError):
            extract_artifacts(
                with_llm(mem, crashing), chunks, longer, strategy="mine", kind="other", version="v1", titles=True
            )
        assert len(mem.store.artifacts("mine", "other", Names, "v1")) == 3 and len(mem.store.failures()) == len(rows)


def test_a_fatal_error_stops_the_gem_build(tmp_path: Path, config: Config) -> None:
    crashing = BatchingLLM(crash_after=2, crash=ModelCrashError("llama.cpp crashed"))
    with open_memory(tmp_path / "m", config, crashing) as mem:
        mem.add_text(DOC_A)
        with pytest.raises(ModelCrashError):
            mem.index()
        assert not mem.store.failures() and mem.store.load_published("gem") is None


# -- (f) progress: items and tokens ------------------------------------------------------------------------------
class Recorder:
    """A progress factory recording every bar and its ``advance(n, tokens)`` calls."""

    def __init__(self) -> None:
        self.bars: list[tuple[str, int, list[tuple[int, int]]]] = []

    @contextmanager
    def __call__(self, description: str, total: int) -> Iterator[Any]:
        calls: list[tuple[int, int]] = []
        self.bars.append((description, total, calls))
        yield lambda n=1, *, tokens=0: calls.append((n, tokens))


def test_progress_counts_items_and_generated_tokens(tmp_path: Path, config: Config) -> None:
    llm = NamesLLM()
    with chunked(tmp_path / "m", config, llm) as (mem, chunks):
        recorder = Recorder()
        ctx = dataclasses.replace(mem.ctx, progress=recorder)
        report = run_extraction(ctx, chunks, NAMES, save=lambda n, v: None, fail=lambda n, e: None, batch_size=3)
        (description, total, calls), *_ = recorder.bars
        assert (description, total) == ("names", len(chunks)) and [n for n, _ in calls] == [1] * len(chunks)
        spent = mem.meter.total().completion_tokens
        assert sum(t for _, t in calls) == report.completion_tokens == spent > 0
        run_extraction(ctx, chunks, NAMES, save=lambda n, v: None, fail=lambda n, e: None)  # all cache hits
        assert sum(t for _, t in recorder.bars[1][2]) == 0 and len(recorder.bars[1][2]) == len(chunks)
        old_style: list[int] = []

        @contextmanager
        def before_tokens(description: str, total: int) -> Iterator[Any]:
            yield lambda n=1: old_style.append(n)  # a factory written before token counts existed

        ctx = dataclasses.replace(mem.ctx, progress=before_tokens)
        run_extraction(ctx, chunks, NAMES, save=lambda n, v: None, fail=lambda n, e: None)
        assert old_style == [1] * len(chunks)


def test_gem_build_progress_shows_questions_and_summaries_with_tokens(tmp_path: Path, config: Config) -> None:
    recorder = Recorder()
    with Memory.open(tmp_path / "m", config, llm=BatchingLLM(), embedder=HashEmbedder(), progress=recorder) as mem:
        mem.add_text(DOC_A)
        mem.index()
    assert [d for d, _, _ in recorder.bars] == ["utility questions", "eigentheme summaries", "utility questions"]
    for _, total, calls in recorder.bars:  # ScriptedLLM: 5 completion tokens per call, one call per item
        assert sum(n for n, _ in calls) == total > 0 and sum(t for _, t in calls) == 5 * total


def test_rich_progress_shows_items_and_tokens_per_second() -> None:
    out = io.StringIO()
    factory = rich_progress(Console(file=out, width=160, force_terminal=False))
    with factory("utility questions", 3) as advance:
        advance(1, tokens=40)
        time.sleep(0.05)
        advance(2, tokens=20)
    with factory("plain", 2) as advance:
        advance(2)
    text = out.getvalue()
    assert "it/s" in text and "tok/s" in text.split("plain")[0] and "tok/s" not in text.split("plain")[1]


def test_a_pass_over_texts_runs_over_other_items_as_their_texts() -> None:
    texts = Extraction(
        "names", lambda text: [{"role": "user", "content": text}], Names, max_tokens=64, first_attempt=len
    )
    over = texts.over(lambda node: node.text)
    node = NodeRecord(7, "chunk", 1, 0, "Ada met Grace.", 3, 0, {})
    assert over.prompt(node) == [{"role": "user", "content": "Ada met Grace."}]
    assert (over.description, over.output_type, over.max_tokens) == ("names", Names, 64)
    assert over.first_attempt is not None and over.first_attempt(node) == len("Ada met Grace.")
    assert over.first_request(node, 2) == texts.first_request("Ada met Grace.", 2)
    own = texts.over(lambda node: node.text, first_attempt=lambda node: node.id)
    assert own.first_attempt is not None and own.first_attempt(node) == 7
    assert dataclasses.replace(texts, first_attempt=None).over(str).first_attempt is None
