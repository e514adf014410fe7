"""Several completions decoded together in one llama.cpp context, with prompt-prefix reuse and cached grammars.

This is the decoding engine of :class:`gemrag.models.llama.backend.LlamaCppLLM`. It works
on token ids; the chat template, tokenization and text are the backend's job. Its requests and results are
:mod:`gemrag.models.llama.jobs`; this module schedules them and runs ``llama_decode``.

* **Batched decoding.** The context is created with ``n_seq_max = n_seq`` and a unified KV cache
  (``kv_unified``: every sequence may use the whole ``n_ctx``). Each step builds one ``llama_batch`` holding the
  next token of every generating sequence plus a chunk of the prompts being read (at most ``n_batch`` tokens in
  all), calls ``llama_decode`` once, then samples one token per sequence from its own logits row
  (``llama_get_logits_ith``). A sequence that ends frees its slot (a seq id) for the next request. Memory-bound
  token generation reads the weights once per step for all sequences, which is what beats the single-stream
  rate on a CPU.
* **Prefix reuse** (:mod:`gemrag.models.llama.slots`). Each slot remembers the tokens its sequence holds in the KV
  cache; a new request starts from the slot sharing the longest prefix with its prompt, and only the rest of the
  prompt is decoded.
* **Grammars** (:mod:`gemrag.models.llama.sampling`). A GBNF grammar is parsed once and cloned per sequence; a
  greedy request's grammar is checked on the argmax token only, a sampled request uses llama-cpp-python's own
  sampler chain, so the answers are those of ``Llama.create_chat_completion``.

Sources: llama.cpp ``include/llama.h`` (batch, memory and sampler API), ``common/sampling.cpp``
(sample-then-check grammar path), ``tools/server`` (continuous batching with slots); llama-cpp-python
``llama.py`` (``Llama.generate``/``_init_sampler``: the sampler chain and prefix matching reproduced here).
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import Generator, Sequence
from typing import Any

import numpy as np

from gemrag.errors import DecoderBusyError, GemragError
from gemrag.models.llama.chat import GrammarCache
from gemrag.models.llama.jobs import DecodeRequest, DecodeResult, Job, Step
from gemrag.models.llama.sampling import TokenSampler
from gemrag.models.llama.slots import KVSlots, choose_slot, common_prefix_len

__all__ = [
    "BatchDecoder",
    "DecodeRequest",
    "DecodeResult",
    "GrammarCache",
    "Step",
    "common_prefix_len",
    "choose_slot",
]


class BatchDecoder:
    """Decodes :class:`DecodeRequest` s several at a time in its own llama.cpp context (module docstring).

    Not thread-safe and not re-entrant: the owner serializes calls (:class:`~gemrag.models.llama.backend.LlamaCppLLM`
    holds its lock while a :meth:`run` is being iterated). One :meth:`run` at a time holds the decoder (contract:
    :meth:`run`); starting another, or :meth:`clear`, while it does raises :class:`~gemrag.errors.DecoderBusyError`.

    Attributes:
        grammar_first: apply a greedy request's grammar to the whole vocabulary at every step, as
            llama-cpp-python's sampler chain does (same answers, slower; for benchmarks/bench_llm.py).
        steps, batch_tokens, decode_seconds: ``llama_decode`` calls, the tokens they held and their seconds
            since the decoder was created (for benchmarks).
        grammars: the parsed grammars, cloned per sequence (:class:`~gemrag.models.llama.chat.GrammarCache`).
        slots: the KV cache's sequences (:class:`~gemrag.models.llama.slots.KVSlots`).
    """

    grammar_first: bool = False

    def __init__(self, model: Any, context_params: Any, *, n_seq: int, n_ctx: int, n_batch: int) -> None:
        """Create the context.

        Args:
            model: the loaded ``llama_model`` pointer (``Llama.model``).
            context_params: ``llama_context_params`` to start from (``Llama.context_params``: threads, flash
                attention, KV types); copied, then ``n_ctx``, ``n_batch``, ``n_ubatch``, ``n_seq_max`` and
                ``kv_unified`` are set.
            n_seq: sequences decoded together (>= 1).
            n_ctx: KV cache size shared by all sequences (tokens).
            n_batch: most tokens per ``llama_decode`` call (>= n_seq).

        Raises:
            GemragError: llama.cpp could not create the context or the batch.
        """
        import llama_cpp

        if n_seq < 1 or n_batch < n_seq:
            raise ValueError(f"need 1 <= n_seq <= n_batch, got n_seq={n_seq}, n_batch={n_batch}")
        self._lib = llama_cpp
        self.n_seq, self.n_ctx, self.n_batch = n_seq, n_ctx, n_batch
        params = type(context_params).from_buffer_copy(context_params)
        params.n_ctx, params.n_batch, params.n_ubatch = n_ctx, n_batch, n_batch
        params.n_seq_max = n_seq
        params.kv_unified = True
        self._ctx = llama_cpp.llama_init_from_model(model, params)
        if not self._ctx:
            raise GemragError(f"llama.cpp could not create a context of {n_ctx} tokens for {n_seq} sequences")
        mem = llama_cpp.llama_get_memory(self._ctx)
        self._batch = llama_cpp.llama_batch_init(n_batch, 0, 1)
        self.vocab = llama_cpp.llama_model_get_vocab(model)
        self.n_vocab = int(llama_cpp.llama_vocab_n_tokens(self.vocab))
        self.grammars = GrammarCache(llama_cpp, self.vocab)
        self.slots = KVSlots(llama_cpp, mem, n_seq=n_seq, n_ctx=n_ctx)
        self._running: object | None = None  # the claim of the run that holds the decoder (None: free)
        self.steps = self.batch_tokens = 0
        self.decode_seconds = 0.0
        self._sampler = TokenSampler(llama_cpp, self.vocab, self.n_vocab, self.grammars)

    def clear(self) -> None:
        """Forget every cached prefix (empties the KV cache).

        Raises:
            DecoderBusyError: a :meth:`run` holds the decoder (see its contract).
        """
        self._check_free()
        self.slots.clear()

    def _check_free(self) -> None:
        if self._running is not None:
            raise DecoderBusyError(
                "the llama.cpp decoder is busy (a complete_iter is still being iterated): close or exhaust it first"
            )

    def _admit(self, index: int, request: DecodeRequest, jobs: list[Job]) -> Job | None:
        """Start ``request`` in a free slot with its samplers, or None to retry after the next step
        (:meth:`~gemrag.models.llama.slots.KVSlots.place` says when).

        Raises:
            GemragError: the request's grammar does not parse; its slot is freed again first (a slot left busy
                would be lost to every later run, and with every slot lost a run would wait forever).
        """
        placed = self.slots.place(request, jobs)
        if placed is None:
            return None
        slot, reuse = placed
        prompt = list(request.tokens)
        job = Job(
            index=index,
            request=request,
            slot=slot,
            pending=prompt[reuse:],
            result=DecodeResult(prompt_tokens=len(prompt), reused_tokens=reuse),
        )
        try:
            self._sampler.start(job)
        except BaseException:
            self.slots.busy[slot] = False
            raise
        return job

    def _release(self, job: Job) -> None:
        self._sampler.release(job)
        self.slots.busy[job.slot] = False

    def _add(self, token: int, pos: int, seq: int, logits: bool) -> int:
        b = self._batch
        i = b.n_tokens
        b.token[i] = token
        b.pos[i] = pos
        b.n_seq_id[i] = 1
        b.seq_id[i][0] = seq
        b.logits[i] = logits
        b.n_tokens = i + 1
        return i

    def _fill(self, jobs: Sequence[Job]) -> int:
        """Put the next tokens of ``jobs`` in the batch: one per generating job, then prompt chunks."""
        cached = self.slots.cached
        self._batch.n_tokens = 0
        for job in jobs:
            job.fed, job.row = 0, -1
            if job.next_token is not None:
                job.row = self._add(job.next_token, len(cached[job.slot]), job.slot, True)
                job.fed = 1
        budget = self.n_batch - self._batch.n_tokens
        for job in jobs:
            if not job.pending or budget <= 0:
                continue
            k = min(budget, len(job.pending))
            start = len(cached[job.slot])
            for j in range(k):
                last = j == k - 1 and k == len(job.pending)
                row = self._add(job.pending[j], start + j, job.slot, last)
                if last:
                    job.row = row
            job.fed = k
            budget -= k
        return int(self._batch.n_tokens)

    def _decode(self) -> float:
        t0 = time.perf_counter()
        rc = self._lib.llama_decode(self._ctx, self._batch)
        if rc != 0:
            raise GemragError(f"llama.cpp failed: llama_decode returned {rc} for a batch of {self._batch.n_tokens}")
        seconds = time.perf_counter() - t0
        self.steps, self.batch_tokens = self.steps + 1, self.batch_tokens + self._batch.n_tokens
        self.decode_seconds += seconds
        return seconds

    def run(self, requests: Sequence[DecodeRequest]) -> Generator[tuple[int, DecodeResult], None, None]:
        """Decode every request, yielding ``(index, result)`` in completion order.

        Requests start in order as slots and KV cells free up.

        Who holds the decoder: the run, from the generator's first ``next`` until it has produced its last result
        (it releases the decoder *before* yielding the results of its last step, so a consumer that takes every
        result it asked for need not exhaust the generator), or until it is closed or raises. A consumer that stops
        earlier must close the generator (``contextlib.closing``, or ``close()`` in a ``finally``): closing abandons
        the requests in flight (their KV cells stay cached for prefix reuse) and releases the decoder, whereas a
        generator merely dropped while a reference to it survives (an exception's traceback, a reference cycle)
        keeps the decoder held until the garbage collector finalizes it. Resuming a run after it released the
        decoder only finishes it; it never releases a later run's hold.

        Raises:
            ValueError: a request is empty or needs more than ``n_ctx`` tokens (the caller checks this first).
            GemragError: ``llama_decode`` failed (the KV cache is then cleared; every request in flight is lost).
            DecoderBusyError: another run holds the decoder (interleaved or re-entrant iteration, or an abandoned run
                that was not closed); fatal (:func:`gemrag.errors.is_fatal`).
        """
        with contextlib.closing(self.run_steps(requests)) as steps:
            for step in steps:
                yield from step.done

    def run_steps(self, requests: Sequence[DecodeRequest]) -> Generator[Step, None, None]:
        """Decode every request as :meth:`run` does, yielding one :class:`Step` per ``llama_decode`` call: the
        tokens it added to each request's completion (a streamed answer shows them as they come) and the
        requests it finished. Same contract as :meth:`run` (who holds the decoder, closing, errors); a step that
        added no token and finished nothing is not yielded.

        Raises:
            ValueError, GemragError, DecoderBusyError: as :meth:`run`.
        """
        for r in requests:
            if not r.tokens or r.max_tokens < 1 or len(r.tokens) + r.max_tokens > self.n_ctx:
                raise ValueError(f"request of {len(r.tokens)} + {r.max_tokens} tokens does not fit n_ctx={self.n_ctx}")
        self._check_free()
        claim = self._running = object()
        queue = deque(enumerate(requests))
        jobs: list[Job] = []
        try:
            while queue or jobs:
                while queue and not all(self.slots.busy):
                    job = self._admit(*queue[0], jobs)
                    if job is None:
                        break
                    queue.popleft()
                    jobs.append(job)
                n = self._fill(jobs)
                try:
                    seconds = self._decode()
                except GemragError:
                    self.slots.clear()
                    raise
                done: list[Job] = []
                step = Step()
                for job in jobs:
                    share = seconds * job.fed / n
                    if job.next_token is not None:
                        self.slots.cached[job.slot].append(job.next_token)
                        job.result.generation_seconds += share
                        job.next_token = None
                    elif job.fed:
                        self.slots.cached[job.slot].extend(job.pending[: job.fed])
                        del job.pending[: job.fed]
                        job.result.prompt_seconds += share
                    if job.row < 0:
                        continue
                    t0 = time.perf_counter()
                    token = self._sampler.sample(job, self._ctx, grammar_first=self.grammar_first)
                    job.result.sampling_seconds += time.perf_counter() - t0
                    if token is None:
                        job.result.finish_reason = "length"
                        done.append(job)
                    elif self._lib.llama_vocab_is_eog(self.vocab, token):
                        job.result.finish_reason = "stop"
                        done.append(job)
                    else:
                        job.result.tokens.append(token)
                        step.tokens.append((job.index, token))
                        if len(job.result.tokens) >= job.request.max_tokens:
                            job.result.finish_reason = "length"
                            done.append(job)
                        else:
                            job.next_token = token
                for job in done:
                    jobs.remove(job)
                    self._release(job)
                    step.done.append((job.index, job.result))
                if not queue and not jobs:  # the last step: nothing of this run is left in the decoder
                    self._running = None
                if step.tokens or step.done:
                    yield step
        finally:
            for job in jobs:
                self._release(job)
            if self._running is claim:
                self._running = None

    def score(self, prompt: Sequence[int], continuations: Sequence[Sequence[int]]) -> tuple[list[list[float]], int]:
        """The log-probability of every token of each continuation after ``prompt`` (language-model scoring, as
        multiple-choice options are scored by likelihood: Brown et al. 2020, section 2.4).

        Each continuation is read in a slot after the prompt, one after another, with prefix reuse: the prompt is
        decoded once (or not at all when a slot already holds it) and each continuation from the prompt's last
        token on, with logits on every row whose next token is the continuation's. A token's log-probability is its
        logit minus the log-sum-exp of the row (float64). The continuation stays in the KV cache like a completion.

        The prompt's last token and the continuation are always decoded in a ``llama_decode`` call of their own (or
        several, past ``n_batch``): llama.cpp's quantized matrix products differ with the batch's size (by up to
        about 0.2 in a token's log-probability with the 0.5B), so a continuation decoded with part of the prompt
        would score otherwise than one decoded after a prompt the KV cache already held.

        Args:
            prompt: token ids (at least one).
            continuations: token-id sequences; ``len(prompt) + len(c)`` must not exceed ``n_ctx``.

        Returns:
            ``(logprobs, decoded)``: per continuation its tokens' log-probabilities (``[]`` for an empty one), and
            the tokens decoded (those not found in the KV cache).

        Raises:
            ValueError: an empty prompt, or a prompt and continuation longer than ``n_ctx``.
            GemragError: ``llama_decode`` failed (the KV cache is then cleared).
            DecoderBusyError: a run holds the decoder.
        """
        if not prompt or any(len(prompt) + len(c) > self.n_ctx for c in continuations):
            raise ValueError(f"a prompt of {len(prompt)} tokens and its continuations do not fit n_ctx={self.n_ctx}")
        self._check_free()
        claim = self._running = object()
        decoded = 0
        out: list[list[float]] = []
        try:
            for continuation in continuations:
                tokens = [*prompt, *continuation]
                if not continuation:
                    out.append([])
                    continue
                placed = self.slots.place(DecodeRequest(tokens=tokens, max_tokens=1), [])
                assert placed is not None  # with no job running a request always fits (KVSlots.place)
                slot, reuse = placed
                first = len(prompt) - 1  # the row whose logits score the continuation's first token
                start = min(reuse, first)
                self.slots.truncate(slot, start)
                wanted: list[tuple[int, int]] = []  # (batch row, the token it predicts)
                logprobs: list[float] = []
                pos = start
                try:
                    while pos < len(tokens):
                        # the prompt's rest, then the prompt's last token with the continuation in calls of their
                        # own, so that a continuation is decoded alike whatever the KV cache held
                        end = min(first if pos < first else len(tokens), pos + self.n_batch)
                        self._batch.n_tokens = 0
                        wanted.clear()
                        for p in range(pos, end):
                            want = first <= p < len(tokens) - 1
                            row = self._add(tokens[p], p, slot, want)
                            if want:
                                wanted.append((row, tokens[p + 1]))
                        self._decode()
                        self.slots.cached[slot].extend(tokens[pos:end])
                        decoded += end - pos
                        pos = end
                        for row, token in wanted:
                            pointer = self._lib.llama_get_logits_ith(self._ctx, row)
                            logits = np.ctypeslib.as_array(pointer, shape=(self.n_vocab,)).astype(np.float64)
                            top = float(logits.max())
                            logprobs.append(float(logits[token] - top - np.log(np.exp(logits - top).sum())))
                except GemragError:
                    self.slots.clear()
                    raise
                finally:
                    self.slots.busy[slot] = False
                out.append(logprobs)
        finally:
            if self._running is claim:
                self._running = None
        return out, decoded

    def close(self) -> None:
        """Free the grammars, the batch and the context (the model is not freed: it belongs to the Llama)."""
        self.grammars.close()
        if self._batch is not None:
            self._lib.llama_batch_free(self._batch)
            self._batch = None
        if self._ctx:
            self._lib.llama_free(self._ctx)
            self._ctx = None
