"""Load on ``gemrag serve``: concurrent retrieve calls while index jobs run; prints requests/s and latencies.

Starts ``gemrag serve`` as a child process on a free loopback port (or uses ``--url``), with the real MiniLM
embedder and the ``dense`` strategy, over a temporary root. Setup: namespace ``bench`` gets the shipped QuALITY
story and is indexed once. Then, for ``--seconds``, ``--clients`` threads each send retrieve requests back to back
(questions about the story, budget ``--budget``) while a monitor thread keeps an index job running (``--idle``:
none, a baseline): each time one finishes it adds another copy of the story (its paragraphs tagged ``[copy i]``, so
a new document of ~60 new chunks to embed) and starts the next job. Reported: requests, errors (non-200),
requests/s, latency p50/p95/p99 and max (ms, wall time per request seen by the client), the share of requests sent
while an index job was running, and the index jobs finished. Bounded: the run stops after ``--seconds``; no figure
is asserted.

    python benchmarks/serve_load.py --seconds 20 --clients 8
    python benchmarks/serve_load.py --memory "postgresql://me@db/app?schema=load"   # namespaces as schemas load_<ns>

``--memory`` is the server's root: a directory (default: a temporary one) or a PostgreSQL URL whose schema is the
prefix of the namespaces' schemas (give a prefix no other memory uses: namespace ``bench`` is created in it).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
STORY = REPO / "examples" / "quality" / "lost_in_translation.txt"
QUESTIONS = [
    "Who gave Korvin lessons in the local language every night?",
    "What did Didyak of the Tr'en say when he introduced himself?",
    "Why was Korvin's door left unlocked?",
    "What did the Ruler want to learn from Korvin?",
    "How did Korvin escape from the prison?",
    "What language do the natives speak?",
]
NS = "bench"


def free_port() -> int:
    """A TCP port nobody listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(root: str | Path) -> tuple[subprocess.Popen[bytes], str]:
    """``gemrag serve`` (dense, no keys, loopback) over ``root`` (a directory or a PostgreSQL URL) in a child
    process; its URL once it answers."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    cmd = [sys.executable, "-m", "gemrag", "serve", "--memory", str(root), "--port", str(port), "--strategy", "dense"]
    proc = subprocess.Popen(cmd, env=env, stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    url, deadline = f"http://127.0.0.1:{port}", time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{url}/v1/health").status_code == 200:
                return proc, url
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("gemrag serve did not start")
        time.sleep(0.2)


def story_copy(i: int) -> str:
    """The story with each paragraph tagged ``[copy i]`` (i = 0: the story itself)."""
    text = STORY.read_text(encoding="utf-8")
    return text if i == 0 else "\n\n".join(f"[copy {i}] {p}" for p in text.split("\n\n") if p.strip())


def wait_job(client: httpx.Client, job_id: str) -> dict[str, Any]:
    """Poll the job until it has finished; its final state."""
    while True:
        job = client.get(f"/v1/namespaces/{NS}/jobs/{job_id}").json()
        if job["status"] in ("succeeded", "failed"):
            return job
        time.sleep(0.1)


def main() -> None:
    """Parse the arguments, run the load, print the figures (and write them as JSON with ``--out``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a running gemrag serve (default: start one)")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of the load phase")
    parser.add_argument("--clients", type=int, default=8, help="concurrent client threads")
    parser.add_argument("--budget", type=int, default=5, help="hits per retrieval")
    parser.add_argument("--idle", action="store_true", help="no index job during the load (a baseline)")
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    parser.add_argument("--memory", help="the server's root: a directory or postgresql://...?schema=PREFIX")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="gemrag-serve-load-") as tmp:
        proc, url = (None, args.url) if args.url else start_server(args.memory or Path(tmp) / "root")
        try:
            figures = run(url, args.seconds, args.clients, args.budget, index=not args.idle)
        finally:
            if proc is not None:
                proc.terminate()
                proc.wait(30)
    figures["memory"] = "postgresql" if str(args.memory or "").startswith("postgres") else "sqlite"
    figures["load_average"] = os.getloadavg()[0]
    for key, value in figures.items():
        print(f"{key:>28}: {value}")
    if args.out:
        args.out.write_text(json.dumps(figures, indent=2), encoding="utf-8")


def run(url: str, seconds: float, clients: int, budget: int, *, index: bool = True) -> dict[str, Any]:
    """The load phase against ``url`` (see the module docstring; ``index`` False: no index job); the figures."""
    admin = httpx.Client(base_url=url, timeout=120)
    admin.post(f"/v1/namespaces/{NS}/documents", json={"documents": [{"text": story_copy(0), "title": "story"}]})
    first = wait_job(admin, admin.post(f"/v1/namespaces/{NS}/index", json={"strategy": "dense"}).json()["id"])
    assert first["status"] == "succeeded", first

    stop, indexing = threading.Event(), threading.Event()
    jobs: list[dict[str, Any]] = []

    def keep_indexing() -> None:
        copy = 1
        while not stop.is_set():
            body = {"documents": [{"text": story_copy(copy), "title": f"story copy {copy}"}]}
            admin.post(f"/v1/namespaces/{NS}/documents", json=body).raise_for_status()
            job = admin.post(f"/v1/namespaces/{NS}/index", json={"strategy": "dense"}).json()
            indexing.set()
            jobs.append(wait_job(admin, job["id"]))
            indexing.clear()
            copy += 1

    latencies: list[list[float]] = [[] for _ in range(clients)]
    during: list[int] = [0] * clients
    errors: list[int] = [0] * clients

    def client_loop(k: int) -> None:
        with httpx.Client(base_url=url, timeout=60) as client:
            i = k
            while not stop.is_set():
                busy = indexing.is_set()
                body = {"question": QUESTIONS[i % len(QUESTIONS)], "budget": budget, "strategy": "dense"}
                t0 = time.perf_counter()
                r = client.post(f"/v1/namespaces/{NS}/retrieve", json=body)
                latencies[k].append(time.perf_counter() - t0)
                during[k] += busy
                errors[k] += r.status_code != 200
                i += 1

    monitor = threading.Thread(target=keep_indexing, daemon=True)
    if index:
        monitor.start()
        while not indexing.is_set():
            time.sleep(0.01)
    threads = [threading.Thread(target=client_loop, args=(k,)) for k in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    if index:
        monitor.join(300)
    admin.close()

    flat = sorted(x for xs in latencies for x in xs)
    q = statistics.quantiles(flat, n=100) if len(flat) >= 2 else flat * 99
    return {
        "clients": clients,
        "seconds": round(elapsed, 2),
        "requests": len(flat),
        "errors (non-200)": sum(errors),
        "requests/s": round(len(flat) / elapsed, 1),
        "p50 ms": round(q[49] * 1000, 1),
        "p95 ms": round(q[94] * 1000, 1),
        "p99 ms": round(q[98] * 1000, 1),
        "max ms": round(flat[-1] * 1000, 1) if flat else None,
        "share during an index job": round(sum(during) / max(len(flat), 1), 3),
        "index jobs finished": sum(j["status"] == "succeeded" for j in jobs),
        "index jobs failed": sum(j["status"] == "failed" for j in jobs),
        "chunks at the end": jobs[-1]["report"]["chunks"] if jobs and jobs[-1]["report"] else None,
    }


if __name__ == "__main__":
    main()
