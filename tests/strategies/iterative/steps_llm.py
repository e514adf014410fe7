"""A scripted LLM for the ``iterative`` strategy's four passes and the final answer (test double): each pass answers
from its own queue of replies, and every call is recorded, so a test states what the model says and checks what it
was shown."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from fakes import ScriptedLLM
from gemrag.errors import GemragError
from gemrag.models.base import Completion, Message, Usage
from gemrag.strategies.iterative.prompts import DECOMPOSE_SYSTEM, NEXT_QUERY_SYSTEM, RERANK_SYSTEM, SUB_ANSWER_SYSTEM

PASSES = {NEXT_QUERY_SYSTEM: "next_query", DECOMPOSE_SYSTEM: "decompose", SUB_ANSWER_SYSTEM: "sub_answer"}
PASSES[RERANK_SYSTEM] = "rerank"
PASSES["Answer questions about a document"] = "answer"  # gemrag.answers.prompts' prompts, whole and short


class StepLLM(ScriptedLLM):
    """Replies to the iterative passes (and ``answer``, the final answer) from ``replies[pass name]`` in order (a
    dict is sent as JSON, a str as raw text: malformed output); a pass without replies left gets the last one
    again. ``calls`` lists ``(pass name, the last user message)`` of every call. A prompt of ``context_window``
    tokens or more (a token per word) is refused with a :class:`~gemrag.errors.GemragError`, as llama.cpp refuses
    one longer than ``n_ctx``, and not recorded."""

    def __init__(self, **replies: Sequence[dict[str, Any] | str]) -> None:
        super().__init__()  # its model id, context window and token count; its prompts are not these
        self.model_id = "fake:step-llm"
        self.replies = {k: list(v) for k, v in replies.items()}
        self.calls: list[tuple[str, str]] = []  # type: ignore[assignment]  # (pass, prompt), not a count
        self.schemas: list[dict[str, Any] | None] = []

    def complete(
        self,
        messages: Sequence[Message],
        *,
        schema: dict[str, Any] | None = None,
        max_tokens: int = 256,
        temperature: float = 0.0,
        seed: int | None = None,
    ) -> Completion:
        name = next(v for k, v in PASSES.items() if messages[0]["content"].startswith(k))
        tokens = sum(self.count_tokens(m["content"]) for m in messages)
        if tokens >= self.context_window:  # as llama.cpp refuses a prompt longer than n_ctx (no call is made)
            raise GemragError(f"Requested tokens ({tokens}) exceed context window of {self.context_window}")
        self.calls.append((name, messages[-1]["content"]))
        self.schemas.append(schema)
        queue = self.replies.get(name) or [f"no reply scripted for {name}"]
        reply = queue.pop(0) if len(queue) > 1 else queue[0]
        usage = Usage(prompt_tokens=len(messages[-1]["content"].split()), completion_tokens=7, seconds=0.001, calls=1)
        if isinstance(reply, str):
            return Completion(reply, None, usage)
        return Completion(json.dumps(reply), reply, usage)

    def passes(self) -> list[str]:
        """The pass names of the calls so far, in order."""
        return [name for name, _ in self.calls]
