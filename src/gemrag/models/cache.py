"""Persistent cache middleware for LLMs and embedders.

Every LLM and embedding call goes through these wrappers (DESIGN.md, "middleware"): the answer is
looked up in the memory's SQLite by a sha256 of (model id, the backend's cache identity, input, parameters);
on a miss the backend is called and the answer stored *before* it is used, so an interrupted build repeats no
model call. A stored answer records the request's messages too (:data:`INPUT_KEY`), so that ``gemrag delete
--purge`` can find every answer whose input or output held removed text. :meth:`CachedLLM.complete_iter` does the
same for many calls at once (the batch contract of :mod:`gemrag.models.batch`): hits at once, the misses as one
batch to the backend, each answer cached before it is yielded; :meth:`CachedLLM.complete_stream` for a streamed
answer (:mod:`gemrag.models.streaming`): a hit is streamed at once, a miss piece by piece and cached (and metered)
when it ends.

The cache identity (:func:`gemrag.models.base.cache_identity_of`) holds what else decides an answer: for
llama.cpp the GGUF's fingerprint, ``n_ctx``, the chat format and the default seed; for an OpenAI-compatible
LLM the JSON mode; for the ONNX embedder the model file's sha256, pooling, normalization and truncation.
Backends without one are keyed as before this was added (model id alone). Keys made before the identity was
added do not match the new ones: answers cached by gemrag's own backends in older memories miss once and are
recomputed.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Generator, Sequence
from typing import Any, Protocol

import numpy as np

from gemrag import tracing
from gemrag.errors import GemragError
from gemrag.models import batch
from gemrag.models.base import LLM, Completion, Embedder, Message, Scores, Usage, cache_identity_of, can_score
from gemrag.models.batch import CompletionRequest
from gemrag.models.meter import UsageMeter
from gemrag.models.streaming import StreamItem, complete_stream, pieces


class LLMCacheStore(Protocol):
    """The part of the store the LLM cache uses."""

    def get_llm(self, key: str) -> dict[str, Any] | None: ...
    def put_llm(self, key: str, model: str, response: dict[str, Any]) -> None: ...


class EmbeddingCacheStore(Protocol):
    """The part of the store the embedding cache uses."""

    def get_embeddings(self, model: str, keys: Sequence[str]) -> dict[str, np.ndarray]: ...
    def put_embeddings(self, model: str, items: Any) -> None: ...


def cache_key(payload: dict[str, Any]) -> str:
    """sha256 (hex) of a canonical JSON encoding of ``payload`` (sorted keys, no whitespace)."""
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


_UNSET: Any = object()

INPUT_KEY = "input"
"""The key of a cached LLM response that records the request's messages (a list of ``{"role", "content"}``). No
reader of the cache uses it (an answer is found by its key); it lets ``gemrag delete --purge`` find the entries whose
input held removed text (:mod:`gemrag.memory.forgetting`). Responses cached before it was added have none."""


def _identity_digest(inner: object) -> str | None:
    identity = cache_identity_of(inner)
    return None if identity is None else cache_key(identity)


class CachedLLM:
    """An :class:`LLM` that answers from a persistent cache and meters usage.

    Args:
        inner: the backend.
        store: where answers are cached (the memory's store).
        meter: where usage is counted.
    """

    def __init__(self, inner: LLM, store: LLMCacheStore, meter: UsageMeter) -> None:
        self.inner = inner
        self.store = store
        self.meter = meter
        self.model_id = inner.model_id
        self.context_window = inner.context_window
        self._identity: str | None = _UNSET  # the backend's cache identity (sha256), read on first use

    def key(
        self,
        messages: Sequence[Message],
        *,
        schema: dict[str, Any] | None = None,
        max_tokens: int = 256,
        temperature: float = 0.0,
        seed: int | None = None,
    ) -> str:
        """The cache key (sha256 hex) of a call: model id, the backend's cache identity, messages, schema,
        ``max_tokens``, temperature and seed."""
        if self._identity is _UNSET:
            self._identity = _identity_digest(self.inner)
        payload: dict[str, Any] = {
            "model": self.model_id,
            "messages": [dict(m) for m in messages],
            "schema": schema,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "seed": seed,
        }
        if self._identity is not None:
            payload["identity"] = self._identity
        return cache_key(payload)

    def complete(
        self,
        messages: Sequence[Message],
        *,
        schema: dict[str, Any] | None = None,
        max_tokens: int = 256,
        temperature: float = 0.0,
        seed: int | None = None,
    ) -> Completion:
        """Same contract as :meth:`LLM.complete`; a cache hit returns ``cached=True`` at no cost. Traced as one
        ``chat <model>`` span (:mod:`gemrag.tracing`: GenAI attributes, tokens, cache hit)."""
        attributes = _request_attributes(self.model_id, max_tokens, temperature, seed)
        with tracing.span(f"chat {self.model_id}", attributes, kind="CLIENT") as span:
            key = self.key(messages, schema=schema, max_tokens=max_tokens, temperature=temperature, seed=seed)
            result = self._hit(key)
            if result is None:
                result = self.inner.complete(
                    messages, schema=schema, max_tokens=max_tokens, temperature=temperature, seed=seed
                )
                self._save(key, result, messages)
            span.set_attributes(_usage_attributes(self.model_id, result))
            return result

    def complete_iter(
        self, requests: Sequence[CompletionRequest]
    ) -> Generator[tuple[int, Completion | GemragError], None, None]:
        """Complete many requests (the contract of :mod:`gemrag.models.batch`), answering from the cache first.

        Cache hits are yielded at once (metered as cached); the misses go to the backend as ONE batch through
        :func:`gemrag.models.batch.complete_iter` (so a backend's own batching or concurrency serves them), each
        answer stored in the cache *before* it is yielded and metered as one call. Identical requests are sent
        once: the first index gets the backend's answer, the others the cached copy (as a later :meth:`complete`
        would). Keys are those of :meth:`complete`, so a batched answer is a hit for a later single call and vice
        versa. A per-request error is yielded and not cached. The batch of misses is traced as one ``chat <model>``
        span (:mod:`gemrag.tracing`) with the summed tokens and the requests asked, sent and answered.

        Args:
            requests: n requests.

        Yields:
            n pairs ``(index, Completion or GemragError)``, hits first, then the misses in completion order.

        Raises:
            GemragError: a fatal one from the backend (:func:`~gemrag.errors.is_fatal`).
        """
        misses: dict[str, list[int]] = {}  # key -> indices asking for it, first one sent
        for i, r in enumerate(requests):
            key = self.key(r.messages, schema=r.schema, max_tokens=r.max_tokens, temperature=r.temperature, seed=r.seed)
            if key in misses:
                misses[key].append(i)
                continue
            hit = self._hit(key)
            if hit is None:
                misses[key] = [i]
            else:
                yield i, hit
        if not misses:
            return
        keys = list(misses)
        attributes = tracing.gen_ai_attributes("chat", self.model_id)
        attributes |= {"gemrag.batch.requests": len(requests), "gemrag.batch.sent": len(keys)}
        span = tracing.start_span(f"chat {self.model_id}", attributes, kind="CLIENT")  # the misses' one batch
        spent, answered = Usage(), 0
        results = batch.complete_iter(self.inner, [requests[misses[k][0]] for k in keys])
        try:
            for j, result in results:
                first, *copies = misses[keys[j]]
                if isinstance(result, GemragError):
                    for i in (first, *copies):
                        yield i, result
                    continue
                self._save(keys[j], result, requests[first].messages)
                spent, answered = spent + result.usage, answered + 1
                yield first, result
                for i in copies:
                    yield i, self._cached_copy(result)
        finally:
            results.close()
            span.set_attributes(
                tracing.gen_ai_attributes(
                    "chat", self.model_id, input_tokens=spent.prompt_tokens, output_tokens=spent.completion_tokens
                )
                | {"gemrag.batch.answered": answered}
            )
            span.end()

    def complete_stream(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        seed: int | None = None,
    ) -> Generator[StreamItem, None, None]:
        """A streamed :meth:`complete` (contract: :mod:`gemrag.models.streaming`), under the same cache key, so a
        streamed answer is a hit for a later :meth:`complete` and vice versa.

        A hit yields its whole text as one piece, then the cached :class:`Completion` (``cached=True``, metered as
        a hit). A miss streams the backend's pieces (:func:`gemrag.models.streaming.complete_stream`: the backend's
        own stream, or its whole answer at once); when the backend's stream ends (and is closed), its answer is
        stored and metered as one call *before* the final :class:`Completion` is yielded. A stream closed before
        its end stores and meters nothing. Traced as one ``chat <model>`` span (:mod:`gemrag.tracing`), started at the
        first piece asked for and ended with the stream; it is not made current, so nothing leaks across a yield.

        Raises:
            GemragError: whatever the backend raises.
        """
        attributes = _request_attributes(self.model_id, max_tokens, temperature, seed) | {"gemrag.stream": True}
        span = tracing.start_span(f"chat {self.model_id}", attributes, kind="CLIENT")
        try:
            key = self.key(messages, max_tokens=max_tokens, temperature=temperature, seed=seed)
            hit = self._hit(key)
            if hit is not None:
                span.set_attributes(_usage_attributes(self.model_id, hit))
                if hit.text:
                    yield hit.text
                yield hit
                return
            final: list[Completion] = []
            yield from pieces(
                complete_stream(self.inner, messages, max_tokens=max_tokens, temperature=temperature, seed=seed), final
            )
            self._save(key, final[0], messages)
            span.set_attributes(_usage_attributes(self.model_id, final[0]))
            yield final[0]
        finally:
            span.end()

    def _hit(self, key: str) -> Completion | None:
        """The cached answer of ``key`` (metered as a cache hit), or None."""
        hit = self.store.get_llm(key)
        if hit is None:
            return None
        usage = Usage(hit["prompt_tokens"], hit["completion_tokens"], seconds=hit["seconds"])
        self.meter.record("llm", self.model_id, usage, cached=True)
        return Completion(hit["text"], hit.get("parsed"), usage, cached=True)

    def _cached_copy(self, result: Completion) -> Completion:
        """``result`` as a cache hit (metered as one): the answer of a duplicate request of the same batch."""
        usage = Usage(result.usage.prompt_tokens, result.usage.completion_tokens, seconds=result.usage.seconds)
        self.meter.record("llm", self.model_id, usage, cached=True)
        return Completion(result.text, result.parsed, usage, cached=True)

    def _save(self, key: str, result: Completion, messages: Sequence[Message]) -> None:
        """Store a backend answer under ``key``, with the request's messages (:data:`INPUT_KEY`), and meter it as
        one call."""
        self.store.put_llm(
            key,
            self.model_id,
            {
                "text": result.text,
                "parsed": result.parsed,
                "prompt_tokens": result.usage.prompt_tokens,
                "completion_tokens": result.usage.completion_tokens,
                "seconds": result.usage.seconds,
                INPUT_KEY: [dict(m) for m in messages],
            },
        )
        self.meter.record("llm", self.model_id, result.usage, cached=False)

    @property
    def can_score(self) -> bool:
        """Whether the backend scores continuations (:func:`gemrag.models.base.continuation_scorer`)."""
        return can_score(self.inner)

    def score_continuations(self, messages: Sequence[Message], continuations: Sequence[str]) -> Scores:
        """Same contract as :meth:`gemrag.models.base.ScoringLLM.score_continuations`, cached like a completion: the
        key holds the model, the backend's cache identity, the messages and the continuations; the stored entry
        records the messages and each continuation as an assistant message (:data:`INPUT_KEY`, so a purge finds
        removed text in either). A hit returns ``cached=True``, metered as a cache hit.

        Raises:
            GemragError: the backend cannot score continuations, or failed.
        """
        if self._identity is _UNSET:
            self._identity = _identity_digest(self.inner)
        payload: dict[str, Any] = {
            "model": self.model_id,
            "kind": "continuation_logprobs",
            "messages": [dict(m) for m in messages],
            "continuations": list(continuations),
        }
        if self._identity is not None:
            payload["identity"] = self._identity
        key = cache_key(payload)
        with tracing.span(f"score {self.model_id}", tracing.gen_ai_attributes("chat", self.model_id), kind="CLIENT"):
            hit = self.store.get_llm(key)
            if hit is not None and isinstance(hit.get("parsed"), dict):
                usage = Usage(hit["prompt_tokens"], 0, seconds=hit["seconds"])
                self.meter.record("llm", self.model_id, usage, cached=True)
                return Scores([list(map(float, lp)) for lp in hit["parsed"]["logprobs"]], usage, cached=True)
            if not self.can_score:
                raise GemragError(f"{self.model_id} cannot score continuations (log-probabilities of given text)")
            result: Scores = self.inner.score_continuations(messages, continuations)  # type: ignore[attr-defined]
            replies = [{"role": "assistant", "content": c} for c in continuations]
            self.store.put_llm(
                key,
                self.model_id,
                {
                    "text": "",
                    "parsed": {"logprobs": result.logprobs},
                    "prompt_tokens": result.usage.prompt_tokens,
                    "completion_tokens": 0,
                    "seconds": result.usage.seconds,
                    INPUT_KEY: [*(dict(m) for m in messages), *replies],
                },
            )
            self.meter.record("llm", self.model_id, result.usage, cached=False)
            return result

    def count_tokens(self, text: str) -> int:
        """Delegates to the backend."""
        return self.inner.count_tokens(text)


def _request_attributes(
    model_id: str, max_tokens: int, temperature: float, seed: int | None
) -> dict[str, tracing.AttributeValue]:
    """The GenAI attributes of one chat request: the model and its sampling parameters."""
    request = {"gen_ai.request.max_tokens": max_tokens, "gen_ai.request.temperature": temperature}
    return (
        tracing.gen_ai_attributes("chat", model_id) | request | ({} if seed is None else {"gen_ai.request.seed": seed})
    )


def _usage_attributes(model_id: str, result: Completion) -> dict[str, tracing.AttributeValue]:
    """The GenAI attributes of one answered call: its tokens (a cache hit's: the original call's) and the cache hit."""
    usage = result.usage
    return tracing.gen_ai_attributes(
        "chat",
        model_id,
        input_tokens=usage.prompt_tokens,
        output_tokens=usage.completion_tokens,
        cache_hit=result.cached,
    )


class CachedEmbedder:
    """An :class:`Embedder` whose vectors are cached per text in the store and metered.

    Args:
        inner: the backend.
        store: where vectors are cached.
        meter: where usage is counted.
    """

    def __init__(self, inner: Embedder, store: EmbeddingCacheStore, meter: UsageMeter) -> None:
        self.inner = inner
        self.store = store
        self.meter = meter
        self.model_id = inner.model_id
        self.dim = inner.dim
        self._identity: str | None = _UNSET

    @property
    def tokens_used(self) -> int:
        """Tokens the backend embedded (cache hits excluded)."""
        return self.inner.tokens_used

    def key(self, text: str) -> str:
        """Cache key of one text for this model and its cache identity (sha256 hex)."""
        if self._identity is _UNSET:
            self._identity = _identity_digest(self.inner)
        if self._identity is None:
            return cache_key({"model": self.model_id, "text": text})
        return cache_key({"model": self.model_id, "identity": self._identity, "text": text})

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts, computing only those not cached. Traced as one ``embeddings <model>`` span
        (:mod:`gemrag.tracing`: GenAI attributes, the tokens embedded, a cache hit when nothing was computed).

        Returns:
            Array ``(len(texts), dim)`` float32 with L2-normalized rows, in input order.
        """
        with tracing.span(f"embeddings {self.model_id}", {"gemrag.embed.texts": len(texts)}, kind="CLIENT") as span:
            return self._embed(texts, span)

    def _embed(self, texts: Sequence[str], span: tracing.Span) -> np.ndarray:
        keys = [self.key(t) for t in texts]
        found = self.store.get_embeddings(self.model_id, list(dict.fromkeys(keys)))
        missing = [i for i, k in enumerate(keys) if k not in found]
        tokens = 0
        if missing:
            unique = list(dict.fromkeys(keys[i] for i in missing))
            first = {keys[i]: i for i in reversed(missing)}
            batch = [texts[first[k]] for k in unique]
            before = self.inner.tokens_used
            start = time.perf_counter()
            vectors = self.inner.embed(batch)
            seconds = time.perf_counter() - start
            self.dim = int(vectors.shape[1])
            self.store.put_embeddings(self.model_id, zip(unique, vectors, strict=True))
            found.update(zip(unique, vectors, strict=True))
            tokens = self.inner.tokens_used - before
            used = Usage(embedding_tokens=tokens, seconds=seconds)
            self.meter.record("embed", self.model_id, used, cached=False)
        if len(missing) < len(texts):
            self.meter.record("embed", self.model_id, Usage(), cached=True)
        hit = not missing and bool(texts)
        span.set_attributes(
            tracing.gen_ai_attributes("embeddings", self.model_id, input_tokens=tokens, cache_hit=hit)
            | {"gemrag.embed.computed": len(missing)}
        )
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([found[k] for k in keys]).astype(np.float32, copy=False)
