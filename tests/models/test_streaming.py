"""Streamed completions (issue 41): the fallback for backends without a stream, the cache middleware, the embedded
llama.cpp backend (its real decoder loop and lock on a fake llama.cpp) and the OpenAI-compatible backend (against
the stand-in server's Server-Sent Events)."""

from __future__ import annotations

import contextlib
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from test_openai_concurrency import WAIT

from fake_llama import FakeLlamaCppLLM
from fakes import ScriptedLLM, StreamingLLM
from gemrag.errors import GemragError
from gemrag.models.base import Completion, Message
from gemrag.models.cache import CachedLLM
from gemrag.models.llama.legacy import legacy_complete, legacy_stream
from gemrag.models.meter import UsageMeter
from gemrag.models.openai.backend import OpenAILLM
from gemrag.models.streaming import complete_stream, pieces
from gemrag.store import Store
from standin_openai import USAGE, StandIn, serve

QUESTION: list[Message] = [{"role": "user", "content": "Who is Korvin?\nAnswer briefly. Guess."}]


def split(items: list[Any]) -> tuple[list[str], Completion]:
    """The pieces and the final Completion of a drained stream (asserting the contract's shape)."""
    *texts, last = items
    assert all(isinstance(t, str) and t for t in texts)
    assert isinstance(last, Completion)
    return texts, last


def test_a_backend_without_a_stream_yields_its_whole_answer_once() -> None:
    texts, completion = split(list(complete_stream(ScriptedLLM(), QUESTION)))
    assert texts == ["A free-form answer."] and completion.text == "A free-form answer."


def test_pieces_keeps_the_completion_aside_and_refuses_a_stream_without_one() -> None:
    final: list[Completion] = []
    assert list(pieces(complete_stream(StreamingLLM(reply="one two"), QUESTION), final)) == ["one", " two"]
    assert final[0].text == "one two"
    with pytest.raises(GemragError, match="without its completion"):
        list(pieces((piece for piece in ["a", "b"]), []))


def test_the_cache_streams_a_miss_then_answers_it_at_once(tmp_path: Path) -> None:
    backend = StreamingLLM(reply="Korvin is a prisoner.")
    meter = UsageMeter()
    llm = CachedLLM(backend, Store(tmp_path / "m.sqlite"), meter)
    texts, completion = split(list(llm.complete_stream(QUESTION)))
    assert texts == ["Korvin", " is", " a", " prisoner."] and not completion.cached
    assert meter.total().calls == 1 and meter.total().prompt_tokens > 0  # metered when the stream ended
    texts, again = split(list(llm.complete_stream(QUESTION)))
    assert texts == ["Korvin is a prisoner."] and again.cached  # a hit streams at once, in one piece
    assert llm.complete(QUESTION).cached  # one cache key for streamed and whole answers
    assert backend.streams == 1 and meter.total().calls == 1 and meter.total().cached == 2


def test_a_stream_closed_early_stops_the_backend_and_records_nothing(tmp_path: Path) -> None:
    backend = StreamingLLM(reply="one two three four")
    meter = UsageMeter()
    store = Store(tmp_path / "m.sqlite")
    llm = CachedLLM(backend, store, meter)
    with contextlib.closing(llm.complete_stream(QUESTION)) as stream:
        assert next(stream) == "one"
    assert backend.closed_early == 1 and backend.finished == 0
    assert meter.total().calls == 0 and store.llm_cache_counts()[1] == 0
    _, again = split(list(llm.complete_stream(QUESTION)))
    assert not again.cached and backend.streams == 2  # a miss again: nothing was cached


