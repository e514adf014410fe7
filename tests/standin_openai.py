"""A stand-in OpenAI-compatible server on loopback with a fixed number of slots and a fixed latency per answer.

Used by ``benchmarks/served_model.py`` and the Ray tests (``tests/models/test_ray_pool.py``): ``http.server`` with
one thread per connection answers ``/v1/chat/completions`` after ``latency`` seconds, serving at most ``slots``
requests at once (a semaphore: more wait in line, as a llama.cpp server with that many slots would), with the
unit tests' scripted answers (:class:`fakes.ScriptedLLM`). It records every request body, so repeated calls (a
body answered twice) can be counted.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from fakes import ScriptedLLM


class StandIn:
    """The server's state: the slots, what it was asked (``bodies``: request JSON -> times asked), how many were
    served at once."""

    def __init__(self, slots: int, latency: float) -> None:
        self.slots = threading.BoundedSemaphore(slots)
        self.latency = latency
        self.lock = threading.Lock()
        self.bodies: Counter[str] = Counter()
        self.in_flight = 0
        self.max_in_flight = 0
        self.llm = ScriptedLLM()

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        """One chat completion: wait for a slot, hold it ``latency`` seconds, answer with the scripted text."""
        with self.lock:
            self.bodies[json.dumps(body, sort_keys=True)] += 1
        with self.slots:
            with self.lock:
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
            time.sleep(self.latency)
            with self.lock:
                self.in_flight -= 1
                text = self.llm.complete(body["messages"], max_tokens=body.get("max_tokens", 256)).text
        return {
            "id": "standin",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "standin"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }


def serve(state: StandIn) -> tuple[ThreadingHTTPServer, str]:
    """Start the stand-in server on a free loopback port; returns it and its base URL."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            data = json.dumps(state.answer(body)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"
