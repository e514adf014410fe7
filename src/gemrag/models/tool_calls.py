"""Native tool calling on OpenAI-compatible endpoints, for the agent's tool-call schemas.

The agent (:mod:`gemrag.strategies.remem.agent`, REMem seed "Agent Configuration") asks for one tool call per step as
structured output against a *tool-call schema*: ``{"tool": {"enum": [name]}, "arguments": {...}}`` for one tool,
an ``anyOf`` of such objects for several (:func:`gemrag.strategies.remem.agent_prompts.tool_call_schema`). The embedded
llama.cpp model decodes that schema with a grammar. An OpenAI-compatible backend with
``tool_calling = "native"`` instead sends the tools as the API's ``tools`` (one function per tool, its
``parameters`` the ``arguments`` schema) with ``tool_choice`` naming the function when only one is allowed (the
agent's last step) and ``"required"`` otherwise, and turns the reply's first ``tool_calls`` entry back into the
canonical JSON text ``{"tool": name, "arguments": {...}}``, so validation, repair retries, caching and the
agent's loop are the same on both paths.

The agent's earlier calls go back to the server the API's way (:func:`openai_messages`): an assistant message
with ``tool_calls`` and a ``role: "tool"`` message with the result, then the agent's note for the next step as a
user message. Only messages the agent marked (``tool_call`` / ``tool_result``,
:class:`gemrag.models.base.Message`) are converted; every other message, and a marked call not followed by its
marked result (the free-text fallback rewrites the last turn), is sent as text. A server that answers with text
instead of a tool call (llama-cpp-python's server does for ``tool_choice = "required"``: it only enforces a named
function) has that text validated like any structured answer.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from gemrag.models.base import Message


def openai_tools(schema: dict[str, Any] | None) -> list[dict[str, Any]] | None:
    """The OpenAI ``tools`` list a tool-call schema stands for, or None when ``schema`` is not one.

    Args:
        schema: a JSON schema (dict), or None.

    Returns:
        ``[{"type": "function", "function": {"name", "parameters"}}]``, one per tool in schema order; None when
        ``schema`` is None or any option lacks the ``{"tool": {"enum": [one name]}, "arguments": {...}}`` shape.
    """
    if not isinstance(schema, dict):
        return None
    options = schema.get("anyOf", [schema])
    tools = []
    for option in options:
        props = option.get("properties") if isinstance(option, dict) else None
        if not isinstance(props, dict) or set(props) != {"tool", "arguments"}:
            return None
        names = props["tool"].get("enum") if isinstance(props["tool"], dict) else None
        if not (isinstance(names, list) and len(names) == 1 and isinstance(names[0], str)):
            return None
        parameters = dict(props["arguments"]) if isinstance(props["arguments"], dict) else None
        if parameters is None:
            return None
        parameters.setdefault("type", "object")
        tools.append({"type": "function", "function": {"name": names[0], "parameters": parameters}})
    return tools or None


def tool_choice(tools: list[dict[str, Any]]) -> str | dict[str, Any]:
    """``tool_choice`` for ``tools``: the function itself when there is one (forced), else ``"required"``."""
    if len(tools) == 1:
        return {"type": "function", "function": {"name": tools[0]["function"]["name"]}}
    return "required"


def canonical_call(name: str, arguments: str | dict[str, Any] | None) -> str:
    """A returned tool call as the canonical JSON text ``{"tool": name, "arguments": {...}}``.

    Args:
        name: the function's name.
        arguments: the API's ``arguments`` (a JSON string; some servers send an object).

    Returns:
        The JSON text; when ``arguments`` is not a JSON object, the text carries it as a string so that the
        schema validation fails with a message the repair retry shows the model (nothing is evaluated).
    """
    value: Any = arguments
    if isinstance(arguments, str):
        try:
            value = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            value = arguments
    elif arguments is None:
        value = {}
    return json.dumps({"tool": name, "arguments": value}, ensure_ascii=False)


def openai_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """``messages`` as the OpenAI chat API's message list, with the agent's tool calls as native tool messages.

    An assistant message carrying ``tool_call`` followed by a user message carrying ``tool_result`` becomes an
    assistant message with one ``tool_calls`` entry and no ``content`` (the API allows that beside tool calls;
    llama-cpp-python's server refuses a null one; id ``call_<n>``, n counting the conversation's calls from 1;
    ``arguments`` as a JSON string), a ``role: "tool"`` message with that ``tool_call_id`` and the result, and,
    when the user message holds more than its result (the agent's step note), a user message with the rest.
    Everything else is sent as ``{"role", "content"}``.

    Args:
        messages: the conversation, oldest first.

    Returns:
        The API's messages (new dicts; ``messages`` is not changed).
    """
    out: list[dict[str, Any]] = []
    n = 0
    i = 0
    while i < len(messages):
        m = messages[i]
        call = m.get("tool_call") if m["role"] == "assistant" else None
        nxt = messages[i + 1] if i + 1 < len(messages) else None
        result = nxt.get("tool_result") if nxt is not None and nxt["role"] == "user" else None
        if call is None or nxt is None or result is None or not nxt["content"].startswith(result):
            out.append({"role": m["role"], "content": m["content"]})
            i += 1
            continue
        n += 1
        call_id = f"call_{n}"
        arguments = json.dumps(call["arguments"], ensure_ascii=False)
        function = {"name": call["name"], "arguments": arguments}
        out.append(
            {
                "role": "assistant",
                "tool_calls": [{"id": call_id, "type": "function", "function": function}],
            }
        )
        out.append({"role": "tool", "tool_call_id": call_id, "content": result})
        rest = nxt["content"][len(result) :].strip()
        if rest:
            out.append({"role": "user", "content": rest})
        i += 2
    return out
