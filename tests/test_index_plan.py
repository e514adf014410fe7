"""The cost before the work (gemrag.memory.index_plan): a plan's LLM calls are the calls the build then makes, it writes
nothing, it counts only new and changed chunks, cached chunks cost nothing, sources not put yet are priced in
preview, and the minutes come from measured rates or are unknown."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.config import Config
from gemrag.memory.index_plan import plan_index
from gemrag.memory.sources import read_sources
from gemrag.models.base import Completion, Message, Usage
from gemrag.models.rates import UNKNOWN, Rates, cached_calibration, calibrate, recorded_rates
from gemrag.strategies import register
from gemrag.strategies.base import StrategyContext
from gemrag.types import Hit
from test_memory import DOC_A, DOC_B

STRATEGIES = ["gem", "remem", "hlgraph", "unweaver", "dense", "remem_gist", "raptor", "fused"]
PER_CHUNK = {"remem": 2, "hlgraph": 1, "unweaver": 1}
"""LLM calls per new chunk of the strategies whose passes are one call per chunk (REMem: entities, then triples)."""


def _open(path: Path, config: Config, llm: ScriptedLLM) -> Memory:
    return Memory.open(path, config, llm=llm, embedder=HashEmbedder())


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_the_plans_calls_are_the_builds_calls(strategy: str, tmp_path: Path, config: Config) -> None:
    if strategy == "raptor":
        pytest.importorskip("umap")
    llm = ScriptedLLM()
    with _open(tmp_path / "m", config, llm) as mem:
        mem.add_text(DOC_A, "lighthouse", id="a")
        plan = mem.plan_index(strategy)
        assert llm.calls == 0  # planning calls no model
        report = mem.index(strategy)
        assert plan.calls == llm.calls == report.llm_calls, plan.strategies[0].passes
        assert plan.chunks == report.chunks == plan.strategies[0].chunks
        if strategy == "dense":
            assert plan.calls == 0 and plan.strategies[0].passes == [] and plan.minutes == 0.0
        assert mem.plan_index(strategy).calls == 0  # built: nothing left to do
        mem.add_text(DOC_B, "greenhouse", id="b")  # one more document: only its chunks
        plan = mem.plan_index(strategy)
        before = llm.calls
        report = mem.index(strategy)
        assert plan.calls == llm.calls - before, plan.strategies[0].passes
        assert plan.strategies[0].chunks == report.new_chunks
        if strategy in PER_CHUNK:
            assert plan.calls == PER_CHUNK[strategy] * report.new_chunks
        if strategy == "gem":
            questions = plan.strategies[0].passes[0]
            assert questions.description == "utility questions" and questions.calls == report.new_chunks
        assert json.loads(json.dumps(plan.model_dump(mode="json")))["calls"] == plan.calls


def test_a_plan_writes_nothing(tmp_path: Path, config: Config) -> None:
    llm = ScriptedLLM()
    with _open(tmp_path / "m", config, llm) as mem:
        mem.add_text(DOC_A, "lighthouse")  # not chunked yet: the plan cuts it in memory
        signature, counts = mem.store.chunk_signature(), mem.store.llm_cache_counts()
        plan = mem.plan_index("remem")
        assert plan.chunks > 0 and plan.calls == 2 * plan.chunks and plan.documents == 1
        assert mem.store.chunk_signature() == signature and mem.store.llm_cache_counts() == counts
        assert mem.store.unchunked_documents() and llm.calls == 0


def test_cached_chunks_cost_no_call(tmp_path: Path, config: Config) -> None:
    llm = ScriptedLLM()
    with _open(tmp_path / "m", config, llm) as mem:
        mem.add_text(DOC_A, "lighthouse", id="a")
        mem.index("hlgraph")
        mem.delete("a")
        mem.add_text(DOC_A, "lighthouse", id="a")  # the same text again: its chunks' answers are cached
        plan = mem.plan_index("hlgraph")
        passes = plan.strategies[0].passes
        assert plan.strategies[0].chunks > 0 and passes[0].items == plan.strategies[0].chunks
        assert plan.calls == 0 and plan.exact
        before = llm.calls
        mem.index("hlgraph")
        assert llm.calls == before


def test_sources_not_put_yet_are_planned_in_preview(tmp_path: Path, config: Config) -> None:
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text(DOC_A, encoding="utf-8")
    b.write_text(DOC_B, encoding="utf-8")
    llm = ScriptedLLM()
    with _open(tmp_path / "m", config, llm) as mem:
        mem.add([a])
        mem.index("unweaver")
        documents = mem.store.documents()
        plan = plan_index(mem, "unweaver", sources=read_sources([a, b]))
        assert plan.sources == {"unchanged": 1, "added": 1} and plan.documents == 2
        assert mem.store.documents() == documents  # nothing put
        before = llm.calls
        mem.add([a, b])
        report = mem.index("unweaver")
        assert plan.calls == llm.calls - before == report.new_chunks
        a.write_text(DOC_A.replace("Gull Island", "Tern Island"), encoding="utf-8")  # an edit: its changed chunks
        plan = plan_index(mem, "unweaver", sources=read_sources([a, b]))
        assert plan.sources == {"updated": 1, "unchanged": 1}
        before = llm.calls
        mem.add([a, b])
        report = mem.index("unweaver")
        assert 0 < plan.calls == llm.calls - before == report.new_chunks < report.chunks


@register("plan_test_opaque")
class Opaque:
    """A user strategy with no ``plan`` method: its cost is unknown, never guessed."""

    name = "plan_test_opaque"

    def build(self, ctx: StrategyContext) -> None:
        return None

    def retrieve(self, ctx: StrategyContext, question: str, budget: int) -> list[Hit]:
        return []

    def report(self, ctx: StrategyContext) -> dict[str, Any]:
        return {}


def test_a_strategy_without_a_plan_is_unknown(tmp_path: Path, config: Config) -> None:
    with _open(tmp_path / "m", config, ScriptedLLM()) as mem:
        mem.add_text(DOC_A, "lighthouse")
        plan = mem.plan_index("plan_test_opaque")
        estimate = plan.strategies[0]
        assert not estimate.known and not estimate.exact and plan.minutes is None and estimate.chunks > 0
        assert "no plan method" in estimate.notes[0]


class LocalLLM(ScriptedLLM):
    """A scripted LLM that runs "here" (it has ``n_threads``, as llama.cpp): 1 s per 100 prompt tokens and 0.1 s
    per generated token on the fake clock."""

    def __init__(self, clock: list[float]) -> None:
        super().__init__()
        self.model_id, self.n_threads, self.clock = "fake:local", 2, clock

    def complete(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
        prompt = sum(len(str(m["content"]).split()) for m in messages)
        generated = min(int(kwargs.get("max_tokens", 256)), 40)
        self.calls += 1
        self.clock[0] += prompt / 100 + generated * 0.1
        return Completion("1, 2, 3", None, Usage(prompt, generated, seconds=0.0, calls=1))


def test_calibration_is_measured_once_per_model_and_machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("gemrag.models.rates._load", lambda: 1.0)
    clock = [0.0]
    llm = LocalLLM(clock)
    rates = calibrate(llm, tmp_path, clock=lambda: clock[0])
    assert rates.source == "calibration" and rates.reuses_prefix
    assert rates.prompt_per_second == pytest.approx(100.0) and rates.completion_per_second == pytest.approx(10.0)
    assert llm.calls == 3 and list((tmp_path / "model-rates").glob("*.json"))
    again = calibrate(llm, tmp_path, clock=lambda: clock[0])
    assert llm.calls == 3 and again.prompt_per_second == rates.prompt_per_second  # cached
    assert cached_calibration(llm, tmp_path) is not None
    calibrate(llm, tmp_path, refresh=True, clock=lambda: clock[0])
    assert llm.calls == 6
    assert rates.seconds(1000, 100, reused_prompt_tokens=500) == pytest.approx(5 + 10)


def test_a_calibration_made_at_another_load_is_measured_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cached at load 6.2, asked at 0.1 on eight cores: measured again (and cached with the new load)."""
    load = [6.2]
    monkeypatch.setattr("gemrag.models.rates._load", lambda: load[0])
    monkeypatch.setattr("gemrag.models.rates.os.cpu_count", lambda: 8)
    clock = [0.0]
    llm = LocalLLM(clock)
    calibrate(llm, tmp_path, clock=lambda: clock[0])
    load[0] = 4.0  # within 0.5 a core: the cached measure
    calibrate(llm, tmp_path, clock=lambda: clock[0])
    assert llm.calls == 3
    load[0] = 0.1
    assert "at load 6.2" in (cached_calibration(llm, tmp_path) or UNKNOWN).detail  # the plain read never measures
    calibrate(llm, tmp_path, clock=lambda: clock[0])
    assert llm.calls == 6 and "at load 0.1" in (cached_calibration(llm, tmp_path) or UNKNOWN).detail
    calibrate(llm, tmp_path, clock=lambda: clock[0])
    assert llm.calls == 6


