"""A stand-in for the llama.cpp C API that :class:`gemrag.models.llama.batch.BatchDecoder` calls, and a
:class:`gemrag.models.llama.backend.LlamaCppLLM` wired to it: the real decoder loop, slots, grammars-as-handles and
locks, with no model (unit tests of the decoder's life cycle: who holds it, who releases it).

The fake model's vocabulary has :data:`N_VOCAB` tokens; token 0 ends a generation, and every logits row favours
token 1, so a request generates ``max_tokens`` ones and ends with ``finish_reason == "length"``. The fake
``Llama`` tokenizes a prompt word by word and detokenizes any completion to a fixed ``reply`` text.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gemrag.models.llama.backend import LlamaCppLLM
from gemrag.models.llama.batch import BatchDecoder

N_VOCAB = 8


class _TokenData(ctypes.Structure):
    _fields_ = [("id", ctypes.c_int32), ("logit", ctypes.c_float), ("p", ctypes.c_float)]


class _TokenDataArray(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.POINTER(_TokenData)),
        ("size", ctypes.c_size_t),
        ("selected", ctypes.c_int64),
        ("sorted", ctypes.c_bool),
    ]


class _ContextParams(ctypes.Structure):
    _fields_ = [
        ("n_ctx", ctypes.c_uint32),
        ("n_batch", ctypes.c_uint32),
        ("n_ubatch", ctypes.c_uint32),
        ("n_seq_max", ctypes.c_uint32),
        ("kv_unified", ctypes.c_bool),
    ]


class FakeLlamaLib:
    """The ``llama_cpp`` functions and types the decoder uses; counts ``llama_decode`` calls in ``decodes``."""

    llama_token_data = _TokenData
    llama_token_data_array = _TokenDataArray

    def __init__(self) -> None:
        self.decodes = 0
        self._logits = (ctypes.c_float * N_VOCAB)(*([0.0, 1.0] + [0.0] * (N_VOCAB - 2)))

    def llama_init_from_model(self, model: Any, params: Any) -> Any:
        return "ctx"

    def llama_get_memory(self, ctx: Any) -> Any:
        return "mem"

    def llama_batch_init(self, n: int, embd: int, n_seq: int) -> Any:
        return SimpleNamespace(
            n_tokens=0, token=[0] * n, pos=[0] * n, n_seq_id=[0] * n, seq_id=[[0] for _ in range(n)], logits=[0] * n
        )

    def llama_model_get_vocab(self, model: Any) -> Any:
        return "vocab"

    def llama_vocab_n_tokens(self, vocab: Any) -> int:
        return N_VOCAB

    def llama_vocab_is_eog(self, vocab: Any, token: int) -> bool:
        return token == 0

    def llama_decode(self, ctx: Any, batch: Any) -> int:
        self.decodes += 1
        return 0

    def llama_get_logits_ith(self, ctx: Any, row: int) -> Any:
        return ctypes.cast(self._logits, ctypes.POINTER(ctypes.c_float))

    def llama_sampler_init_grammar(self, vocab: Any, gbnf: bytes, root: bytes) -> Any:
        return "grammar"

    def llama_sampler_clone(self, smpl: Any) -> Any:
        return f"{smpl}-clone"

    def __getattr__(self, name: str) -> Any:
        # memory_clear / seq_rm / seq_cp, sampler apply / accept / free, batch_free, free: no effect here.
        if name.startswith("llama_"):
            return lambda *args, **kwargs: None
        raise AttributeError(name)


def fake_decoder(monkeypatch: pytest.MonkeyPatch, *, n_seq: int = 2, n_ctx: int = 4096) -> BatchDecoder:
    """A real :class:`BatchDecoder` on :class:`FakeLlamaLib` (``decoder._lib``)."""
    with monkeypatch.context() as m:
        m.setitem(sys.modules, "llama_cpp", FakeLlamaLib())
        return BatchDecoder("model", _ContextParams(), n_seq=n_seq, n_ctx=n_ctx, n_batch=512)


class _FakeLlama:
    """The tokenizer part of ``llama_cpp.Llama``: one token (2..N_VOCAB-1) per word; completions read ``reply``."""

    def __init__(self, reply: str) -> None:
        self.reply = reply

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        return [2 + sum(w) % (N_VOCAB - 2) for w in text.split()] or [2]

    def detokenize(self, tokens: list[int], prev_tokens: list[int] | None = None) -> bytes:
        return self.reply.encode("utf-8")


class FakeLlamaCppLLM(LlamaCppLLM):
    """:class:`LlamaCppLLM` with the weights, tokenizer and chat template replaced by fakes (no file is read, no
    child-process check); completion, batching, locking and the decoder are the real code."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, reply: str = "not json") -> None:
        self.model_path = tmp_path / "fake.gguf"
        self.model_path.write_bytes(b"GGUF fake")
        self._spec = None
        self.model_id = self.name = "llama.cpp:fake"
        self.context_window, self.n_threads, self.n_batch, self.n_gpu_layers = 4096, 1, 512, 0
        self.n_parallel, self.seed, self.chat_format, self.cache_dir = 2, 0, None, tmp_path
        self._llm: Any = _FakeLlama(reply)
        self._formatter = lambda messages: SimpleNamespace(
            prompt="\n".join(m["content"] for m in messages), added_special=True
        )
        self._decoder = fake_decoder(monkeypatch, n_seq=self.n_parallel, n_ctx=self.context_window)
        self._crash = None
        self._lock = threading.RLock()
