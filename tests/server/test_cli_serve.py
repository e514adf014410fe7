"""``gemrag serve``: the command starts a real server process (API key honoured), refuses to serve a
non-loopback host without keys, says when it serves without keys, and reports bad key files in one line."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from typer.testing import CliRunner

from gemrag import cli
from gemrag.cli.serve import is_loopback
from paths import REPO
from serverhelp import free_port

SRC = REPO / "src"


def test_is_loopback() -> None:
    assert all(is_loopback(h) for h in ["127.0.0.1", "127.8.0.1", "::1", "localhost"])
    assert not any(is_loopback(h) for h in ["0.0.0.0", "::", "192.168.1.4", "example.org"])


def test_refuses_an_open_public_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[dict[str, Any]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: started.append(kw))
    result = CliRunner().invoke(cli.app, ["serve", "--memory", str(tmp_path), "--host", "0.0.0.0"])
    assert result.exit_code == 2 and "refusing to serve 0.0.0.0 without API keys" in result.output
    assert started == []
    result = CliRunner().invoke(cli.app, ["serve", "--memory", str(tmp_path / "m")])
    assert result.exit_code == 0, result.output
    assert "no API keys configured" in result.output and "loopback only" in result.output
    assert started == [{"host": "127.0.0.1", "port": 8765, "log_level": "info"}]
    ok = ["serve", "--memory", str(tmp_path / "m"), "--host", "0.0.0.0", "--api-key", "k", "--port", "9001"]
    result = CliRunner().invoke(cli.app, ok)
    assert result.exit_code == 0 and "1 API key(s) configured" in result.output
    assert started[-1]["host"] == "0.0.0.0" and started[-1]["port"] == 9001


def test_missing_serve_extra_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A base install may have FastAPI and uvicorn (other packages pull them) but not python-multipart, which
    FastAPI only asks for, with a RuntimeError, when the upload route is defined."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "python_multipart" else real(name, *a)
    )
    result = CliRunner().invoke(cli.app, ["serve", "--memory", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert "pip install 'gemrag[serve]'" in result.output and "python_multipart" in result.output


def test_bad_key_file(tmp_path: Path) -> None:
    (tmp_path / "keys.toml").write_text('k = "alpha"\n', encoding="utf-8")
    result = CliRunner().invoke(
        cli.app, ["serve", "--memory", str(tmp_path), "--api-keys", str(tmp_path / "keys.toml")]
    )
    assert result.exit_code == 2 and "must map each key to a list of namespace names" in result.output
    result = CliRunner().invoke(cli.app, ["serve", "--memory", str(tmp_path), "--api-keys", str(tmp_path / "no.json")])
    assert result.exit_code == 2 and "cannot read the API key file" in result.output


def test_serve_process(tmp_path: Path) -> None:
    port = free_port()
    keys = tmp_path / "keys.json"
    keys.write_text('{"k-alpha": ["alpha"]}', encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(SRC), "HOME": os.environ.get("HOME", str(tmp_path))}
    cmd = [sys.executable, "-m", "gemrag", "serve", "--memory", str(tmp_path / "root"), "--port", str(port)]
    proc = subprocess.Popen([*cmd, "--api-keys", str(keys)], env=env, stderr=subprocess.PIPE, text=True)
    try:
        url, deadline = f"http://127.0.0.1:{port}", time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/v1/health").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.2)
        body = {"documents": [{"text": "Alpha's first note.", "title": "note"}]}
        wait = 120.0  # httpx's default 5 s timed out on a loaded machine (the first add creates the memory)
        assert httpx.post(f"{url}/v1/namespaces/alpha/documents", json=body, timeout=wait).status_code == 401
        key = {"X-API-Key": "k-alpha"}
        r = httpx.post(f"{url}/v1/namespaces/alpha/documents", json=body, headers=key, timeout=wait)
        assert r.status_code == 201 and (tmp_path / "root" / "alpha" / "memory.sqlite").is_file()
        assert httpx.get(f"{url}/openapi.json", timeout=wait).json()["info"]["title"] == "gemrag"
    finally:
        proc.terminate()
        _, stderr = proc.communicate(timeout=30)
    assert "1 API key(s) configured" in stderr and f"http://127.0.0.1:{port}" in stderr
