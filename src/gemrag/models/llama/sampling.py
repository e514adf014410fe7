"""Token choice of the llama.cpp batch decoder (:mod:`gemrag.models.llama.batch`): each sequence's next token from
its own logits row, under its grammar, greedy or sampled.

* **Grammars.** A GBNF grammar is parsed once (``llama_sampler_init_grammar``) and cloned per sequence
  (``llama_sampler_clone`` copies the parsed rules; ``llama_sampler_reset`` would parse again). For a greedy
  request the grammar is checked on the argmax token only, and applied to the whole vocabulary only when it
  rejects that token (what llama.cpp's ``common_sampler_sample`` does unless ``grammar_first``): the grammar
  only masks tokens to -inf, so the constrained argmax is the argmax whenever the grammar accepts it, and the
  answer equals that of llama-cpp-python's sampler chain (penalties (no-op), grammar, greedy) while the grammar
  costs one token's check per step instead of ~150k (Qwen's vocabulary). A sampled request (temperature > 0)
  uses llama-cpp-python's own chain (grammar, top-k 40, typical 1.0, top-p 0.95, min-p 0.05, temperature,
  dist(seed)), so its answers are those of ``Llama.create_chat_completion`` with the same seed.

Sources: llama.cpp ``include/llama.h`` (sampler API), ``common/sampling.cpp`` (sample-then-check grammar path);
llama-cpp-python ``llama.py`` (``Llama.generate``/``_init_sampler``: the sampler chain reproduced here).
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from gemrag.models.llama.chat import GrammarCache
from gemrag.models.llama.jobs import DecodeRequest, Job

__all__ = ["SAMPLED_MIN_P", "SAMPLED_TOP_K", "SAMPLED_TOP_P", "SAMPLED_TYPICAL_P", "TokenSampler"]

#: llama-cpp-python's ``create_chat_completion`` defaults, used for sampled (temperature > 0) requests.
SAMPLED_TOP_K = 40
SAMPLED_TOP_P = 0.95
SAMPLED_MIN_P = 0.05
SAMPLED_TYPICAL_P = 1.0

_TOKEN_DATA = np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True)


class TokenSampler:
    """Chooses the next token of each :class:`~gemrag.models.llama.jobs.Job` (module docstring): gives a job its
    samplers when it starts, frees them when it ends, and picks its token after each ``llama_decode``.

    Owned by one :class:`~gemrag.models.llama.batch.BatchDecoder`; not thread-safe (its buffers are reused).
    """

    def __init__(self, lib: Any, vocab: Any, n_vocab: int, grammars: GrammarCache) -> None:
        """Args: lib: the ``llama_cpp`` module. vocab: the model's ``llama_vocab`` pointer. n_vocab: its size
        (tokens). grammars: the decoder's parsed grammars (cloned per job; owned and closed by the decoder)."""
        self._lib = lib
        self._vocab = vocab
        self._n_vocab = n_vocab
        self._grammars = grammars
        self._one = (lib.llama_token_data * 1)()
        self._cand = np.zeros(n_vocab, dtype=_TOKEN_DATA)
        self._cand["id"] = np.arange(n_vocab, dtype=np.intc)

    def start(self, job: Job) -> None:
        """Give ``job`` its samplers: a sampled request the full chain, a greedy one its grammar's clone (if any)."""
        request = job.request
        if request.temperature > 0:
            job.chain = self._sampled_chain(request)
        elif request.grammar is not None:
            job.grammar = self._grammars.clone(request.grammar)

    def release(self, job: Job) -> None:
        """Free ``job``'s samplers (its grammar clone and chain)."""
        for smpl in (job.grammar, job.chain):
            if smpl is not None:
                self._lib.llama_sampler_free(smpl)
        job.grammar = job.chain = None

    def _sampled_chain(self, request: DecodeRequest) -> Any:
        lib = self._lib
        # the grammar first: a grammar that does not parse raises before the chain exists (nothing to free)
        grammar = None if request.grammar is None else self._grammars.clone(request.grammar)
        chain = lib.llama_sampler_chain_init(lib.llama_sampler_chain_default_params())
        if grammar is not None:
            lib.llama_sampler_chain_add(chain, grammar)
        lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_top_k(SAMPLED_TOP_K))
        lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_typical(SAMPLED_TYPICAL_P, 1))
        lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_top_p(SAMPLED_TOP_P, 1))
        lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_min_p(SAMPLED_MIN_P, 1))
        lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_temp(request.temperature))
        lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_dist(request.seed & 0xFFFFFFFF))
        return chain

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
        arr = self._lib.llama_token_data_array(data=data, size=self._n_vocab, selected=-1, sorted=False)
        self._lib.llama_sampler_apply(grammar, ctypes.byref(arr))
        best = int(np.argmax(cand["logit"]))
        return best if np.isfinite(cand["logit"][best]) else None

    def sample(self, job: Job, ctx: Any, *, grammar_first: bool = False) -> int | None:
        """The next token of ``job`` from its logits row (``job.row`` of the last ``llama_decode`` in ``ctx``),
        None when the grammar allows none. A greedy job's grammar accepts the token (unless it ends the
        generation) and counts a rejected argmax in ``job.result.grammar_rejections``.

        Args:
            job: a job with a logits row this step (``job.row >= 0``).
            ctx: the ``llama_context`` pointer that decoded the batch.
            grammar_first: apply a greedy job's grammar to the whole vocabulary, not only when it rejects the
                argmax (same token, slower; see the module docstring).
        """
        if job.chain is not None:
            return int(self._lib.llama_sampler_sample(job.chain, ctx, job.row))
        ptr = self._lib.llama_get_logits_ith(ctx, job.row)
        logits = np.ctypeslib.as_array(ptr, shape=(self._n_vocab,))
        token = int(np.argmax(logits))
        if job.grammar is None:
            return token
        if grammar_first or not self._grammar_allows(job.grammar, token, float(logits[token])):
            best = self._grammar_argmax(job.grammar, logits)
            job.result.grammar_rejections += best != token
            if best is None:
                return None
            token = best
        if not self._lib.llama_vocab_is_eog(self._vocab, token):
            self._lib.llama_sampler_accept(job.grammar, token)
        return token
