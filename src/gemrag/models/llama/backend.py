"""The embedded local LLM: a GGUF model run in-process by llama-cpp-python.

The chat prompt is built with the chat template stored in the GGUF file (llama-cpp-python picks it up from
the ``tokenizer.chat_template`` metadata when ``chat_format`` is not given; Qwen2.5 GGUFs carry one).
A JSON schema is enforced by the GBNF grammar llama-cpp-python derives from it
(``LlamaGrammar.from_json_schema``), built once per schema (:func:`grammar_for_schema`).

With the GGUF's own chat template (the default), completions are decoded by
:class:`gemrag.models.llama.batch.BatchDecoder` in a context of ``n_parallel`` sequences: the KV cache keeps
the prompts' shared prefix between calls, grammars are parsed once and checked on the chosen token only, and
:meth:`LlamaCppLLM.complete_iter` decodes up to ``n_parallel`` requests together, and
:meth:`LlamaCppLLM.complete_stream` hands out an answer token by token. A named ``chat_format`` keeps
llama-cpp-python's ``create_chat_completion`` path (:mod:`gemrag.models.llama.legacy`).

The weights (resolving, identity, the child-process crash check, lazy loading, the decoder) are
:class:`gemrag.models.llama.loading.LlamaWeights`, the class's base; this module completes with them.
"""

from __future__ import annotations

import codecs
import contextlib
import dataclasses
import time
from collections.abc import Generator, Sequence
from typing import Any

from gemrag.errors import GemragError
from gemrag.models.base import Completion, Message, Scores, Usage
from gemrag.models.batch import CompletionRequest, complete_one_by_one
from gemrag.models.llama.chat import grammar_for_schema
from gemrag.models.llama.jobs import DecodeRequest, DecodeResult
from gemrag.models.llama.legacy import legacy_complete, legacy_stream, to_completion
from gemrag.models.llama.loading import DEFAULT_MODEL, INSTALL_HINT, LlamaWeights
from gemrag.models.llama.weights import gguf_fingerprint
from gemrag.models.streaming import pieces

__all__ = ["LlamaCppLLM", "DEFAULT_MODEL", "INSTALL_HINT", "gguf_fingerprint"]


