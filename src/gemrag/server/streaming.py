"""A streamed answer over HTTP: ``POST /v1/namespaces/{ns}/ask`` with ``"stream": true`` answers as Server-Sent
Events (``text/event-stream``, the WHATWG HTML standard's ``EventSource`` format) instead of one JSON body.

Events, each ``event: <name>`` and one ``data:`` line of JSON, then a blank line:

* ``token`` — ``{"text": "..."}``: the next piece of the answer, as the LLM writes it (a cached answer comes as
  one piece; a multiple-choice answer as the chosen option's text, see :meth:`gemrag.memory.Memory.ask_stream`);
* ``answer`` — the final event: the same JSON as the non-streamed answer (:class:`gemrag.server.schemas.AnswerOut`:
  text, choice, hits, seconds, usage);
* ``error`` — instead of ``answer`` when the LLM fails after the stream began: ``{"error", "detail", "status"}``
  as an error response's body (:mod:`gemrag.server.errors`) plus the status it would have had.

A failure before the first piece (unknown namespace, strategy not built, model missing) is an ordinary JSON error
response with its status. The answer is generated in a thread of its own (:func:`stream_answer`), which opens
the memory, iterates the stream and closes it — a llama.cpp stream holds the model's re-entrant lock, which only
the thread that took it may release. Between pieces the response checks ``request.is_disconnected()``; a client
that went away (or a response cancelled by the server) sets a stop flag, and the thread closes the stream at the
next piece, which stops the generation (the llama.cpp decoder abandons the request; an OpenAI-compatible backend
closes its HTTP response) and records nothing for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import queue
import threading
from collections.abc import AsyncIterator, Callable, Generator
from typing import Any

from fastapi import Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel

from gemrag.answers.answer import Answer
from gemrag.errors import GemragError
from gemrag.memory import Memory
from gemrag.server.errors import error_body, status_of
from gemrag.server.namespaces import Namespaces

__all__ = ["POLL_SECONDS", "SSE_RESPONSE", "stream_answer", "sse_event"]

POLL_SECONDS = 0.02
"""How often the response looks for the next piece and for a disconnected client while the model writes (s)."""

SSE_RESPONSE: dict[int | str, dict[str, Any]] = {
    200: {
        "description": 'The answer; with `"stream": true`, Server-Sent Events: `token` events (`{"text": ...}`), '
        "then one `answer` event (the JSON above) or one `error` event.",
        "content": {"text/event-stream": {"schema": {"type": "string"}}},
    }
}
"""The OpenAPI entry documenting the streamed form of the ask route's 200 response."""

_END = object()


def sse_event(item: str | Answer | BaseException, render: Callable[[Answer], BaseModel]) -> str:
    """One Server-Sent Event: a piece of text (``token``), the final answer (``answer``, ``render(answer)`` as
    JSON) or an error (``error``, with its HTTP status)."""
    if isinstance(item, str):
        name, data = "token", json.dumps({"text": item}, ensure_ascii=False)
    elif isinstance(item, Answer):
        name, data = "answer", render(item).model_dump_json()
    else:
        name, data = "error", json.dumps({**error_body(item), "status": status_of(item)}, ensure_ascii=False)
    return f"event: {name}\ndata: {data}\n\n"


def stream_answer(
    spaces: Namespaces,
    namespace: str,
    ask: Callable[[Memory], Generator[str | Answer, None, None]],
    render: Callable[[Answer], BaseModel],
    request: Request,
) -> StreamingResponse:
    """Start ``ask`` on a read-only Memory of ``namespace`` in a thread of its own and answer with its events once
    the first piece is there (module docstring).

    Args:
        spaces: the server's namespaces. namespace: the request's (its key already checked).
        ask: starts the stream on the memory (``lambda memory: memory.ask_stream(...)``).
        render: the answer's JSON model (:class:`~gemrag.server.schemas.AnswerOut`).
        request: the HTTP request, asked whether its client is still connected.

    Returns:
        A ``text/event-stream`` response.

    Raises:
        GemragError, ValueError: what ``ask`` raised before its first piece (answered as an error response).
    """
    relay: queue.Queue[Any] = queue.Queue()
    stop = threading.Event()

    def produce() -> None:
        try:
            with spaces.reading(namespace) as memory, contextlib.closing(ask(memory)) as stream:
                for item in stream:
                    relay.put(item)
                    if stop.is_set():
                        break  # leaving the block closes the stream: the generation stops
        except BaseException as exc:  # noqa: BLE001 - handed over to the response, raised or sent there
            relay.put(exc)
        finally:
            relay.put(_END)

    threading.Thread(target=produce, name=f"gemrag-answer-{namespace}", daemon=True).start()
    first = relay.get()
    if isinstance(first, BaseException):
        raise first
    if first is _END:
        raise GemragError("the answer stream ended before its first piece")
    return StreamingResponse(
        _events(first, relay, stop, render, request),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


async def _events(
    first: Any, relay: queue.Queue[Any], stop: threading.Event, render: Callable[[Answer], BaseModel], request: Request
) -> AsyncIterator[str]:
    """The events of the relayed items, up to the answer or an error; sets ``stop`` when it ends for any reason
    (the client went away, the response was cancelled, or the answer was sent)."""
    try:
        item = first
        while item is not _END:
            yield sse_event(item, render)
            if not isinstance(item, str):
                return
            item = None
            while item is None:
                if await request.is_disconnected():
                    return
                try:
                    item = relay.get_nowait()
                except queue.Empty:
                    await asyncio.sleep(POLL_SECONDS)
    finally:
        stop.set()
