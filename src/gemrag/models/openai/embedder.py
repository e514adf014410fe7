"""The embedder for OpenAI-compatible HTTP servers (``/v1/embeddings``), over the ``openai`` SDK: texts sent
``batch_size`` per request with up to ``concurrency`` requests in flight, the vectors checked (count, size, one per
text) and L2-normalized.

Each request is retried by the SDK as the chat backend's are (connection errors, 408/409/429 and 5xx, with
exponential backoff or the server's ``Retry-After``; :mod:`gemrag.models.openai.backend`), and its failures are
translated the same way (:func:`gemrag.models.openai.http.translate_errors`). Re-exported by
:mod:`gemrag.models.openai.backend`.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from gemrag.errors import ConfigError, GemragError
from gemrag.models.openai.http import estimate_tokens, make_client, translate_errors

__all__ = ["OpenAIEmbedder"]


class OpenAIEmbedder:
    """Embeddings from an OpenAI-compatible ``/v1/embeddings``, implementing :class:`Embedder`.

    Attributes:
        model_id: ``"openai:<base_url>:<model>"``.
        dim: the embedding dimension; when not given it is discovered by the first request (reading it
            before any :meth:`embed` makes a one-text probe request; note that on Python < 3.12
            ``isinstance(x, Embedder)`` reads it too).
        tokens_used: running sum of the server's ``usage.prompt_tokens`` (estimated with
            :func:`estimate_tokens` when the server reports no usage).
        batch_size: texts per request (default 64).
        concurrency: the most requests :meth:`embed` keeps in flight when it splits its input (default 4).
        max_retries: SDK retries per request (connection errors, 408/409/429, 5xx).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        dim: int | None = None,
        batch_size: int = 64,
        timeout: float = 60.0,
        max_retries: int = 2,
        concurrency: int = 4,
    ) -> None:
        """Create the client (no request is made).

        Args:
            model: embedding model name on the server (``"text-embedding-3-small"``...).
            base_url: API root, e.g. ``"http://127.0.0.1:8080/v1"``; default ``$OPENAI_BASE_URL`` or OpenAI.
            api_key: default ``$OPENAI_API_KEY``, else a placeholder (local servers need none).
            dim: the expected dimension; vectors of another size raise :class:`GemragError`.
            batch_size: texts per request (>= 1).
            timeout: seconds per HTTP request.
            max_retries: SDK retries on connection errors, 408/409/429 and 5xx (>= 0).
            concurrency: requests in flight when one :meth:`embed` needs several (>= 1).

        Raises:
            ConfigError: ``batch_size``, ``dim`` or ``concurrency`` is not positive, or ``max_retries`` < 0.
        """
        if batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
        if concurrency < 1:
            raise ConfigError(f"concurrency must be >= 1, got {concurrency}")
        if max_retries < 0:
            raise ConfigError(f"max_retries must be >= 0, got {max_retries}")
        if dim is not None and dim < 1:
            raise ConfigError(f"dim must be positive, got {dim}")
        self._client = make_client(base_url, api_key, timeout, max_retries)
        self.base_url: str = (base_url or str(self._client.base_url)).rstrip("/")
        self.model = model
        self.batch_size = batch_size
        self.timeout = timeout
        self.max_retries = max_retries
        self.concurrency = concurrency
        self.tokens_used: int = 0
        self._dim = dim
        self._lock = threading.Lock()  # tokens_used and the discovered dim, updated by concurrent batches
        self.model_id: str = f"openai:{self.base_url}:{model}"

    def __repr__(self) -> str:
        return f"OpenAIEmbedder({self.model_id!r}, dim={self._dim})"

    @property
    def dim(self) -> int:
        """The embedding dimension (probes the server once if not known yet).

        Raises:
            GemragError: the probe request failed.
        """
        if self._dim is None:
            self._embed_batch(["dimension probe"])
        assert self._dim is not None
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts, ``batch_size`` per request, up to :attr:`concurrency` requests in flight.

        Args:
            texts: n strings (n may be 0; empty strings are sent as a single space, which some servers need).

        Returns:
            Array of shape ``(n, dim)``, dtype float32, each row L2-normalized (the server's vectors are
            re-normalized; an all-zero vector stays zero).

        Raises:
            TypeError: ``texts`` is a single string.
            EndpointUnreachableError: the server cannot be reached.
            EndpointRejectedError: the key, model or endpoint was rejected (HTTP 401/403/404).
            GemragError: a request failed, or the server returned the wrong number or size of vectors (the first
                failing batch in input order; batches not yet sent are then cancelled).
        """
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of strings, not a single string")
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        batches = [texts[i : i + self.batch_size] for i in range(0, len(texts), self.batch_size)]
        if len(batches) == 1 or self.concurrency == 1:
            return np.concatenate([self._embed_batch(b) for b in batches], axis=0)
        pool = ThreadPoolExecutor(max_workers=min(self.concurrency, len(batches)), thread_name_prefix="gemrag-embed")
        try:
            rows = list(pool.map(self._embed_batch, batches))  # input order, whatever the completion order
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        return np.concatenate(rows, axis=0)

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        inputs = [t if t.strip() else " " for t in texts]
        with translate_errors(self.base_url, self.model, "embeddings", self.timeout):
            response = self._client.embeddings.create(model=self.model, input=inputs, encoding_format="float")
        data = sorted(response.data, key=lambda d: d.index)
        if len(data) != len(texts):
            raise GemragError(f"{self.base_url} returned {len(data)} embeddings for {len(texts)} texts")
        raw = [d.embedding for d in data]
        if any(isinstance(e, list) and e and isinstance(e[0], list) for e in raw):
            raise GemragError(
                f"{self.base_url} returned one vector per token instead of one per text for model {self.model!r}: "
                "it is not a sentence-embedding model, or the server runs it without pooling "
                "(llama.cpp: use an embedding GGUF, or --pooling mean)"
            )
        try:
            vecs = np.asarray(raw, dtype=np.float32)
        except (ValueError, TypeError) as e:
            raise GemragError(f"{self.base_url} returned malformed embeddings (unequal sizes or not numbers)") from e
        if vecs.ndim != 2 or vecs.shape[1] == 0:
            raise GemragError(f"{self.base_url} returned malformed embeddings (shape {vecs.shape})")
        usage = getattr(response, "usage", None)
        prompt_tokens = getattr(usage, "prompt_tokens", None)
        with self._lock:
            if self._dim is None:
                self._dim = int(vecs.shape[1])
            elif vecs.shape[1] != self._dim:
                raise GemragError(
                    f"{self.base_url} returned {vecs.shape[1]}-dimensional embeddings for model {self.model!r}, "
                    f"expected {self._dim}"
                )
            self.tokens_used += int(prompt_tokens) if prompt_tokens else sum(estimate_tokens(t) for t in texts)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        return (vecs / np.clip(norms, 1e-12, None)).astype(np.float32)
