"""Native tool calling for the REMem agent on an OpenAI-compatible endpoint (issue 10, item 4), against a
scripted stub server on loopback: what is sent (``tools``, ``tool_choice``), how ``tool_calls`` come back into the
agent, and what a malformed call does. The real llama-cpp-python server's forced call is in
tests/models/test_openai_server.py."""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from gemrag.models.openai.backend import OpenAILLM
from gemrag.models.tool_calls import canonical_call, openai_messages, openai_tools, tool_choice
from gemrag.strategies.remem.agent import ToolHit, run_agent
from gemrag.strategies.remem.agent_prompts import ANSWER, FACT, LEXICAL, SEMANTIC, TOOLS, tool_call_schema


class _Script:
    """Replies in order: ``("call", name, arguments-as-sent)`` or ``("text", content)``; records request bodies."""

    def __init__(self, replies: list[tuple[str, ...]]) -> None:
        self.replies = list(replies)
        self.bodies: list[dict[str, Any]] = []
        self.lock = threading.Lock()


def _handler(script: _Script) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with script.lock:
                script.bodies.append(body)
                reply = script.replies.pop(0)
            if reply[0] == "call":
                call = {"id": "call_1", "type": "function", "function": {"name": reply[1], "arguments": reply[2]}}
                message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
            else:
                message = {"role": "assistant", "content": reply[1]}
            data = json.dumps(
                {
                    "id": "c",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body["model"],
                    "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
                    "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16},
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[ThreadingHTTPServer] = []

    def start(replies: list[tuple[str, ...]]) -> tuple[str, _Script]:
        script = _Script(replies)
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(script))
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/v1", script

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _tools(name: str, arguments: dict[str, Any]) -> list[ToolHit]:
    return [ToolHit(node_id=7, text=f"[2023-05-08] Caroline: I went to the support group ({name})", score=0.9)]


def test_openai_tools_from_the_agent_schema() -> None:
    tools = openai_tools(tool_call_schema(TOOLS))
    assert tools is not None
    assert [t["function"]["name"] for t in tools] == [SEMANTIC, LEXICAL, FACT, ANSWER]
    fact = tools[2]["function"]["parameters"]
    assert fact["type"] == "object" and fact["required"] == ["query"] and "start" in fact["properties"]
    assert tool_choice(tools) == "required"
    only = openai_tools(tool_call_schema((ANSWER,)))
    assert only is not None and tool_choice(only) == {"type": "function", "function": {"name": ANSWER}}
    plain = {"type": "object", "properties": {"questions": {"type": "array"}}, "required": ["questions"]}
    assert openai_tools(plain) is None and openai_tools(None) is None  # other schemas stay structured output
    assert openai_tools({"properties": {"tool": {"enum": ["a", "b"]}, "arguments": {}}}) is None


def test_canonical_call_keeps_bad_arguments_as_text() -> None:
    assert json.loads(canonical_call("output_answer", '{"answer": "May"}')) == {
        "tool": "output_answer",
        "arguments": {"answer": "May"},
    }
    assert json.loads(canonical_call("lexical_retrieve", "{not json")) == {
        "tool": "lexical_retrieve",
        "arguments": "{not json",
    }
    assert json.loads(canonical_call("output_answer", None))["arguments"] == {}


def test_flexible_agent_over_native_tool_calls(serve: Any) -> None:
    base_url, script = serve(
        [
            ("call", LEXICAL, json.dumps({"query": "support group", "k": 3})),
            ("call", ANSWER, json.dumps({"answer": "8 May 2023"})),
        ]
    )
    llm = OpenAILLM("m", base_url=base_url, api_key="x", timeout=10)
    result = run_agent(llm, "When did Caroline go to the support group?", _tools, max_steps=5)
    assert result.answer == "8 May 2023" and result.error is None
    assert result.steps[0] == {"tool": LEXICAL, "arguments": {"query": "support group", "k": 3}, "results": [7]}
    first, second = script.bodies
    assert [t["function"]["name"] for t in first["tools"]] == list(TOOLS)
    assert first["tool_choice"] == "required" and "response_format" not in first
    # the earlier call goes back as the API's tool call, its result as a tool message, then the step note
    call, result, note = second["messages"][-3:]
    assert call["role"] == "assistant" and "content" not in call
    (sent,) = call["tool_calls"]
    assert sent["function"]["name"] == LEXICAL
    assert json.loads(sent["function"]["arguments"]) == {"query": "support group", "k": 3}
    assert result == {"role": "tool", "tool_call_id": sent["id"], "content": result["content"]}
    assert result["content"].startswith("Result of lexical_retrieve:")
    assert "support group (lexical_retrieve)" in result["content"] and "Step 2 of 5" not in result["content"]
    assert note["role"] == "user" and note["content"].startswith("Step 2 of 5")


def test_last_step_forces_output_answer(serve: Any) -> None:
    base_url, script = serve([("call", ANSWER, json.dumps({"answer": "Sweden"}))])
    llm = OpenAILLM("m", base_url=base_url, api_key="x", timeout=10)
    result = run_agent(llm, "Where did Caroline move from?", _tools, max_steps=2, fixed_tool=SEMANTIC)
    assert result.answer == "Sweden"
    (body,) = script.bodies
    assert body["tool_choice"] == {"type": "function", "function": {"name": ANSWER}}
    assert [t["function"]["name"] for t in body["tools"]] == [ANSWER]
    # the fixed retrieval is in the history as a tool call answered by a tool message
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "user"]
    assert body["messages"][2]["tool_calls"][0]["function"]["name"] == SEMANTIC
    assert body["messages"][3]["tool_call_id"] == body["messages"][2]["tool_calls"][0]["id"]


