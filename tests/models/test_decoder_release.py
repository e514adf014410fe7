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
from collections.abc import Iterator
from pathlib import Path

import pytest

from fake_llama import FakeLlamaCppLLM, fake_decoder
from gemrag.errors import GemragError
from gemrag.eval.factual import FactualJudge
from gemrag.models.cache import CachedLLM
from gemrag.models.llama_batch import DecodeRequest
from gemrag.models.meter import UsageMeter
from gemrag.store import Store

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
