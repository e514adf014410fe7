"""Structured output: request JSON that follows a schema, validate it with pydantic, repair or retry.

DESIGN.md: "A malformed answer from a model never crashes a build and never silently drops a chunk: it is
retried, then recorded as a failure". This module does the retrying; the caller records the failure when
:class:`~gemrag.errors.StructuredOutputError` is raised (or yielded) after the last attempt.

One logic serves one prompt and many: :func:`complete_validated_iter` runs n prompts in rounds (round 1: every
prompt's greedy attempt as one batch through :func:`gemrag.models.batch.complete_iter`; round 2: the invalid ones
together, with the repair conversation and a new temperature and seed; ...); :func:`complete_structured_iter` is
it with pydantic validation, :func:`complete_structured` its one-prompt case, and free text (summaries) uses it
with :func:`validate_text` and no schema.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Generator, Sequence
from contextlib import closing
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from gemrag.errors import GemragError, StructuredOutputError
from gemrag.models.base import LLM, Completion, Message
from gemrag.models.batch import CompletionRequest, complete_iter

T = TypeVar("T", bound=BaseModel)
V = TypeVar("V")

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


def attempt_parameters(attempt: int) -> tuple[float, int | None]:
    """``(temperature, seed)`` of attempt number ``attempt`` (0-based): attempt 0 is greedy with the backend's
    default seed; attempt a > 0 samples at ``min(0.2 a, 0.8)`` with seed a, so each attempt has its own cache key."""
    return (0.0, None) if attempt == 0 else (min(0.2 * attempt, 0.8), attempt)


def validate_json(output_type: type[T]) -> Callable[[Completion], T]:
    """The validator of :func:`complete_structured`: the completion's decoded JSON (``parsed``, else the text
    through :func:`parse_json_lenient`) validated as ``output_type``; raises ``ValueError`` or ``ValidationError``."""

    def validate(completion: Completion) -> T:
        data = completion.parsed if isinstance(completion.parsed, dict) else parse_json_lenient(completion.text)
        return output_type.model_validate(data)

    return validate


def validate_text(completion: Completion) -> str:
    """The validator of free text: the completion's text, whitespace-normalized.

    Raises:
        ValueError: the text is empty.
    """
    text = " ".join(completion.text.split())
    if not text:
        raise ValueError("the LLM returned an empty text")
    return text


def _repair(messages: Sequence[Message], raw: str, error: str, schema: dict[str, Any] | None) -> list[Message]:
    """The conversation of a retry: the prompt, the invalid answer and what was wrong with it."""
    again = (
        f"Reply again with only a JSON object that follows this schema: {json.dumps(schema)}"
        if schema is not None
        else "Reply again."
    )
    return [
        *messages,
        {"role": "assistant", "content": raw[:2000]},
        {"role": "user", "content": f"That answer was not valid: {error}. {again}"},
    ]


def complete_validated_iter(
    llm: LLM,
    prompts: Sequence[Sequence[Message]],
    validate: Callable[[Completion], V],
    *,
    schema: dict[str, Any] | None = None,
    max_tokens: int = 256,
    attempts: int = 3,
    first_attempt: int | Sequence[int] = 0,
    observe: Callable[[int, Completion], None] | None = None,
) -> Generator[tuple[int, V | GemragError], None, None]:
    """Ask ``llm`` the n prompts in rounds of batches until each answer validates or its attempts run out.

    Round 1 sends every prompt's first attempt as one batch (:func:`gemrag.models.batch.complete_iter`, so the
    backend's own batching or concurrency serves them); the prompts whose answer failed validation go together
    into round 2, each with the repair conversation (its invalid answer and the error) and the next attempt's
    temperature and seed (:func:`attempt_parameters`), and so on for ``attempts`` rounds. Per prompt, the
    requests, hence the cache keys, are exactly those of :func:`complete_structured` on that prompt alone.

    Args:
        llm: any :class:`~gemrag.models.base.LLM` (usually the cached, metered one).
        prompts: n conversations.
        validate: completion -> value; raises ``ValueError`` or ``pydantic.ValidationError`` when invalid
            (:func:`validate_json`, :func:`validate_text`).
        schema: the JSON schema sent for constrained decoding (None: free text).
        max_tokens: completion limit per attempt (tokens).
        attempts: attempts per prompt (>= 1; fewer is taken as 1).
        first_attempt: the number of the first attempt, one for all prompts or one per prompt (a caller retrying
            a prompt that failed earlier passes the attempts already spent: new temperatures, seeds and keys).
        observe: called with ``(prompt index, completion)`` for every completion received, valid or not
            (e.g. to count tokens).

    Yields:
        n pairs ``(index, value or error)`` in completion order: the validated value, a
        :class:`~gemrag.errors.StructuredOutputError` when every attempt was invalid, or the backend's own
        non-fatal :class:`~gemrag.errors.GemragError` for that prompt (not retried, as with a single call).

    Raises:
        GemragError: a fatal one (:func:`~gemrag.errors.is_fatal`), e.g. the model process crashed.
    """
    n = len(prompts)
    firsts = [first_attempt] * n if isinstance(first_attempt, int) else [int(a) for a in first_attempt]
    if len(firsts) != n:
        raise ValueError(f"first_attempt has {len(firsts)} entries for {n} prompts")
    rounds = max(1, attempts)
    convos: list[Sequence[Message]] = list(prompts)
    pending = list(range(n))
    for r in range(rounds):
        requests = []
        for i in pending:
            temperature, seed = attempt_parameters(firsts[i] + r)
            requests.append(CompletionRequest(convos[i], schema, max_tokens, temperature, seed))
        failed: list[int] = []
        with closing(complete_iter(llm, requests)) as results:  # a caller that stops abandons the batch at once
            for j, result in results:
                i = pending[j]
                if isinstance(result, GemragError):
                    yield i, result
                    continue
                if observe is not None:
                    observe(i, result)
                try:
                    value: V | GemragError = validate(result)
                except (ValueError, ValidationError) as exc:
                    error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                    if r + 1 < rounds:
                        convos[i] = _repair(prompts[i], result.text, error, schema)
                        failed.append(i)
                        continue
                    value = StructuredOutputError(
                        f"model output failed validation after {attempts} attempt{'s' * (attempts != 1)}: "
                        f"{error}; last output: {result.text[:200]!r}"
                    )
                yield i, value
        pending = sorted(failed)
        if not pending:
            return


def complete_structured_iter(
    llm: LLM,
    prompts: Sequence[Sequence[Message]],
    output_type: type[T],
    *,
    schema: dict[str, Any] | None = None,
    max_tokens: int = 256,
    attempts: int = 3,
    first_attempt: int | Sequence[int] = 0,
    observe: Callable[[int, Completion], None] | None = None,
) -> Generator[tuple[int, T | GemragError], None, None]:
    """:func:`complete_structured` for n prompts at once, in batches (:func:`complete_validated_iter`).

    Args:
        llm, prompts, max_tokens, attempts, first_attempt, observe: see :func:`complete_validated_iter`.
        output_type: the pydantic model every answer must validate against.
        schema: the JSON schema sent for constrained decoding (default: ``output_type``'s own schema).

    Yields:
        n pairs ``(index, output_type instance or GemragError)`` in completion order; the error is a
        :class:`~gemrag.errors.StructuredOutputError` after the last invalid attempt, or the backend's own.

    Raises:
        GemragError: a fatal one (:func:`~gemrag.errors.is_fatal`).
    """
    return complete_validated_iter(
        llm,
        prompts,
        validate_json(output_type),
        schema=schema or output_type.model_json_schema(),
        max_tokens=max_tokens,
        attempts=attempts,
        first_attempt=first_attempt,
        observe=observe,
    )


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
    differs and a bad cached answer is never replayed forever. The one-prompt case of
    :func:`complete_structured_iter` (one logic for both); its batch is closed before this returns or raises, so
    the backend is free for the next call (the contract of :func:`gemrag.models.batch.complete_iter`).

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
        GemragError: the backend failed (as raised by ``llm.complete``).
    """
    results = complete_structured_iter(
        llm,
        [messages],
        output_type,
        schema=schema,
        max_tokens=max_tokens,
        attempts=attempts,
        first_attempt=first_attempt,
    )
    # Closed before the answer is returned or raised: a suspended batch left to the garbage collector would keep
    # the backend held (the raised error's traceback references this frame, hence the generator).
    with closing(results):
        for _, result in results:
            if isinstance(result, GemragError):
                raise result
            return result
    raise AssertionError("complete_structured_iter yielded nothing")  # pragma: no cover - one pair per prompt
