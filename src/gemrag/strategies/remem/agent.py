"""The REMem ``episodic_gist`` agent: a bounded tool-calling loop over the gist memory (seed
``remem-retrieval-strategies.txt``, "Episodic Gist Strategy", "Agent Configuration").

Modes:

* **fixed** (``agent_fixed_tools = true``, the seed's ``agent_max_steps = 2``): step 1 runs the fixed retrieval
  tool with the question (no LLM call); step 2 asks the model for ``output_answer`` only. ``agent_max_steps = 1``
  stops after the retrieval (no LLM call at all: "1=retrieve only").
* **flexible** (``agent_fixed_tools = false``, ``agent_max_steps = 5``): each step the model chooses a tool; at
  the last step the schema and the validation allow only ``output_answer``, so it cannot run past its limit.

Each call is structured output (:mod:`gemrag.strategies.remem.agent_prompts`) through
:func:`~gemrag.models.structured.complete_structured`, whose repair retries show the model its invalid answer.
A call that stays malformed is recorded in the result (``error`` and a step ``{"step", "error"}``), never raised
and never written to the store's ``failures`` table (retrieval may run on a read-only memory, and a query-time
failure belongs to that query's result); the agent then goes straight to the last step (answer only), and if
that call stays malformed too it asks once for a free-text answer
(:data:`~gemrag.strategies.remem.agent_prompts.FALLBACK_NOTE`; a reply that is still a tool call other than
``output_answer`` gives no answer). Tool results are appended to the conversation as text of at most
``result_chars`` characters (each call and result marked as such, :class:`~gemrag.models.base.Message`, so an
OpenAI-compatible backend with native tool calling sends them as ``tool_calls`` and ``role: "tool"`` messages).
Nothing the model writes is executed: a call selects one of four fixed tools and its
validated arguments.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gemrag.errors import GemragError, StructuredOutputError, is_fatal
from gemrag.models.base import LLM, Message
from gemrag.models.structured import complete_structured, parse_json_lenient, validate_text
from gemrag.strategies.remem.agent_prompts import (
    ANSWER,
    FALLBACK_NOTE,
    MAX_ANSWER_CHARS,
    RETRIEVAL_TOOLS,
    AnswerCall,
    AnyCall,
    agent_messages,
    call_json,
    step_note,
    tool_call_schema,
)

STEP_TOKENS = 160
"""Completion limit of one tool call (tokens): a short query and a few arguments, or a short answer."""
ITEM_CHARS = 600
"""Longest text of one retrieved item shown to the model (characters)."""


@dataclass(frozen=True)
class ToolHit:
    """One item a retrieval tool returned.

    Attributes:
        node_id: its store node id. text: what the model is shown. score: the tool's score (cosine in [-1, 1];
        BM25 >= 0 for ``lexical_retrieve``).
    """

    node_id: int
    text: str
    score: float


Tools = Callable[[str, dict[str, Any]], list[ToolHit]]
"""``tools(name, arguments) -> hits, best first``: runs a retrieval tool (names in
:data:`~gemrag.strategies.remem.agent_prompts.RETRIEVAL_TOOLS`, arguments as validated). May raise ``ValueError`` for
bad
arguments (the message becomes the tool's result)."""


@dataclass
class AgentResult:
    """What one agent run produced.

    Attributes:
        answer: the model's answer (None when it gave none: retrieve-only mode, or every request failed).
        node_ids: every node a tool returned, in the order first returned (calls in order, each best first).
        steps: one dict per step: ``{"tool", "arguments", "results"}`` (node ids) for a retrieval,
            ``{"tool": "output_answer", "arguments"}`` for the answer, ``{"step", "error"}`` for a malformed
            call, ``{"fallback": "free text", "answer"}`` for the free-text answer.
        error: the last malformed call's or failed request's message (None when there was none).
        llm_calls: structured calls made (each may include repair attempts), plus the free-text fallback.
    """

    answer: str | None = None
    node_ids: list[int] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    llm_calls: int = 0


def format_result(tool: str, hits: list[ToolHit], limit: int) -> str:
    """A tool's result as the model reads it: ``"Result of <tool>:"`` then one numbered line per hit (each cut at
    :data:`ITEM_CHARS`), the whole cut at ``limit`` characters; ``"(nothing found)"`` when empty."""
    lines = [f"Result of {tool}:"]
    for i, hit in enumerate(hits, 1):
        text = " ".join(hit.text.split())
        lines.append(f"{i}. {text[:ITEM_CHARS]}")
    if not hits:
        lines.append("(nothing found)")
    out = "\n".join(lines)
    return out if len(out) <= limit else out[: max(0, limit - 4)] + " ..."


BUDGET_USED = "(the retrieval budget of {b} items is used up: answer with what you have)"
"""A tool's result once the run has shown the model ``node_budget`` items."""


class _Run:
    """One agent run's conversation and record."""

    def __init__(
        self,
        llm: LLM | None,
        question: str,
        tools: Tools,
        tool_names: tuple[str, ...],
        result_chars: int,
        node_budget: int | None = None,
    ):
        self.llm, self.tools, self.result_chars, self.node_budget = llm, tools, result_chars, node_budget
        self.messages: list[Message] = agent_messages(question, tool_names)
        self.result = AgentResult()

    def _within_budget(self, hits: list[ToolHit]) -> tuple[list[ToolHit], bool]:
        """The hits the model may still be shown: with a node budget, only items not shown before, until the
        run has shown ``node_budget`` items; True when the budget cut some."""
        if self.node_budget is None:
            return hits, False
        room = self.node_budget - len(self.result.node_ids)
        fresh = [h for h in hits if h.node_id not in self.result.node_ids]
        return fresh[: max(room, 0)], len(fresh) > max(room, 0)

    def model(self) -> LLM:
        """The LLM (run_agent checked that a run needing one has one)."""
        if self.llm is None:
            raise ValueError("this agent run has no LLM")
        return self.llm

    def retrieve(self, tool: str, arguments: dict[str, Any], note: str) -> None:
        """Run a retrieval tool, record it, and append the call and its result to the conversation."""
        try:
            hits, cut = self._within_budget(self.tools(tool, arguments))
            text = format_result(tool, hits, self.result_chars)
            if cut:
                text += "\n" + BUDGET_USED.format(b=self.node_budget)
        except ValueError as exc:
            hits, text = [], f"Result of {tool}: error: {exc}"
        for h in hits:
            if h.node_id not in self.result.node_ids:
                self.result.node_ids.append(h.node_id)
        self.result.steps.append({"tool": tool, "arguments": arguments, "results": [h.node_id for h in hits]})
        self.messages.append(
            {
                "role": "assistant",
                "content": call_json(tool, arguments),
                "tool_call": {"name": tool, "arguments": arguments},
            }
        )
        self.messages.append({"role": "user", "content": f"{text}\n\n{note}", "tool_result": text})

    def ask(self, step: int, final: bool) -> Any | None:
        """One structured call (only ``output_answer`` when ``final``); None when it stayed malformed or failed."""
        self.result.llm_calls += 1
        tools = (ANSWER,) if final else (*RETRIEVAL_TOOLS, ANSWER)
        try:
            if final:
                return complete_structured(
                    self.model(), self.messages, AnswerCall, schema=tool_call_schema(tools), max_tokens=STEP_TOKENS
                )
            return complete_structured(
                self.model(), self.messages, AnyCall, schema=tool_call_schema(tools), max_tokens=STEP_TOKENS
            ).root
        except StructuredOutputError as exc:
            self._error(step, exc)
        except GemragError as exc:
            if is_fatal(exc):
                raise
            self._error(step, exc)
        return None

    def _error(self, step: int, exc: Exception) -> None:
        self.result.error = str(exc)
        self.result.steps.append({"step": step, "error": str(exc)})

    def answer(self, call: AnswerCall) -> None:
        self.result.answer = call.arguments.answer
        self.result.steps.append({"tool": ANSWER, "arguments": call.arguments.model_dump()})

    def fallback(self) -> None:
        """Ask once for a free-text answer after the final call stayed malformed."""
        self.result.llm_calls += 1
        last = self.messages[-1]
        fallback: Message = {"role": last["role"], "content": f"{last['content']}\n{FALLBACK_NOTE}"}
        messages = [*self.messages[:-1], fallback]
        try:
            text = validate_text(self.model().complete(messages, max_tokens=STEP_TOKENS, temperature=0.0))
        except (GemragError, ValueError) as exc:
            if isinstance(exc, GemragError) and is_fatal(exc):
                raise
            self.result.error = str(exc)
            return
        try:  # a model that still writes a tool call: only an output_answer call's answer counts
            call = parse_json_lenient(text)
        except ValueError:
            call = None
        if isinstance(call, dict) and "tool" in call:
            answer = call.get("arguments", {}).get("answer") if call["tool"] == ANSWER else None
            text = answer if isinstance(answer, str) and answer.strip() else ""
        self.result.answer = text[:MAX_ANSWER_CHARS] or None
        self.result.steps.append({"fallback": "free text", "answer": self.result.answer})


def run_agent(
    llm: LLM | None,
    question: str,
    tools: Tools,
    *,
    max_steps: int,
    fixed_tool: str | None = None,
    result_chars: int = 3000,
    fixed_arguments: dict[str, Any] | None = None,
    node_budget: int | None = None,
) -> AgentResult:
    """Answer ``question`` with at most ``max_steps`` steps (module docstring).

    Args:
        llm: the model (usually the memory's cached, metered LLM); None only for fixed mode's retrieve-only run
            (``max_steps = 1``), which makes no call.
        question: the user's question.
        tools: runs the retrieval tools (:data:`Tools`).
        max_steps: most steps (>= 1); in fixed mode 1 (retrieve only) or 2 (retrieve, answer).
        fixed_tool: fixed mode's retrieval tool (called with ``{"query": question}``); None: flexible mode.
        result_chars: longest tool result shown to the model (characters).
        fixed_arguments: more arguments of fixed mode's call (e.g. ``remem_temporal``'s date bounds).
        node_budget: most distinct retrieved items the model is shown over the whole run (the budget B, so the
            agent's context holds what a retrieval of B items holds; an item already shown is not shown again);
            None: every tool result in full (each at most its ``k`` items).

    Returns:
        The answer, the retrieved node ids (first-returned order) and the steps.

    Raises:
        ValueError: ``max_steps < 1``, fixed mode with ``max_steps > 2``, an unknown fixed tool, or no LLM for a
            run that needs one.
        GemragError: a fatal model error.
    """
    if max_steps < 1:
        raise ValueError(f"max_steps must be >= 1, got {max_steps}")
    if llm is None and not (fixed_tool is not None and max_steps == 1):
        raise ValueError("the agent needs an LLM unless it only retrieves (fixed mode, max_steps = 1)")
    if fixed_tool is not None:
        if fixed_tool not in RETRIEVAL_TOOLS or max_steps > 2:
            raise ValueError(f"fixed mode needs a retrieval tool and at most 2 steps, got {fixed_tool!r}, {max_steps}")
        run = _Run(llm, question, tools, (fixed_tool, ANSWER), result_chars, node_budget)
        run.retrieve(fixed_tool, {"query": question, **(fixed_arguments or {})}, step_note(2, 2))
        if max_steps == 2:
            call = run.ask(2, final=True)
            run.answer(call) if call is not None else run.fallback()
        return run.result
    run = _Run(llm, question, tools, (*RETRIEVAL_TOOLS, ANSWER), result_chars, node_budget)
    run.messages[-1]["content"] += "\n" + step_note(1, max_steps)
    step = 1
    while step <= max_steps:
        final = step == max_steps
        call = run.ask(step, final)
        if call is None:
            if final:
                run.fallback()
                break
            step = max_steps  # a malformed call: go to the answer-only step
            run.messages[-1]["content"] += "\n" + step_note(step, max_steps)
            continue
        if isinstance(call, AnswerCall):
            run.answer(call)
            break
        arguments = call.arguments.model_dump(exclude_none=True)
        run.retrieve(call.tool, arguments, step_note(step + 1, max_steps))
        step += 1
    return run.result
