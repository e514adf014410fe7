"""Bounded concurrency, retries and rate limits of the HTTP backends (issue 9, point 4), against a local stub
OpenAI-compatible server (:mod:`http.server` on loopback): no model.

The stub answers ``/v1/chat/completions`` with ``"echo: <last user message>"`` (as JSON when a schema is
requested) and ``/v1/embeddings`` with a vector made from each text; it can answer scripted errors first, sleep
per request, hold a request (or every request) until the test releases it, and records how many requests were
in flight at most.

The concurrency, cancellation and ordering tests wait for what the stub sees (:meth:`Stub.wait_for`) or for the
backend's threads to end, rather than measure elapsed time, so a loaded machine makes them slower, not red: their
timeouts (:data:`WAIT`) are reached only when the code is wrong. The one elapsed-time check left is a lower bound
(the retry backoff), which load cannot break.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from fakes import FakeClock
from gemrag.errors import GemragError, is_fatal
from gemrag.models.base import Completion
from gemrag.models.batch import CompletionRequest, complete_iter, supports_batches
from gemrag.models.openai.backend import (
    EndpointRejectedError,
    EndpointUnreachableError,
    OpenAIEmbedder,
    OpenAILLM,
)
from gemrag.models.openai.limits import RateLimiter

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"echo": {"type": "string"}}, "required": ["echo"]}
#: seconds a test waits for something that must happen (only reached when the code is wrong)
WAIT = 20.0
#: seconds a test gives a request that must not be sent to arrive: a correct backend passes whatever the load; a
#: wrong one is caught unless the machine is too slow to send that request this long after the allowed ones
SETTLE = 0.5


@dataclass
class Stub:
    """The stub server's behaviour and what it saw (shared by its handler threads)."""

    #: (status, headers) answered to the first requests, in order; then 200
    script: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    #: seconds every request takes (before answering)
    delay: float = 0.0
    #: a status answered to every request whose last message contains the key
    fail_on: dict[str, int] = field(default_factory=dict)
    #: a request whose key (the last message's content; for embeddings, the first text) is here waits, once in
    #: flight, until its event is set (at most WAIT seconds)
    hold: dict[str, threading.Event] = field(default_factory=dict)
    #: when not None, every request waits, once in flight, until it is set (at most WAIT seconds)
    gate: threading.Event | None = None
    requests: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    prompts: list[str] = field(default_factory=list)
    #: the keys of the requests received, in arrival order
    arrived: list[str] = field(default_factory=list)
    #: the keys of the requests no longer in flight (their answer about to be written), in that order
    done: list[str] = field(default_factory=list)
    #: guards the counters and lists above; notified whenever they change
    lock: threading.Condition = field(default_factory=threading.Condition)

    def wait_for(self, predicate: Callable[[Stub], bool], timeout: float = WAIT) -> bool:
        """Wait until ``predicate(self)`` holds (checked under :attr:`lock` at every change), at most ``timeout``
        seconds; returns whether it holds."""
        with self.lock:
            return self.lock.wait_for(lambda: predicate(self), timeout)

    def assert_cap(self, cap: int) -> None:
        """Assert that ``cap`` requests get in flight at once (within WAIT seconds) and that no more are in the
        SETTLE seconds after that; meaningful while the test holds the requests at the stub.

        Raises:
            AssertionError: fewer than ``cap`` were ever in flight at once, or more than ``cap`` were.
        """
        assert self.wait_for(lambda s: s.in_flight >= cap), f"{cap} requests were never in flight at once"
        assert not self.wait_for(lambda s: s.in_flight > cap, SETTLE), f"more than {cap} requests in flight"


