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

An answer read as it is written: :meth:`OpenAILLM.complete_stream` (``stream=True``,
:mod:`gemrag.models.openai.stream`).

Many requests at once (:meth:`OpenAILLM.complete_iter`): at most ``concurrency`` requests in flight
(a thread pool; the ``openai`` client is thread-safe), each retried by the SDK on connection errors,
408/409/429 and 5xx with exponential backoff (0.5 s doubling up to 8 s, minus up to 25% jitter) or the wait
the server's ``Retry-After``/``retry-after-ms`` header asks for (up to 120 s), ``max_retries`` times; and an
optional client-side limit of requests and tokens per minute (:class:`~gemrag.models.openai.limits.RateLimiter`)
shared by all the threads of one backend instance. The SDK's retry loop is used as is: it already does
backoff, jitter and ``Retry-After``; our own loop would only duplicate it. One consequence: the rate limiter
counts a request once, before it is sent; the SDK's retries of it are not counted again (a 429 is the
server saying the limit was reached, and its ``Retry-After`` is honoured instead).

Which failures stop a batch: after the SDK's retries, a connection failure (:class:`EndpointUnreachableError`)
and a rejected key, a missing model or endpoint (HTTP 401/403/404, :class:`EndpointRejectedError`) are fatal
(:func:`gemrag.errors.is_fatal`): every further request would fail the same way, so they are raised, not
recorded per request. A timeout, a 429 still there after the retries, another 4xx (a context overflow, a
schema the server refuses) or a 5xx belongs to its request and is yielded as a :class:`GemragError`.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Generator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any, Literal

import numpy as np

from gemrag.errors import ConfigError, GemragError, is_fatal
from gemrag.models.base import Completion, Message, Usage
from gemrag.models.batch import CompletionRequest
from gemrag.models.openai.http import (
    PLACEHOLDER_API_KEY,
    EndpointRejectedError,
    EndpointUnreachableError,
    estimate_tokens,
    make_client,
    translate_errors,
)
from gemrag.models.openai.limits import RateLimiter
from gemrag.models.openai.stream import stream_chat
from gemrag.models.tool_calls import canonical_call, openai_messages, openai_tools, tool_choice

__all__ = [
    "OpenAILLM",
    "OpenAIEmbedder",
    "JsonMode",
    "estimate_tokens",
    "EndpointUnreachableError",
    "EndpointRejectedError",
    "PLACEHOLDER_API_KEY",
]

JsonMode = Literal["json_schema", "json_object", "none"]
_JSON_MODES: tuple[str, ...] = ("json_schema", "json_object", "none")
ToolCalling = Literal["native", "structured"]
_TOOL_CALLING: tuple[str, ...] = ("native", "structured")


class _Abandoned(Exception):
    """A queued request of a :meth:`OpenAILLM.complete_iter` whose caller stopped iterating: not sent."""


