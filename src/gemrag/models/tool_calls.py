"""Native tool calling on OpenAI-compatible endpoints, for the agent's tool-call schemas.

The agent (:mod:`gemrag.strategies.agent`, REMem seed "Agent Configuration") asks for one tool call per step as
structured output against a *tool-call schema*: ``{"tool": {"enum": [name]}, "arguments": {...}}`` for one tool,
an ``anyOf`` of such objects for several (:func:`gemrag.models.agent_prompts.tool_call_schema`). The embedded
llama.cpp model decodes that schema with a grammar. An OpenAI-compatible backend with
``tool_calling = "native"`` instead sends the tools as the API's ``tools`` (one function per tool, its
``parameters`` the ``arguments`` schema) with ``tool_choice`` naming the function when only one is allowed (the
agent's last step) and ``"required"`` otherwise, and turns the reply's first ``tool_calls`` entry back into the
canonical JSON text ``{"tool": name, "arguments": {...}}``, so validation, repair retries, caching and the
agent's loop are the same on both paths.

What the conversion does not do: earlier calls stay in the conversation as assistant text (the canonical JSON)
and their results as user text, not as ``tool_calls``/``role: "tool"`` messages; a server that answers with text
instead of a tool call (llama-cpp-python's server does for ``tool_choice = "required"``: it only enforces a
named function) has that text validated like any structured answer.
"""

from __future__ import annotations

import json
from typing import Any


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
