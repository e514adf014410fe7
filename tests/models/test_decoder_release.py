"""Who holds the llama.cpp decoder, and when it is released (issue 29 follow-up: "the llama.cpp decoder is busy").

An evaluation stopped at an answer after the judge's calls: a judge verdict that failed validation raised
``StructuredOutputError`` out of ``complete_structured`` while its batch generator was suspended after its last
result; the exception's traceback kept that generator alive in a reference cycle, so the decoder's run stayed
claimed until the cyclic garbage collector ran, and the next call met "the llama.cpp decoder is busy". These tests
use the real decoder, backend, cache and judge on a fake llama.cpp (tests/fake_llama.py), with the garbage
collector off so that nothing but the code under test can release the decoder.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from fake_llama import FakeLlamaCppLLM, fake_decoder
from gemrag.errors import DecoderBusyError, GemragError, StructuredOutputError
from gemrag.eval.judging.factual import FactualJudge
from gemrag.models.base import Completion, Usage
from gemrag.models.batch import CompletionRequest
from gemrag.models.cache import CachedLLM
from gemrag.models.llama.batch import DecodeRequest
from gemrag.models.meter import UsageMeter
from gemrag.models.ray_pool import RayLLM
from gemrag.models.structured import complete_structured
from gemrag.store import Store
from gemrag.strategies.gem.prompts import UtilityQuestions

BUSY = "decoder is busy"


@pytest.fixture
def no_gc() -> Iterator[None]:
    """The cyclic garbage collector off: an abandoned generator in a reference cycle then stays suspended."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def req(max_tokens: int = 2) -> DecodeRequest:
    return DecodeRequest(tokens=[2, 3, 4], max_tokens=max_tokens)


def test_a_run_that_gave_its_last_result_no_longer_holds_the_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    decoder = fake_decoder(monkeypatch, n_seq=1)
    stale = decoder.run([req()])
    ((index, result),) = [next(stale)]  # every result taken; the generator is neither exhausted nor closed
    assert (index, result.tokens, result.finish_reason) == (0, [1, 1], "length")
    assert [r.tokens for _, r in decoder.run([req(3)])] == [[1, 1, 1]]
    decoder.clear()
    live = decoder.run([req(), req()])  # one slot: the second request waits while the first is yielded
    next(live)
    assert list(stale) == []  # finishing the old run late does not release the live one's claim
    with pytest.raises(GemragError, match=BUSY):
        next(decoder.run([req()]))
    assert len(list(live)) == 1
    assert len(list(decoder.run([req()]))) == 1


def test_interleaving_two_runs_is_still_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    decoder = fake_decoder(monkeypatch, n_seq=2)
    first = decoder.run([req(1), req(4)])  # the short request is yielded while the long one is in flight
    assert next(first)[0] == 0
    with pytest.raises(GemragError, match=BUSY):
        next(decoder.run([req()]))
    with pytest.raises(GemragError, match=BUSY):
        decoder.clear()
    first.close()  # an abandoned run releases the decoder (and its slots) when closed
    assert [r.tokens for _, r in decoder.run([req(), req()])] == [[1, 1], [1, 1]]


class OpenCounting:
    """A batching backend that, like the llama.cpp decoder, is held by each ``complete_iter`` from its start
    until the generator is exhausted or closed; ``open`` counts the generators holding it."""

    model_id = "fake:open-counting"
    context_window = 4096

    def __init__(self, reply: str | GemragError) -> None:
        self.reply = reply
        self.open = 0

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def complete_iter(self, requests: Sequence[CompletionRequest]) -> Iterator[tuple[int, Completion | GemragError]]:
        self.open += 1
        try:
            for i, _ in enumerate(requests):
                reply = self.reply
                yield i, reply if isinstance(reply, GemragError) else Completion(reply, None, Usage(1, 1, calls=1))
        finally:
            self.open -= 1


class RayOnCounting(RayLLM):
    """:class:`RayLLM` whose pool is an :class:`OpenCounting` backend (no Ray)."""

    def __init__(self, reply: str | GemragError) -> None:
        self.pool = OpenCounting(reply)

    def complete_iter(self, requests: Sequence[CompletionRequest]) -> Iterator[tuple[int, Completion | GemragError]]:
        return self.pool.complete_iter(requests)


@pytest.mark.usefixtures("no_gc")
def test_complete_structured_closes_its_batch_when_it_returns_or_raises() -> None:
    prompt = [{"role": "user", "content": "Questions, please."}]
    bad = OpenCounting("not json")
    with pytest.raises(StructuredOutputError) as caught:
        complete_structured(bad, prompt, UtilityQuestions, attempts=2)
    assert bad.open == 0, "the raised error's traceback keeps an unclosed batch (and the backend) held"
    del caught
    good = OpenCounting('{"questions": ["Who?"]}')
    assert complete_structured(good, prompt, UtilityQuestions).questions == ["Who?"]
    assert good.open == 0


def test_a_single_call_on_the_ray_pool_closes_its_batch() -> None:
    prompt = [{"role": "user", "content": "Hello?"}]
    failing = RayOnCounting(GemragError("HTTP 400"))
    with pytest.raises(GemragError, match="HTTP 400"):
        failing.complete(prompt)
    assert failing.pool.open == 0
    answering = RayOnCounting("Hi.")
    assert answering.complete(prompt).text == "Hi." and answering.pool.open == 0


@pytest.mark.usefixtures("no_gc")
def test_an_unjudged_verdict_leaves_the_embedded_model_free_for_the_next_answer(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The eval's sequence: the judge's structured calls fail validation (unjudged), then the next answer.
    backend = FakeLlamaCppLLM(monkeypatch, tmp_path, reply="not json")
    store = Store(tmp_path / "memory")
    llm = CachedLLM(backend, store, UsageMeter(store))
    judgement = FactualJudge(llm).score("What spreads it?", "Droplets spread it.", "Respiratory droplets.")
    assert judgement.f1 is None and judgement.error.startswith("StructuredOutputError")
    answer = llm.complete([{"role": "user", "content": "The next question?"}], max_tokens=3)
    assert answer.text == "not json" and answer.usage.completion_tokens == 3


def test_a_busy_decoder_stops_the_judge_instead_of_leaving_the_answer_unjudged(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    backend = FakeLlamaCppLLM(monkeypatch, tmp_path)
    store = Store(tmp_path / "memory")
    live = backend.decoder().run([req(1), req(4)])  # a batch interleaved with the judge's calls: a caller's bug
    next(live)
    with pytest.raises(DecoderBusyError, match=BUSY):
        FactualJudge(CachedLLM(backend, store, UsageMeter(store))).score("Why?", "Because.", "The reason.")
    live.close()


@pytest.mark.parametrize("temperature", [0.0, 0.7])
def test_a_grammar_that_does_not_parse_frees_its_slot(monkeypatch: pytest.MonkeyPatch, temperature: float) -> None:
    # One slot: were it left busy by the failed admission, every later run would wait for it forever.
    decoder = fake_decoder(monkeypatch, n_seq=1)
    monkeypatch.setattr(decoder._lib, "llama_sampler_init_grammar", lambda vocab, gbnf, root: None, raising=False)
    broken = DecodeRequest(tokens=[2, 3, 4], max_tokens=2, grammar="root ::= (", temperature=temperature)
    with pytest.raises(GemragError, match="could not parse the grammar"):
        list(decoder.run([broken]))
    assert decoder.slots.busy == [False]
    assert [r.tokens for _, r in decoder.run([req()])] == [[1, 1]]
