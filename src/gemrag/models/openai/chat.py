"""The chat-completions request of :class:`~gemrag.models.openai.backend.OpenAILLM` and its answer read back: the
``chat.completions.create`` arguments for a :class:`~gemrag.models.batch.CompletionRequest` (its messages, and its
schema as tools or as a ``response_format``; the arguments it shares with the streamed request of
:mod:`gemrag.models.openai.stream` are :func:`base_chat_kwargs`), the hint an error names when the server refuses
them, and the :class:`~gemrag.models.base.Completion` made of the response. Sending, retries, rate limits and
concurrency are the backend's job (:mod:`gemrag.models.openai.backend`).

Structured output differs between servers, hence :attr:`OpenAILLM.json_mode
<gemrag.models.openai.backend.OpenAILLM.json_mode>`:

* ``"json_schema"`` (default): ``response_format={"type": "json_schema", "json_schema": {"name": "output",
  "schema": schema}}`` — OpenAI, vLLM, Ollama, ``llama-server``.
* ``"json_object"``: ``response_format={"type": "json_object", "schema": schema}`` — llama-cpp-python's
  server (its request model only accepts ``"text"`` and ``"json_object"``, and turns the ``schema`` into a
  grammar); servers that ignore ``schema`` still return some JSON object.
* ``"none"``: no ``response_format``; the schema is appended to the conversation as an instruction.

With ``tool_calling="native"``, a tool-call schema (the agent's) is sent as the API's ``tools`` and ``tool_choice``
instead, and the agent's earlier calls and results as ``tool_calls`` and ``role: "tool"`` messages
(:mod:`gemrag.models.tool_calls`); the answer's first tool call is read back as the canonical call text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from gemrag.errors import GemragError
from gemrag.models.base import Completion, Message, Usage
from gemrag.models.batch import CompletionRequest
from gemrag.models.tool_calls import canonical_call, openai_messages, openai_tools, tool_choice

__all__ = [
    "JSON_MODES",
    "TOOL_CALLING",
    "ChatRequest",
    "JsonMode",
    "ToolCalling",
    "base_chat_kwargs",
    "chat_request",
    "read_completion",
]

JsonMode = Literal["json_schema", "json_object", "none"]
#: The accepted :data:`JsonMode` values.
JSON_MODES: tuple[str, ...] = ("json_schema", "json_object", "none")
ToolCalling = Literal["native", "structured"]
#: The accepted :data:`ToolCalling` values.
TOOL_CALLING: tuple[str, ...] = ("native", "structured")


@dataclass(frozen=True)
class ChatRequest:
    """One ``chat.completions.create`` request, ready to send.

    Attributes:
        kwargs: the SDK call's keyword arguments: ``model``, ``messages`` (dicts with ``role`` and ``content``, and
            native tool messages), ``max_tokens`` (tokens), ``temperature``; ``seed`` when given; ``tools`` and
            ``tool_choice``, or ``response_format``, when the schema asks for them.
        hint: what an error adds when the server refuses the request (which setting to change), or ``""``.
        native_tools: the schema went as ``tools`` (the answer is read from the message's ``tool_calls``).
        schema: the request's JSON schema, or None (with one, the answer is parsed as JSON).
    """

    kwargs: dict[str, Any]
    hint: str
    native_tools: bool
    schema: dict[str, Any] | None


def base_chat_kwargs(
    model: str,
    messages: Sequence[Message],
    *,
    max_tokens: int,
    temperature: float,
    seed: int | None,
    native_tools: bool = False,
) -> dict[str, Any]:
    """The arguments every ``chat.completions.create`` request of the backend has, streamed or not.

    Args:
        model: the model name sent.
        messages: the conversation, oldest first.
        max_tokens: completion limit (tokens).
        temperature: sampling temperature.
        seed: sent when not None.
        native_tools: the agent's tool calls and results go as native tool messages
            (:func:`gemrag.models.tool_calls.openai_messages`); False: each message as ``{"role", "content"}``.

    Returns:
        A new dict: ``model``, ``messages`` (a new list of new dicts; ``messages`` is not changed),
        ``max_tokens``, ``temperature`` and, when given, ``seed``. Callers add their own keys (``tools``,
        ``response_format``, ``stream``...) and may append to its ``messages``.
    """
    msgs: list[dict[str, Any]] = (
        openai_messages(messages) if native_tools else [{"role": m["role"], "content": m["content"]} for m in messages]
    )
    kwargs: dict[str, Any] = {"model": model, "messages": msgs, "max_tokens": max_tokens, "temperature": temperature}
    if seed is not None:
        kwargs["seed"] = seed
    return kwargs


def chat_request(
    model: str, request: CompletionRequest, *, json_mode: JsonMode, tool_calling: ToolCalling
) -> ChatRequest:
    """The ``chat.completions.create`` arguments for ``request`` (module docstring).

    Args:
        model: the model name sent.
        request: the messages, schema, ``max_tokens`` (tokens), temperature and seed (sent when not None).
        json_mode: how a schema that is not sent as tools is requested.
        tool_calling: ``"native"``: a tool-call schema is sent as ``tools``; ``"structured"``: as any schema.

    Returns:
        The request, with the hint for a refusal: with tools, to set ``tool_calling`` to ``'structured'``; with a
        ``response_format``, to set ``json_mode`` to one of the others.
    """
    schema = request.schema
    tools = openai_tools(schema) if tool_calling == "native" else None
    kwargs = base_chat_kwargs(
        model,
        request.messages,
        max_tokens=request.max_tokens,
        temperature=request.temperature,
        seed=request.seed,
        native_tools=tools is not None,
    )
    msgs: list[dict[str, Any]] = kwargs["messages"]
    if tools is not None:
        kwargs["tools"] = tools
        kwargs["tool_choice"] = tool_choice(tools)
    elif schema is not None:
        if json_mode == "json_schema":
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "output", "schema": schema},
            }
        elif json_mode == "json_object":
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
        others = " or ".join(repr(m) for m in JSON_MODES if m != json_mode)
        hint = (
            f" (the request used response_format type {json_mode!r}; if this server does not support it, "
            f"set json_mode to {others})"
        )
    return ChatRequest(kwargs=kwargs, hint=hint, native_tools=tools is not None, schema=schema)


def read_completion(response: Any, call: ChatRequest, base_url: str, seconds: float) -> Completion:
    """The :class:`~gemrag.models.base.Completion` of a ``chat.completions.create`` response to ``call``.

    Args:
        response: the SDK's ``ChatCompletion``.
        call: the request it answers.
        base_url: the server's API root (named in errors).
        seconds: the request's wall-clock time (seconds).

    Returns:
        ``text``: the first tool call as canonical call text when ``call`` sent tools and the server called one,
        else the message's content (``""`` when none); ``parsed``: ``text`` decoded as JSON when ``call`` had a
        schema and it parses, else None; ``usage``: the server-reported tokens (0 when it reports none),
        ``seconds``, one call.

    Raises:
        GemragError: the response has no choices.
    """
    if not response.choices:
        raise GemragError(f"the server at {base_url} returned no choices")
    message = response.choices[0].message
    calls = getattr(message, "tool_calls", None) or []
    if call.native_tools and calls and getattr(calls[0], "function", None) is not None:
        text = canonical_call(calls[0].function.name, calls[0].function.arguments)
    else:
        text = message.content or ""
    parsed: Any = None
    if call.schema is not None:
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
