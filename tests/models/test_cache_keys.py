"""Cache keys cannot collide (issue 7, point 5): everything that changes an answer is in the key.

LLM keys carry the backend's ``cache_identity`` (GGUF fingerprint, n_ctx, chat format, JSON mode...), embedding
keys the embedder's (ONNX file hash, pooling, normalization, truncation). Backends without one keep the old key.
The ONNX file is checked against a sha256 pinned in gemrag.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fakes import HashEmbedder, ScriptedLLM
from gemrag.errors import ModelIntegrityError
from gemrag.models import onnx_embedder as onnx_mod
from gemrag.models.base import LLM, Embedder, cache_identity_of
from gemrag.models.cache import CachedEmbedder, CachedLLM, cache_key
from gemrag.models.llama import backend as llama_mod
from gemrag.models.llama import loading as llama_loading
from gemrag.models.llama import weights
from gemrag.models.llama.weights import KNOWN_MODELS
from gemrag.models.meter import UsageMeter
from gemrag.store import Store

MSGS = [{"role": "user", "content": "Who is Didyak?"}]


class NullStore:
    """Enough of a store for computing keys."""

    def get_llm(self, key: str) -> dict[str, Any] | None:
        return None

    def put_llm(self, key: str, model: str, response: dict[str, Any]) -> None: ...

    def get_embeddings(self, model: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        return {}

    def put_embeddings(self, model: str, items: Any) -> None: ...


def llm_key(backend: Any, **kwargs: Any) -> str:
    return CachedLLM(backend, NullStore(), UsageMeter()).key(MSGS, max_tokens=16, **kwargs)


def emb_key(backend: Any, text: str = "a text") -> str:
    return CachedEmbedder(backend, NullStore(), UsageMeter()).key(text)


@pytest.fixture
def llama(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """Build a LlamaCppLLM over a small GGUF-looking file (never loaded), llama-cpp-python or not."""
    monkeypatch.setattr(llama_loading, "_llama_installed", lambda: True)

    def make(content: bytes = b"GGUF" + bytes(2048), name: str = "model.gguf", **kwargs: Any) -> llama_mod.LlamaCppLLM:
        path = tmp_path / hashlib.sha256(content).hexdigest()[:12] / name  # same name, other directory
        if not path.exists():
            path.parent.mkdir()
            path.write_bytes(content)
        return llama_mod.LlamaCppLLM(path, **kwargs)

    return make


# -- LLM ------------------------------------------------------------------------------------------------------------


def test_llama_keys_follow_n_ctx_chat_format_and_seed(llama: Any) -> None:
    base = llm_key(llama(n_ctx=2048))
    assert llm_key(llama(n_ctx=2048)) == base  # equal when nothing that matters differs
    assert llm_key(llama(n_ctx=2048, n_threads=7, n_batch=64)) == base  # threads/batch do not change the answer
    assert llm_key(llama(n_ctx=4096)) != base
    assert llm_key(llama(n_ctx=2048, chat_format="chatml")) != base
    assert llm_key(llama(n_ctx=2048, seed=5)) != base
    assert llm_key(llama(n_ctx=2048), temperature=0.5) != base


def test_same_name_and_size_but_other_bytes_do_not_collide(llama: Any) -> None:
    a = llama(b"GGUF" + bytes(2048))
    b = llama(b"GGUF" + bytes(2047) + b"\x01")
    assert a.model_id == b.model_id  # the id (file name and size) is unchanged, as memories record it
    assert a.fingerprint != b.fingerprint and a.fingerprint.startswith("head-sha256:")
    assert llm_key(a) != llm_key(b)


def test_known_model_fingerprint_is_its_published_sha256(tmp_path: Path) -> None:
    spec = KNOWN_MODELS["qwen2.5-coder-0.5b"]
    path = tmp_path / "x.gguf"
    path.write_bytes(b"GGUF")
    assert weights.gguf_fingerprint(path, spec) == f"sha256:{spec.sha256}"


def test_fingerprint_hashes_only_the_head(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(weights, "FINGERPRINT_BYTES", 8)
    a, b = tmp_path / "a.gguf", tmp_path / "b.gguf"
    a.write_bytes(b"GGUF0000tail-a")
    b.write_bytes(b"GGUF0000tail-b")
    assert weights.gguf_fingerprint(a).split(":")[1] == weights.gguf_fingerprint(b).split(":")[1]
    assert weights.gguf_fingerprint(a).endswith(":14")


def test_openai_json_mode_is_in_the_key() -> None:
    pytest.importorskip("openai")
    from gemrag.models.openai.backend import OpenAILLM

    def make(mode: str, window: int = 8192) -> OpenAILLM:
        url = "http://127.0.0.1:9/v1"
        return OpenAILLM("m", base_url=url, api_key="x", json_mode=mode, context_window=window)  # type: ignore[arg-type]

    base = llm_key(make("json_schema"))
    assert llm_key(make("json_schema")) == base
    assert llm_key(make("json_schema", 4096)) == base  # the server never sees the configured window
    assert llm_key(make("json_object")) != base and llm_key(make("none")) != base


class LegacyLLM(ScriptedLLM):
    """A third-party backend: no cache_identity."""


def test_backends_without_identity_keep_the_old_key() -> None:
    backend = LegacyLLM()
    assert isinstance(backend, LLM) and cache_identity_of(backend) is None
    old = cache_key(
        {
            "model": backend.model_id,
            "messages": MSGS,
            "schema": None,
            "max_tokens": 16,
            "temperature": 0.0,
            "seed": None,
        }
    )
    assert llm_key(backend) == old
    emb = HashEmbedder()
    assert isinstance(emb, Embedder) and emb_key(emb) == cache_key({"model": emb.model_id, "text": "a text"})


def test_identity_must_be_a_mapping() -> None:
    backend = LegacyLLM()
    backend.cache_identity = "n_ctx=4096"  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match="must be a dict"):
        llm_key(backend)


def test_cached_llm_with_identity_round_trips(tmp_path: Path) -> None:
    store = Store(tmp_path)
    backend = LegacyLLM()
    backend.cache_identity = {"n_ctx": 2048}  # type: ignore[attr-defined]
    first = CachedLLM(backend, store, UsageMeter(store)).complete(MSGS)
    again = CachedLLM(backend, store, UsageMeter(store)).complete(MSGS)
    backend.cache_identity = {"n_ctx": 4096}  # type: ignore[attr-defined]
    other = CachedLLM(backend, store, UsageMeter(store)).complete(MSGS)
    assert not first.cached and again.cached and not other.cached and backend.calls == 2
    store.close()


# -- embedders -----------------------------------------------------------------------------------------------------


class PooledEmbedder(HashEmbedder):
    def __init__(self, pooling: str, max_tokens: int = 256) -> None:
        super().__init__()
        self.cache_identity = {"sha256": "abc", "pooling": pooling, "normalize": "l2", "max_tokens": max_tokens}


def test_embedding_keys_follow_pooling_and_truncation(tmp_path: Path) -> None:
    base = emb_key(PooledEmbedder("mean"))
    assert emb_key(PooledEmbedder("mean")) == base
    assert emb_key(PooledEmbedder("cls")) != base
    assert emb_key(PooledEmbedder("mean", 128)) != base
    assert emb_key(PooledEmbedder("mean"), "another text") != base
    # the store still files vectors under the model id, which memories check
    store = Store(tmp_path)
    cached = CachedEmbedder(PooledEmbedder("mean"), store, UsageMeter(store))
    cached.embed(["alpha"])
    assert cached.model_id == "fake:hash-embedder"
    assert store.get_embeddings("fake:hash-embedder", [cached.key("alpha")])
    store.close()


def test_onnx_identity() -> None:
    try:
        short, full = onnx_mod.OnnxMiniLMEmbedder(max_tokens=128), onnx_mod.OnnxMiniLMEmbedder()
    except Exception as exc:  # onnxruntime or the model package missing: the identity test needs them
        pytest.skip(str(exc))
    assert full.model_id == short.model_id == "onnx:all-MiniLM-L6-v2-int8"
    ident = full.cache_identity
    assert ident["onnx_sha256"] == onnx_mod.ONNX_SHA256 and ident["pooling"] == "mean" and ident["max_tokens"] == 256
    assert len(ident["tokenizer_sha256"]) == 64
    assert emb_key(full) != emb_key(short)


# -- the ONNX file is checked against gemrag's own sha256 ----------------------------------------------------------


def test_onnx_sha256_is_pinned_in_gemrag() -> None:
    assert onnx_mod.ONNX_SHA256 == "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
    assert onnx_mod.ONNX_SIZE == 22_928_619


def test_verify_model_file_rejects_other_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "model.onnx"
    f.write_bytes(b"not the model")
    with pytest.raises(ModelIntegrityError, match="13 bytes, expected 22928619"):
        onnx_mod.verify_model_file(f)
    monkeypatch.setattr(onnx_mod, "ONNX_SIZE", 13)
    with pytest.raises(ModelIntegrityError, match="sha256 of .* is .*, expected 8199be6f"):
        onnx_mod.verify_model_file(f)
    onnx_mod.verify_model_file(f, sha256=False)  # the size alone matches
    monkeypatch.setattr(onnx_mod, "ONNX_SHA256", hashlib.sha256(b"not the model").hexdigest())
    onnx_mod.verify_model_file(f)


def test_embedder_refuses_a_tampered_model_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        real = onnx_mod._model_file()
    except Exception as exc:
        pytest.skip(str(exc))
    pytest.importorskip("onnxruntime")
    tampered = tmp_path / "model.onnx"
    shutil.copyfile(real, tampered)
    with open(tampered, "r+b") as f:  # same size, one byte changed
        f.seek(1000)
        byte = f.read(1)
        f.seek(1000)
        f.write(bytes([byte[0] ^ 0xFF]))
    monkeypatch.setattr(onnx_mod, "_model_file", lambda: tampered)
    with pytest.raises(ModelIntegrityError, match=f"expected {onnx_mod.ONNX_SHA256}"):
        onnx_mod.OnnxMiniLMEmbedder()
    onnx_mod.verify_model_file(real)  # the installed file itself matches the pinned hash
