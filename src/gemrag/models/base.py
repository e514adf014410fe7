"""The two protocols every model provider implements (see docs/architecture.md).

* :class:`LLM` — chat completion with optional JSON-schema structured output.
* :class:`Embedder` — texts to L2-normalized float32 vectors.

An LLM may also score given continuations of a chat (:class:`ScoringLLM`: the log-probability of each token of each
continuation, as language-model evaluation scores multiple-choice options); the embedded llama.cpp model does, an
HTTP chat API does not. :func:`continuation_scorer` returns such a model or raises a clear error.

Backends (llama.cpp GGUF, ONNX MiniLM, OpenAI-compatible HTTP) implement these; middleware
(:mod:`gemrag.models.cache`, :mod:`gemrag.models.meter`) wraps them without changing the interface.

A backend may also have an optional ``cache_identity`` attribute: a JSON-serializable dict of everything
besides a call's arguments that decides its answer (the weights' hash, the context window, the chat format,
the JSON mode, pooling...). The cache middleware puts it in its keys (:func:`cache_identity_of`); backends
without it (third-party ones) are keyed by ``model_id`` alone, as before. It is not part of the protocols, so
``isinstance(x, LLM)`` does not require it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypedDict, runtime_checkable

import numpy as np
from typing_extensions import NotRequired  # typing's own from Python 3.11; pydantic requires the package

from gemrag.errors import GemragError


class ToolCallRecord(TypedDict):
    """A tool call an assistant message stands for: the tool's ``name`` and its validated ``arguments``."""

    name: str
    arguments: dict[str, Any]


class Message(TypedDict):
    """One chat message: ``role`` is ``"system"``, ``"user"`` or ``"assistant"``; ``content`` is its text.

    Two optional keys let a backend with native tool calling send an agent's history as the API's tool messages
    (:func:`gemrag.models.tool_calls.openai_messages`); every other backend reads ``role`` and ``content`` only,
    which hold the same conversation as text:

    * ``tool_call`` (assistant): the call whose canonical JSON text is ``content``.
    * ``tool_result`` (user, right after such an assistant message): the tool's result, the start of
      ``content``; the rest of ``content`` is the agent's note for the next step.
    """

    role: str
    content: str
    tool_call: NotRequired[ToolCallRecord]
    tool_result: NotRequired[str]


