"""Many LLM calls at once: the optional batch capability of a backend, and the fallback that makes one from any LLM.

A build issues hundreds of independent extraction calls (one per chunk). A backend that can serve several
at once — llama.cpp decoding several sequences in one batch, an HTTP backend with N requests in flight —
implements the optional method ``complete_iter(requests)``; :func:`complete_iter` here uses it when present
and falls back to one :meth:`~gemrag.models.base.LLM.complete` call after another otherwise. Like
``cache_identity``, the method is not part of the :class:`~gemrag.models.base.LLM` protocol, so third-party
backends need not implement it.

Contract of ``complete_iter(requests)`` (backend method and module function alike):

* yields ``(index, result)`` pairs, one per request, **in completion order** (not request order), where
  ``index`` is the request's position in ``requests`` and ``result`` is a
  :class:`~gemrag.models.base.Completion` or the :class:`~gemrag.errors.GemragError` that request ended with
  (a per-request failure, such as an HTTP 400 or a context overflow, does not stop the others);
* raises (instead of yielding) the errors that make every further call pointless: :class:`ModelCrashError`
  and any error whose :func:`gemrag.errors.is_fatal` is true;
* results must equal (greedy) or be as valid as (sampled) those of calling ``complete`` on each request;
* the caller may stop iterating early (``break``, ``return``, an exception); a backend then abandons or finishes the
  requests in flight without yielding them. A caller that stops before the generator is exhausted **closes** it
  (``with contextlib.closing(...)``, as :func:`gemrag.models.structured.complete_validated_iter` does): a backend
  may hold a resource while its generator is suspended (the llama.cpp decoder, the backend's lock) and releases it
  on close; a generator merely dropped while something still references it (a raised error's traceback, a
  reference cycle) holds it until the garbage collector finalizes it, and the next call meets a busy backend.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any

from gemrag.errors import GemragError, is_fatal
from gemrag.models.base import LLM, Completion, Message

__all__ = ["CompletionRequest", "complete_iter", "complete_one_by_one", "supports_batches"]


@dataclass(frozen=True)
class CompletionRequest:
    """The arguments of one :meth:`~gemrag.models.base.LLM.complete` call.

    Attributes:
        messages: the conversation, oldest first.
        schema: the JSON schema the answer must follow (None: free text).
        max_tokens: the completion limit (tokens).
        temperature: sampling temperature (0 = greedy).
        seed: sampling seed (None: the backend's default).
    """

    messages: Sequence[Message]
    schema: dict[str, Any] | None = None
    max_tokens: int = 256
    temperature: float = 0.0
    seed: int | None = None

    def call(self, llm: LLM) -> Completion:
        """``llm.complete`` with these arguments.

        Raises:
            GemragError: whatever the backend raises.
        """
        return llm.complete(
            self.messages,
            schema=self.schema,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            seed=self.seed,
        )


def supports_batches(llm: object) -> bool:
    """True when ``llm`` (or the backend a wrapper forwards to) has its own ``complete_iter``."""
    return callable(getattr(llm, "complete_iter", None))


def complete_iter(
    llm: LLM, requests: Sequence[CompletionRequest]
) -> Generator[tuple[int, Completion | GemragError], None, None]:
    """Complete every request, yielding ``(index, Completion or GemragError)`` in completion order (contract: the
    module docstring). Uses ``llm.complete_iter`` when the backend has one, else ``llm.complete`` one by one.

    Args:
        llm: any LLM (usually the cached, metered one).
        requests: n requests.

    Yields:
        n pairs ``(index, result)``, ``0 <= index < n``, each index once.

    Raises:
        GemragError: a fatal one (:func:`~gemrag.errors.is_fatal`), e.g. the model process crashed.
    """
    if supports_batches(llm):
        yield from llm.complete_iter(requests)  # type: ignore[attr-defined]
        return
    yield from complete_one_by_one(llm, requests)


def complete_one_by_one(
    llm: LLM, requests: Sequence[CompletionRequest]
) -> Generator[tuple[int, Completion | GemragError], None, None]:
    """The sequential form of the contract: ``llm.complete`` on each request in order, yielding ``(index, result)``
    with non-fatal errors as results (for backends without batching, or a backend's own fallback path).

    Raises:
        GemragError: a fatal one.
    """
    for i, request in enumerate(requests):
        try:
            result: Completion | GemragError = request.call(llm)
        except GemragError as exc:
            if is_fatal(exc):
                raise
            result = exc
        yield i, result
