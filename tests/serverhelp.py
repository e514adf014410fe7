"""A real gemrag HTTP server on loopback for tests: uvicorn serving :func:`gemrag.server.create_app` in a thread
on a free port, and job pollers (over HTTP, and of a :class:`~gemrag.server.jobs.JobManager` itself)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI

from gemrag.server.jobs import FINISHED, JobManager


def free_port() -> int:
    """A TCP port nobody listens on at the moment (the kernel's pick)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def running(app: FastAPI) -> Iterator[str]:
    """Serve ``app`` with uvicorn on 127.0.0.1 in a thread; yields its base URL, stops it afterwards."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        app.state.jobs.wait(30)


def wait_job(client: httpx.Client, ns: str, job_id: str, timeout: float = 120.0) -> dict[str, Any]:
    """Poll ``GET /v1/namespaces/{ns}/jobs/{job_id}`` until the job has finished; its last state."""
    deadline = time.monotonic() + timeout
    while True:
        r = client.get(f"/v1/namespaces/{ns}/jobs/{job_id}")
        assert r.status_code == 200, r.text
        job = r.json()
        if job["status"] in FINISHED:
            return job
        if time.monotonic() > deadline:
            raise TimeoutError(f"job {job_id} still {job['status']} after {timeout} s: {job}")
        time.sleep(0.05)


def job_ended(manager: JobManager, namespace: str, job_id: str, timeout: float = 60.0) -> dict[str, Any]:
    """The job's snapshot (:meth:`JobManager.snapshot`) once it has ended (its status in
    :data:`gemrag.server.jobs.FINISHED`), polled for at most ``timeout`` seconds (reached only when it never ends).

    Raises:
        AssertionError: the job had not ended after ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    while (snap := manager.snapshot(namespace, job_id))["status"] not in FINISHED:
        assert time.monotonic() < deadline, f"job {job_id} still {snap['status']} after {timeout} s"
        time.sleep(0.01)
    return snap
