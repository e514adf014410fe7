"""Streamed completions: the optional streaming capability of an LLM backend, and the fallback that gives any LLM
one.

A user waiting for an answer wants to read it as the model writes it: a backend that can hand out its
text piece by piece — the embedded llama.cpp model token by token
(:meth:`gemrag.models.llama.backend.LlamaCppLLM.complete_stream`), an OpenAI-compatible server with ``stream=True``
(:meth:`gemrag.models.openai.backend.OpenAILLM.complete_stream`) — implements the optional method
``complete_stream``; :func:`complete_stream` here uses it when present and otherwise calls
:meth:`~gemrag.models.base.LLM.complete` and yields its whole text at once, so test doubles and third-party backends
work unchanged. Like ``complete_iter`` (:mod:`gemrag.models.batch`), the method is not part of the
:class:`~gemrag.models.base.LLM` protocol.

Contract of ``complete_stream(messages, *, max_tokens, temperature, seed)`` (backend method and module function
alike):

* yields zero or more non-empty ``str`` pieces of the answer, in order, then exactly one
  :class:`~gemrag.models.base.Completion` — the whole answer, whose ``text`` is authoritative (it equals the
  pieces joined, up to what a backend cannot know until the end) and whose ``usage`` covers the call;
* free text only: there is no ``schema`` (a structured answer is parsed, not read as it is written);
* the caller may stop early (``break``, an exception, a client that went away) and then **closes** the generator
  (``contextlib.closing``, or ``close()`` in a ``finally``): a backend holds a resource while its stream is
  suspended (the llama.cpp model's lock and decoder, an HTTP response) and releases it on close, which also stops
  the generation. An abandoned stream yields no :class:`Completion`, so nothing is cached or metered for it;
* a backend's lock is held from the first ``next`` until its last piece has been taken: a backend (and a wrapper)
  releases what it holds *before* it yields the final :class:`Completion`, so a caller that takes the Completion
  and stops leaves nothing held. A stream is iterated and closed by one thread (the llama.cpp backend's lock is
  re-entrant and owned by that thread).

:func:`pieces` is the wrapper's half of that: it relays a stream's pieces and keeps its Completion aside, closing
the stream first.
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator, Sequence

from gemrag.errors import GemragError
from gemrag.models.base import LLM, Completion, Message

__all__ = ["StreamItem", "complete_stream", "pieces", "supports_streaming"]

StreamItem = str | Completion
"""What a stream yields: a piece of the answer's text, or (last) the whole :class:`Completion`."""


def supports_streaming(llm: object) -> bool:
    """True when ``llm`` (or the backend a wrapper forwards to) has its own ``complete_stream``."""
    return callable(getattr(llm, "complete_stream", None))


def complete_stream(
    llm: LLM,
    messages: Sequence[Message],
    *,
    max_tokens: int = 256,
    temperature: float = 0.0,
    seed: int | None = None,
) -> Generator[StreamItem, None, None]:
    """Complete a chat as a stream (contract: the module docstring): ``llm.complete_stream`` when the backend has
    one, else ``llm.complete`` with its text yielded at once.

    Args:
        llm: any LLM (usually the cached, metered one).
        messages: the conversation, oldest first.
        max_tokens: the completion limit (tokens).
        temperature: sampling temperature (0 = greedy).
        seed: sampling seed (None: the backend's default).

    Yields:
        ``str`` pieces (non-empty), then one :class:`~gemrag.models.base.Completion`.

    Raises:
        GemragError: whatever the backend raises (before or between pieces).
    """
    if supports_streaming(llm):
        yield from llm.complete_stream(  # type: ignore[attr-defined]
            messages, max_tokens=max_tokens, temperature=temperature, seed=seed
        )
        return
    completion = llm.complete(messages, max_tokens=max_tokens, temperature=temperature, seed=seed)
    if completion.text:
        yield completion.text
    yield completion


def pieces(stream: Generator[StreamItem, None, None], final: list[Completion]) -> Generator[str, None, None]:
    """The ``str`` pieces of ``stream``; its :class:`Completion` is appended to ``final`` once ``stream`` is closed
    (so whatever the stream held is released before the caller yields the Completion in turn). Closing this
    generator closes ``stream``.

    Example (a wrapper holding a lock while its backend streams)::

        final: list[Completion] = []
        with lock:
            yield from pieces(complete_stream(backend, messages), final)
        yield final[0]

    Raises:
        GemragError: ``stream`` ended without a Completion (a backend breaking the contract).
    """
    done: Completion | None = None
    with contextlib.closing(stream):
        for item in stream:
            if isinstance(item, Completion):
                done = item
                break
            yield item
    if done is None:
        raise GemragError("the LLM's stream ended without its completion")
    final.append(done)