class _Handler(BaseHTTPRequestHandler):
    stub: Stub

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _finish(self) -> None:
        """This request no longer counts as in flight (once), before its answer is written: a client may send its
        next request the moment it reads this one's answer, before this thread runs again."""
        if getattr(self, "_in_flight", False):
            self._in_flight = False
            with self.stub.lock:
                self.stub.in_flight -= 1
                self.stub.done.append(self._key)
                self.stub.lock.notify_all()

    def _send(self, code: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self._finish()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        stub = self.stub
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        last = body["messages"][-1]["content"] if "messages" in body else ""
        self._key = last if "messages" in body else body["input"][0]
        with stub.lock:
            stub.requests += 1
            stub.in_flight += 1
            stub.max_in_flight = max(stub.max_in_flight, stub.in_flight)
            stub.arrived.append(self._key)
            scripted = stub.script.pop(0) if stub.script else None
            stub.lock.notify_all()
        self._in_flight = True
        try:
            for release in (stub.gate, stub.hold.get(self._key)):
                if release is not None:
                    release.wait(WAIT)
            time.sleep(stub.delay)
            if scripted is not None:
                status, headers = scripted
                self._send(status, {"error": {"message": f"scripted {status}", "type": "test"}}, headers)
                return
            for key, status in stub.fail_on.items():
                if key in last:
                    self._send(status, {"error": {"message": f"request refused: {key}", "type": "test"}})
                    return
            if self.path == "/v1/embeddings":
                texts = body["input"]
                data = [
                    {"object": "embedding", "index": i, "embedding": [float(len(t)), 1.0, float(ord(t[-1]))]}
                    for i, t in enumerate(texts)
                ]
                self._send(200, {"object": "list", "model": "e", "data": data, "usage": {"prompt_tokens": 3}})
                return
            with stub.lock:
                stub.prompts.append(last)
            schema = (body.get("response_format") or {}).get("json_schema", {}).get("schema", {})
            if "questions" in schema.get("properties", {}):  # GEM's utility questions: two per passage
                words = last.split('"""')[1].split()[:3] if '"""' in last else ["this"]
                text = json.dumps({"questions": [f"What about {' '.join(words)}?", f"Why {' '.join(words)}?"]})
            elif "response_format" in body:
                text = json.dumps({"echo": last})
            else:
                text = f"echo: {last}"
            self._send(
                200,
                {
                    "id": "c1",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body["model"],
                    "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                    ],
                    "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
                },
            )
        finally:
            self._finish()


@pytest.fixture
def stub() -> Iterator[tuple[str, Stub]]:
    """A running stub server; yields (base_url, its Stub)."""
    state = Stub()
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("Handler", (_Handler,), {"stub": state}))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _user(text: str) -> CompletionRequest:
    return CompletionRequest([{"role": "user", "content": text}], max_tokens=8)


def _llm(base_url: str, **kw: Any) -> OpenAILLM:
    kw.setdefault("timeout", 10)
    return OpenAILLM("stub-model", base_url=base_url, **kw)


def _new_workers(before: set[threading.Thread]) -> list[threading.Thread]:
    """The threads of :meth:`OpenAILLM.complete_iter`'s pool (named ``gemrag-http_N``) alive now and not in
    ``before``."""
    return [t for t in threading.enumerate() if t.name.startswith("gemrag-http") and t not in before]


def _still_running(threads: list[threading.Thread], timeout: float = WAIT) -> list[threading.Thread]:
    """Join ``threads`` within ``timeout`` seconds in all; returns those still alive then."""
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    return [t for t in threads if t.is_alive()]


def _stop_after_the_first_answer(
    base_url: str, state: Stub, consume: Callable[[Iterator[tuple[int, Completion | GemragError]]], Any]
) -> Any:
    """Twenty requests ``q0`` ... ``q19``, concurrency 2, each held at the stub until released. Once two are in
    flight, the first to arrive is released; ``consume`` (run in a thread, given the ``complete_iter`` generator)
    must stop iterating at that first answer (a ``break``, a raised error).

    Checks that ``consume`` returns while every other request is still held (stopping does not wait for the
    requests in flight), and that, once everything is released, the pool's threads end having sent at most three
    requests: the two in flight at the first answer and the one the freed thread may take before the caller stops;
    the rest were cancelled. Returns what ``consume`` returned.
    """
    release = {f"q{i}": threading.Event() for i in range(20)}
    state.hold = release
    llm = _llm(base_url, concurrency=2)
    before = set(threading.enumerate())

    def run() -> tuple[Any, list[str]]:
        out = consume(llm.complete_iter([_user(key) for key in release]))
        with state.lock:
            return out, list(state.done)

    with ThreadPoolExecutor(1) as caller:
        future = caller.submit(run)
        try:
            assert state.wait_for(lambda s: s.in_flight == 2), "two requests were never in flight at once"
            workers = _new_workers(before)
            first = state.arrived[0]
            release[first].set()
            try:
                out, done = future.result(timeout=WAIT)
            except TimeoutError:
                pytest.fail(
                    f"the caller had not stopped {WAIT} s after the first answer (it did not stop at that answer, "
                    "or stopping waits for the requests in flight)"
                )
        finally:
            for event in release.values():
                event.set()
    assert len(workers) == 2
    assert done == [first], f"stopping waited for the requests in flight (answered by then: {done})"
    assert not _still_running(workers), "the pool's threads still run after everything was released"
    assert state.requests <= 3, f"{state.requests} requests sent: those not yet sent were not cancelled"
    return out