class OpenAILLM:
    """A chat model behind an OpenAI-compatible ``/v1/chat/completions``, implementing :class:`LLM` and the
    optional batch capability ``complete_iter`` (:mod:`gemrag.models.batch`).

    Attributes:
        model_id: ``"openai:<base_url>:<model>"``.
        context_window: the model's context in tokens, as configured (the API does not report it).
        json_mode: how a schema is requested (see the module docstring); part of :attr:`cache_identity`.
        tool_calling: ``"native"``: a tool-call schema (the agent's) is sent as the API's ``tools`` and
            ``tool_choice``, and the agent's earlier calls and results as ``tool_calls`` and ``role: "tool"``
            messages (:mod:`gemrag.models.tool_calls`); ``"structured"``: like any schema, per
            :attr:`json_mode`. Part of :attr:`cache_identity`.
        base_url: the server's API root (``.../v1``).
        model: the model name sent with each request.
        timeout: seconds per HTTP request (each retry gets the same).
        max_retries: SDK retries per request (connection errors, 408/409/429, 5xx).
        concurrency: the most requests :meth:`complete_iter` keeps in flight.
        rate_limiter: the requests/tokens-per-minute limit every request of this instance waits for
            (:class:`~gemrag.models.openai.limits.RateLimiter`; inactive when neither limit is set).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        json_mode: JsonMode = "json_schema",
        tool_calling: ToolCalling = "native",
        context_window: int = 8192,
        timeout: float = 120.0,
        max_retries: int = 2,
        concurrency: int = 4,
        requests_per_minute: int | None = None,
        tokens_per_minute: int | None = None,
    ) -> None:
        """Create the client (no request is made).

        Args:
            model: model name on the server (``"gpt-4o-mini"``, ``"qwen2.5:1.5b"``...).
            base_url: API root, e.g. ``"http://127.0.0.1:8080/v1"``; default ``$OPENAI_BASE_URL`` or OpenAI.
            api_key: default ``$OPENAI_API_KEY``, else a placeholder (local servers need none).
            json_mode: ``"json_schema"``, ``"json_object"`` or ``"none"``.
            tool_calling: ``"native"`` (default) or ``"structured"`` (for servers without tool support).
            context_window: tokens the model accepts (prompt + completion).
            timeout: seconds per HTTP request.
            max_retries: SDK retries on connection errors, 408/409/429 and 5xx (>= 0), with exponential
                backoff or the server's ``Retry-After``.
            concurrency: requests in flight in :meth:`complete_iter` (>= 1).
            requests_per_minute: client-side request limit (None: none).
            tokens_per_minute: client-side token limit, counting each request's estimated prompt tokens plus
                its ``max_tokens`` (None: none).

        Raises:
            ConfigError: ``json_mode``, ``tool_calling``, ``context_window``, ``max_retries``, ``concurrency`` or a
                limit is invalid.
        """
        if json_mode not in _JSON_MODES:
            raise ConfigError(f"json_mode must be one of {', '.join(_JSON_MODES)}, got {json_mode!r}")
        if tool_calling not in _TOOL_CALLING:
            raise ConfigError(f"tool_calling must be one of {', '.join(_TOOL_CALLING)}, got {tool_calling!r}")
        if context_window < 1:
            raise ConfigError(f"context_window must be positive, got {context_window}")
        if concurrency < 1:
            raise ConfigError(f"concurrency must be >= 1, got {concurrency}")
        if max_retries < 0:
            raise ConfigError(f"max_retries must be >= 0, got {max_retries}")
        self.rate_limiter = RateLimiter(requests_per_minute, tokens_per_minute)
        self._client = make_client(base_url, api_key, timeout, max_retries)
        self.base_url: str = (base_url or str(self._client.base_url)).rstrip("/")
        self.model = model
        self.json_mode: JsonMode = json_mode
        self.tool_calling: ToolCalling = tool_calling
        self.context_window: int = context_window
        self.timeout = timeout
        self.max_retries = max_retries
        self.concurrency = concurrency
        self.model_id: str = f"openai:{self.base_url}:{model}"

    def __repr__(self) -> str:
        return (
            f"OpenAILLM({self.model_id!r}, json_mode={self.json_mode!r}, tool_calling={self.tool_calling!r}, "
            f"concurrency={self.concurrency})"
        )

    @property
    def cache_identity(self) -> dict[str, Any]:
        """What besides the call's arguments decides an answer, for cache keys: the JSON mode (it changes the
        request, and with ``"none"`` the prompt) and the tool calling mode. The server and model name are in
        :attr:`model_id`; the context window is not sent to the server, so it is left out."""
        return {"backend": "openai", "json_mode": self.json_mode, "tool_calling": self.tool_calling}

    def complete(
        self,
        messages: Sequence[Message],
        *,
        schema: dict[str, Any] | None = None,
        max_tokens: int = 256,
        temperature: float = 0.0,
        seed: int | None = None,
    ) -> Completion:
        """Complete a chat with one ``chat.completions.create`` request (after waiting for :attr:`rate_limiter`;
        retried by the SDK as :attr:`max_retries` says).

        Args:
            messages: the conversation, oldest first.
            schema: a JSON schema, requested as :attr:`json_mode` says.
            max_tokens: completion limit (tokens).
            temperature: sampling temperature.
            seed: sent when given (servers that support it make sampling reproducible).

        Returns:
            A :class:`Completion`; ``parsed`` is the decoded JSON when ``schema`` was given and the answer
            parses, else ``None``; ``usage`` has the server-reported tokens (0 when it reports none) and the
            request's wall-clock seconds (retries included, the rate limiter's wait not).

        Raises:
            EndpointUnreachableError: the server cannot be reached (fatal).
            EndpointRejectedError: the key, model or endpoint was rejected (HTTP 401/403/404; fatal).
            GemragError: the request timed out, or the server answered with another HTTP error (the message
                names the URL and the server's explanation).
        """
        request = CompletionRequest(messages, schema=schema, max_tokens=max_tokens, temperature=temperature, seed=seed)
        return self._complete(request, None)

    def complete_iter(
        self, requests: Sequence[CompletionRequest]
    ) -> Generator[tuple[int, Completion | GemragError], None, None]:
        """Complete every request with at most :attr:`concurrency` in flight, yielding results as they arrive.

        Contract: :mod:`gemrag.models.batch`. Each request is one :meth:`complete` (same rate limit, retries and
        errors). When the caller stops iterating (``break``, or a raised error), requests not yet sent are
        cancelled and not sent (a request waiting for the rate limiter stops waiting); the (at most
        :attr:`concurrency`) requests in flight finish in their threads (bounded by :attr:`timeout` per try) and
        their results are discarded; the generator itself returns at once (the interpreter, on exit, waits for
        those requests: the executor's threads are joined).

        Args:
            requests: n requests.

        Yields:
            n pairs ``(index, Completion or GemragError)`` in completion order, each index once.

        Raises:
            EndpointUnreachableError: the server cannot be reached (after the retries).
            EndpointRejectedError: the key, model or endpoint was rejected (HTTP 401/403/404).
        """
        requests = list(requests)
        if not requests:
            return
        stop = threading.Event()
        pool = ThreadPoolExecutor(max_workers=min(self.concurrency, len(requests)), thread_name_prefix="gemrag-http")
        try:
            futures = {pool.submit(self._complete, request, stop): i for i, request in enumerate(requests)}
            for future in as_completed(futures):
                try:
                    result: Completion | GemragError = future.result()
                except GemragError as exc:
                    if is_fatal(exc):
                        raise
                    result = exc
                yield futures[future], result
        finally:
            stop.set()
            pool.shutdown(wait=False, cancel_futures=True)

    def complete_stream(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        seed: int | None = None,
    ) -> Generator[str | Completion, None, None]:
        """:meth:`complete` (free text) as a stream, ``stream=True`` (:func:`gemrag.models.openai.stream.stream_chat`;
        contract: :mod:`gemrag.models.streaming`). Closing it early closes the HTTP response.

        Raises:
            EndpointUnreachableError, EndpointRejectedError, GemragError: as :meth:`complete`.
        """
        return stream_chat(
            self._client, self.base_url, self.model, self.timeout, self.rate_limiter, messages,
            max_tokens=max_tokens, temperature=temperature, seed=seed,
        )  # fmt: skip

    def _complete(self, request: CompletionRequest, stop: threading.Event | None) -> Completion:
        """One request (see :meth:`complete`); raises :class:`_Abandoned` instead of sending when ``stop`` is set."""
        schema = request.schema
        tools = openai_tools(schema) if self.tool_calling == "native" else None
        msgs: list[dict[str, Any]] = (
            openai_messages(request.messages)
            if tools is not None
            else [{"role": m["role"], "content": m["content"]} for m in request.messages]
        )
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": msgs,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
        }
        if request.seed is not None:
            kwargs["seed"] = request.seed
        if tools is not None:
            kwargs["tools"] = tools
            kwargs["tool_choice"] = tool_choice(tools)
        elif schema is not None:
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
        hint = ""
        if tools is not None:
            hint = " (the request used native tool calling; if this server does not support it, set tool_calling to "
            hint += "'structured')"
        elif "response_format" in kwargs:
            others = " or ".join(repr(m) for m in _JSON_MODES if m != self.json_mode)
            hint = (
                f" (the request used response_format type {self.json_mode!r}; if this server does not support it, "
                f"set json_mode to {others})"
            )
        if self.rate_limiter.active:
            tokens = sum(estimate_tokens(m["content"] or "") for m in msgs) + request.max_tokens
            self.rate_limiter.acquire(tokens, cancel=stop)
        if stop is not None and stop.is_set():
            raise _Abandoned()
        t0 = time.perf_counter()
        with translate_errors(self.base_url, self.model, "chat completion", self.timeout, hint):
            response = self._client.chat.completions.create(**kwargs)
        seconds = time.perf_counter() - t0
        if not response.choices:
            raise GemragError(f"the server at {self.base_url} returned no choices")
        message = response.choices[0].message
        calls = getattr(message, "tool_calls", None) or []
        if tools is not None and calls and getattr(calls[0], "function", None) is not None:
            text = canonical_call(calls[0].function.name, calls[0].function.arguments)
        else:
            text = message.content or ""
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