def test_openai_messages_converts_only_marked_pairs() -> None:
    call = {"name": LEXICAL, "arguments": {"query": "camping"}}
    messages: list[Any] = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "Question: q"},
        {"role": "assistant", "content": '{"tool": ...}', "tool_call": call},
        {
            "role": "user",
            "content": "Result of lexical_retrieve:\n1. a\n\nStep 2 of 5",
            "tool_result": "Result of lexical_retrieve:\n1. a",
        },
        {"role": "assistant", "content": '{"tool": ...}', "tool_call": {"name": SEMANTIC, "arguments": {"query": "x"}}},
        {
            "role": "user",
            "content": "Result of semantic_retrieve:\n(nothing found)",
            "tool_result": "Result of semantic_retrieve:\n(nothing found)",
        },
        {"role": "assistant", "content": "unmarked text"},
        {"role": "assistant", "content": '{"tool": ...}', "tool_call": call},
        {"role": "user", "content": "rewritten by the fallback, no tool_result"},
    ]
    before = copy.deepcopy(messages)
    out = openai_messages(messages)
    assert [m["role"] for m in out] == [
        "system",
        "user",
        "assistant",
        "tool",
        "user",
        "assistant",
        "tool",
        "assistant",
        "assistant",
        "user",
    ]
    assert [m["tool_calls"][0]["id"] for m in out if m.get("tool_calls")] == ["call_1", "call_2"]
    assert [m["tool_call_id"] for m in out if m["role"] == "tool"] == ["call_1", "call_2"]
    assert out[3]["content"] == "Result of lexical_retrieve:\n1. a" and out[4]["content"] == "Step 2 of 5"
    assert json.loads(out[2]["tool_calls"][0]["function"]["arguments"]) == {"query": "camping"}
    # a call whose result was not marked, and unmarked messages, stay text
    assert out[-2] == {"role": "assistant", "content": '{"tool": ...}'}
    assert out[-1] == {"role": "user", "content": "rewritten by the fallback, no tool_result"}
    assert messages == before  # the input is not changed


def test_malformed_native_call_is_retried_then_recorded(serve: Any) -> None:
    bad = ("call", ANSWER, "{not json")
    # 3 structured attempts of the final call fail; then the free-text fallback answers with text
    base_url, script = serve([bad, bad, bad, ("text", "Sweden")])
    llm = OpenAILLM("m", base_url=base_url, api_key="x", timeout=10)
    result = run_agent(llm, "Where did Caroline move from?", _tools, max_steps=2, fixed_tool=SEMANTIC)
    assert result.error is not None and any("error" in s for s in result.steps)
    assert result.answer == "Sweden" and result.steps[-1]["fallback"] == "free text"
    assert len(script.bodies) == 4 and "tools" not in script.bodies[-1]  # the fallback asks for plain text
    assert "{not json" in json.dumps(script.bodies[1]["messages"])  # the repair showed the model its answer


def test_structured_mode_sends_no_tools(serve: Any) -> None:
    base_url, script = serve([("text", json.dumps({"tool": ANSWER, "arguments": {"answer": "June 2023"}}))])
    llm = OpenAILLM("m", base_url=base_url, api_key="x", timeout=10, tool_calling="structured")
    result = run_agent(llm, "When is Melanie going camping?", _tools, max_steps=2, fixed_tool=SEMANTIC)
    assert result.answer == "June 2023"
    (body,) = script.bodies
    assert "tools" not in body and body["response_format"]["type"] == "json_schema"
