"""Structured output: request JSON that follows a schema, validate it with pydantic, repair or retry.

DESIGN.md: "A malformed answer from a model never crashes a build and never silently drops a chunk: it is
retried, then recorded as a failure". This module does the retrying; the caller records the failure when
:class:`~gemrag.errors.StructuredOutputError` is raised after the last attempt.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from gemrag.errors import StructuredOutputError
from gemrag.models.base import LLM, Message

T = TypeVar("T", bound=BaseModel)

_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)


def parse_json_lenient(text: str) -> Any:
    """Decode JSON from model text, repairing the common defects of small models.

    Tries, in order: the text as is; without Markdown code fences; the outermost ``{...}`` block; that
    block with trailing commas removed.

    Raises:
        ValueError: nothing decodable was found.
    """
    candidates = [text, _FENCE.sub("", text).strip()]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        block = text[start : end + 1]
        candidates += [block, re.sub(r",\s*([}\]])", r"\1", block)]
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except (json.JSONDecodeError, TypeError):
            continue
    raise ValueError(f"no JSON object in model output: {text[:200]!r}")


def complete_structured(
    llm: LLM,
    messages: Sequence[Message],
    output_type: type[T],
    *,
    schema: dict[str, Any] | None = None,
    max_tokens: int = 256,
    attempts: int = 3,
    first_attempt: int = 0,
) -> T:
    """Ask ``llm`` for JSON matching ``output_type`` and return the validated object.

    Attempt 1 is greedy (temperature 0). Each further attempt shows the model its invalid answer and the
    validation error, at a slightly higher temperature with a different seed, so the persistent cache key
    differs and a bad cached answer is never replayed forever.

    Args:
        llm: any :class:`~gemrag.models.base.LLM` (usually the cached, metered one).
        messages: the prompt.
        output_type: a pydantic model class the answer must validate against.
        schema: the JSON schema sent for constrained decoding (default: ``output_type``'s own schema).
        max_tokens: completion limit per attempt (tokens).
        attempts: total attempts (>= 1).
        first_attempt: number the attempts from here (default 0). A caller retrying a failed request later
            (e.g. a chunk whose questions failed in an earlier build) passes the attempts already spent, so
            the temperatures and seeds, hence the cache keys, are new and the cached failures are not replayed.

    Returns:
        An instance of ``output_type``.

    Raises:
        StructuredOutputError: every attempt produced unparseable or invalid JSON.
    """
    schema = schema or output_type.model_json_schema()
    convo: list[Message] = list(messages)
    error = "no attempt made"
    raw = ""
    for attempt in range(first_attempt, first_attempt + max(1, attempts)):
        completion = llm.complete(
            convo,
            schema=schema,
            max_tokens=max_tokens,
            temperature=0.0 if attempt == 0 else min(0.2 * attempt, 0.8),
            seed=None if attempt == 0 else attempt,
        )
        raw = completion.text
        try:
            data = completion.parsed if isinstance(completion.parsed, dict) else parse_json_lenient(raw)
            return output_type.model_validate(data)
        except (ValueError, ValidationError) as exc:
            error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            convo = [
                *messages,
                {"role": "assistant", "content": raw[:2000]},
                {
                    "role": "user",
                    "content": f"That answer was not valid: {error}. Reply again with only a JSON object "
                    f"that follows this schema: {json.dumps(schema)}",
                },
            ]
    raise StructuredOutputError(
        f"model output failed validation after {attempts} attempts: {error}; last output: {raw[:200]!r}"
    )
