"""Integration tests of the OpenAI-compatible backends against real HTTP servers on loopback.

* ``OpenAILLM`` talks to llama-cpp-python's OpenAI-compatible server (``python -m llama_cpp.server``)
  running the Qwen2.5-Coder-0.5B GGUF (skipped when llama-cpp-python[server] or the ``gemrag[small]``
  parts are missing).
* ``OpenAIEmbedder`` talks to a small stand-in ``/v1/embeddings`` server written with :mod:`http.server`
  that computes vectors with :class:`OnnxMiniLMEmbedder` — a real HTTP round trip through the openai SDK.
  (llama-cpp-python's server cannot serve sentence embeddings of a chat GGUF: it has no pooling option and
  Qwen2 GGUFs declare none, so it returns one vector per token.)
"""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gemrag.errors import ConfigError, GemragError, ModelNotAvailableError
from gemrag.models.base import LLM, Completion, Embedder
from gemrag.models.batch import CompletionRequest
from gemrag.models.llama.weights import resolve_gguf
from gemrag.models.onnx_embedder import OnnxMiniLMEmbedder
from gemrag.models.openai.backend import OpenAIEmbedder, OpenAILLM
from realparts import require_real

pytestmark = pytest.mark.integration

SERVER_START_TIMEOUT = 120.0
QUESTIONS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"questions": {"type": "array", "items": {"type": "string"}}},
    "required": ["questions"],
}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get_json(url: str, timeout: float = 2.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.loads(r.read())


@pytest.fixture(scope="module")
def small_gguf() -> Path:
    for mod in ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings"):
        if importlib.util.find_spec(mod) is None:
            require_real(f"llama-cpp-python[server] is not installed ({mod} missing)")
    try:
        return resolve_gguf("qwen2.5-coder-0.5b")
    except ModelNotAvailableError as e:
        require_real(str(e))


@contextmanager
def _running_llama_server(gguf: Path, log_path: Path, *extra: str) -> Iterator[tuple[str, str]]:
    """Start ``python -m llama_cpp.server`` on a free loopback port; yield (base_url, model name); stop it."""
    port = _free_port()
    cmd = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(gguf),
        "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", "2048",
        *extra,
    ]  # fmt: skip
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        models: Any = None
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {proc.returncode}:\n{log_path.read_text()[-3000:]}")
            try:
                models = _get_json(f"{base_url}/models")
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError, json.JSONDecodeError):
                time.sleep(0.5)
        if models is None:
            pytest.fail(f"llama_cpp.server did not answer within {SERVER_START_TIMEOUT:.0f} s")
        yield base_url, models["data"][0]["id"]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