class LlamaCppLLM(LlamaWeights):
    """A GGUF chat model run by llama-cpp-python, implementing :class:`gemrag.models.LLM`.

    Attributes:
        model_id: ``"llama.cpp:<model>-<quant>:<sha256[:12]>"`` for a known model (for example
            ``"llama.cpp:qwen2.5-coder-1.5b-q4_k_m:cc324af070c2"``), ``"llama.cpp:<file name>:<size in
            bytes>"`` for any other GGUF file.
        context_window: ``n_ctx`` (tokens, prompt + completion).
        model_path: the GGUF file.
        name: the known model's short name, else the file name (used in messages).
        cache_identity: what, besides the prompt, decides an answer (see :attr:`cache_identity`).

    Instances are thread-safe (calls are serialized; llama.cpp contexts are not re-entrant).
    """

    def prepare(self, request: CompletionRequest) -> DecodeRequest:
        """The decoder's request for a completion request: the chat template applied and tokenized (as
        llama-cpp-python does: special tokens parsed, no extra BOS), ``max_tokens`` clipped to what the context
        leaves, the schema's grammar, the seed.

        Raises:
            GemragError: the prompt does not fit the context window, llama.cpp rejects the schema's grammar, or
                the legacy path is in use.
        """
        llm = self.load()
        if self._formatter is None:
            raise GemragError(f"{self.name}: no batch decoder with chat_format={self.chat_format!r}")
        chat = self._formatter(messages=[{"role": m["role"], "content": m["content"]} for m in request.messages])
        tokens = llm.tokenize(chat.prompt.encode("utf-8"), add_bos=not chat.added_special, special=True)
        if len(tokens) >= self.context_window:
            raise GemragError(
                f"the prompt does not fit the context window of {self.model_id} ({self.context_window} tokens): "
                f"Requested tokens ({len(tokens)}) exceed context window of {self.context_window}"
            )
        room = self.context_window - len(tokens)
        grammar = None if request.schema is None else grammar_for_schema(request.schema)
        decoder = self.decoder()
        if grammar is not None and decoder is not None:
            decoder.grammars.template(grammar)  # a grammar llama.cpp rejects is this request's error
        return DecodeRequest(
            tokens=tokens,
            max_tokens=room if request.max_tokens <= 0 else min(request.max_tokens, room),
            temperature=request.temperature,
            seed=self.seed if request.seed is None else request.seed,
            grammar=grammar,
        )

    def _completion(self, prompt: Sequence[int], result: DecodeResult, wants_json: bool, seconds: float) -> Completion:
        llm = self.load()
        text = llm.detokenize(result.tokens, prev_tokens=list(prompt)).decode("utf-8", errors="ignore")
        return to_completion(
            {
                "choices": [{"message": {"content": text}}],
                "usage": {"prompt_tokens": result.prompt_tokens, "completion_tokens": len(result.tokens)},
            },
            wants_json,
            seconds,
        )

    def complete_iter(
        self, requests: Sequence[CompletionRequest]
    ) -> Generator[tuple[int, Completion | GemragError], None, None]:
        """Complete several requests, decoding up to ``n_parallel`` of them together (contract:
        :mod:`gemrag.models.batch`).

        Yields ``(index, Completion or GemragError)`` in completion order; a prompt that does not fit the context
        window is that request's error. ``usage.seconds`` of a completion is its share of the decoding time (a
        step's time is shared among the tokens of its batch) plus its own template and detokenization time, so
        the seconds of all results add up to the wall-clock time. Greedy answers equal those of
        :meth:`complete` up to last-bit differences of batched logits (``tests/models/test_integration_llama_batch.py``
        compares them). The instance's lock is held while the generator is suspended, until it is exhausted or
        closed, and the decoder until the last result is decoded (:meth:`BatchDecoder.run`): a caller that stops
        early closes it (the contract of :mod:`gemrag.models.batch`), else another thread's call waits and this
        thread's next call may meet "the llama.cpp decoder is busy".

        Raises:
            ModelCrashError: the model crashed in the child-process check.
            DecoderBusyError: another batch of this instance still holds the decoder (not closed, or interleaved).
            GemragError: llama.cpp failed to decode a batch (every request in flight is lost).
        """
        with self._lock:
            decoder = self.decoder()
            if decoder is None:  # legacy path: one call after another
                yield from complete_one_by_one(self, requests)
                return
            prepared: list[tuple[int, DecodeRequest, float]] = []
            for i, request in enumerate(requests):
                t0 = time.perf_counter()
                try:
                    prepared.append((i, self.prepare(request), time.perf_counter() - t0))
                except GemragError as exc:
                    yield i, exc
            with contextlib.closing(decoder.run([d for _, d, _ in prepared])) as results:
                for j, result in results:
                    i, d, seconds = prepared[j]
                    t0 = time.perf_counter()
                    completion = self._completion(d.tokens, result, requests[i].schema is not None, 0.0)
                    spent = seconds + result.seconds + time.perf_counter() - t0
                    completion.usage = dataclasses.replace(completion.usage, seconds=spent)
                    yield i, completion

    def complete(
        self,
        messages: Sequence[Message],
        *,
        schema: dict[str, Any] | None = None,
        max_tokens: int = 256,
        temperature: float = 0.0,
        seed: int | None = None,
    ) -> Completion:
        """Complete a chat with the model's chat template.

        Args:
            messages: the conversation, oldest first.
            schema: a JSON schema; decoding is constrained by a grammar derived from it.
            max_tokens: completion limit in tokens (clipped by llama.cpp to what the context leaves).
            temperature: sampling temperature (0 = greedy).
            seed: sampling seed; default the instance's ``seed``.

        Returns:
            A :class:`Completion`; ``parsed`` is the decoded JSON when ``schema`` was given and the text
            parses (it does not if ``max_tokens`` cut it short), else ``None``. ``usage`` holds the prompt and
            completion tokens llama.cpp reports and the wall-clock seconds of the call.

        Raises:
            GemragError: the prompt does not fit the context window, or llama.cpp failed.
            ModelNotAvailableError: llama-cpp-python cannot be imported.
        """
        with self._lock:
            decoder = self.decoder()
            if decoder is not None:
                t0 = time.perf_counter()
                request = self.prepare(CompletionRequest(messages, schema, max_tokens, temperature, seed))
                ((_, result),) = list(decoder.run([request]))
                return self._completion(request.tokens, result, schema is not None, time.perf_counter() - t0)
            return legacy_complete(
                self.load(),
                self.model_id,
                self.context_window,
                messages,
                schema,
                max_tokens,
                temperature,
                self.seed if seed is None else seed,
            )

    def complete_stream(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        seed: int | None = None,
    ) -> Generator[str | Completion, None, None]:
        """:meth:`complete` (free text) as a stream, token by token (contract: :mod:`gemrag.models.streaming`).

        The decoder runs the one request step by step (:meth:`~gemrag.models.llama.batch.BatchDecoder.run_steps`); each
        new token's bytes go through an incremental UTF-8 decoder, so a piece is yielded once its characters are
        whole, then the :class:`Completion` exactly as :meth:`complete` returns it (its text: the whole completion
        detokenized at once). The legacy path (a named ``chat_format``) streams with
        ``create_chat_completion(stream=True)`` (:func:`gemrag.models.llama.legacy.legacy_stream`).

        The lock is held from the first ``next`` until the last piece, as for :meth:`complete_iter` (and released
        before the Completion is yielded): a caller that stops early closes the stream, which abandons the request
        and releases the decoder; the stream is iterated and closed by one thread (the lock is re-entrant and owned
        by it).

        Raises:
            GemragError: the prompt does not fit the context window, or llama.cpp failed.
            DecoderBusyError: a batch of this instance still holds the decoder (not closed).
            ModelNotAvailableError, ModelCrashError: as :meth:`load`.
        """
        final: list[Completion] = []
        with self._lock:
            decoder = self.decoder()
            llm = self.load()
            if decoder is None:
                stream = legacy_stream(
                    llm, self.model_id, self.context_window, messages, max_tokens, temperature,
                    self.seed if seed is None else seed,
                )  # fmt: skip
                yield from pieces(stream, final)
            else:
                t0 = time.perf_counter()
                request = self.prepare(CompletionRequest(messages, None, max_tokens, temperature, seed))
                utf8 = codecs.getincrementaldecoder("utf-8")(errors="ignore")
                previous = list(request.tokens)
                with contextlib.closing(decoder.run_steps([request])) as steps:
                    for step in steps:
                        for _, token in step.tokens:
                            piece = utf8.decode(llm.detokenize([token], prev_tokens=previous))
                            previous.append(token)
                            if piece:
                                yield piece
                        for _, result in step.done:
                            final.append(self._completion(request.tokens, result, False, time.perf_counter() - t0))
        yield final[0]

    @property
    def can_score(self) -> bool:
        """Whether :meth:`score_continuations` works: with the GGUF's own chat template (the batch decoder), not with
        a named ``chat_format``."""
        return self.chat_format is None

    def score_continuations(self, messages: Sequence[Message], continuations: Sequence[str]) -> Scores:
        """The log-probability of every token of each continuation as the assistant's reply to ``messages``
        (:class:`gemrag.models.base.ScoringLLM`): the chat template applied and tokenized as :meth:`prepare` does
        (the reply's start included), each continuation tokenized on its own (no BOS, special-token text not
        parsed), then scored by the batch decoder (:meth:`~gemrag.models.llama.batch.BatchDecoder.score`), the
        prompt read once.

        Returns:
            :class:`~gemrag.models.base.Scores`; ``usage.prompt_tokens`` is the chat's tokens plus every
            continuation's, ``usage.seconds`` the wall-clock time.

        Raises:
            GemragError: a named ``chat_format`` (no batch decoder), or the chat and a continuation do not fit the
                context window, or llama.cpp failed.
            DecoderBusyError: a batch of this instance still holds the decoder.
        """
        with self._lock:
            decoder = self.decoder()
            if decoder is None or self._formatter is None:
                raise GemragError(
                    f"{self.name}: scoring continuations needs the GGUF's own chat template, not "
                    f"chat_format={self.chat_format!r}"
                )
            t0 = time.perf_counter()
            llm = self.load()
            chat = self._formatter(messages=[{"role": m["role"], "content": m["content"]} for m in messages])
            prompt = llm.tokenize(chat.prompt.encode("utf-8"), add_bos=not chat.added_special, special=True)
            tokens = [llm.tokenize(c.encode("utf-8"), add_bos=False, special=False) for c in continuations]
            longest = max((len(t) for t in tokens), default=0)
            if len(prompt) + longest > self.context_window:
                raise GemragError(
                    f"the prompt and a continuation do not fit the context window of {self.model_id} "
                    f"({len(prompt)} + {longest} tokens > {self.context_window})"
                )
            logprobs, _ = decoder.score(prompt, tokens)
            read = len(prompt) + sum(len(t) for t in tokens)
            return Scores(logprobs, Usage(prompt_tokens=read, seconds=time.perf_counter() - t0))

    def count_tokens(self, text: str) -> int:
        """Number of tokens of ``text`` in the model's tokenizer (no BOS; special-token text not parsed).

        Loads the weights if they are not loaded yet.
        """
        with self._lock:
            llm = self.load()
            return len(llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def count_prompt_tokens(self, messages: Sequence[Message]) -> int:
        """Tokens of ``messages`` as a completion reads them: the chat template applied and tokenized as
        :meth:`prepare` does (the legacy path: the messages' texts plus 5 tokens each). Loads the weights; used by
        cost plans (:mod:`gemrag.memory.index_plan`)."""
        llm = self.load()
        if self._formatter is None:
            return sum(self.count_tokens(str(m["content"])) + 5 for m in messages)
        chat = self._formatter(messages=[{"role": m["role"], "content": m["content"]} for m in messages])
        with self._lock:
            return len(llm.tokenize(chat.prompt.encode("utf-8"), add_bos=not chat.added_special, special=True))