class PieceLlama(FakeLlamaCppLLM):
    """The fake llama.cpp backend whose detokenizer gives each generated token (always id 1) the bytes of
    ``pieces`` in turn: a completion of n tokens reads as the first n byte strings joined."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, pieces: list[bytes]) -> None:
        super().__init__(monkeypatch, tmp_path)
        table = pieces

        class Tokenizer(type(self._llm)):  # type: ignore[misc]
            def detokenize(self, tokens: list[int], prev_tokens: list[int] | None = None) -> bytes:
                start = sum(1 for t in (prev_tokens or []) if t == 1)  # completion tokens before these
                return b"".join(table[start + i] for i, _ in enumerate(tokens))

        self._llm = Tokenizer("unused")


def test_the_embedded_model_streams_token_by_token_and_frees_the_decoder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # "é" is two bytes split over two tokens: it is yielded once whole
    llm = PieceLlama(monkeypatch, tmp_path, [b"Kor", b"vin", b" caf", b"\xc3", b"\xa9", b"!"])
    stream = llm.complete_stream(QUESTION, max_tokens=6)
    texts = [next(stream) for _ in range(4)]
    assert texts == ["Kor", "vin", " caf", "é"]
    assert next(stream) == "!"
    completion = next(stream)  # taken, the stream neither exhausted nor closed: the model is free again
    assert isinstance(completion, Completion) and completion.usage.completion_tokens == 6
    assert llm.complete(QUESTION, max_tokens=6).text == "Korvin café!"  # no DecoderBusyError; same text


def test_an_embedded_stream_closed_early_releases_the_decoder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    llm = PieceLlama(monkeypatch, tmp_path, [b"a", b"b", b"c", b"d"])
    stream = llm.complete_stream(QUESTION, max_tokens=4)
    assert next(stream) == "a"
    stream.close()
    assert llm.complete(QUESTION, max_tokens=4).text == "abcd"


@pytest.fixture
def standin() -> Any:
    state = StandIn(slots=2, latency=0.0)
    server, url = serve(state)
    try:
        yield state, url
    finally:
        server.shutdown()
        server.server_close()


def test_an_openai_compatible_server_streams_its_chunks(standin: Any) -> None:
    state, url = standin
    llm = OpenAILLM("standin", base_url=url, max_retries=0)
    texts, completion = split(list(llm.complete_stream(QUESTION, max_tokens=32)))
    assert texts == ["A", " free-form", " answer."] and completion.text == "A free-form answer."
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (
        USAGE["prompt_tokens"],
        USAGE["completion_tokens"],
    )
    (body,) = [json.loads(b) for b in state.bodies]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert state.streams_ended() == (1, 0)  # sent to its end, the client reading it whole


def test_closing_an_openai_stream_closes_the_connection(standin: Any) -> None:
    state, url = standin
    state.llm = StreamingLLM(reply="w0 w1 w2 w3")
    state.gate = threading.Event()  # the server holds the stream after "w0" until released (or the client goes)
    llm = OpenAILLM("standin", base_url=url, max_retries=0)
    try:
        with contextlib.closing(llm.complete_stream(QUESTION)) as stream:
            assert next(stream) == "w0"
            assert not state.disconnected.is_set()  # the connection is open while the stream is
        # the server sees the client go while it still holds the answer's other words (WAIT: only when wrong)
        assert state.disconnected.wait(WAIT), "closing the stream did not close the connection"
    finally:
        state.gate.set()
    assert state.streams_ended(WAIT) == (0, 1)


class ChatLlama:
    """The part of ``llama_cpp.Llama`` the legacy path calls: ``create_chat_completion`` answering ``reply`` (as
    chunks when streaming, the role first and an empty last delta as llama-cpp-python sends them) and a word
    tokenizer; ``open`` counts chunk generators not yet finished or closed."""

    def __init__(self, reply: list[str]) -> None:
        self.reply = reply
        self.open = 0

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        return list(range(len(text.split())))

    def create_chat_completion(self, stream: bool = False, **kwargs: Any) -> Any:
        if not stream:
            usage = {"prompt_tokens": 7, "completion_tokens": len(self.reply)}
            return {"choices": [{"message": {"content": "".join(self.reply)}}], "usage": usage}
        return self._chunks()

    def _chunks(self) -> Any:
        self.open += 1
        try:
            yield {"choices": [{"delta": {"role": "assistant"}}]}
            for piece in self.reply:
                yield {"choices": [{"delta": {"content": piece}}]}
            yield {"choices": [{"delta": {}, "finish_reason": "stop"}]}
        finally:
            self.open -= 1


def test_the_legacy_chat_path_streams_its_chunks() -> None:
    llama = ChatLlama(["Kor", "vin", " is", " here."])
    args = ("llama.cpp:fake", 4096, QUESTION)
    texts, completion = split(list(legacy_stream(llama, *args, 16, 0.0, 0)))  # type: ignore[arg-type]
    assert texts == llama.reply and completion.text == legacy_complete(llama, *args, None, 16, 0.0, 0).text  # type: ignore[arg-type]
    assert completion.usage.completion_tokens == 4 and completion.usage.prompt_tokens == len(
        QUESTION[0]["content"].split()
    )
    stream = legacy_stream(llama, *args, 16, 0.0, 0)  # type: ignore[arg-type]
    assert next(stream) == "Kor" and llama.open == 1
    stream.close()  # closes llama-cpp-python's generator: decoding stops
    assert llama.open == 0