# ---- retries ------------------------------------------------------------------------------------------------


def test_429_then_200_is_retried(stub: tuple[str, Stub]) -> None:
    base_url, state = stub
    state.script = [(429, {"Retry-After": "0.01"})]
    out = _llm(base_url, max_retries=2).complete([{"role": "user", "content": "hello"}])
    assert out.text == "echo: hello"
    assert state.requests == 2


def test_429_then_200_in_complete_iter(stub: tuple[str, Stub]) -> None:
    base_url, state = stub
    state.script = [(429, {"retry-after-ms": "10"}), (429, {"retry-after-ms": "10"})]
    results = dict(_llm(base_url, max_retries=3, concurrency=2).complete_iter([_user("a"), _user("b")]))
    assert sorted(results) == [0, 1]
    assert [r.text for _, r in sorted(results.items())] == ["echo: a", "echo: b"]  # type: ignore[union-attr]
    assert state.requests == 4


def test_500_then_200_is_retried_with_backoff(stub: tuple[str, Stub]) -> None:
    """No Retry-After: the SDK's exponential backoff (0.5 s minus up to 25% jitter for the first retry)."""
    base_url, state = stub
    state.script = [(500, {})]
    t0 = time.monotonic()
    out = _llm(base_url, max_retries=1).complete([{"role": "user", "content": "x"}])
    assert out.text == "echo: x" and state.requests == 2
    assert time.monotonic() - t0 >= 0.3


def test_persistent_429_gives_a_clear_error(stub: tuple[str, Stub]) -> None:
    base_url, state = stub
    state.script = [(429, {"Retry-After": "0.01"})] * 3
    llm = _llm(base_url, max_retries=2)
    with pytest.raises(GemragError, match=r"rate limited by .*127\.0\.0\.1.* \(HTTP 429\) after retries"):
        llm.complete([{"role": "user", "content": "x"}])
    assert state.requests == 3  # the first try and max_retries=2 retries
    state.script = [(429, {"Retry-After": "0.01"})] * 3
    results = list(_llm(base_url, max_retries=2).complete_iter([_user("x")]))
    assert len(results) == 1 and results[0][0] == 0
    error = results[0][1]
    assert isinstance(error, GemragError) and "429" in str(error) and not is_fatal(error)


def test_no_retries_when_max_retries_is_zero(stub: tuple[str, Stub]) -> None:
    base_url, state = stub
    state.script = [(503, {"Retry-After": "0.01"})]
    with pytest.raises(GemragError, match="HTTP 503"):
        _llm(base_url, max_retries=0).complete([{"role": "user", "content": "x"}])
    assert state.requests == 1


# ---- concurrency --------------------------------------------------------------------------------------------


def test_at_most_concurrency_requests_in_flight(stub: tuple[str, Stub]) -> None:
    """Nine requests, concurrency 3: the stub holds them until three are in flight (one at a time would never get
    there) and a fourth has had SETTLE seconds to arrive (it must not), then answers each after 0.1 s."""
    base_url, state = stub
    state.delay = 0.1
    release = threading.Event()
    state.hold = {f"question {i}": release for i in range(9)}
    llm = _llm(base_url, concurrency=3)
    assert supports_batches(llm)
    requests = [_user(f"question {i}") for i in range(9)]
    with ThreadPoolExecutor(1) as caller:
        future = caller.submit(lambda: list(complete_iter(llm, requests)))
        try:
            state.assert_cap(3)
        finally:
            release.set()
        results = future.result(timeout=WAIT)
    assert sorted(i for i, _ in results) == list(range(9))
    for i, result in results:
        assert not isinstance(result, GemragError), result
        assert result.text == f"echo: question {i}"
        assert result.usage.calls == 1 and result.usage.prompt_tokens == 7 and result.usage.seconds >= 0.09
    assert state.max_in_flight == 3 and state.requests == 9


