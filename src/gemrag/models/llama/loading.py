"""The weights side of the embedded local LLM (:class:`gemrag.models.llama.backend.LlamaCppLLM`): the GGUF resolved and
identified, the crash check in a child process, the ``llama_cpp.Llama`` loaded once, the batch decoder made, all freed.

``llama_cpp`` is imported lazily, and the weights are only loaded on the first call that needs them (a
completion or a token count), so an instance whose answers all come from the cache costs nothing.

Before the first in-process load, the model is run once in a child process (:mod:`gemrag.models.llama.probe`;
cached after it succeeds, skipped with ``GEMRAG_SKIP_MODEL_PROBE=1``), so a llama.cpp build that crashes on
this CPU raises :class:`~gemrag.errors.ModelCrashError` with a one-line fix instead of killing the process.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gemrag.errors import GemragError, ModelCrashError, ModelNotAvailableError
from gemrag.models.llama import probe
from gemrag.models.llama.batch import BatchDecoder
from gemrag.models.llama.chat import chat_formatter
from gemrag.models.llama.weights import KNOWN_MODELS, find_known_model, gguf_fingerprint, resolve_gguf

if TYPE_CHECKING:
    from llama_cpp import Llama

__all__ = ["DEFAULT_MODEL", "HOLDER_N_CTX", "INSTALL_HINT", "LlamaWeights"]

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


class LlamaWeights:
    """A GGUF model's weights for llama-cpp-python: its identity, the crash check, the lazily loaded ``Llama`` and
    the batch decoder over it; the base of :class:`gemrag.models.llama.backend.LlamaCppLLM`, which completes with
    them (its docstring lists the attributes). Thread-safe: every step holds the instance's re-entrant lock.
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
