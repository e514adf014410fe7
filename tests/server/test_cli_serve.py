"""``gemrag serve``: the command starts a real server process (API key honoured), refuses to serve a
non-loopback host without keys, says when it serves without keys, and reports bad key files in one line; the shared
options (``--set``, the model flags, the configured memory) reach the served memories."""

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

from fakes import HashEmbedder, ScriptedLLM
from gemrag import cli
from gemrag.cli.serve import is_loopback
from gemrag.config import load_config
from gemrag.memory import Memory
from paths import REPO
from serverhelp import free_port, running, wait_job

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


def _served(args: list[str], monkeypatch: pytest.MonkeyPatch) -> Any:
    """The app ``gemrag serve ARGS`` would run (uvicorn replaced), over the hash embedder and scripted LLMs, each LLM
    recording the settings it was built from in ``app.state.built``."""
    apps: list[Any] = []
    built: list[Any] = []

    def build_llm(settings: Any, cache_dir: Any = None) -> ScriptedLLM:
        built.append(settings)
        return ScriptedLLM()

    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: apps.append(app))
    monkeypatch.setattr("gemrag.server.namespaces.build_llm", build_llm)
    monkeypatch.setattr("gemrag.server.namespaces.build_embedder", lambda settings: HashEmbedder())
    result = CliRunner().invoke(cli.app, ["serve", *args])
    assert result.exit_code == 0, result.output
    [app] = apps
    app.state.built = built
    return app


def _ask(app: Any) -> dict[str, Any]:
    """Add a document to namespace ``ns`` of ``app``, build it (the served default strategy) and ask about it."""
    with running(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        body = {"documents": [{"text": "Amos lit the lamp of the lighthouse every night.", "title": "lamp"}]}
        assert client.post("/v1/namespaces/ns/documents", json=body).status_code == 201
        job = client.post("/v1/namespaces/ns/index", json={})
        assert job.status_code == 202, job.text
        assert wait_job(client, "ns", job.json()["id"])["status"] == "succeeded"
        r = client.post("/v1/namespaces/ns/ask", json={"question": "Who lit the lamp?", "budget": 1})
        assert r.status_code == 200, r.text
        return dict(r.json())


def test_serve_opens_the_memories_with_the_set_items_and_model_flags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``gemrag serve`` takes ``--set`` and the model flags as ``index`` and ``ask`` do, and the namespaces' memories
    are opened with them: ``--set answer.cite=false`` makes the served answers uncited, ``--llm-model`` is the model
    the server builds, ``--strategy`` the namespaces' default."""
    base = ["--memory", str(tmp_path / "cited"), "--strategy", "dense"]
    cited = _served(base, monkeypatch)
    answer = _ask(cited)
    assert (
        answer["cited"] == [1]
        and answer["text"] == "A free-form answer [1]."
        and answer["hits"][0]["strategy"] == "dense"
    )
    assert [s.model for s in cited.state.built] == ["qwen2.5-coder-1.5b"]  # the configuration's default
    flags = ["--memory", str(tmp_path / "plain"), "--strategy", "dense", "--llm-model", "qwen2.5-coder-0.5b"]
    plain = _served([*flags, "--set", "answer.cite=false"], monkeypatch)
    answer = _ask(plain)
    assert answer["cited"] == [] and answer["citations"] == [] and answer["text"] == "A free-form answer."
    assert [s.model for s in plain.state.built] == ["qwen2.5-coder-0.5b"]
    assert (tmp_path / "plain" / "ns" / "memory.sqlite").is_file()  # the namespace's memory, under --memory


def test_serve_takes_the_configured_memory_and_refuses_a_memory_as_its_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without --memory the root is GEMRAG_MEMORY (or memory in gemrag.toml), as for every command; a directory
    that is a memory itself is refused in one line (its namespaces would be nested inside it)."""
    monkeypatch.setenv("GEMRAG_MEMORY", str(tmp_path / "root"))
    app = _served([], monkeypatch)
    assert app.state.namespaces.path("notes") == tmp_path / "root" / "notes"
    with Memory.open(tmp_path / "single", load_config(None), llm=ScriptedLLM(), embedder=HashEmbedder()):
        pass
    result = CliRunner().invoke(cli.app, ["serve", "--memory", str(tmp_path / "single")])
    assert result.exit_code == 2 and result.stderr.splitlines() == [
        f"error: --memory {tmp_path / 'single'} is a memory itself; gemrag serve keeps one memory per namespace "
        "under it (DIR/NAMESPACE/): give a directory to hold them"
    ]
