"""``gemrag serve`` on a PostgreSQL memory: two server processes on two ports share one memory (namespace =
schema): a document added and indexed through one is retrieved through the other."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from backends import drop_schemas, new_schema, schema_url
from paths import REPO
from serverhelp import free_port, wait_job

SRC = REPO / "src"
TEXT = "The lighthouse keeper of Ardnamurchan painted the lamp room green every spring."


def _start(root: str, tmp_path: Path) -> tuple[subprocess.Popen[str], str]:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(SRC), "HOME": os.environ.get("HOME", str(tmp_path))}
    cmd = [sys.executable, "-m", "gemrag", "serve", "--memory", root, "--port", str(port)]
    proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
    url, deadline = f"http://127.0.0.1:{port}", time.monotonic() + 90
    while True:
        try:
            if httpx.get(f"{url}/v1/health").status_code == 200:
                return proc, url
        except httpx.TransportError:
            pass
        assert proc.poll() is None and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.2)


@pytest.mark.integration  # the index job embeds with the real MiniLM
def test_two_servers_share_one_postgresql_memory(postgres_url: str, tmp_path: Path) -> None:
    prefix = new_schema("srv")
    root = schema_url(postgres_url, prefix)
    procs = []
    try:
        (a, url_a), (b, url_b) = _start(root, tmp_path), _start(root, tmp_path)
        procs = [a, b]
        wait = 120.0
        with httpx.Client(base_url=url_a, timeout=wait) as one, httpx.Client(base_url=url_b, timeout=wait) as two:
            body = {"documents": [{"text": TEXT, "title": "lighthouse"}]}
            assert one.post("/v1/namespaces/notes/documents", json=body).status_code == 201
            job = one.post("/v1/namespaces/notes/index", json={"strategy": "dense"}).json()
            assert wait_job(one, "notes", job["id"], timeout=wait)["status"] == "succeeded"
            assert two.get("/v1/namespaces").json()["namespaces"] == ["notes"]
            r = two.post(
                "/v1/namespaces/notes/retrieve", json={"question": "What colour is the lamp room?", "strategy": "dense"}
            )
            assert r.status_code == 200, r.text
            assert r.json()["hits"][0]["text"] == TEXT
    finally:
        for proc in procs:
            proc.terminate()
            proc.communicate(timeout=30)
        drop_schemas(postgres_url, [f"{prefix}_notes"])
