"""Batched model calls (issue 9, point 5): ``CachedLLM.complete_iter`` (hits at once, misses as one batch to the
backend, every answer cached before it is yielded, keys shared with ``complete``) and the batched structured output
(``complete_structured_iter``: rounds of batches, the same requests and cache keys as ``complete_structured``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fakes import BatchingLLM, ScriptedLLM
from gemrag.errors import GemragError, ModelCrashError, StructuredOutputError
from gemrag.models.base import Completion
from gemrag.models.batch import CompletionRequest, complete_iter
from gemrag.models.cache import CachedLLM
from gemrag.models.meter import UsageMeter
from gemrag.models.structured import complete_structured, complete_structured_iter
from gemrag.store import Store
from gemrag.strategies.gem.prompts import UtilityQuestions, utility_questions_prompt, utility_questions_schema


def ask(text: str, max_tokens: int = 16) -> CompletionRequest:
    return CompletionRequest([{"role": "user", "content": text}], max_tokens=max_tokens)


def cached(tmp_path: Path, backend: Any) -> tuple[CachedLLM, Store]:
    store = Store(tmp_path)
    return CachedLLM(backend, store, UsageMeter(store)), store


def test_hits_at_once_misses_as_one_batch_duplicates_sent_once(tmp_path: Path) -> None:
    backend = BatchingLLM()
    llm, store = cached(tmp_path, backend)
    llm.complete(ask("alpha").messages, max_tokens=16)  # a hit for the batch below
    requests = [ask("beta"), ask("alpha"), ask("gamma"), ask("beta"), ask("delta")]
    got = list(llm.complete_iter(requests))
    assert got[0][0] == 1 and got[0][1].cached  # the hit comes first, before the backend is asked
    assert sorted(i for i, _ in got) == [0, 1, 2, 3, 4]
    assert len(backend.batches) == 1  # the misses went to the backend as ONE batch ...
    sent = [r.messages[0]["content"] for r in backend.batches[0]]
    assert sent == ["beta", "gamma", "delta"]  # ... without the hit and with "beta" once
    by_index = dict(got)
    assert by_index[0].text == by_index[3].text and [by_index[0].cached, by_index[3].cached].count(True) == 1
    totals = llm.meter.total()
    assert (totals.calls, totals.cached) == (1 + 3, 2)  # 1 sequential + 3 batched calls; alpha and beta's copy
    store.close()


def test_batched_and_sequential_answers_share_cache_keys(tmp_path: Path) -> None:
    backend = BatchingLLM()
    llm, store = cached(tmp_path, backend)
    batched = dict(llm.complete_iter([ask("one"), ask("two")]))
    calls = backend.calls
    again = llm.complete(ask("two").messages, max_tokens=16)  # sequential call after the batch: a hit
    assert again.cached and again.text == batched[1].text and backend.calls == calls
    llm.complete(ask("three").messages, max_tokens=16)  # sequential first, then batched: a hit
    (index, hit), *_ = list(llm.complete_iter([ask("three")]))
    assert hit.cached and backend.calls == calls + 1 and len(backend.batches) == 1
    store.close()


def test_every_answer_is_cached_before_it_is_yielded(tmp_path: Path) -> None:
    llm, store = cached(tmp_path, BatchingLLM())
    requests = [ask(f"text number {i}") for i in range(5)]
    keys = [llm.key(r.messages, max_tokens=r.max_tokens) for r in requests]
    for i, result in llm.complete_iter(requests):
        assert isinstance(result, Completion) and not result.cached
        assert store.get_llm(keys[i])["text"] == result.text  # in the store when the caller sees it
    store.close()


def test_a_crash_mid_batch_keeps_the_answers_already_yielded(tmp_path: Path) -> None:
    crashing = BatchingLLM(crash_after=2)
    llm, store = cached(tmp_path, crashing)
    requests = [ask(f"text number {i}") for i in range(5)]
    seen = []
    with pytest.raises(RuntimeError):
        for i, _ in llm.complete_iter(requests):
            seen.append(i)
    assert len(seen) == 2
    healthy = BatchingLLM()
    llm2 = CachedLLM(healthy, store, UsageMeter(store))
    assert len(list(llm2.complete_iter(requests))) == 5
    resent = {r.messages[0]["content"] for r in healthy.batches[0]}
    assert resent == {f"text number {i}" for i in range(5)} - {f"text number {i}" for i in seen}
    store.close()


def test_errors_are_yielded_uncached_and_fatal_ones_raised(tmp_path: Path) -> None:
    class Flaky(BatchingLLM):
        def complete(self, messages: Any, **kw: Any) -> Completion:
            if "bad" in messages[0]["content"]:
                raise GemragError("HTTP 400")
            if "crash" in messages[0]["content"]:
                raise ModelCrashError("segfault")
            return super().complete(messages, **kw)

    llm, store = cached(tmp_path, Flaky())
    got = dict(llm.complete_iter([ask("good"), ask("bad"), ask("bad")]))
    assert isinstance(got[1], GemragError) and got[2] is got[1] and isinstance(got[0], Completion)
    assert store.get_llm(llm.key(ask("bad").messages, max_tokens=16)) is None
    with pytest.raises(ModelCrashError):
        list(llm.complete_iter([ask("fine"), ask("crash")]))
    store.close()


# -- structured output in batches --------------------------------------------------------------------------------
PASSAGES = [f"The {w} sat on the mat. It was a sunny day for the {w}." for w in ("cat", "dog", "owl", "fox", "elk")]


def question_prompts() -> list[Any]:
    return [utility_questions_prompt(p, 2) for p in PASSAGES]


def structured(llm: Any, prompts: Any, **kw: Any) -> dict[int, Any]:
    return dict(complete_structured_iter(llm, prompts, UtilityQuestions, schema=utility_questions_schema(2), **kw))


def fails_once(*words: str, always: tuple[str, ...] = ()) -> Any:
    """A ``fail`` predicate: the passages about ``words`` fail on their first attempt, those about ``always``
    on every attempt."""
    left = set(words)

    def fail(i: int, prompt: str) -> bool:
        if any(f"The {w} sat" in prompt for w in always):
            return True
        hit = next((w for w in left if f"The {w} sat" in prompt), None)
        left.discard(hit)  # type: ignore[arg-type]
        return hit is not None

    return fail


def test_round_one_is_one_batch_and_the_invalid_ones_retry_together() -> None:
    backend = BatchingLLM(fail=fails_once("dog", "fox"))
    out = structured(backend, question_prompts())
    assert all(isinstance(v, UtilityQuestions) for v in out.values()) and len(out) == 5
    assert [len(b) for b in backend.batches] == [5, 2]
    retry = backend.batches[1]
    assert [(r.temperature, r.seed) for r in retry] == [(pytest.approx(0.2), 1)] * 2
    assert all(len(r.messages) == 4 and "not valid" in r.messages[-1]["content"] for r in retry)
    assert [r.messages[1]["content"] for r in retry] == [
        question_prompts()[1][1]["content"],
        question_prompts()[3][1]["content"],
    ]


def test_first_attempt_per_prompt_and_failures_after_the_last_attempt() -> None:
    backend = BatchingLLM(fail=lambda i, p: "The owl sat" in p)
    out = structured(backend, question_prompts(), attempts=2, first_attempt=[0, 0, 3, 0, 0])
    assert isinstance(out[2], StructuredOutputError) and "after 2 attempts" in str(out[2])
    owl = [r for b in backend.batches for r in b if "The owl sat" in r.messages[1]["content"]]
    assert [(r.temperature, r.seed) for r in owl] == [(pytest.approx(0.6), 3), (pytest.approx(0.8), 4)]
    assert [len(b) for b in backend.batches] == [5, 1]


def test_batched_structured_output_equals_the_sequential_path_and_its_cache_keys(tmp_path: Path) -> None:
    batching = BatchingLLM(fail=fails_once("cat", always=("elk",)))
    llm, store = cached(tmp_path / "a", batching)
    batched = structured(llm, question_prompts(), first_attempt=1)
    sequential: dict[int, Any] = {}
    plain = ScriptedLLM(fail=fails_once("cat", always=("elk",)))
    for i, prompt in enumerate(question_prompts()):
        try:
            sequential[i] = complete_structured(
                plain, prompt, UtilityQuestions, schema=utility_questions_schema(2), first_attempt=1
            )
        except StructuredOutputError as exc:
            sequential[i] = exc
    assert {i: v for i, v in batched.items() if i != 4} == {i: v for i, v in sequential.items() if i != 4}
    assert isinstance(batched[4], StructuredOutputError) and str(batched[4]) == str(sequential[4])
    assert batching.calls == plain.calls == 3 + 2 + 3  # the three others: 1 attempt, the cat 2, the elk 3
    # the sequential function over the same cache asks the backend nothing: the same requests, the same keys
    again = ScriptedLLM(fail=fails_once("cat", always=("elk",)))
    cached_again = CachedLLM(again, store, UsageMeter(store))
    for prompt in question_prompts()[:4]:
        complete_structured(cached_again, prompt, UtilityQuestions, schema=utility_questions_schema(2), first_attempt=1)
    with pytest.raises(StructuredOutputError):
        complete_structured(
            cached_again, question_prompts()[4], UtilityQuestions, schema=utility_questions_schema(2), first_attempt=1
        )
    assert again.calls == 0
    store.close()


def test_observe_sees_every_completion_and_backend_errors_are_not_retried() -> None:
    class Flaky(BatchingLLM):
        def complete(self, messages: Any, **kw: Any) -> Completion:
            if "The fox sat" in messages[1]["content"]:
                raise GemragError("HTTP 400")
            return super().complete(messages, **kw)

    backend = Flaky(fail=fails_once("cat"))
    seen: list[int] = []
    out = structured(backend, question_prompts(), observe=lambda i, c: seen.append(i))
    assert isinstance(out[3], GemragError) and not isinstance(out[3], StructuredOutputError)
    assert sorted(seen) == [0, 0, 1, 2, 4]  # the cat twice (invalid, then valid); the fox's error is no completion
    assert [len(b) for b in backend.batches] == [5, 1]


def test_complete_iter_fallback_keeps_working_for_backends_without_batches() -> None:
    plain = ScriptedLLM()
    got = list(complete_iter(plain, [ask("x"), ask("y")]))
    assert [i for i, _ in got] == [0, 1] and plain.calls == 2