def test_results_come_in_completion_order(stub: tuple[str, Stub]) -> None:
    """Three requests in flight at once, each held at the stub: the second is answered at once, the third only
    after the caller has consumed one result, the first only after it has consumed two. So 1, 2, 0 is the only
    order a backend yielding in completion order can give (in submission order it would wait for the first)."""
    base_url, state = stub
    keys = ["q0", "q1", "q2"]
    release = {key: threading.Event() for key in keys}
    state.hold = release
    release["q1"].set()
    after_each_result = iter([release["q2"], release["q0"]])
    order: list[int] = []
    try:
        for i, result in _llm(base_url, concurrency=3).complete_iter([_user(key) for key in keys]):
            assert not isinstance(result, GemragError) and result.text == f"echo: q{i}", result
            order.append(i)
            next(after_each_result, threading.Event()).set()
    finally:
        for event in release.values():
            event.set()
    assert order == [1, 2, 0]


def test_structured_requests(stub: tuple[str, Stub]) -> None:
    base_url, _ = stub
    llm = _llm(base_url, concurrency=2, json_mode="json_object")
    requests = [CompletionRequest([{"role": "user", "content": f"q{i}"}], schema=SCHEMA) for i in range(4)]
    results = dict(llm.complete_iter(requests))
    assert {i: r.parsed for i, r in results.items()} == {i: {"echo": f"q{i}"} for i in range(4)}  # type: ignore[union-attr]


def test_per_request_errors_are_yielded(stub: tuple[str, Stub]) -> None:
    base_url, state = stub
    state.fail_on = {"too long": 400}
    requests = [_user("ok 0"), _user("too long 1"), _user("ok 2")]
    results = dict(_llm(base_url, concurrency=2).complete_iter(requests))
    assert sorted(results) == [0, 1, 2]
    assert results[0].text == "echo: ok 0" and results[2].text == "echo: ok 2"  # type: ignore[union-attr]
    assert isinstance(results[1], GemragError)
    assert "HTTP 400" in str(results[1]) and "request refused: too long" in str(results[1])


@pytest.mark.parametrize(
    ("status", "message"), [(401, "rejected the API key"), (403, "refused access"), (404, "does not exist")]
)
def test_rejected_key_or_model_is_raised(stub: tuple[str, Stub], status: int, message: str) -> None:
    """Fatal: raised from the iteration at the first answer, without waiting for the other request in flight; the
    requests not yet sent are cancelled."""
    base_url, state = stub
    state.fail_on = {"q": status}

    def consume(results: Iterator[tuple[int, Completion | GemragError]]) -> GemragError:
        with pytest.raises(EndpointRejectedError, match=message) as info:
            list(results)
        return info.value

    assert is_fatal(_stop_after_the_first_answer(base_url, state, consume))


def test_connection_refused_is_raised() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    llm = _llm(f"http://127.0.0.1:{port}/v1", concurrency=2, max_retries=0)
    with pytest.raises(EndpointUnreachableError, match="cannot connect"):
        list(llm.complete_iter([_user(f"q{i}") for i in range(4)]))


def test_early_break_does_not_hang_and_cancels_the_rest(stub: tuple[str, Stub]) -> None:
    """A ``break`` after the first result returns while the other request in flight is still held at the stub;
    the requests not yet sent are never sent."""
    base_url, state = stub

    def first(results: Iterator[tuple[int, Completion | GemragError]]) -> tuple[int, Completion | GemragError]:
        taken: list[tuple[int, Completion | GemragError]] = []
        for pair in results:
            taken.append(pair)
            break
        return taken[0]

    index, result = _stop_after_the_first_answer(base_url, state, first)
    assert not isinstance(result, GemragError) and result.text == f"echo: q{index}"


def test_empty_batch(stub: tuple[str, Stub]) -> None:
    base_url, state = stub
    assert list(_llm(base_url).complete_iter([])) == [] and state.requests == 0


# ---- rate limit ---------------------------------------------------------------------------------------------