def test_a_calibration_on_a_busy_machine_is_not_kept_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Load 7.9 on two cores (the machine shared with other work): the measure is used once, said, and not kept."""
    monkeypatch.setattr("gemrag.models.rates._load", lambda: 7.9)
    monkeypatch.setattr("gemrag.models.rates.os.cpu_count", lambda: 2)
    clock = [0.0]
    llm = LocalLLM(clock)
    rates = calibrate(llm, tmp_path, clock=lambda: clock[0])
    assert rates.source == "calibration" and rates.prompt_per_second == pytest.approx(100.0)
    assert "busy (load 7.9 on 2 cores)" in rates.detail and "not kept" in rates.detail, rates.detail
    assert cached_calibration(llm, tmp_path) is None
    calibrate(llm, tmp_path, clock=lambda: clock[0])
    assert llm.calls == 6  # measured again, not read back


class TimedLLM(LocalLLM):
    """A LocalLLM whose calls report the seconds they took on the fake clock (as llama.cpp reports its own)."""

    def complete(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
        start = self.clock[0]
        completion = super().complete(messages, **kwargs)
        return replace(completion, usage=replace(completion.usage, seconds=self.clock[0] - start))


def test_a_builds_recorded_seconds_come_before_a_calibration(
    tmp_path: Path, config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("gemrag.models.rates._load", lambda: 1.0)
    config = config.model_copy(update={"cache_dir": tmp_path / "cache"})
    clock = [0.0]
    monkeypatch.setattr("gemrag.models.rates.perf_counter", lambda: clock[0])
    llm = TimedLLM(clock)
    with Memory.open(tmp_path / "m", config, llm=llm, embedder=HashEmbedder()) as mem:
        mem.add_text(DOC_A + "\n\n" + DOC_B, "two")
        assert mem.plan_index("hlgraph").rates.source == "calibration"  # nothing recorded yet
        mem.index("hlgraph")
        mem.add_text(DOC_B + " The end.", "more")
        plan = mem.plan_index("hlgraph")
        assert plan.rates.source == "recorded" and plan.minutes is not None, plan.rates
        assert plan_index(mem, "hlgraph", recalibrate=True).rates.source == "calibration"


def test_recorded_rates_fit_seconds_to_tokens() -> None:
    calls = [{"prompt_tokens": p, "completion_tokens": c, "seconds": p / 50 + c / 5} for p, c in
             [(100, 10), (300, 80), (200, 40), (150, 60), (400, 20), (250, 30)]]  # fmt: skip
    rates = recorded_rates(calls, concurrency=4)
    assert rates is not None and rates.source == "recorded" and not rates.reuses_prefix
    assert rates.prompt_per_second == pytest.approx(50) and rates.completion_per_second == pytest.approx(5)
    assert rates.seconds(500, 50) == pytest.approx((10 + 10) / 4)  # four HTTP calls in flight at once
    assert recorded_rates(calls[:2]) is None
    assert UNKNOWN.seconds(10, 10) is None and Rates("unknown").seconds(1, 1) is None


def test_minutes_come_from_the_rates(tmp_path: Path, config: Config, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("gemrag.models.rates._load", lambda: 1.0)
    config = config.model_copy(update={"cache_dir": tmp_path / "cache"})
    clock = [0.0]
    monkeypatch.setattr("gemrag.models.rates.perf_counter", lambda: clock[0])
    llm = LocalLLM(clock)
    with Memory.open(tmp_path / "m", config, llm=llm, embedder=HashEmbedder()) as mem:
        mem.add_text(DOC_A, "lighthouse")
        assert mem.plan_index("hlgraph", calibrate=False).minutes is None  # not calibrated, nothing recorded
        plan = mem.plan_index("hlgraph")  # calibrates (3 calls of the backend, not of the build)
        assert plan.rates.source == "calibration" and llm.calls == 3
        rates = Rates("calibration", 100.0, 10.0, reuses_prefix=True)
        expected = sum(rates.seconds(p.prompt_tokens, p.completion_tokens, p.reused_prompt_tokens) or 0 for p in
                       plan.strategies[0].passes) / 60  # fmt: skip
        assert plan.minutes == pytest.approx(expected) and plan.minutes > 0
        assert mem.plan_index("hlgraph", calibrate=False).rates.source == "calibration"  # cached


def test_plan_on_both_store_backends(memory_at: Any, config: Config) -> None:
    """The plan's store reads (covered chunks, cached answers, recorded answers) on SQLite and PostgreSQL."""
    llm = ScriptedLLM()
    with Memory.open(memory_at(), config, llm=llm, embedder=HashEmbedder()) as mem:
        mem.add_text(DOC_A, "lighthouse", id="a")
        plan = mem.plan_index("remem")
        mem.index("remem")
        assert plan.calls == llm.calls > 0
        mem.add_text(DOC_B, "greenhouse", id="b")
        plan, before = mem.plan_index("remem"), llm.calls
        report = mem.index("remem")
        assert plan.calls == llm.calls - before == 2 * report.new_chunks
        assert plan.rates.source == "recorded"  # the memory's own calls of this model (the fake's seconds)
