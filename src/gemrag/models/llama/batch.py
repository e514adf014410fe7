"""Several completions decoded together in one llama.cpp context, with prompt-prefix reuse and cached grammars.

This is the decoding engine of :class:`gemrag.models.llama.backend.LlamaCppLLM`. It works
on token ids; the chat template, tokenization and text are the backend's job.

* **Batched decoding.** The context is created with ``n_seq_max = n_seq`` and a unified KV cache
  (``kv_unified``: every sequence may use the whole ``n_ctx``). Each step builds one ``llama_batch`` holding the
  next token of every generating sequence plus a chunk of the prompts being read (at most ``n_batch`` tokens in
  all), calls ``llama_decode`` once, then samples one token per sequence from its own logits row
  (``llama_get_logits_ith``). A sequence that ends frees its slot (a seq id) for the next request. Memory-bound
  token generation reads the weights once per step for all sequences, which is what beats the single-stream
  rate on a CPU.
* **Prefix reuse.** Each slot remembers the tokens its sequence holds in the KV cache. A new request starts
  from the slot whose tokens share the longest prefix with its prompt: in place when that slot is free, else by
  ``llama_memory_seq_cp`` into a free slot (cells are shared, not copied, in a unified cache). Only the rest of
  the prompt is decoded. A request whose prefix a running job is still reading waits for that step.
* **Grammars.** A GBNF grammar is parsed once (``llama_sampler_init_grammar``) and cloned per sequence
  (``llama_sampler_clone`` copies the parsed rules; ``llama_sampler_reset`` would parse again). For a greedy
  request the grammar is checked on the argmax token only, and applied to the whole vocabulary only when it
  rejects that token (what llama.cpp's ``common_sampler_sample`` does unless ``grammar_first``): the grammar
  only masks tokens to -inf, so the constrained argmax is the argmax whenever the grammar accepts it, and the
  answer equals that of llama-cpp-python's sampler chain (penalties (no-op), grammar, greedy) while the grammar
  costs one token's check per step instead of ~150k (Qwen's vocabulary). A sampled request (temperature > 0)
  uses llama-cpp-python's own chain (grammar, top-k 40, typical 1.0, top-p 0.95, min-p 0.05, temperature,
  dist(seed)), so its answers are those of ``Llama.create_chat_completion`` with the same seed.

Sources: llama.cpp ``include/llama.h`` (batch, memory and sampler API), ``common/sampling.cpp``
(sample-then-check grammar path), ``tools/server`` (continuous batching with slots); llama-cpp-python
``llama.py`` (``Llama.generate``/``_init_sampler``: the sampler chain and prefix matching reproduced here).
"""

from __future__ import annotations

import contextlib
import ctypes
import time
from collections import deque
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gemrag.errors import DecoderBusyError, GemragError
from gemrag.models.llama.chat import GrammarCache
from gemrag.models.llama.slots import choose_slot, common_prefix_len

__all__ = [
    "BatchDecoder",
    "DecodeRequest",
    "DecodeResult",
    "GrammarCache",
    "Step",
    "common_prefix_len",
    "choose_slot",
]

#: llama-cpp-python's ``create_chat_completion`` defaults, used for sampled (temperature > 0) requests.
SAMPLED_TOP_K = 40
SAMPLED_TOP_P = 0.95
SAMPLED_MIN_P = 0.05
SAMPLED_TYPICAL_P = 1.0

#: Shared prompt tokens (beyond those already cached) that make a request wait for a running job to read them.
PREFIX_WAIT_MIN = 8

_TOKEN_DATA = np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True)