def test_requests_per_minute_in_the_backend(stub: tuple[str, Stub]) -> None:
    base_url, state = stub
    llm = _llm(base_url, concurrency=1, requests_per_minute=60)
    assert llm.rate_limiter.requests_per_minute == 60
    clock = FakeClock()
    llm.rate_limiter = RateLimiter(60, None, clock=clock, sleep=clock.sleep)
    results = list(llm.complete_iter([_user(f"q{i}") for i in range(4)]))
    assert len(results) == 4 and state.requests == 4
    assert sum(clock.sleeps) == pytest.approx(3.0)  # one per second, the first at once


def test_tokens_per_minute_counts_prompt_and_max_tokens(stub: tuple[str, Stub]) -> None:
    """600 tokens/min = 10 per second (bucket 10). Each request: estimate_tokens(40 chars) = 11 plus max_tokens 9
    = 20 tokens, so after the first, each waits 2 s (1.1 s if max_tokens were not counted)."""
    base_url, _ = stub
    llm = _llm(base_url, concurrency=1)
    clock = FakeClock()
    llm.rate_limiter = RateLimiter(None, 600, clock=clock, sleep=clock.sleep)
    requests = [CompletionRequest([{"role": "user", "content": "x" * 40}], max_tokens=9) for _ in range(3)]
    assert len(list(llm.complete_iter(requests))) == 3
    assert clock.sleeps == pytest.approx([2.0, 2.0])


def test_rate_limit_is_shared_by_the_threads(stub: tuple[str, Stub]) -> None:
    """Three threads, one limiter on a frozen clock: the reservations are 0, 1, 2, ... seconds away."""
    base_url, _ = stub
    llm = _llm(base_url, concurrency=3)
    sleeps: list[float] = []
    lock = threading.Lock()

    def record(seconds: float) -> None:
        with lock:
            sleeps.append(seconds)

    llm.rate_limiter = RateLimiter(60, None, clock=lambda: 0.0, sleep=record)
    assert len(list(llm.complete_iter([_user(f"q{i}") for i in range(6)]))) == 6
    assert sorted(sleeps) == pytest.approx([1.0, 2.0, 3.0, 4.0, 5.0])


# ---- embeddings ---------------------------------------------------------------------------------------------


