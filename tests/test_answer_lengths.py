"""A model's answer lengths recorded across memories (gemrag.memory.answer_lengths): a new memory's plan uses what the
same model wrote for the same pass in another memory, the record holds no text, rebuilding counts nothing twice, and
an unwritable record never fails a build."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.config import Config
from gemrag.memory import answer_lengths
from gemrag.memory.answer_lengths import lengths_path, machine_key, machine_lengths, pass_means, record_lengths
from gemrag.models.cache import INPUT_KEY
from gemrag.strategies.platform.planning import signature
from gemrag.strategies.unweaver.strategy import ENTITY_TOKENS
from test_memory import DOC_A, DOC_B

SYSTEM = [{"role": "system", "content": "You extract things."}, {"role": "user", "content": "The lighthouse keeper"}]


def _response(messages: list[dict[str, str]], completion: int) -> dict[str, Any]:
    return {"text": "x", "completion_tokens": completion, "prompt_tokens": 10, INPUT_KEY: messages}


def test_means_pool_over_memories_and_a_rebuild_replaces_its_own(tmp_path: Path) -> None:
    key = machine_key(signature(SYSTEM))
    assert record_lengths(tmp_path, "m", "/a", [_response(SYSTEM, 100), _response(SYSTEM, 200)]) == 1
    assert machine_lengths(tmp_path, "m") == {key: (2, 150.0)}
    record_lengths(tmp_path, "m", "/b", [_response(SYSTEM, 60)])
    assert machine_lengths(tmp_path, "m") == {key: (3, 120.0)}  # weighted by answers: (100 + 200 + 60) / 3
    record_lengths(tmp_path, "m", "/a", [_response(SYSTEM, 100), _response(SYSTEM, 200), _response(SYSTEM, 300)])
    assert machine_lengths(tmp_path, "m") == {key: (4, 165.0)}  # /a's entry replaced, not added to
    assert machine_lengths(tmp_path, "other model") == {}


@pytest.fixture
def real_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    """The record where the code puts it (under the cache directory given), not the test session's directory."""
    monkeypatch.setattr(answer_lengths, "lengths_path", lengths_path)


@pytest.mark.usefixtures("real_paths")
def test_the_record_holds_no_text_and_skips_passes_opening_with_user_text(tmp_path: Path) -> None:
    user_first = [{"role": "user", "content": "Secret diary: the lighthouse keeper"}]
    record_lengths(tmp_path, "m", "/memory/of/alice", [_response(SYSTEM, 10), _response(user_first, 20)])
    (path,) = (tmp_path / "model-completions").iterdir()
    raw = path.read_text(encoding="utf-8")
    for text in ("extract", "lighthouse", "Secret", "alice"):
        assert text not in raw
    assert list(machine_lengths(tmp_path, "m")) == [machine_key(signature(SYSTEM))]


@pytest.mark.usefixtures("real_paths")
def test_an_unreadable_record_is_empty_and_an_unwritable_one_is_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = lengths_path(tmp_path, "m")
    path.parent.mkdir(parents=True)
    path.write_text("{not json", encoding="utf-8")
    assert machine_lengths(tmp_path, "m") == {}
    blocked = tmp_path / "file"
    blocked.write_text("", encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        assert record_lengths(blocked, "m", "/a", [_response(SYSTEM, 10)]) == 0
    assert "answer lengths" in caplog.text


def _entity_pass(mem: Memory) -> Any:
    (passes,) = [s.passes for s in mem.plan_index("unweaver").strategies]
    return next(p for p in passes if p.description == "UnWeaver entities")


def test_a_new_memory_plans_with_what_the_model_wrote_in_another(tmp_path: Path, config: Config) -> None:
    """Memory one builds UnWeaver with the (fake) model; memory two's plan then prices the entity pass at memory one's
    recorded mean completion, not the pass's typical constant."""
    llm = ScriptedLLM()
    with Memory.open(tmp_path / "two", config, llm=llm, embedder=HashEmbedder()) as two:
        two.add_text(DOC_B, "greenhouse")
        cold = _entity_pass(two)
        assert cold.completion_tokens == cold.calls * ENTITY_TOKENS  # nothing recorded yet: the typical answer
    with Memory.open(tmp_path / "one", config, llm=llm, embedder=HashEmbedder()) as one:
        one.add_text(DOC_A, "lighthouse")
        one.index("unweaver")
        means = pass_means(one.store.recent_llm_responses(llm.model_id))
        n, mean = max((v for k, v in means.items() if "key entities" in k), key=lambda v: v[0])  # first attempts
        assert n >= 3
    assert mean != ENTITY_TOKENS
    with Memory.open(tmp_path / "two", config, llm=llm, embedder=HashEmbedder()) as two:
        warm = _entity_pass(two)
    assert warm.calls == cold.calls > 0
    assert warm.completion_tokens == pytest.approx(warm.calls * mean, abs=warm.calls)
    stored = json.loads(answer_lengths.lengths_path(Path("unused"), llm.model_id).read_text(encoding="utf-8"))
    assert stored["model"] == llm.model_id


def test_a_new_memory_prices_the_repairs_the_model_needed(tmp_path: Path, config: Config) -> None:
    """The model's first two entity answers in memory one fail validation and are repaired; memory two's plan adds
    repair calls at that rate (repairs per first attempt) to its first attempts, with their tokens."""
    with Memory.open(
        tmp_path / "one", config, llm=ScriptedLLM(fail=lambda i, p: i <= 2), embedder=HashEmbedder()
    ) as one:
        one.add_text(DOC_A, "lighthouse")
        one.index("unweaver")
        means = pass_means(one.store.recent_llm_responses("fake:scripted-llm"))
    entity = {int(k.split("|")[0]): n for k, (n, _) in means.items() if "key entities" in k}
    first, repairs = entity[min(entity)], sum(n for size, n in entity.items() if size > min(entity))
    assert repairs >= 2 and first >= 3
    with Memory.open(tmp_path / "two", config, llm=ScriptedLLM(), embedder=HashEmbedder()) as two:
        two.add_text(DOC_B, "greenhouse")
        warm = _entity_pass(two)
    expected = round(warm.items * repairs / first)
    assert expected >= 1 and warm.calls == warm.items + expected
    assert "repair" in warm.note
