"""A GEM build against a served model that answers many requests at once (issue 28, point 5; a script that prints
figures).

A stand-in OpenAI-compatible server on loopback (``http.server``, one thread per connection) answers
``/v1/chat/completions`` after ``--latency`` seconds with at most ``--slots`` requests being served at once (a
semaphore: more wait in line, as a llama.cpp server with that many slots or a vLLM batch would), with the unit
tests' scripted answers (``tests/fakes.py``: utility questions from the passage's sentences, summaries from its
first sentences). gemrag builds GEM over ``--chunks`` chunks (copies of the shipped QuALITY story, see
``bench_gem_build.py``) with the ``openai`` LLM provider and ``llm.concurrency = --concurrency``; the embedder
is the tests' hashed bag of words (no model). Prints the LLM items, the wall time of the build's LLM phases
against the ideal ``items x latency / slots``, the most requests in flight, and the repeated calls (requests whose
body the server had already answered):

    python benchmarks/served_model.py --chunks 200 --slots 8 --latency 0.5 --concurrency 8

With ``--endpoint URL --model NAME`` the build goes to a real OpenAI-compatible server instead (e.g. ``python -m
llama_cpp.server`` on loopback) through a counting relay on loopback (it forwards each request unchanged and
records its body, the most requests in flight and the usage tokens of each answer); the corpus is then an excerpt
of the story's first paragraphs, about ``--chunks`` chunks (one story copy is 66), and the figures add the
completion tokens per second of the LLM phases:

    python benchmarks/served_model.py --endpoint http://127.0.0.1:8000/v1 --model qwen2.5-coder-0.5b \
        --chunks 18 --concurrency 4
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "benchmarks")]

from bench_gem_build import STORY, corpus  # noqa: E402

from fakes import HashEmbedder  # noqa: E402
from standin_openai import StandIn, serve  # noqa: E402


class Relay:
    """A counting pass-through to a real OpenAI-compatible endpoint: every POST is forwarded unchanged to
    ``endpoint`` (same path below ``/v1``) and its body, the requests in flight and the answer's usage tokens are
    recorded (the same ``bodies`` and ``max_in_flight`` as :class:`standin_openai.StandIn`)."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint.rstrip("/")
        self.lock = threading.Lock()
        self.bodies: Counter[str] = Counter()
        self.in_flight = 0
        self.max_in_flight = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0

    def forward(self, path: str, raw: bytes) -> tuple[int, bytes]:
        """Send one request body to the endpoint; returns its HTTP status and answer body."""
        with self.lock:
            self.bodies[json.dumps(json.loads(raw), sort_keys=True)] += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        url = self.endpoint + path.removeprefix("/v1")
        req = urllib.request.Request(url, data=raw, headers={"Content-Type": "application/json"}, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=600) as resp:
                status, data = resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            status, data = exc.code, exc.read()
        finally:
            with self.lock:
                self.in_flight -= 1
        usage = json.loads(data).get("usage") or {} if status == 200 else {}
        with self.lock:
            self.prompt_tokens += int(usage.get("prompt_tokens", 0))
            self.completion_tokens += int(usage.get("completion_tokens", 0))
        return status, data


def relay(state: Relay) -> tuple[ThreadingHTTPServer, str]:
    """Start the relay on a free loopback port; returns it and its base URL."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            status, data = state.forward(self.path, self.rfile.read(int(self.headers["Content-Length"])))
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


def excerpt(n_chunks: int, words_per_chunk: int = 70) -> list[str]:
    """The story's first paragraphs, about ``n_chunks`` chunks of T = 100 tokens (~70 words each), one document."""
    out: list[str] = []
    words = 0
    for p in (p.strip() for p in STORY.read_text(encoding="utf-8").split("\n\n") if p.strip()):
        if words >= n_chunks * words_per_chunk:
            break
        out.append(p)
        words += len(p.split())
    return ["\n\n".join(out)]


