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
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "benchmarks")]

from bench_gem_build import corpus  # noqa: E402

from fakes import HashEmbedder  # noqa: E402
from standin_openai import StandIn, serve  # noqa: E402


def main() -> None:
    """Run the build against the stand-in server and print the figures."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=200)
    ap.add_argument("--slots", type=int, default=8)
    ap.add_argument("--latency", type=float, default=0.5, help="seconds per answer")
    ap.add_argument("--concurrency", type=int, default=8, help="llm.concurrency: requests gemrag keeps in flight")
    ap.add_argument("--ray-actors", type=int, default=0, help="Ray actors (a local cluster); 0: one process")
    ap.add_argument("--actor-concurrency", type=int, default=2, help="requests one Ray actor keeps in flight")
    args = ap.parse_args()
    from gemrag import Memory, load_config

    state = StandIn(args.slots, args.latency)
    server, url = serve(state)
    llm: dict[str, Any] = {"provider": "openai", "model": "standin", "base_url": url, "api_key": "x"}
    llm["concurrency"] = args.concurrency
    if args.ray_actors:
        llm |= {"ray": "local", "ray_actors": args.ray_actors, "ray_actor_concurrency": args.actor_concurrency}
    gem = {"chunk_tokens": 100, "questions": 5, "eigen": 2, "eigen_top": 5}
    cfg = load_config(None, {"llm": llm, "gem": gem, "progress": False})
    docs = corpus(args.chunks)
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
