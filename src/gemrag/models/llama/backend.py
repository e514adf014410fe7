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

``llama_cpp`` is imported lazily, and the weights are only loaded on the first call that needs them (a
completion or :meth:`LlamaCppLLM.count_tokens`), so an instance whose answers all come from the cache
costs nothing.

Before the first in-process load, the model is run once in a child process (:mod:`gemrag.models.llama.probe`;
cached after it succeeds, skipped with ``GEMRAG_SKIP_MODEL_PROBE=1``), so a llama.cpp build that crashes on
this CPU raises :class:`~gemrag.errors.ModelCrashError` with a one-line fix instead of killing the process.
"""

from __future__ import annotations

import codecs
import contextlib
import dataclasses
import importlib.util
import logging
import os
import threading
import time
from collections.abc import Generator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gemrag.errors import GemragError, ModelCrashError, ModelNotAvailableError
from gemrag.models.base import Completion, Message
from gemrag.models.batch import CompletionRequest, complete_one_by_one
from gemrag.models.llama import probe
from gemrag.models.llama.batch import BatchDecoder, DecodeRequest, DecodeResult
from gemrag.models.llama.chat import chat_formatter, grammar_for_schema
from gemrag.models.llama.legacy import legacy_complete, legacy_stream, to_completion
from gemrag.models.llama.weights import KNOWN_MODELS, find_known_model, gguf_fingerprint, resolve_gguf
from gemrag.models.streaming import pieces

if TYPE_CHECKING:
    from llama_cpp import Llama

__all__ = ["LlamaCppLLM", "DEFAULT_MODEL", "INSTALL_HINT", "gguf_fingerprint"]

log = logging.getLogger(__name__)

#: The model used when none is named.
DEFAULT_MODEL = "qwen2.5-coder-1.5b"
INSTALL_HINT = "pip install 'gemrag[local]'"
#: Context (tokens) of the ``Llama`` object when the decoder does the work: it then only holds the weights,
#: the tokenizer and the chat template, so its own KV cache is kept small.
HOLDER_N_CTX = 512


def _llama_installed() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None


def _import_llama() -> type[Llama]:
    try:
        from llama_cpp import Llama
    except ImportError as e:
        raise ModelNotAvailableError(f"the local LLM needs llama-cpp-python ({e}); {INSTALL_HINT}") from e
    return Llama


class LlamaCppLLM:
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

    def __init__(
        self,
        model: str | os.PathLike[str] = DEFAULT_MODEL,
        *,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        n_batch: int = 512,
        n_gpu_layers: int = 0,
        n_parallel: int = 4,
        seed: int = 0,
        chat_format: str | None = None,
        cache_dir: Path | None = None,
        verify: bool = False,
        preload: bool = False,
    ) -> None:
        """Resolve the weights (joining a known model's parts on first use); the model loads lazily.

        Args:
            model: a known model name (see :data:`gemrag.models.llama.weights.KNOWN_MODELS`) or a GGUF path.
            n_ctx: context window in tokens.
            n_threads: CPU threads, for generation and for reading the prompt alike; default ``os.cpu_count()``.
            n_batch: prompt-processing batch size (tokens).
            n_gpu_layers: layers offloaded to a GPU (0 = CPU only, -1 = all; needs a GPU build).
            n_parallel: sequences decoded together by :meth:`complete_iter` (>= 1; 1 = one after another).
            seed: sampling seed used when a call gives none (so that sampled answers are reproducible).
            chat_format: a llama-cpp-python chat format name; ``None`` uses the GGUF's own chat template.
            cache_dir: where known models are joined; default
                :func:`gemrag.models.llama.weights.default_cache_dir`.
            verify: re-hash an already joined known model.
            preload: load the weights now instead of on first use (after the child-process check).

        Raises:
            ModelNotAvailableError: llama-cpp-python or the model's part packages are not installed.
            ModelIntegrityError: the joined weights do not match their sha256.
            ConfigError: ``model`` is neither a known name nor a GGUF file.
            ModelCrashError: ``preload`` and the model crashed in the child-process check.
        """
        if not _llama_installed():
            raise ModelNotAvailableError(
                f"the local LLM needs llama-cpp-python, which is not installed; {INSTALL_HINT}"
            )
        if n_ctx < 16:
            raise ValueError(f"n_ctx must be >= 16, got {n_ctx}")
        if n_parallel < 1:
            raise ValueError(f"n_parallel must be >= 1, got {n_parallel}")
        self.model_path: Path = resolve_gguf(model, cache_dir, verify=verify)
        self._spec = KNOWN_MODELS.get(os.fspath(model)) or find_known_model(self.model_path)
        if self._spec is not None:
            self.model_id = f"llama.cpp:{self._spec.name}-{self._spec.quant}:{self._spec.sha256[:12]}"
            self.name = self._spec.name
        else:
            self.model_id = f"llama.cpp:{self.model_path.name}:{self.model_path.stat().st_size}"
            self.name = self.model_path.name
        self.context_window: int = n_ctx
        self.n_threads: int = n_threads or os.cpu_count() or 1
        self.n_batch = n_batch
        self.n_gpu_layers = n_gpu_layers
        self.n_parallel = n_parallel
        self.seed = seed
        self.chat_format = chat_format
        self.cache_dir = cache_dir
        self._llm: Llama | None = None
        self._decoder: BatchDecoder | None = None
        self._formatter: Any = None  # the GGUF's chat template (Jinja2ChatFormatter); None = legacy path
        self._crash: str | None = None
        self._lock = threading.RLock()
        if preload:
            self.load()

    def __repr__(self) -> str:
        return (
            f"LlamaCppLLM({self.model_id!r}, n_ctx={self.context_window}, n_threads={self.n_threads}, "
            f"n_parallel={self.n_parallel})"
        )

    @property
    def fingerprint(self) -> str:
        """The GGUF's identity (see :func:`gguf_fingerprint`)."""
        return gguf_fingerprint(self.model_path, self._spec)

    @property
    def cache_identity(self) -> dict[str, Any]:
        """Everything besides the call's arguments that decides an answer, for cache keys
        (:mod:`gemrag.models.cache`): the GGUF's fingerprint, ``n_ctx`` (it clips ``max_tokens``), the chat
        format (None = the GGUF's own template, covered by the fingerprint) and the default seed. Threads,
        batch size and the llama.cpp version are left out: a rebuild must not discard every cached answer.

        ``n_parallel`` is left out too: it does not decide an answer, the other requests decoded in the same
        batch do (continuous batching mixes whatever requests are in flight), and batched greedy decoding gives
        the sequential answer or one as valid (same grammar, same argmax rule; at most last-bit differences of
        the logits). Like a thread count, changing it must not discard every cached answer."""
        return {
            "backend": "llama.cpp",
            "gguf": self.fingerprint,
            "n_ctx": self.context_window,
            "chat_format": self.chat_format,
            "seed": self.seed,
        }

    def probe_request(self) -> probe.ProbeRequest:
        """The child-process check (:mod:`gemrag.models.llama.probe`) of this model with its load parameters."""
        return probe.ProbeRequest(
            model_path=str(self.model_path),
            label=self.name,
            n_ctx=self.context_window,
            n_threads=self.n_threads,
            n_batch=self.n_batch,
            n_gpu_layers=self.n_gpu_layers,
            chat_format=self.chat_format,
            seed=self.seed,
            fingerprint=self.fingerprint,
        )

    def _check_runs(self) -> None:
        """Run the child-process check unless it passed before (cached) or ``GEMRAG_SKIP_MODEL_PROBE`` is set;
        a failure is remembered by this instance, so it is not re-run on every call."""
        if self._crash is not None:
            raise ModelCrashError(self._crash)
        try:
            probe.ensure_model_runs(self.probe_request(), cache_dir=self.cache_dir)
        except ModelCrashError as e:
            self._crash = str(e)
            raise

    def load(self) -> Llama:
        """Load the weights (once) and return the ``llama_cpp.Llama``.

        The first load runs the model once in a child process (:func:`gemrag.models.llama.probe.ensure_model_runs`).

        Raises:
            ModelNotAvailableError: llama-cpp-python cannot be imported.
            ModelCrashError: llama.cpp crashed, failed or hung in the child-process check (one-line message
                naming the fix, usually a portable rebuild of llama-cpp-python).
            GemragError: llama.cpp failed to load the file.
        """
        with self._lock:
            if self._llm is None:
                if not _llama_installed():  # before the check, whose child would only fail to import it
                    raise ModelNotAvailableError(
                        f"the local LLM needs llama-cpp-python, which is not installed; {INSTALL_HINT}"
                    )
                self._check_runs()  # before llama_cpp is imported here: even loading the library may crash
                Llama = _import_llama()
                t0 = time.perf_counter()
                # With the GGUF's template the decoder has its own context, so the Llama's is kept small; a GGUF
                # without a template is reloaded with the full context for llama-cpp-python's own path.
                holder = self.chat_format is None
                self._llm = self._new_llama(Llama, min(HOLDER_N_CTX, self.context_window) if holder else None)
                if holder and "tokenizer.chat_template" not in self._llm.metadata:
                    log.warning(
                        "%s carries no chat template; llama-cpp-python falls back to %r",
                        self.model_path.name,
                        self._llm.chat_format,
                    )
                    self._llm.close()
                    self._llm = self._new_llama(Llama, None)
                elif holder:
                    self._formatter = chat_formatter(self._llm)
                log.info("loaded %s in %.1f s", self.model_path.name, time.perf_counter() - t0)
            return self._llm

    def _new_llama(self, Llama: type[Llama], n_ctx: int | None) -> Llama:  # noqa: N803
        try:
            return Llama(
                model_path=str(self.model_path),
                n_ctx=n_ctx or self.context_window,
                n_threads=self.n_threads,
                n_threads_batch=self.n_threads,  # llama-cpp-python's default is every core, whatever n_threads
                n_batch=min(self.n_batch, n_ctx or self.context_window),
                n_gpu_layers=self.n_gpu_layers,
                seed=self.seed,
                chat_format=self.chat_format,
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as e:
            raise GemragError(f"llama.cpp could not load {self.model_path}: {e}") from e

    def decoder(self) -> BatchDecoder | None:
        """The batch decoder (created on first use), or None on the legacy path (a named ``chat_format``).

        Raises:
            ModelNotAvailableError, ModelCrashError, GemragError: as :meth:`load`.
        """
        with self._lock:
            llm = self.load()
            if self._formatter is None:
                return None
            if self._decoder is None:
                self._decoder = BatchDecoder(
                    llm.model,
                    llm.context_params,
                    n_seq=self.n_parallel,
                    n_ctx=self.context_window,
                    n_batch=max(self.n_batch, self.n_parallel),
                )
            return self._decoder

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

    def close(self) -> None:
        """Free the model (it is reloaded if used again)."""
        with self._lock:
            if self._decoder is not None:
                self._decoder.close()
                self._decoder = None
            self._formatter = None
            if self._llm is not None:
                close = getattr(self._llm, "close", None)
                if callable(close):
                    close()
                self._llm = None
