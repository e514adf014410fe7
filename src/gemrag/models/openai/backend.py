"""The LLM backend for OpenAI-compatible HTTP servers, over the ``openai`` SDK: its settings, requests in flight,
the client-side rate limit, and which failures stop a batch.

Works with OpenAI itself and with the servers that speak its API: vLLM, Ollama (``/v1``), llama.cpp's
``llama-server`` and llama-cpp-python's ``python -m llama_cpp.server``.

Structured output differs between servers, hence :attr:`OpenAILLM.json_mode` (``"json_schema"``, ``"json_object"``
or ``"none"``); what each mode and :attr:`OpenAILLM.tool_calling` send is :mod:`gemrag.models.openai.chat`, which
builds each request of :meth:`OpenAILLM.complete` and reads its answer. The embedder is
:mod:`gemrag.models.openai.embedder` (re-exported here).

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

import threading
import time
from collections.abc import Generator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

from gemrag.errors import ConfigError, GemragError, is_fatal
from gemrag.models.base import Completion, Message
from gemrag.models.batch import CompletionRequest
from gemrag.models.openai.chat import JSON_MODES, TOOL_CALLING, JsonMode, ToolCalling, chat_request, read_completion
from gemrag.models.openai.embedder import OpenAIEmbedder
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

__all__ = [
    "OpenAILLM",
    "OpenAIEmbedder",
    "JsonMode",
    "estimate_tokens",
    "EndpointUnreachableError",
    "EndpointRejectedError",
    "PLACEHOLDER_API_KEY",
]


class _Abandoned(Exception):
    """A queued request of a :meth:`OpenAILLM.complete_iter` whose caller stopped iterating: not sent."""


class OpenAILLM:
    """A chat model behind an OpenAI-compatible ``/v1/chat/completions``, implementing :class:`LLM` and the
    optional batch capability ``complete_iter`` (:mod:`gemrag.models.batch`).

    Attributes:
        model_id: ``"openai:<base_url>:<model>"``.
        context_window: the model's context in tokens, as configured (the API does not report it).
        json_mode: how a schema is requested (see :mod:`gemrag.models.openai.chat`); part of :attr:`cache_identity`.
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
        if json_mode not in JSON_MODES:
            raise ConfigError(f"json_mode must be one of {', '.join(JSON_MODES)}, got {json_mode!r}")
        if tool_calling not in TOOL_CALLING:
            raise ConfigError(f"tool_calling must be one of {', '.join(TOOL_CALLING)}, got {tool_calling!r}")
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
        call = chat_request(self.model, request, json_mode=self.json_mode, tool_calling=self.tool_calling)
        if self.rate_limiter.active:
            tokens = sum(estimate_tokens(m["content"] or "") for m in call.kwargs["messages"]) + request.max_tokens
            self.rate_limiter.acquire(tokens, cancel=stop)
        if stop is not None and stop.is_set():
            raise _Abandoned()
        t0 = time.perf_counter()
        with translate_errors(self.base_url, self.model, "chat completion", self.timeout, call.hint):
            response = self._client.chat.completions.create(**call.kwargs)
        return read_completion(response, call, self.base_url, time.perf_counter() - t0)

    def count_tokens(self, text: str) -> int:
        """An estimate, ``len(text) // 4 + 1`` (see :func:`estimate_tokens`); the server's tokenizer is remote."""
        return estimate_tokens(text)