def test_embedder_batches_in_parallel_keep_their_order(stub: tuple[str, Stub]) -> None:
    """Four batches of two, concurrency 3, answered out of order (the third batch first, the first last): the
    rows still follow the input. The stub holds each batch until the test releases it."""
    base_url, state = stub
    emb = OpenAIEmbedder("e", base_url=base_url, batch_size=2, concurrency=3, timeout=10)
    texts = [f"text number {'x' * i}{chr(97 + i)}" for i in range(8)]
    keys = texts[::2]  # each batch's first text, which names it at the stub
    release = {key: threading.Event() for key in keys}
    state.hold = release
    with ThreadPoolExecutor(1) as caller:
        future = caller.submit(emb.embed, texts)
        try:
            state.assert_cap(3)
            assert sorted(state.arrived) == sorted(keys[:3])
            release[keys[2]].set()
            assert state.wait_for(lambda s: keys[3] in s.arrived)  # a thread is free: the last batch is sent
            for key in (keys[3], keys[1], keys[0]):
                release[key].set()
                assert state.wait_for(lambda s, key=key: key in s.done)
        finally:
            for event in release.values():
                event.set()
        v = future.result(timeout=WAIT)
    assert state.done == [keys[2], keys[3], keys[1], keys[0]]
    expected = np.array([[len(t), 1.0, ord(t[-1])] for t in texts], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(v, expected, rtol=1e-6)
    assert state.requests == 4 and state.max_in_flight == 3
    assert emb.tokens_used == 4 * 3 and emb.dim == 3


def test_embedder_error_in_one_batch(stub: tuple[str, Stub]) -> None:
    base_url, state = stub
    state.script = [(400, {})]
    emb = OpenAIEmbedder("e", base_url=base_url, batch_size=1, concurrency=2, max_retries=0, timeout=10)
    with pytest.raises(GemragError, match="HTTP 400"):
        emb.embed(["a", "b", "c"])


# ---- configuration ------------------------------------------------------------------------------------------


def test_settings_reach_the_backends(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    from gemrag.config import load_config
    from gemrag.models.factory import build_embedder, build_llm

    monkeypatch.chdir(tmp_path)
    for var, value in {
        "GEMRAG_LLM__PROVIDER": "openai",
        "GEMRAG_LLM__MODEL": "m",
        "GEMRAG_LLM__BASE_URL": "http://127.0.0.1:9/v1",
        "GEMRAG_LLM__CONCURRENCY": "8",
        "GEMRAG_LLM__MAX_RETRIES": "5",
        "GEMRAG_LLM__REQUESTS_PER_MINUTE": "500",
        "GEMRAG_LLM__TOKENS_PER_MINUTE": "200000",
        "GEMRAG_EMBEDDER__PROVIDER": "openai",
        "GEMRAG_EMBEDDER__MODEL": "e",
        "GEMRAG_EMBEDDER__BASE_URL": "http://127.0.0.1:9/v1",
        "GEMRAG_EMBEDDER__CONCURRENCY": "2",
    }.items():
        monkeypatch.setenv(var, value)
    cfg = load_config(None, {})
    llm = build_llm(cfg.llm)
    assert isinstance(llm, OpenAILLM)
    assert llm.concurrency == 8 and llm.max_retries == 5 and llm._client.max_retries == 5
    assert llm.rate_limiter.requests_per_minute == 500 and llm.rate_limiter.tokens_per_minute == 200_000
    emb = build_embedder(cfg.embedder)
    assert isinstance(emb, OpenAIEmbedder) and emb.concurrency == 2 and emb.max_retries == 2


def test_settings_defaults_and_validation(monkeypatch: pytest.MonkeyPatch) -> None:
    from pydantic import ValidationError

    from gemrag.config import LLMSettings

    s = LLMSettings()
    assert (s.concurrency, s.max_retries, s.requests_per_minute, s.tokens_per_minute) == (4, 2, None, None)
    for bad in ({"concurrency": 0}, {"max_retries": -1}, {"requests_per_minute": 0}, {"tokens_per_minute": 0}):
        with pytest.raises(ValidationError):
            LLMSettings(**bad)


def test_early_break_stops_waiting_for_the_rate_limit(stub: tuple[str, Stub]) -> None:
    """One request per minute with the real clock, concurrency 3: the first request goes at once, the other two
    threads are told to wait 60 and 120 s. After a break at the first result they wake up, send nothing and end
    (within WAIT seconds; without the wake-up they would sleep on)."""
    base_url, state = stub
    llm = _llm(base_url, concurrency=3, requests_per_minute=1)
    before = set(threading.enumerate())
    workers: list[threading.Thread] = []
    for _i, _result in llm.complete_iter([_user(f"q{i}") for i in range(10)]):
        workers = _new_workers(before)
        break
    assert len(workers) == 3
    assert not _still_running(workers), "threads still wait for the rate limiter after the break"
    assert state.requests == 1, f"{state.requests - 1} requests were sent after the break"


# ---- used by the extraction passes -------------------------------------------------------------------------


def test_a_gem_build_keeps_concurrency_requests_in_flight(stub: tuple[str, Stub], tmp_path: Any) -> None:
    """Memory -> cache -> OpenAILLM.complete_iter: GEM's utility questions go to the server N at a time, every
    chunk gets its questions, and a second build is answered by the cache (no request)."""
    from fakes import HashEmbedder
    from gemrag import Memory, load_config

    base_url, state = stub
    gate = state.gate = threading.Event()

    def watch() -> None:
        """Three requests in flight at once, never more (see :meth:`Stub.assert_cap`); then let them all go."""
        try:
            state.assert_cap(3)
        finally:
            gate.set()

    words = [f"word{i}" for i in range(600)]
    config = load_config(None, {"strategy": "gem", "memory": {"chunk_tokens": 40}, "gem": {"questions": 2, "eigen": 0}})
    with Memory.open(tmp_path / "m", config, llm=_llm(base_url, concurrency=3), embedder=HashEmbedder()) as mem:
        mem.add_text(" ".join(words) + ".", "doc")
        with ThreadPoolExecutor(1) as watcher:
            seen = watcher.submit(watch)
            mem.index()
            seen.result(timeout=WAIT)
        chunks = mem.store.nodes("chunk")
        assert len(chunks) >= 6 and state.max_in_flight == 3 and state.requests == len(chunks)
        owners = {owner for _, owner, _ in mem.store.questions()}
        assert owners == {c.id for c in chunks}
        mem.store.reset_questions()
        mem.index()
        assert state.requests == len(chunks)  # the LLM cache answered every repeated prompt