def main() -> None:
    """Run the build against the stand-in server and print the figures."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=200)
    ap.add_argument("--slots", type=int, default=8)
    ap.add_argument("--latency", type=float, default=0.5, help="seconds per answer")
    ap.add_argument("--concurrency", type=int, default=8, help="llm.concurrency: requests gemrag keeps in flight")
    ap.add_argument("--ray-actors", type=int, default=0, help="Ray actors (a local cluster); 0: one process")
    ap.add_argument("--actor-concurrency", type=int, default=2, help="requests one Ray actor keeps in flight")
    ap.add_argument("--endpoint", help="a real OpenAI-compatible base URL (…/v1) instead of the stand-in server")
    ap.add_argument("--model", default="standin", help="the model name the endpoint serves (with --endpoint)")
    ap.add_argument(
        "--json-mode",
        default="json_object",
        help="llm.json_mode with --endpoint (llama_cpp.server 0.3 accepts json_object with a schema, not json_schema)",
    )
    args = ap.parse_args()
    from gemrag import Memory, load_config

    state: StandIn | Relay = Relay(args.endpoint) if args.endpoint else StandIn(args.slots, args.latency)
    server, url = relay(state) if isinstance(state, Relay) else serve(state)
    llm: dict[str, Any] = {"provider": "openai", "model": args.model, "base_url": url, "api_key": "x"}
    llm["concurrency"] = args.concurrency
    if args.endpoint:
        llm["json_mode"] = args.json_mode
    if args.ray_actors:
        llm |= {"ray": "local", "ray_actors": args.ray_actors, "ray_actor_concurrency": args.actor_concurrency}
    gem = {"questions": 5, "eigen": 2, "eigen_top": 5}
    cfg = load_config(None, {"llm": llm, "memory": {"chunk_tokens": 100}, "gem": gem, "progress": False})
    docs = excerpt(args.chunks) if args.endpoint else corpus(args.chunks)
    with tempfile.TemporaryDirectory() as tmp, Memory.open(Path(tmp) / "mem", cfg, embedder=HashEmbedder()) as mem:
        for i, text in enumerate(docs):
            mem.add_text(text, title=f"copy {i}")
        pool = getattr(mem.llm(), "inner", None)  # the openai SDK's import and client (~7 s on a loaded machine)
        if args.ray_actors:  # and the actors up (each builds its backend once), before the clock starts
            import ray

            ray.get([actor.pid.remote() for actor in pool.actors])
        start = time.perf_counter()
        report = mem.index()
        wall = time.perf_counter() - start
        phases = mem.stats()["strategy_report"].get("phase_seconds", {})
    server.shutdown()
    items = sum(state.bodies.values())
    llm_s = phases.get("utility_questions", 0.0) + phases.get("summaries", 0.0)
    if isinstance(state, Relay):
        print(
            f"chunks {report.chunks}, LLM requests {items} (distinct {len(state.bodies)}, repeated "
            f"{items - len(state.bodies)}), most in flight {state.max_in_flight}, concurrency {args.concurrency}"
        )
        print(
            f"build {wall:.1f} s, of which LLM phases (utility questions + summaries) {llm_s:.1f} s; tokens: prompt "
            f"{state.prompt_tokens}, completion {state.completion_tokens}; completion tokens / s of the LLM phases "
            f"{state.completion_tokens / max(llm_s, 1e-9):.1f}; s per request {llm_s / max(items, 1):.2f}"
        )
        return
    ideal = items * args.latency / args.slots
    print(
        f"chunks {report.chunks}, LLM requests {items} (distinct {len(state.bodies)}, repeated "
        f"{items - len(state.bodies)}), most in flight {state.max_in_flight} of {args.slots} slots"
    )
    print(
        f"build {wall:.1f} s, of which LLM phases (utility questions + summaries) {llm_s:.1f} s; ideal "
        f"{items} x {args.latency} s / {args.slots} = {ideal:.1f} s; LLM phases / ideal = {llm_s / ideal:.2f}, "
        f"whole build / ideal = {wall / ideal:.2f}"
    )


if __name__ == "__main__":
    main()