@dataclass(frozen=True)
class DecodeRequest:
    """One completion to decode.

    Attributes:
        tokens: the prompt's token ids (at least one; chat template applied, BOS included if any).
        max_tokens: completion limit (tokens, >= 1); ``len(tokens) + max_tokens`` must not exceed ``n_ctx``.
        temperature: 0 = greedy, else sampled with :data:`SAMPLED_TOP_K` ... and ``seed``.
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
    """What one ``llama_decode`` call of :meth:`BatchDecoder.run_steps` produced.

    Attributes:
        tokens: ``(index, token id)`` of each token added to a request's completion (end-of-generation tokens
            are not part of a completion), in request-slot order.
        done: ``(index, result)`` of each request this step finished.
    """

    tokens: list[tuple[int, int]] = field(default_factory=list)
    done: list[tuple[int, DecodeResult]] = field(default_factory=list)


@dataclass
class _Job:
    index: int
    request: DecodeRequest
    slot: int
    pending: list[int]
    result: DecodeResult
    grammar: Any = None  # greedy: a grammar sampler checked lazily
    chain: Any = None  # sampled: a full sampler chain
    next_token: int | None = None
    fed: int = 0  # tokens of this job in the current batch
    row: int = -1  # batch row whose logits this job samples from, -1 = none this step


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
        self._mem = llama_cpp.llama_get_memory(self._ctx)
        self._batch = llama_cpp.llama_batch_init(n_batch, 0, 1)
        self.vocab = llama_cpp.llama_model_get_vocab(model)
        self.n_vocab = int(llama_cpp.llama_vocab_n_tokens(self.vocab))
        self.grammars = GrammarCache(llama_cpp, self.vocab)
        self._cached: list[list[int]] = [[] for _ in range(n_seq)]
        self._busy = [False] * n_seq
        self._running: object | None = None  # the claim of the run that holds the decoder (None: free)
        self.steps = self.batch_tokens = 0
        self.decode_seconds = 0.0
        self._one = (llama_cpp.llama_token_data * 1)()
        self._cand = np.zeros(self.n_vocab, dtype=_TOKEN_DATA)
        self._cand["id"] = np.arange(self.n_vocab, dtype=np.intc)

    def clear(self) -> None:
        """Forget every cached prefix (empties the KV cache).

        Raises:
            DecoderBusyError: a :meth:`run` holds the decoder (see its contract).
        """
        self._check_free()
        self._lib.llama_memory_clear(self._mem, True)
        self._cached = [[] for _ in range(self.n_seq)]

    def _check_free(self) -> None:
        if self._running is not None:
            raise DecoderBusyError(
                "the llama.cpp decoder is busy (a complete_iter is still being iterated): close or exhaust it first"
            )

    def _drop(self, slot: int) -> None:
        self._lib.llama_memory_seq_rm(self._mem, slot, -1, -1)
        self._cached[slot] = []

    def _reserved(self, jobs: Sequence[_Job]) -> int:
        """Cells that active jobs may still need plus those idle slots hold (an upper bound: shared cells count
        once per sequence)."""
        need = sum(len(j.request.tokens) + j.request.max_tokens for j in jobs)
        return need + sum(len(c) for s, c in enumerate(self._cached) if not self._busy[s])

    def _admit(self, index: int, request: DecodeRequest, jobs: list[_Job]) -> _Job | None:
        """Start ``request`` in a free slot, or None to retry after the next step: the KV cache has no room yet,
        or a running job is still reading more than :data:`PREFIX_WAIT_MIN` tokens of its prompt prefix."""
        prompt = list(request.tokens)
        # A prefix a running job is still reading is worth a step's wait: it is then copied, not decoded again.
        cached = max(common_prefix_len(c, prompt) for c in self._cached)
        coming = max((common_prefix_len(j.request.tokens, prompt) for j in jobs if j.pending), default=0)
        if coming > cached + PREFIX_WAIT_MIN:
            return None
        slot, source, reuse = choose_slot(self._cached, self._busy, prompt)
        need = len(prompt) + request.max_tokens
        # The target slot's own cache is replaced; other idle slots' caches are evicted until the request fits
        # (an idle source is always the target itself, see choose_slot). With no job running it always fits.
        while self._reserved(jobs) - len(self._cached[slot]) + need > self.n_ctx:
            idle = [s for s in range(self.n_seq) if not self._busy[s] and self._cached[s] and s != slot]
            if not idle:
                if jobs:
                    return None
                break
            self._drop(min(idle, key=lambda s: common_prefix_len(self._cached[s], prompt)))
        if slot == source:
            self._lib.llama_memory_seq_rm(self._mem, slot, reuse, -1)
            del self._cached[slot][reuse:]
        else:
            self._drop(slot)
            if reuse > 0:
                self._lib.llama_memory_seq_cp(self._mem, source, slot, 0, reuse)
                self._cached[slot] = list(self._cached[source][:reuse])
        self._busy[slot] = True
        job = _Job(
            index=index,
            request=request,
            slot=slot,
            pending=prompt[reuse:],
            result=DecodeResult(prompt_tokens=len(prompt), reused_tokens=reuse),
        )
        if request.temperature > 0:
            job.chain = self._sampled_chain(request)
        elif request.grammar is not None:
            job.grammar = self.grammars.clone(request.grammar)
        return job

    def _sampled_chain(self, request: DecodeRequest) -> Any:
        lib = self._lib
        chain = lib.llama_sampler_chain_init(lib.llama_sampler_chain_default_params())
        if request.grammar is not None:
            lib.llama_sampler_chain_add(chain, self.grammars.clone(request.grammar))
        lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_top_k(SAMPLED_TOP_K))
        lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_typical(SAMPLED_TYPICAL_P, 1))
        lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_top_p(SAMPLED_TOP_P, 1))
        lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_min_p(SAMPLED_MIN_P, 1))
        lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_temp(request.temperature))
        lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_dist(request.seed & 0xFFFFFFFF))
        return chain

    def _release(self, job: _Job) -> None:
        for smpl in (job.grammar, job.chain):
            if smpl is not None:
                self._lib.llama_sampler_free(smpl)
        job.grammar = job.chain = None
        self._busy[job.slot] = False

    def _grammar_allows(self, grammar: Any, token: int, logit: float) -> bool:
        one = self._one
        one[0].id = ctypes.c_int32(token)
        one[0].logit, one[0].p = logit, 0.0
        data = ctypes.cast(one, ctypes.POINTER(self._lib.llama_token_data))
        arr = self._lib.llama_token_data_array(data=data, size=1, selected=-1, sorted=False)
        self._lib.llama_sampler_apply(grammar, ctypes.byref(arr))
        return bool(np.isfinite(one[0].logit))

    def _grammar_argmax(self, grammar: Any, logits: np.ndarray) -> int | None:
        """The argmax over the tokens the grammar allows (a pass over the whole vocabulary), None if none is."""
        cand = self._cand
        cand["logit"] = logits
        cand["p"] = 0.0
        data = cand.ctypes.data_as(ctypes.POINTER(self._lib.llama_token_data))
        arr = self._lib.llama_token_data_array(data=data, size=self.n_vocab, selected=-1, sorted=False)
        self._lib.llama_sampler_apply(grammar, ctypes.byref(arr))
        best = int(np.argmax(cand["logit"]))
        return best if np.isfinite(cand["logit"][best]) else None

    def _sample(self, job: _Job) -> int | None:
        """The next token of ``job`` from its logits row, None when the grammar allows none."""
        if job.chain is not None:
            return int(self._lib.llama_sampler_sample(job.chain, self._ctx, job.row))
        ptr = self._lib.llama_get_logits_ith(self._ctx, job.row)
        logits = np.ctypeslib.as_array(ptr, shape=(self.n_vocab,))
        token = int(np.argmax(logits))
        if job.grammar is None:
            return token
        if self.grammar_first or not self._grammar_allows(job.grammar, token, float(logits[token])):
            best = self._grammar_argmax(job.grammar, logits)
            job.result.grammar_rejections += best != token
            if best is None:
                return None
            token = best
        if not self._lib.llama_vocab_is_eog(self.vocab, token):
            self._lib.llama_sampler_accept(job.grammar, token)
        return token

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

    def _fill(self, jobs: Sequence[_Job]) -> int:
        """Put the next tokens of ``jobs`` in the batch: one per generating job, then prompt chunks."""
        self._batch.n_tokens = 0
        for job in jobs:
            job.fed, job.row = 0, -1
            if job.next_token is not None:
                job.row = self._add(job.next_token, len(self._cached[job.slot]), job.slot, True)
                job.fed = 1
        budget = self.n_batch - self._batch.n_tokens
        for job in jobs:
            if not job.pending or budget <= 0:
                continue
            k = min(budget, len(job.pending))
            start = len(self._cached[job.slot])
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
        jobs: list[_Job] = []
        try:
            while queue or jobs:
                while queue and not all(self._busy):
                    job = self._admit(*queue[0], jobs)
                    if job is None:
                        break
                    queue.popleft()
                    jobs.append(job)
                n = self._fill(jobs)
                try:
                    seconds = self._decode()
                except GemragError:
                    self._lib.llama_memory_clear(self._mem, True)
                    self._cached = [[] for _ in range(self.n_seq)]
                    raise
                done: list[_Job] = []
                step = Step()
                for job in jobs:
                    share = seconds * job.fed / n
                    if job.next_token is not None:
                        self._cached[job.slot].append(job.next_token)
                        job.result.generation_seconds += share
                        job.next_token = None
                    elif job.fed:
                        self._cached[job.slot].extend(job.pending[: job.fed])
                        del job.pending[: job.fed]
                        job.result.prompt_seconds += share
                    if job.row < 0:
                        continue
                    t0 = time.perf_counter()
                    token = self._sample(job)
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

    def close(self) -> None:
        """Free the grammars, the batch and the context (the model is not freed: it belongs to the Llama)."""
        self.grammars.close()
        if self._batch is not None:
            self._lib.llama_batch_free(self._batch)
            self._batch = None
        if self._ctx:
            self._lib.llama_free(self._ctx)
            self._ctx = None
