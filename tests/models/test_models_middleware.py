"""Persistent cache, usage meter and structured-output repair/retry."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from pydantic import BaseModel

from fakes import HashEmbedder, ScriptedLLM
from gemrag.errors import StructuredOutputError
from gemrag.models.base import Completion, Usage
from gemrag.models.cache import CachedEmbedder, CachedLLM
from gemrag.models.meter import UsageMeter
from gemrag.models.structured import complete_structured, parse_json_lenient
from gemrag.store import Store


def test_llm_cache_hit_skips_backend_and_persists(tmp_path: Path) -> None:
    store = Store(tmp_path)
    backend = ScriptedLLM()
    llm = CachedLLM(backend, store, UsageMeter(store))
    msgs = [{"role": "user", "content": "hello there"}]
    first = llm.complete(msgs, max_tokens=10)
    second = llm.complete(msgs, max_tokens=10)
    assert backend.calls == 1 and not first.cached and second.cached
    assert second.text == first.text
    # different parameters are a different key
    llm.complete(msgs, max_tokens=11)
    assert backend.calls == 2
    store.close()
    # a new process (new store object) still hits
    store2 = Store(tmp_path)
    backend2 = ScriptedLLM()
    assert CachedLLM(backend2, store2, UsageMeter(store2)).complete(msgs, max_tokens=10).cached
    assert backend2.calls == 0
    spent = store2.usage_by_phase()["index"]
    assert spent["calls"] == 2 and spent["cached"] == 2
    assert spent["prompt_tokens"] == 2 * len(["hello", "there"])


def test_embedding_cache_embeds_only_missing_texts(tmp_path: Path) -> None:
    store = Store(tmp_path)
    backend = HashEmbedder()
    emb = CachedEmbedder(backend, store, UsageMeter(store))
    a = emb.embed(["alpha beta", "gamma"])
    b = emb.embed(["gamma", "delta", "alpha beta", "delta"])
    assert backend.texts_embedded == 3  # alpha beta, gamma, then only delta (once)
    np.testing.assert_allclose(b[2], a[0])
    np.testing.assert_allclose(b[0], a[1])
    assert b.dtype == np.float32 and b.shape == (4, backend.dim)
    assert emb.embed([]).shape == (0, backend.dim)


def test_meter_phases(tmp_path: Path) -> None:
    meter = UsageMeter()
    with meter.phase("query"):
        meter.record("llm", "m", Usage(10, 2, seconds=0.5), cached=False)
        meter.record("llm", "m", Usage(10, 2, seconds=0.5), cached=True)
    meter.record("embed", "e", Usage(embedding_tokens=7), cached=False)
    assert meter.totals["query"] == Usage(10, 2, 0, 0.5, calls=1, cached=1)
    assert meter.totals["index"].embedding_tokens == 7
    assert meter.current_phase == "index"


class Out(BaseModel):
    questions: list[str]


def test_parse_json_lenient_repairs_common_defects() -> None:
    assert parse_json_lenient('```json\n{"a": 1}\n```') == {"a": 1}
    assert parse_json_lenient('Here you go: {"a": [1, 2,],} thanks') == {"a": [1, 2]}
    with pytest.raises(ValueError):
        parse_json_lenient("no json here")


def test_structured_retries_then_succeeds() -> None:
    llm = ScriptedLLM(fail=lambda i, p: i == 1)
    msgs = [
        {"role": "system", "content": "s"},
        {
            "role": "user",
            "content": 'Passage:\n"""\nA cat sat.\n"""\n\nWrite 2 different questions that this passage answers.',
        },
    ]
    out = complete_structured(llm, msgs, Out, attempts=3)
    assert llm.calls == 2 and len(out.questions) == 2


def test_structured_gives_up_with_clear_error() -> None:
    class Broken:
        model_id, context_window = "broken", 100
        calls = 0

        def complete(self, messages, **kw):  # noqa: ANN001, ANN003, ANN201
            Broken.calls += 1
            return Completion('{"questions": "not a list"}', {"questions": "not a list"}, Usage())

        def count_tokens(self, text: str) -> int:
            return 1

    with pytest.raises(StructuredOutputError, match="after 3 attempts"):
        complete_structured(Broken(), [{"role": "user", "content": "x"}], Out, attempts=3)
    assert Broken.calls == 3
