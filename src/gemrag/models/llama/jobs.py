"""What the llama.cpp batch decoder (:mod:`gemrag.models.llama.batch`) is asked and what it answers, and the state
of one request while it is being decoded.

:class:`DecodeRequest` (token ids in), :class:`DecodeResult` (token ids and timings out) and :class:`Step` (what one
``llama_decode`` call produced) are the decoder's interface, re-exported by :mod:`gemrag.models.llama.batch`.
:class:`Job` is a request in flight, shared by the decoder's loop, its KV-cache slots
(:class:`gemrag.models.llama.slots.KVSlots`) and its token choice (:class:`gemrag.models.llama.sampling.TokenSampler`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DecodeRequest", "DecodeResult", "Job", "Step"]


@dataclass(frozen=True)
class DecodeRequest:
    """One completion to decode.

    Attributes:
        tokens: the prompt's token ids (at least one; chat template applied, BOS included if any).
        max_tokens: completion limit (tokens, >= 1); ``len(tokens) + max_tokens`` must not exceed ``n_ctx``.
        temperature: 0 = greedy, else sampled with :data:`~gemrag.models.llama.sampling.SAMPLED_TOP_K` ... and
            ``seed``.
        seed: the sampling seed (sampled requests only).
        grammar: GBNF text constraining the completion (root rule ``root``), or None.
    """

    tokens: Sequence[int]
    max_tokens: int
    temperature: float = 0.0
    seed: int = 0
    grammar: str | None = None


@dataclass
class DecodeResult:
    """The outcome of one :class:`DecodeRequest`.

    Attributes:
        tokens: the completion's token ids (the end-of-generation token excluded).
        finish_reason: ``"stop"`` (an end-of-generation token) or ``"length"`` (``max_tokens`` reached, or the
            grammar allowed no token).
        prompt_tokens: prompt length (tokens). reused_tokens: prompt tokens found in the KV cache (not decoded).
        prompt_seconds: this request's share of the ``llama_decode`` time of steps that read its prompt
            (seconds; a step's time is shared among its tokens in proportion).
        generation_seconds: its share of the ``llama_decode`` time of steps that decoded its generated tokens.
        sampling_seconds: time spent choosing its tokens (logits, grammar, samplers; seconds).
        grammar_rejections: greedy steps whose argmax the grammar rejected (full-vocabulary grammar pass).
    """

    tokens: list[int] = field(default_factory=list)
    finish_reason: str = "length"
    prompt_tokens: int = 0
    reused_tokens: int = 0
    prompt_seconds: float = 0.0
    generation_seconds: float = 0.0
    sampling_seconds: float = 0.0
    grammar_rejections: int = 0

    @property
    def seconds(self) -> float:
        """prompt + generation + sampling seconds: this request's share of the engine's wall-clock time."""
        return self.prompt_seconds + self.generation_seconds + self.sampling_seconds


@dataclass
class Step:
    """What one ``llama_decode`` call of :meth:`~gemrag.models.llama.batch.BatchDecoder.run_steps` produced.

    Attributes:
        tokens: ``(index, token id)`` of each token added to a request's completion (end-of-generation tokens
            are not part of a completion), in request-slot order.
        done: ``(index, result)`` of each request this step finished.
    """

    tokens: list[tuple[int, int]] = field(default_factory=list)
    done: list[tuple[int, DecodeResult]] = field(default_factory=list)


@dataclass
class Job:
    """One :class:`DecodeRequest` in flight in the decoder.

    Attributes:
        index: the request's position in the run's input.
        request: the request.
        slot: its sequence id in the KV cache.
        pending: prompt tokens not decoded yet.
        result: its :class:`DecodeResult`, filled as it goes.
        grammar: greedy requests: a grammar sampler checked lazily (None without a grammar).
        chain: sampled requests: a full sampler chain.
        next_token: the token sampled last, to be decoded in the next step (None: none).
        fed: tokens of this job in the current batch.
        row: batch row whose logits this job samples from, -1 = none this step.
    """

    index: int
    request: DecodeRequest
    slot: int
    pending: list[int]
    result: DecodeResult
    grammar: Any = None
    chain: Any = None
    next_token: int | None = None
    fed: int = 0
    row: int = -1
