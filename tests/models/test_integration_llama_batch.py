"""Batched decoding with the real Qwen2.5-Coder-0.5B GGUF: ``LlamaCppLLM.complete_iter`` with n_parallel = 3 over
six real utility-question calls (chunks of the shipped QuALITY story, gemrag's prompt, schema and max_tokens)."""

from __future__ import annotations

from collections.abc import Generator, Iterator, Sequence
from typing import Any

import pytest

import realparts
from gemrag.errors import GemragError
from gemrag.ingest.chunker import chunk_text
from gemrag.ingest.tokenizer import minilm_tokenizer
from gemrag.models.base import Completion
from gemrag.models.batch import CompletionRequest
from gemrag.models.llama.backend import LlamaCppLLM
from gemrag.models.llama.batch import DecodeRequest, DecodeResult
from gemrag.strategies.gem.prompts import MAX_QUESTION_CHARS, utility_questions_prompt, utility_questions_schema
from paths import REPO

pytestmark = pytest.mark.integration

STORY = REPO / "examples" / "quality" / "lost_in_translation.txt"
M = 3


def load_small(**settings: Any) -> LlamaCppLLM:
    """The real 0.5B model, loaded now with ``settings``; fails under CI=true (skips otherwise) when missing."""
    model = realparts.load_small(**settings)
    assert isinstance(model, LlamaCppLLM)
    return model


@pytest.fixture(scope="module")
def llm() -> Iterator[LlamaCppLLM]:
    model = load_small(n_ctx=2048, n_parallel=3)
    try:
        yield model
    finally:
        model.close()


@pytest.fixture(scope="module")
def requests() -> list[CompletionRequest]:
    chunks = [c.text for c in chunk_text(STORY.read_text(encoding="utf-8"), minilm_tokenizer(), 100)][1:7]
    max_tokens = (MAX_QUESTION_CHARS // 3 + 8) * M + 16  # as gemrag.strategies.gem.utility_questions
    return [CompletionRequest(utility_questions_prompt(c, M), utility_questions_schema(M), max_tokens) for c in chunks]


Batch = tuple[dict[int, "Completion | GemragError"], dict[int, DecodeResult], list[DecodeRequest]]


@pytest.fixture(scope="module")
def batched(llm: LlamaCppLLM, requests: list[CompletionRequest]) -> Batch:
    """The six requests decoded once through ``complete_iter`` from an empty KV cache: its results, what the decoder
    yielded for each (the :class:`DecodeResult`, with its reused prompt tokens) and the decoder's requests; the
    tests that read this one batch share it, so its six completions are decoded once."""
    decoder = llm.decoder()
    assert decoder is not None
    decoder.clear()
    run, seen, prepared = decoder.run, {}, []

    def recorded(requests: Sequence[DecodeRequest]) -> Generator[tuple[int, DecodeResult], None, None]:
        prepared.extend(requests)
        for i, result in run(requests):
            seen[i] = result
            yield i, result

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(decoder, "run", recorded)
        results = list(llm.complete_iter(requests))
    assert sorted(i for i, _ in results) == list(range(6))
    return dict(results), seen, prepared


def assert_valid(completion: Completion | GemragError) -> None:
    """The answer follows utility_questions_schema(M): exactly M strings of 8 to MAX_QUESTION_CHARS characters."""
    assert isinstance(completion, Completion), completion
    parsed: Any = completion.parsed
    assert isinstance(parsed, dict) and set(parsed) == {"questions"}, completion.text
    assert len(parsed["questions"]) == M
    assert all(isinstance(q, str) and 8 <= len(q) <= MAX_QUESTION_CHARS for q in parsed["questions"])
    assert completion.usage.prompt_tokens > 100 and completion.usage.completion_tokens > 10


def test_complete_iter_equals_sequential_complete(
    llm: LlamaCppLLM, requests: list[CompletionRequest], batched: Batch
) -> None:
    results = batched[0]
    for result in results.values():
        assert_valid(result)
    decoder = llm.decoder()
    assert decoder is not None
    decoder.clear()  # the sequential answers start from an empty KV cache, not from the batch's prefixes
    sequential = [llm.complete(r.messages, schema=r.schema, max_tokens=r.max_tokens) for r in requests]
    for c in sequential:
        assert_valid(c)
    # Greedy on both paths: the same prompt tokens, grammar and argmax rule. The logits are not bit-identical,
    # though: in the batch a sequence's KV cells sit at other cell indices of the shared (unified) cache, among
    # other sequences' masked cells, so attention's vectorized sums add the same terms in another order. A
    # near-tie can then flip (seen: "agree with" vs "agree on" in one of six answers), after which the two answers
    # go separate, equally valid ways. Most answers must still be identical (a real mix-up of sequences, e.g.
    # wrong positions or attention across sequences, would change them all), and every one is valid.
    same = [results[i].text == sequential[i].text for i in range(6)]  # type: ignore[union-attr]
    assert sum(same) >= 4, [(results[i].text, sequential[i].text) for i in range(6) if not same[i]]  # type: ignore[union-attr]
    usage = [results[i].usage for i in range(6)]  # type: ignore[union-attr]
    pairs = zip(usage, sequential, same, strict=True)
    assert all(u.completion_tokens == c.usage.completion_tokens for u, c, eq in pairs if eq)
    assert all(u.seconds > 0 and u.calls == 1 for u in usage)


def test_completion_order_and_prefix_reuse(batched: Batch) -> None:
    _, by_index, prepared = batched  # the decoder's own results of the batch, from an empty cache
    assert sorted(by_index) == list(range(6)) and len(prepared) == 6
    shared = min(len(p.tokens) for p in prepared) // 3  # the instructions: well over a third of each prompt
    assert by_index[0].reused_tokens == 0  # the first request starts from an empty cache
    assert all(by_index[i].reused_tokens > shared for i in range(1, 6))  # the others copy the shared prefix


def test_early_break_leaves_the_model_usable(llm: LlamaCppLLM, requests: list[CompletionRequest]) -> None:
    for _, first in llm.complete_iter(requests):
        assert_valid(first)
        break
    again = llm.complete(requests[0].messages, schema=requests[0].schema, max_tokens=requests[0].max_tokens)
    assert_valid(again)


def test_a_request_too_long_is_its_own_error(llm: LlamaCppLLM, requests: list[CompletionRequest]) -> None:
    too_long = CompletionRequest([{"role": "user", "content": "lorem ipsum " * 3000}], max_tokens=4)
    results = dict(llm.complete_iter([requests[0], too_long, requests[1]]))
    assert isinstance(results[1], GemragError) and "context window" in str(results[1])
    assert_valid(results[0])
    assert_valid(results[2])


def test_sampled_requests_in_a_batch_are_valid(llm: LlamaCppLLM, requests: list[CompletionRequest]) -> None:
    sampled = [
        CompletionRequest(r.messages, r.schema, r.max_tokens, temperature=0.4, seed=7 + i)
        for i, r in enumerate(requests[:3])
    ]
    for _, result in llm.complete_iter(sampled):
        assert_valid(result)


def test_n_threads_bounds_prompt_reading_too() -> None:
    """``n_threads`` limits both of llama.cpp's thread counts: llama-cpp-python reads prompts with every core
    unless ``n_threads_batch`` is given, which oversubscribed a 2-core machine running two 1-thread processes."""
    model = load_small(n_ctx=512, n_threads=1)
    try:
        params = model._llm.context_params
        assert (params.n_threads, params.n_threads_batch) == (1, 1)
    finally:
        model.close()
