"""Tests of the ONNX all-MiniLM-L6-v2 embedder with the real (small, fast) model."""

from __future__ import annotations

import numpy as np
import pytest

from gemrag.models.base import Embedder
from gemrag.models.onnx_embedder import OnnxMiniLMEmbedder


@pytest.fixture(scope="module")
def embedder() -> OnnxMiniLMEmbedder:
    return OnnxMiniLMEmbedder()


def test_protocol_and_ids(embedder: OnnxMiniLMEmbedder) -> None:
    assert isinstance(embedder, Embedder)
    assert embedder.model_id == "onnx:all-MiniLM-L6-v2-int8"
    assert embedder.dim == 384


def test_shape_dtype_unit_norm(embedder: OnnxMiniLMEmbedder) -> None:
    texts = ["The cat sat on the mat.", "", "Graph memory for language models.", "x" * 10]
    v = embedder.embed(texts)
    assert v.shape == (4, 384)
    assert v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert np.isfinite(v).all()


def test_empty_input(embedder: OnnxMiniLMEmbedder) -> None:
    v = embedder.embed([])
    assert v.shape == (0, 384) and v.dtype == np.float32


def test_rejects_a_single_string(embedder: OnnxMiniLMEmbedder) -> None:
    with pytest.raises(TypeError):
        embedder.embed("not a list")


def test_paraphrase_closer_than_unrelated(embedder: OnnxMiniLMEmbedder) -> None:
    a, b, c = embedder.embed(
        [
            "A man is playing a guitar on the stage.",
            "Someone performs music with a guitar in front of an audience.",
            "The central bank raised interest rates by half a percent.",
        ]
    )
    assert float(a @ b) > float(a @ c) + 0.3


def test_batch_equals_single(embedder: OnnxMiniLMEmbedder) -> None:
    texts = [f"Sentence number {i} talks about {'rivers ' * (i % 7)}and mountains." for i in range(40)]
    batched = embedder.embed(texts)  # 2 batches of mixed lengths, sorted by length internally
    single = np.vstack([embedder.embed([t]) for t in texts])
    np.testing.assert_allclose(batched, single, atol=1e-5)


def test_long_text_is_truncated(embedder: OnnxMiniLMEmbedder) -> None:
    long = "memory " * 2000
    assert embedder.count_tokens(long) == 2000
    before = embedder.tokens_used
    v = embedder.embed([long])
    assert v.shape == (1, 384)
    assert embedder.tokens_used - before == embedder.max_tokens == 256
    # Only the first 254 word tokens are seen: a longer tail changes nothing.
    np.testing.assert_allclose(v, embedder.embed(["memory " * 300]), atol=1e-6)


def test_tokens_used_counts_real_tokens(embedder: OnnxMiniLMEmbedder) -> None:
    before = embedder.tokens_used
    embedder.embed(["hello world", "a much longer sentence with quite a few more words in it"])
    n1 = embedder.count_tokens("hello world") + 2
    n2 = embedder.count_tokens("a much longer sentence with quite a few more words in it") + 2
    assert embedder.tokens_used - before == n1 + n2  # padding is not counted


def test_tokenizer_is_unconfigured(embedder: OnnxMiniLMEmbedder) -> None:
    tok = embedder.tokenizer
    enc = tok.encode("hello world", add_special_tokens=False)
    assert len(enc.ids) == 2 == embedder.count_tokens("hello world")
    assert tok.truncation is None and tok.padding is None
