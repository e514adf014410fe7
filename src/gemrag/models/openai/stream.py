"""A streamed chat completion from an OpenAI-compatible server (``stream=True``): the streaming capability of
:class:`gemrag.models.openai.backend.OpenAILLM` (contract: :mod:`gemrag.models.streaming`).

The server sends the answer as Server-Sent Events of ``chat.completion.chunk`` objects; the SDK turns them into
chunk objects whose ``choices[0].delta.content`` is the next piece of text. The request asks for
``stream_options={"include_usage": True}`` (OpenAI, vLLM, llama.cpp's ``llama-server``, Ollama), so the last chunk
carries the usage; a server that sends none has it estimated (:func:`gemrag.models.openai.http.estimate_tokens`).
Closing the stream closes the HTTP response, so the server sees the client go and stops generating.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Generator, Sequence
from typing import Any

from gemrag.models.base import Completion, Message, Usage
from gemrag.models.openai.chat import base_chat_kwargs
from gemrag.models.openai.http import estimate_tokens, translate_errors
from gemrag.models.openai.limits import RateLimiter

__all__ = ["stream_chat"]


def stream_chat(
    client: Any,
    base_url: str,
    model: str,
    timeout: float,
    limiter: RateLimiter,
    messages: Sequence[Message],
    *,
    max_tokens: int = 256,
    temperature: float = 0.0,
    seed: int | None = None,
) -> Generator[str | Completion, None, None]:
    """One streamed ``chat.completions.create`` request (after waiting for ``limiter``, counted as a non-streamed
    request is; retried by the SDK until the response starts, not after).

    Args:
        client: the ``openai.OpenAI`` client. base_url, model, timeout: named in errors (``model`` is sent).
        limiter: the backend's requests/tokens-per-minute limit.
        messages: the conversation, oldest first (text only).
        max_tokens, temperature, seed: as :meth:`gemrag.models.base.LLM.complete` (``seed`` sent when given).

    Yields:
        The non-empty ``delta.content`` pieces as they arrive, then one :class:`Completion` (the pieces joined;
        usage from the server's last chunk, else estimated; seconds from the request to the last chunk).

    Raises:
        EndpointUnreachableError, EndpointRejectedError, GemragError: as
            :meth:`gemrag.models.openai.backend.OpenAILLM.complete`, also for a stream broken mid-answer.
    """
    kwargs = base_chat_kwargs(model, messages, max_tokens=max_tokens, temperature=temperature, seed=seed)
    kwargs["stream"] = True
    kwargs["stream_options"] = {"include_usage": True}
    prompt_estimate = sum(estimate_tokens(m["content"] or "") for m in kwargs["messages"])
    if limiter.active:
        limiter.acquire(prompt_estimate + max_tokens)
    t0 = time.perf_counter()
    with translate_errors(base_url, model, "chat completion", timeout):
        stream = client.chat.completions.create(**kwargs)
    pieces: list[str] = []
    usage: Any = None
    with contextlib.closing(stream):
        chunks = iter(stream)
        while True:
            with translate_errors(base_url, model, "chat completion", timeout):
                chunk = next(chunks, None)
            if chunk is None:
                break
            usage = getattr(chunk, "usage", None) or usage
            if chunk.choices:
                piece = getattr(chunk.choices[0].delta, "content", None) or ""
                if piece:
                    pieces.append(piece)
                    yield piece
    text = "".join(pieces)
    prompt = int(getattr(usage, "prompt_tokens", 0) or 0) or prompt_estimate
    completion = int(getattr(usage, "completion_tokens", 0) or 0) or (estimate_tokens(text) if text else 0)
    yield Completion(text, None, Usage(prompt, completion, seconds=time.perf_counter() - t0, calls=1))
