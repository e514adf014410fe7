"""Continuation scoring with the real Qwen2.5-Coder-0.5B GGUF (:meth:`LlamaCppLLM.score_continuations`, the batch
decoder's :meth:`~gemrag.models.llama.batch.BatchDecoder.score`), and multiple-choice questions answered by
likelihood and by the letters' probabilities through a real memory (the MiniLM embedder and the 0.5B; ``[answer]
choice_scoring``).

The decoder's arithmetic is checked against itself where it must agree exactly: a continuation scored in one piece
and in two (the first part moved into the prompt) gives the same log-probabilities; scoring in another order, after
other work in the KV cache, gives the same values (prefix reuse and the cache's truncation are then right); each
token's log-probability is that of the greedy completion's first token when the continuation is that completion."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from gemrag import Memory, load_config
from gemrag.config import Config
from gemrag.models.batch import CompletionRequest
from gemrag.models.llama.backend import LlamaCppLLM
from gemrag.models.llama.batch import DecodeRequest
from realparts import load_small

pytestmark = pytest.mark.integration

CHAT = [
    {"role": "system", "content": "Answer in one word."},
    {"role": "user", "content": "What is the capital of France?"},
]


@pytest.fixture(scope="module")
def llm() -> Iterator[LlamaCppLLM]:
    model = load_small(n_ctx=2048, n_parallel=2)
    assert isinstance(model, LlamaCppLLM)
    try:
        yield model
    finally:
        model.close()


def test_the_likely_answer_scores_higher(llm: LlamaCppLLM) -> None:
    scores = llm.score_continuations(CHAT, ["Paris", "Berlin", "The capital of France is Paris.", ""])
    paris, berlin, sentence, empty = scores.logprobs
    assert empty == [] and len(sentence) > 3
    assert all(lp <= 0.0 for lp in [*paris, *berlin, *sentence])
    assert sum(paris) > sum(berlin) + 2.0  # Paris is far more likely than Berlin
    assert scores.usage.prompt_tokens > len(paris) + len(berlin) + len(sentence) and scores.usage.seconds > 0


def test_scores_do_not_depend_on_the_kv_cache(llm: LlamaCppLLM) -> None:
    decoder = llm.decoder()
    assert decoder is not None
    model = llm.load()
    prompt = model.tokenize(b"The tide came in over the old stone harbour and", add_bos=False, special=False)
    a = model.tokenize(b" the boats rose with it", add_bos=False, special=False)
    b = model.tokenize(b" nobody noticed", add_bos=False, special=False)
    decoder.clear()
    first, decoded = decoder.score(prompt, [a, b])
    assert decoded == len(prompt) + len(a) + 1 + len(b)  # the prompt once; b from the prompt's last token on
    # other work in the cache, then the other order: the same values
    list(decoder.run([DecodeRequest(tokens=model.tokenize(b"Once upon a time", add_bos=False), max_tokens=4)]))
    again, _ = decoder.score(prompt, [b, a])
    assert again[0] == pytest.approx(first[1], abs=1e-4) and again[1] == pytest.approx(first[0], abs=1e-4)
    # the continuation in two pieces, its first two tokens moved into the prompt: the same up to llama.cpp's
    # batch-size noise (a wrong position or logits row is off by nats, not tenths)
    split, _ = decoder.score([*prompt, *a[:2]], [a[2:]])
    assert split[0] == pytest.approx(first[0][2:], abs=0.3)
    decoder.clear()
    cold, decoded = decoder.score(prompt, [a])
    assert decoded == len(prompt) + len(a) and cold[0] == pytest.approx(first[0], abs=1e-4)


def test_the_greedy_completion_is_the_most_likely_first_token(llm: LlamaCppLLM) -> None:
    completion = llm.complete(CHAT, max_tokens=3)
    model = llm.load()
    first = model.tokenize(completion.text.encode("utf-8"), add_bos=False, special=False)[0]
    first_text = model.detokenize([first]).decode("utf-8")
    rivals = [" Berlin", "London", "Madrid", "Rome", "The"]
    scores = llm.score_continuations(CHAT, [first_text, *rivals]).logprobs
    greedy = scores[0][0]
    assert all(greedy >= s[0] for s in scores[1:])
    assert math.exp(greedy) > 0.3


def test_a_choice_by_likelihood_through_a_real_memory(tmp_path: Path) -> None:
    cfg = load_config(
        None,
        {
            "llm": {"model": "qwen2.5-coder-0.5b", "n_ctx": 2048},
            "strategy": "dense",
            "answer": {"choice_scoring": "likelihood", "choice_retrieval": "each"},
        },
    )
    story = (
        "Marta sold her old fishing boat to Ivo in the spring of 1998. Ivo painted the boat red and named it "
        "Kestrel. Every summer he sailed it to the islands with his daughter."
    )
    choices = ["He painted it red.", "He sank it in the harbour.", "He sold it back to Marta."]
    with Memory.open(tmp_path / "m", cfg) as mem:
        mem.add_text(story, title="The boat")
        mem.index()
        answer = mem.ask("What did Ivo do with the boat after he bought it?", choices, budget=2)
    assert answer.hits and "Kestrel" in " ".join(h.text for h in answer.hits)
    assert answer.reading["choice_scoring"] == "likelihood"
    scores = answer.reading["option_scores"]
    assert len(scores) == 3 and all(s["logprob"] < 0 and s["unconditional"] is None for s in scores)
    means = [s["logprob"] / s["tokens"] for s in scores]
    assert answer.choice == means.index(max(means)) == 0 and answer.text == choices[0]
    assert answer.usage.prompt_tokens > 0 and answer.cited == []


def test_a_choice_by_the_letters_probabilities_through_a_real_memory(tmp_path: Path) -> None:
    def config(**answer: object) -> Config:
        llm = {"model": "qwen2.5-coder-0.5b", "n_ctx": 2048}
        return load_config(None, {"llm": llm, "strategy": "dense", "answer": {"choice_retrieval": "joined", **answer}})

    story = (
        "Marta sold her old fishing boat to Ivo in the spring of 1998. Ivo painted the boat red and named it "
        "Kestrel. Every summer he sailed it to the islands with his daughter."
    )
    question = "What colour did Ivo paint the boat?"
    choices = ["Blue", "Green", "Red"]
    with Memory.open(tmp_path / "m", config()) as mem:
        mem.add_text(story, title="The boat")
        mem.index()
        decoded = mem.ask(question, choices, budget=1)
    with Memory.open(tmp_path / "m", config(choice_scoring="letter_probability", option_orders=3)) as mem:
        scored = mem.ask(question, choices, budget=1)
    assert scored.reading["choice_scoring"] == "letter_probability" and scored.reading["option_orders"] == 3
    orders = scored.reading["order_letter_logprobs"]
    assert len(orders) == 3 and all(abs(sum(math.exp(lp) for lp in order) - 1) < 1e-3 for order in orders)
    assert scored.choice == 2 and scored.text == "Red" and scored.cited == []
    # the letter decoded greedily in the original order is the most probable letter of that order
    assert decoded.choice == orders[0].index(max(orders[0]))
    averaged = [math.exp(o["score"]) for o in scored.reading["option_scores"]]
    assert averaged.index(max(averaged)) == 2 and abs(sum(averaged) - 1) < 1e-3


def test_a_completion_after_scoring_is_unchanged(llm: LlamaCppLLM) -> None:
    before = llm.complete(CHAT, max_tokens=5).text
    llm.score_continuations(CHAT, ["Paris is the capital", "Lyon"])
    ((_, after),) = list(llm.complete_iter([CompletionRequest(CHAT, None, 5)]))
    assert not isinstance(after, Exception) and after.text == before
