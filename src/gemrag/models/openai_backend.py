"""LLM and embedder backends for OpenAI-compatible HTTP servers, over the ``openai`` SDK.

Works with OpenAI itself and with the servers that speak its API: vLLM, Ollama (``/v1``), llama.cpp's
``llama-server`` and llama-cpp-python's ``python -m llama_cpp.server``.

Structured output differs between servers, hence :attr:`OpenAILLM.json_mode`:

* ``"json_schema"`` (default): ``response_format={"type": "json_schema", "json_schema": {"name": "output",
  "schema": schema}}`` — OpenAI, vLLM, Ollama, ``llama-server``.
* ``"json_object"``: ``response_format={"type": "json_object", "schema": schema}`` — llama-cpp-python's
  server (its request model only accepts ``"text"`` and ``"json_object"``, and turns the ``schema`` into a
  grammar); servers that ignore ``schema`` still return some JSON object.
* ``"none"``: no ``response_format``; the schema is appended to the conversation as an instruction.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from gemrag.errors import ConfigError, GemragError, ModelNotAvailableError
from gemrag.models.base import Completion, Message, Usage

if TYPE_CHECKING:
    from openai import OpenAI

__all__ = ["OpenAILLM", "OpenAIEmbedder", "JsonMode", "estimate_tokens"]

JsonMode = Literal["json_schema", "json_object", "none"]
_JSON_MODES: tuple[str, ...] = ("json_schema", "json_object", "none")
#: API key sent when none is given and ``OPENAI_API_KEY`` is unset (local servers ignore it).
PLACEHOLDER_API_KEY = "sk-no-key-required"


def estimate_tokens(text: str) -> int:
    """A tokenizer-free token estimate: ``len(text) // 4 + 1``.

    About 4 characters per token holds for English with BPE tokenizers; it over-counts code and
    under-counts some other languages. HTTP backends have no local tokenizer, so this is what they report.
    """
    return len(text) // 4 + 1


def _make_client(base_url: str | None, api_key: str | None, timeout: float, max_retries: int) -> OpenAI:
    try:
        from openai import OpenAI
    except ImportError as e:  # pragma: no cover - openai is a core dependency
        raise ModelNotAvailableError(f"the OpenAI backend needs the openai package ({e}); pip install openai") from e
    key = api_key or os.environ.get("OPENAI_API_KEY") or PLACEHOLDER_API_KEY
    return OpenAI(base_url=base_url, api_key=key, timeout=timeout, max_retries=max_retries)


@contextmanager
def _translate_errors(url: str, model: str, what: str, timeout: float, hint: str = "") -> Iterator[None]:
    """Turn ``openai`` SDK exceptions into :class:`GemragError` with an actionable message."""
    import openai

    try:
        yield
    except openai.APITimeoutError as e:
        raise GemragError(f"{what} request to {url} (model {model!r}) timed out after {timeout:g} s") from e
    except openai.APIConnectionError as e:
        cause = e.__cause__ or e
        raise GemragError(f"cannot connect to the OpenAI-compatible server at {url} ({cause}); is it running?") from e
    except openai.AuthenticationError as e:
        raise GemragError(f"the server at {url} rejected the API key (HTTP 401); set api_key or OPENAI_API_KEY") from e
    except openai.NotFoundError as e:
        raise GemragError(
            f"HTTP 404 from {url}: model {model!r} or the {what} endpoint does not exist there ({_detail(e)})"
        ) from e
    except openai.RateLimitError as e:
        raise GemragError(f"rate limited by {url} (HTTP 429) after retries: {_detail(e)}") from e
    except openai.APIStatusError as e:
        raise GemragError(f"{what} request to {url} failed with HTTP {e.status_code}: {_detail(e)}{hint}") from e
    except openai.OpenAIError as e:
        raise GemragError(f"{what} request to {url} failed: {e}") from e


def _detail(e: Any) -> str:
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and "message" in err:
            return str(err["message"])[:500]
        return json.dumps(body)[:500]
    return str(getattr(e, "message", e))[:500]


class OpenAILLM:
    """A chat model behind an OpenAI-compatible ``/v1/chat/completions``, implementing :class:`LLM`.

    Attributes:
        model_id: ``"openai:<base_url>:<model>"``.
        context_window: the model's context in tokens, as configured (the API does not report it).
        json_mode: how a schema is requested (see the module docstring); part of :attr:`cache_identity`.
        base_url: the server's API root (``.../v1``).
        model: the model name sent with each request.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        json_mode: JsonMode = "json_schema",
        context_window: int = 8192,
        timeout: float = 120.0,
        max_retries: int = 2,
    ) -> None:
        """Create the client (no request is made).

        Args:
            model: model name on the server (``"gpt-4o-mini"``, ``"qwen2.5:1.5b"``...).
            base_url: API root, e.g. ``"http://127.0.0.1:8080/v1"``; default ``$OPENAI_BASE_URL`` or OpenAI.
            api_key: default ``$OPENAI_API_KEY``, else a placeholder (local servers need none).
            json_mode: ``"json_schema"``, ``"json_object"`` or ``"none"``.
            context_window: tokens the model accepts (prompt + completion).
            timeout: seconds per HTTP request.
            max_retries: SDK retries on connection errors, 408/409/429 and 5xx.

        Raises:
            ConfigError: ``json_mode`` or ``context_window`` is invalid.
        """
        if json_mode not in _JSON_MODES:
            raise ConfigError(f"json_mode must be one of {', '.join(_JSON_MODES)}, got {json_mode!r}")
        if context_window < 1:
            raise ConfigError(f"context_window must be positive, got {context_window}")
        self._client = _make_client(base_url, api_key, timeout, max_retries)
        self.base_url: str = (base_url or str(self._client.base_url)).rstrip("/")
        self.model = model
        self.json_mode: JsonMode = json_mode
        self.context_window: int = context_window
        self.timeout = timeout
        self.model_id: str = f"openai:{self.base_url}:{model}"

    def __repr__(self) -> str:
        return f"OpenAILLM({self.model_id!r}, json_mode={self.json_mode!r})"

    @property
    def cache_identity(self) -> dict[str, Any]:
        """What besides the call's arguments decides an answer, for cache keys: the JSON mode (it changes the
        request, and with ``"none"`` the prompt). The server and model name are in :attr:`model_id`; the
        context window is not sent to the server, so it is left out."""
        return {"backend": "openai", "json_mode": self.json_mode}

    def complete(
        self,
        messages: Sequence[Message],
        *,
        schema: dict[str, Any] | None = None,
        max_tokens: int = 256,
        temperature: float = 0.0,
        seed: int | None = None,
    ) -> Completion:
        """Complete a chat with one ``chat.completions.create`` request.

        Args:
            messages: the conversation, oldest first.
            schema: a JSON schema, requested as :attr:`json_mode` says.
            max_tokens: completion limit (tokens).
            temperature: sampling temperature.
            seed: sent when given (servers that support it make sampling reproducible).

        Returns:
            A :class:`Completion`; ``parsed`` is the decoded JSON when ``schema`` was given and the answer
            parses, else ``None``; ``usage`` has the server-reported tokens (0 when it reports none) and the
            request's wall-clock seconds.

        Raises:
            GemragError: the server is unreachable, timed out, or answered with an HTTP error (the message
                names the URL and the server's explanation).
        """
        msgs: list[dict[str, str]] = [{"role": m["role"], "content": m["content"]} for m in messages]
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": msgs,
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        if seed is not None:
            kwargs["seed"] = seed
        if schema is not None:
            if self.json_mode == "json_schema":
                kwargs["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": "output", "schema": schema},
                }
            elif self.json_mode == "json_object":
                kwargs["response_format"] = {"type": "json_object", "schema": schema}
            else:
                msgs.append(
                    {
                        "role": "user",
                        "content": "Answer with one JSON object only, no prose, valid against this JSON "
                        "schema:\n" + json.dumps(schema),
                    }
                )
        t0 = time.perf_counter()
        hint = ""
        if "response_format" in kwargs:
            others = " or ".join(repr(m) for m in _JSON_MODES if m != self.json_mode)
            hint = (
                f" (the request used response_format type {self.json_mode!r}; if this server does not support it, "
                f"set json_mode to {others})"
            )
        with _translate_errors(self.base_url, self.model, "chat completion", self.timeout, hint):
            response = self._client.chat.completions.create(**kwargs)
        seconds = time.perf_counter() - t0
        if not response.choices:
            raise GemragError(f"the server at {self.base_url} returned no choices")
        text = response.choices[0].message.content or ""
        parsed: Any = None
        if schema is not None:
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = None
        u = response.usage
        return Completion(
            text=text,
            parsed=parsed,
            usage=Usage(
                prompt_tokens=int(getattr(u, "prompt_tokens", 0) or 0),
                completion_tokens=int(getattr(u, "completion_tokens", 0) or 0),
                seconds=seconds,
                calls=1,
            ),
        )

    def count_tokens(self, text: str) -> int:
        """An estimate, ``len(text) // 4 + 1`` (see :func:`estimate_tokens`); the server's tokenizer is remote."""
        return estimate_tokens(text)


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
    ) -> None:
        """Create the client (no request is made).

        Args:
            model: embedding model name on the server (``"text-embedding-3-small"``...).
            base_url: API root, e.g. ``"http://127.0.0.1:8080/v1"``; default ``$OPENAI_BASE_URL`` or OpenAI.
            api_key: default ``$OPENAI_API_KEY``, else a placeholder (local servers need none).
            dim: the expected dimension; vectors of another size raise :class:`GemragError`.
            batch_size: texts per request (>= 1).
            timeout: seconds per HTTP request.
            max_retries: SDK retries on connection errors, 408/409/429 and 5xx.

        Raises:
            ConfigError: ``batch_size`` or ``dim`` is not positive.
        """
        if batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
        if dim is not None and dim < 1:
            raise ConfigError(f"dim must be positive, got {dim}")
        self._client = _make_client(base_url, api_key, timeout, max_retries)
        self.base_url: str = (base_url or str(self._client.base_url)).rstrip("/")
        self.model = model
        self.batch_size = batch_size
        self.timeout = timeout
        self.tokens_used: int = 0
        self._dim = dim
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
        """Embed texts, ``batch_size`` per request.

        Args:
            texts: n strings (n may be 0; empty strings are sent as a single space, which some servers need).

        Returns:
            Array of shape ``(n, dim)``, dtype float32, each row L2-normalized (the server's vectors are
            re-normalized; an all-zero vector stays zero).

        Raises:
            TypeError: ``texts`` is a single string.
            GemragError: a request failed, or the server returned the wrong number or size of vectors.
        """
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of strings, not a single string")
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        rows = [self._embed_batch(texts[i : i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]
        return np.concatenate(rows, axis=0)

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        inputs = [t if t.strip() else " " for t in texts]
        with _translate_errors(self.base_url, self.model, "embeddings", self.timeout):
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
        if self._dim is None:
            self._dim = int(vecs.shape[1])
        elif vecs.shape[1] != self._dim:
            raise GemragError(
                f"{self.base_url} returned {vecs.shape[1]}-dimensional embeddings for model {self.model!r}, "
                f"expected {self._dim}"
            )
        usage = getattr(response, "usage", None)
        prompt_tokens = getattr(usage, "prompt_tokens", None)
        self.tokens_used += int(prompt_tokens) if prompt_tokens else sum(estimate_tokens(t) for t in texts)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        return (vecs / np.clip(norms, 1e-12, None)).astype(np.float32)