@pytest.fixture(scope="module")
def llama_server(small_gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A running llama-cpp-python server with the 0.5B chat model; yields (base_url, model name)."""
    with _running_llama_server(small_gguf, tmp_path_factory.mktemp("llama_server") / "server.log") as server:
        yield server


def test_plain_completion(llama_server: tuple[str, str]) -> None:
    base_url, model = llama_server
    llm = OpenAILLM(model, base_url=base_url, json_mode="json_object", context_window=2048, timeout=120)
    assert isinstance(llm, LLM)
    assert llm.model_id == f"openai:{base_url}:{model}"
    out = llm.complete(
        [
            {"role": "system", "content": "You are a concise assistant."},
            {"role": "user", "content": "What is the capital of France? Answer in one word."},
        ],
        max_tokens=16,
        seed=1,
    )
    assert "paris" in out.text.lower()
    assert out.parsed is None
    assert out.usage.prompt_tokens > 10 and 0 < out.usage.completion_tokens <= 16
    assert out.usage.seconds > 0 and out.usage.calls == 1


def test_schema_constrained_completion(llama_server: tuple[str, str]) -> None:
    base_url, model = llama_server
    llm = OpenAILLM(model, base_url=base_url, json_mode="json_object", timeout=120)
    out = llm.complete(
        [
            {
                "role": "user",
                "content": "Text: 'Marie Curie won two Nobel prizes, in physics (1903) and chemistry (1911).'\n"
                "Write two questions this text answers, as JSON.",
            }
        ],
        schema=QUESTIONS_SCHEMA,
        max_tokens=160,
    )
    assert isinstance(out.parsed, dict), out.text
    assert set(out.parsed) == {"questions"}
    assert isinstance(out.parsed["questions"], list) and out.parsed["questions"]
    assert all(isinstance(q, str) for q in out.parsed["questions"])
    assert out.usage.completion_tokens > 0


def test_json_schema_mode_rejected_by_llama_cpp_python_server(llama_server: tuple[str, str]) -> None:
    """llama-cpp-python's server only knows response_format "text"/"json_object" (it answers HTTP 500 with a
    validation error): the error names the URL and suggests another json_mode."""
    base_url, model = llama_server
    llm = OpenAILLM(model, base_url=base_url, json_mode="json_schema", max_retries=0, timeout=60)
    try:
        out = llm.complete([{"role": "user", "content": "Say hi as JSON."}], schema=QUESTIONS_SCHEMA, max_tokens=40)
    except GemragError as e:
        assert base_url in str(e) and "HTTP" in str(e) and "json_mode" in str(e)
    else:  # a future server version may accept it; then it must honour the schema
        assert isinstance(out.parsed, dict), out.text


def test_prompt_mode_none(llama_server: tuple[str, str]) -> None:
    base_url, model = llama_server
    llm = OpenAILLM(model, base_url=base_url, json_mode="none", timeout=120)
    out = llm.complete(
        [{"role": "user", "content": "List one question about the Moon."}], schema=QUESTIONS_SCHEMA, max_tokens=80
    )
    assert out.text  # unconstrained: the small model may or may not produce valid JSON
    assert out.usage.prompt_tokens > 20  # the schema instruction was sent


def test_native_forced_tool_call(llama_server: tuple[str, str]) -> None:
    """Issue 10, item 4: the agent's last step as a native tool call on the real server. llama-cpp-python's
    server enforces a named ``tool_choice`` with a grammar from the function's parameters and answers with
    ``tool_calls``; the backend turns it into the canonical call the agent validates."""
    from gemrag.strategies.remem.agent import ToolHit, run_agent
    from gemrag.strategies.remem.agent_prompts import ANSWER, SEMANTIC

    base_url, model = llama_server
    llm = OpenAILLM(model, base_url=base_url, json_mode="json_object", timeout=120)
    assert llm.tool_calling == "native"

    def tools(name: str, arguments: dict[str, Any]) -> list[ToolHit]:
        return [ToolHit(1, "[8 May 2023] Caroline: I moved here from Sweden four years ago.", 0.8)]

    result = run_agent(llm, "Which country did Caroline move from?", tools, max_steps=2, fixed_tool=SEMANTIC)
    assert result.error is None, result.steps
    assert result.steps[-1]["tool"] == ANSWER and result.answer
    assert "sweden" in result.answer.lower()


def test_complete_iter_with_concurrency(llama_server: tuple[str, str]) -> None:
    """Issue 9, point 4: four structured requests, two in flight, against the real server: four parsed answers,
    each index once (llama-cpp-python's server may serve them one after another; the client must not care)."""
    base_url, model = llama_server
    llm = OpenAILLM(model, base_url=base_url, json_mode="json_object", context_window=2048, timeout=300, concurrency=2)
    facts = [
        "Marie Curie won two Nobel prizes, in physics (1903) and chemistry (1911).",
        "The Danube flows through ten countries and ends in the Black Sea.",
        "Ada Lovelace wrote the first published algorithm for Babbage's Analytical Engine.",
        "Mount Kilimanjaro, in Tanzania, is the highest mountain in Africa.",
    ]
    requests = [
        CompletionRequest(
            [{"role": "user", "content": f"Text: '{fact}'\nWrite two questions this text answers, as JSON."}],
            schema=QUESTIONS_SCHEMA,
            max_tokens=120,
        )
        for fact in facts
    ]
    t0 = time.monotonic()
    results = list(llm.complete_iter(requests))
    elapsed = time.monotonic() - t0
    assert sorted(i for i, _ in results) == [0, 1, 2, 3]
    for i, out in results:
        assert isinstance(out, Completion), f"request {i}: {out}"
        assert isinstance(out.parsed, dict) and isinstance(out.parsed.get("questions"), list), out.text
        assert all(isinstance(q, str) for q in out.parsed["questions"])
        assert out.usage.calls == 1 and out.usage.completion_tokens > 0
    print(f"complete_iter: 4 structured requests, concurrency 2, {elapsed:.1f} s")


def test_connection_refused_names_the_url() -> None:
    url = f"http://127.0.0.1:{_free_port()}/v1"
    llm = OpenAILLM("m", base_url=url, max_retries=0, timeout=5)
    with pytest.raises(GemragError, match=r"cannot connect .*127\.0\.0\.1"):
        llm.complete([{"role": "user", "content": "hi"}])
    emb = OpenAIEmbedder("m", base_url=url, max_retries=0, timeout=5, dim=3)
    with pytest.raises(GemragError, match=url.replace(".", r"\.")):
        emb.embed(["hi"])


def test_bad_json_mode() -> None:
    with pytest.raises(ConfigError):
        OpenAILLM("m", base_url="http://127.0.0.1:1/v1", json_mode="xml")  # type: ignore[arg-type]


def test_chat_gguf_embeddings_give_a_clear_error(small_gguf: Path, tmp_path: Path) -> None:
    """With --embedding, llama-cpp-python's server returns per-token vectors for a chat GGUF (no pooling)."""
    with _running_llama_server(small_gguf, tmp_path / "server.log", "--embedding", "true") as (base_url, model):
        emb = OpenAIEmbedder(model, base_url=base_url, max_retries=0, timeout=60)
        with pytest.raises(GemragError, match="one vector per token"):
            emb.embed(["hello world", "graph memory"])


# ---- embeddings through a stand-in server ------------------------------------------------------------


_EMBED_LOCK = threading.Lock()


class _EmbeddingHandler(BaseHTTPRequestHandler):
    embedder: OnnxMiniLMEmbedder
    requests: list[int]

    def log_message(self, format: str, *args: Any) -> None:  # silence the default stderr log
        pass

    def _send(self, code: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/v1/models":
            self._send(200, {"object": "list", "data": [{"id": "minilm", "object": "model", "owned_by": "test"}]})
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path != "/v1/embeddings":
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        if body.get("model") != "minilm":
            self._send(404, {"error": {"message": f"model {body.get('model')!r} not found", "type": "not_found"}})
            return
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        with _EMBED_LOCK:  # the client sends batches concurrently: count each one's tokens alone
            before = self.embedder.tokens_used
            vecs = self.embedder.embed(texts) * 2.5  # not unit length: the client must normalize
            used = self.embedder.tokens_used - before
            self.requests.append(len(texts))
        data = [{"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vecs)]
        data.reverse()  # out of order: the client must sort by index
        self._send(
            200,
            {"object": "list", "model": "minilm", "data": data, "usage": {"prompt_tokens": used, "total_tokens": used}},
        )


@pytest.fixture(scope="module")
def local_embedder() -> OnnxMiniLMEmbedder:
    return OnnxMiniLMEmbedder()


@pytest.fixture
def embedding_server(local_embedder: OnnxMiniLMEmbedder) -> Iterator[tuple[str, list[int]]]:
    requests: list[int] = []
    handler = type("Handler", (_EmbeddingHandler,), {"embedder": local_embedder, "requests": requests})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", requests
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_openai_embedder_round_trip(
    embedding_server: tuple[str, list[int]], local_embedder: OnnxMiniLMEmbedder
) -> None:
    base_url, requests = embedding_server
    emb = OpenAIEmbedder("minilm", base_url=base_url, batch_size=4, timeout=30)
    assert emb.model_id == f"openai:{base_url}:minilm"
    texts = [f"Note {i}: the meeting about {'budget ' * i}moved to Friday." for i in range(10)]
    v = emb.embed(texts)
    assert sorted(requests) == [2, 4, 4]  # three requests, sent concurrently (concurrency 4 by default)
    assert isinstance(emb, Embedder)  # after the first call: on Python < 3.12 isinstance reads .dim
    assert v.shape == (10, 384) and v.dtype == np.float32 and emb.dim == 384
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(v, local_embedder.embed(texts), atol=1e-5)
    assert emb.tokens_used == sum(local_embedder.count_tokens(t) + 2 for t in texts)
    assert emb.embed([]).shape == (0, 384)


def test_openai_embedder_discovers_dim_lazily(embedding_server: tuple[str, list[int]]) -> None:
    base_url, requests = embedding_server
    emb = OpenAIEmbedder("minilm", base_url=base_url)
    assert emb.dim == 384  # one probe request
    assert requests == [1]
    assert emb.embed([]).shape == (0, 384) and requests == [1]


def test_openai_embedder_dimension_mismatch(embedding_server: tuple[str, list[int]]) -> None:
    base_url, _ = embedding_server
    with pytest.raises(GemragError, match="384-dimensional"):
        OpenAIEmbedder("minilm", base_url=base_url, dim=768).embed(["x"])


def test_openai_embedder_unknown_model(embedding_server: tuple[str, list[int]]) -> None:
    base_url, _ = embedding_server
    with pytest.raises(GemragError, match="404.*not found"):
        OpenAIEmbedder("nope", base_url=base_url, max_retries=0).embed(["x"])
