"""A stand-in OpenAI-compatible server on loopback with a fixed number of slots and a fixed latency per answer.

Used by ``benchmarks/served_model.py`` and the Ray tests (``tests/models/test_ray_pool.py``): ``http.server`` with
one thread per connection answers ``/v1/chat/completions`` after ``latency`` seconds, serving at most ``slots``
requests at once (a semaphore: more wait in line, as a llama.cpp server with that many slots would), with the
unit tests' scripted answers (:class:`fakes.ScriptedLLM`). It records every request body, so repeated calls (a
body answered twice) can be counted.

A request with ``"stream": true`` is answered as the OpenAI API streams: Server-Sent Events of
``chat.completion.chunk`` objects, one per word of the answer, a last chunk with ``finish_reason``, a usage chunk
when ``stream_options.include_usage`` asks for it, then ``data: [DONE]``. A client that closes the connection
mid-answer is counted in ``aborted`` (its remaining words are not sent).

A test can hold every stream after its first word until it sets :attr:`StandIn.gate` (as the stub server of
``tests/models/test_openai_concurrency.py`` holds requests): meanwhile the server watches the connection, and a
client that closes it sets :attr:`StandIn.disconnected` and ends the stream there. So "the client closed the
connection mid-answer" is seen by the server while the answer is certainly unfinished, whatever the machine's load.
"""

from __future__ import annotations

import json
import re
import select
import socket
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from fakes import ScriptedLLM

HOLD = 60.0
"""Seconds a held stream waits for its gate at most (reached only when a test never releases it)."""


class StandIn:
    """The server's state: the slots, what it was asked (``bodies``: request JSON -> times asked), how many were
    served at once, and the gate holding streams (``gate``, ``disconnected``: see the module docstring)."""

    def __init__(self, slots: int, latency: float) -> None:
        self.slots = threading.BoundedSemaphore(slots)
        self.latency = latency
        #: when not None, every stream, once its first word is sent, waits until it is set (at most HOLD seconds)
        #: or until its client closes the connection
        self.gate: threading.Event | None = None
        #: set when the client of a held stream (see :attr:`gate`) closed the connection
        self.disconnected = threading.Event()
        self.streamed = 0  # streams sent to their end
        self.aborted = 0  # streams whose client went away before their end
        self.lock = threading.Lock()
        self.bodies: Counter[str] = Counter()
        self.in_flight = 0
        self.max_in_flight = 0
        self.llm = ScriptedLLM()
        self.ended = threading.Condition(self.lock)  # notified when a stream ends, sent whole or aborted

    def streams_ended(self, timeout: float = 10.0) -> tuple[int, int]:
        """``(streamed, aborted)`` once at least one stream has ended, waiting up to ``timeout`` seconds: the client
        reads a stream's last byte before the server's thread counts it, so a test reading the counts at once races."""
        with self.ended:
            self.ended.wait_for(lambda: self.streamed + self.aborted > 0, timeout)
            return self.streamed, self.aborted

    def text(self, body: dict[str, Any]) -> str:
        """The scripted answer to a chat completion request: wait for a slot, hold it ``latency`` seconds."""
        with self.lock:
            self.bodies[json.dumps(body, sort_keys=True)] += 1
        with self.slots:
            with self.lock:
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
            time.sleep(self.latency)
            with self.lock:
                self.in_flight -= 1
                return self.llm.complete(body["messages"], max_tokens=body.get("max_tokens", 256)).text

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        """One chat completion (:meth:`text`) as the API's JSON response."""
        text = self.text(body)
        return {
            "id": "standin",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "standin"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": USAGE,
        }

    def chunks(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """One streamed chat completion (:meth:`text`) as the API's chunks: the role, one chunk per word (with the
        spaces before it), the finish reason, and the usage when ``stream_options.include_usage`` is set."""
        model = body.get("model", "standin")

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            choice = {"index": 0, "delta": delta, "finish_reason": finish}
            return {
                "id": "standin",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": model,
                "choices": [choice],
            }

        words = re.findall(r"\s*\S+", self.text(body))
        out = [chunk({"role": "assistant", "content": ""})] + [chunk({"content": w}) for w in words]
        out.append(chunk({}, "stop"))
        if (body.get("stream_options") or {}).get("include_usage"):
            out.append({"id": "standin", "object": "chat.completion.chunk", "created": 0, "model": model,
                        "choices": [], "usage": USAGE})  # fmt: skip
        return out


USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
"""The usage every answer reports."""


def serve(state: StandIn) -> tuple[ThreadingHTTPServer, str]:
    """Start the stand-in server on a free loopback port; returns it and its base URL."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if body.get("stream"):
                self.stream(body)
                return
            data = json.dumps(state.answer(body)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def client_gone(self) -> bool:
            """Wait while :attr:`StandIn.gate` is unset (at most :data:`HOLD` seconds), watching the connection;
            True (and :attr:`StandIn.disconnected` set) as soon as the client closes it, False once released."""
            gate, deadline = state.gate, time.monotonic() + HOLD
            while gate is not None and not gate.is_set() and time.monotonic() < deadline:
                # the request was read whole: the socket turns readable only when the client closes it (EOF or reset)
                if select.select([self.connection], [], [], 0.02)[0]:
                    try:
                        gone = self.connection.recv(1, socket.MSG_PEEK) == b""
                    except OSError:
                        gone = True
                    if gone:
                        state.disconnected.set()
                        return True
                    gate.wait(max(0.0, deadline - time.monotonic()))  # the client sent more: stop watching
            return False

        def stream(self, body: dict[str, Any]) -> None:
            chunks = state.chunks(body)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")  # the body ends when the connection does
            self.end_headers()
            self.close_connection = True
            try:
                for i, chunk in enumerate(chunks):
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                    if i == 1 and self.client_gone():  # held after the first word (the role came first)
                        raise BrokenPipeError("the client closed the connection while the stream was held")
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                with state.ended:
                    state.aborted += 1
                    state.ended.notify_all()
                return
            with state.ended:
                state.streamed += 1
                state.ended.notify_all()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"