@dataclass(frozen=True)
class Usage:
    """Resources one or more model calls consumed.

    Attributes:
        prompt_tokens: LLM input tokens (int, the backend's own tokenizer).
        completion_tokens: LLM output tokens (int).
        embedding_tokens: tokens fed to the embedder (int).
        seconds: wall-clock time spent in the backend (float, seconds; 0 for a cache hit).
        calls: number of backend calls (int; cache hits are not counted).
        cached: number of answers served from the persistent cache (int).
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    embedding_tokens: int = 0
    seconds: float = 0.0
    calls: int = 0
    cached: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.embedding_tokens + other.embedding_tokens,
            self.seconds + other.seconds,
            self.calls + other.calls,
            self.cached + other.cached,
        )

    def __sub__(self, other: Usage) -> Usage:
        """The usage of ``self`` beyond ``other`` (e.g. a phase's totals after a call minus before it)."""
        return Usage(
            self.prompt_tokens - other.prompt_tokens,
            self.completion_tokens - other.completion_tokens,
            self.embedding_tokens - other.embedding_tokens,
            self.seconds - other.seconds,
            self.calls - other.calls,
            self.cached - other.cached,
        )


@dataclass
class Completion:
    """An LLM answer.

    Attributes:
        text: the raw text the model produced.
        parsed: the JSON object decoded from ``text`` when a schema was requested and the text parsed,
            else ``None`` (validation against the schema is the caller's job, see
            :func:`gemrag.models.structured.complete_structured`).
        usage: tokens and seconds of this call.
        cached: True when served from the persistent cache.
    """

    text: str
    parsed: Any = None
    usage: Usage = field(default_factory=Usage)
    cached: bool = False


@runtime_checkable
class LLM(Protocol):
    """A chat LLM.

    Attributes:
        model_id: a stable identifier of the model and backend (str), used in cache keys and the memory's
            record of how it was built.
        context_window: the maximum number of tokens (prompt + completion) the model accepts (int).
    """

    @property
    def model_id(self) -> str:
        """A stable identifier of the model and backend."""
        ...

    @property
    def context_window(self) -> int:
        """The maximum number of tokens (prompt + completion) the model accepts."""
        ...

    def complete(
        self,
        messages: Sequence[Message],
        *,
        schema: dict[str, Any] | None = None,
        max_tokens: int = 256,
        temperature: float = 0.0,
        seed: int | None = None,
    ) -> Completion:
        """Complete a chat.

        Args:
            messages: the conversation, oldest first.
            schema: a JSON schema the answer must follow; backends that support constrained decoding
                (llama.cpp grammars, OpenAI ``response_format``) enforce it, the others are asked for JSON.
            max_tokens: the completion limit (tokens).
            temperature: sampling temperature (0 = greedy).
            seed: sampling seed, for backends that take one.

        Raises:
            GemragError: the backend failed in a way retrying will not fix.
        """
        ...

    def count_tokens(self, text: str) -> int:
        """Number of tokens ``text`` takes in this model's tokenizer (an estimate for HTTP backends)."""
        ...


@dataclass
class Scores:
    """What :meth:`ScoringLLM.score_continuations` returns.

    Attributes:
        logprobs: per continuation, the natural-log probability of each of its tokens given the chat and the
            tokens before it (a list of floats, each <= 0; as many as the continuation has tokens in the model's
            tokenizer; ``[]`` for an empty continuation).
        usage: tokens read (``prompt_tokens``: the chat plus every continuation; ``completion_tokens`` 0) and seconds.
        cached: True when served from the persistent cache.
    """

    logprobs: list[list[float]]
    usage: Usage = field(default_factory=Usage)
    cached: bool = False


@runtime_checkable
class ScoringLLM(LLM, Protocol):
    """An :class:`LLM` that can also score continuations of a chat (the language-model likelihood of given text).

    Multiple-choice questions can be answered by scoring each option as the answer's text (Brown et al. 2020,
    "Language Models are Few-Shot Learners", section 2.4; :mod:`gemrag.answers.likelihood`).
    """

    def score_continuations(self, messages: Sequence[Message], continuations: Sequence[str]) -> Scores:
        """The log-probability of every token of each continuation, written as the assistant's reply to
        ``messages`` (the chat template applied, the reply started as a completion starts).

        Args:
            messages: the conversation, oldest first (the last one the user's).
            continuations: the texts to score, each on its own (none sees another).

        Returns:
            :class:`Scores`, one list of token log-probabilities per continuation, in order.

        Raises:
            GemragError: the chat and a continuation do not fit the context window, or the backend failed.
        """
        ...


def can_score(llm: object) -> bool:
    """Whether ``llm`` scores continuations: it has ``score_continuations`` and does not say otherwise by a false
    ``can_score`` (a wrapper such as the cache asks this of the model it wraps)."""
    return callable(getattr(llm, "score_continuations", None)) and bool(getattr(llm, "can_score", True))


def continuation_scorer(llm: LLM, needed_for: str = "") -> ScoringLLM:
    """``llm`` as a :class:`ScoringLLM`; ``needed_for`` says in the error what asked for it.

    Raises:
        GemragError: ``llm`` cannot score continuations (an HTTP chat API returns no log-probabilities of given
            text; the embedded llama.cpp model can).
    """
    if isinstance(llm, ScoringLLM) and can_score(llm):
        return llm
    why = f"; {needed_for}" if needed_for else ""
    raise GemragError(
        f"{llm.model_id} cannot score continuations (log-probabilities of given text; the embedded llama.cpp model "
        f"with its own chat template can){why}"
    )


@runtime_checkable
class Embedder(Protocol):
    """A text embedder.

    Attributes:
        model_id: a stable identifier of the model (str); a memory records it and refuses another.
        dim: the embedding dimension d (int; 384 for all-MiniLM-L6-v2).
        tokens_used: running count of input tokens embedded by this instance (int).
    """

    @property
    def model_id(self) -> str:
        """A stable identifier of the model."""
        ...

    @property
    def dim(self) -> int:
        """The embedding dimension d."""
        ...

    @property
    def tokens_used(self) -> int:
        """Running count of input tokens embedded by this instance."""
        ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts.

        Args:
            texts: n strings (n may be 0).

        Returns:
            Array of shape ``(n, dim)``, dtype float32, each row L2-normalized.
        """
        ...


def cache_identity_of(model: object) -> dict[str, Any] | None:
    """A backend's optional ``cache_identity`` (see the module docstring), or None when it has none.

    Args:
        model: an :class:`LLM` or :class:`Embedder` (or a wrapper forwarding attributes to one).

    Returns:
        A new dict (JSON-serializable values), or None when the attribute is missing or None.

    Raises:
        TypeError: ``cache_identity`` exists but is not a mapping.
    """
    identity = getattr(model, "cache_identity", None)
    if identity is None:
        return None
    if not isinstance(identity, Mapping):
        raise TypeError(f"{type(model).__name__}.cache_identity must be a dict, got {type(identity).__name__}")
    return dict(identity)
