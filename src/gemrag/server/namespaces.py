"""Namespaces: one memory directory per namespace (``ROOT/<namespace>/``), and the Memory objects serving them.

The root may instead be a PostgreSQL URL, ``postgresql://...?schema=PREFIX``: namespace ``N`` is then the memory in
schema ``PREFIX_N`` (lower-cased, ``-`` as ``_``; so on PostgreSQL ``Docs`` and ``docs`` are one namespace), and
several server processes, on one machine or many, serve the same memories. Each read-only Memory holds a
connection pool of :data:`PG_POOL` connections.

A namespace name is 1-64 characters of ``A-Z a-z 0-9 _ -`` starting with a letter or digit
(:data:`NAMESPACE_PATTERN`), so it is always one directory directly under the root: no ``..``, no ``/``, no
hidden directories. Requests of one namespace only ever open that namespace's directory.

Concurrency (see :mod:`gemrag.memory`): writes (adding, deleting documents, index jobs) each open their own
read-write :class:`~gemrag.memory.Memory`, so two of them on one namespace exclude each other through the build
lock (the second gets :class:`~gemrag.errors.MemoryBusyError`). Reads (retrieve, ask, stats, listing documents)
borrow a read-only Memory from a per-namespace pool (one per concurrent request; SQLite connections are not
shared between threads at once): they read the last published build generation, also while an index job
builds the next one. All memories share one embedder and one LLM (loaded once; LLM calls are serialized
because the embedded llama.cpp model is not thread-safe).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gemrag.config import Config
from gemrag.errors import ConfigError, GemragError
from gemrag.memory import Memory
from gemrag.models.base import LLM, Completion, Embedder, Message, Scores, can_score, continuation_scorer
from gemrag.models.factory import build_embedder, build_llm
from gemrag.models.streaming import complete_stream, pieces
from gemrag.store import Location, MemoryRoot, memory_root
from gemrag.strategies.base import ProgressFactory

PG_POOL = 2
"""PostgreSQL connections per pooled read-only Memory of a namespace."""

NAMESPACE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"
"""Valid namespace names (a regular expression)."""
_NAME = re.compile(NAMESPACE_PATTERN)


class UnknownNamespaceError(GemragError):
    """A read was asked of a namespace that holds no memory yet (add documents to create it)."""


def check_namespace(name: str) -> str:
    """``name`` when it is a valid namespace name (:data:`NAMESPACE_PATTERN`).

    Raises:
        ValueError: it is not (empty, too long, or with a character such as ``/``, ``.`` or a space).
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(
            f"invalid namespace name {name!r}: use 1-64 letters, digits, '_' or '-', starting with a letter or digit"
        )
    return name


class SerialLLM:
    """An LLM built on first use and called by one thread at a time (forwards ``model_id``, ``context_window``
    and ``cache_identity`` to the backend, so caching keys do not change), completions, streams and continuation
    scores alike (the scores a multiple-choice answer by likelihood or by the letters' probabilities reads).

    Args:
        build: returns the backend (called once, on first use). Its errors (e.g.
            :class:`~gemrag.errors.ModelNotAvailableError`) propagate from that first use.
    """

    def __init__(self, build: Callable[[], LLM]) -> None:
        self._build = build
        self._backend: LLM | None = None
        self._lock = threading.Lock()

    @property
    def backend(self) -> LLM:
        """The wrapped LLM (built on first access)."""
        with self._lock:
            if self._backend is None:
                self._backend = self._build()
            return self._backend

    @property
    def model_id(self) -> str:
        """The backend's model id."""
        return self.backend.model_id

    @property
    def context_window(self) -> int:
        """The backend's context window (tokens)."""
        return self.backend.context_window

    @property
    def cache_identity(self) -> Any:
        """The backend's ``cache_identity`` (None when it has none)."""
        return getattr(self.backend, "cache_identity", None)

    def complete(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
        """The backend's :meth:`~gemrag.models.base.LLM.complete`, one call at a time."""
        backend = self.backend
        with self._lock:
            return backend.complete(messages, **kwargs)

    def complete_stream(self, messages: Sequence[Message], **kwargs: Any) -> Generator[str | Completion, None, None]:
        """The backend's stream (:func:`gemrag.models.streaming.complete_stream`), holding the lock from the first
        ``next`` until the stream's last piece (or its close): other calls wait for a streamed answer to end (or
        for its client to go away)."""
        backend = self.backend
        final: list[Completion] = []
        with self._lock:
            yield from pieces(complete_stream(backend, messages, **kwargs), final)
        yield final[0]

    def count_tokens(self, text: str) -> int:
        """The backend's token count of ``text``."""
        backend = self.backend
        with self._lock:
            return backend.count_tokens(text)

    @property
    def can_score(self) -> bool:
        """Whether the backend scores continuations (:func:`gemrag.models.base.continuation_scorer`; builds it)."""
        return can_score(self.backend)

    def score_continuations(self, messages: Sequence[Message], continuations: Sequence[str]) -> Scores:
        """The backend's :meth:`~gemrag.models.base.ScoringLLM.score_continuations`, one call at a time.

        Raises:
            GemragError: the backend cannot score continuations (an HTTP chat API), or the scoring failed.
        """
        scorer = continuation_scorer(self.backend)
        with self._lock:
            return scorer.score_continuations(messages, continuations)


class Namespaces:
    """The memories under one root directory, one per namespace.

    Args:
        root: the directory holding one memory directory per namespace (created when missing), or a PostgreSQL
            URL whose schema prefixes the namespaces' schemas (see :func:`gemrag.store.memory_root`).
        pool: read-only memories kept open per namespace between requests (more are opened under load and
            closed afterwards).
        config: the configuration every namespace's memory is opened with.
        embedder, llm: backends to share instead of building them from ``config`` (tests inject doubles).
    """

    def __init__(
        self,
        root: str | Path,
        config: Config,
        *,
        embedder: Embedder | None = None,
        llm: LLM | None = None,
        pool: int = 8,
    ) -> None:
        try:
            self.root: MemoryRoot = memory_root(root)
            self.root.create()
        except (OSError, GemragError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise ConfigError(f"cannot use {root} as the root of the namespaces: {reason}") from None
        self.config = config
        self._embedder = embedder
        self.llm = SerialLLM(lambda: llm if llm is not None else build_llm(config.llm, config.cache_dir))
        self._lock = threading.Lock()
        self._idle: dict[str, list[Memory]] = {}
        self.pool = pool

    @property
    def embedder(self) -> Embedder:
        """The shared embedder (built on first use)."""
        with self._lock:
            if self._embedder is None:
                self._embedder = build_embedder(self.config.embedder)
            return self._embedder

    def path(self, namespace: str) -> Location:
        """The memory location of ``namespace`` (not created): its directory, or its PostgreSQL URL.

        Raises:
            ValueError: an invalid namespace name, or one too long for the root (a PostgreSQL schema name).
        """
        return self.root.child(check_namespace(namespace))

    def exists(self, namespace: str) -> bool:
        """True when ``namespace`` holds a memory."""
        return self.root.exists(check_namespace(namespace))

    def require(self, namespace: str) -> None:
        """Check that ``namespace`` holds a memory.

        Raises:
            UnknownNamespaceError: it does not (yet).
        """
        if not self.exists(namespace):
            raise UnknownNamespaceError(f"namespace {namespace!r} holds no memory; add documents to create it")

    def names(self) -> list[str]:
        """The namespaces holding a memory, sorted."""
        return [name for name in self.root.names() if _NAME.fullmatch(name)]

    def open(self, namespace: str, *, readonly: bool, progress: ProgressFactory | None = None) -> Memory:
        """A new Memory on ``namespace`` with the shared backends (the caller closes it).

        Raises:
            ValueError: an invalid namespace name.
            UnknownNamespaceError: ``readonly`` and the namespace holds no memory.
            GemragError: the memory cannot be opened.
        """
        path = self.path(namespace)
        if readonly:
            self.require(namespace)
        return Memory.open(
            path,
            self.config,
            llm=self.llm,
            embedder=self.embedder,
            progress=progress,
            readonly=readonly or None,
            pool_size=PG_POOL if readonly else 1,
        )

    @contextmanager
    def reading(self, namespace: str) -> Iterator[Memory]:
        """A read-only Memory on ``namespace`` for one request, from the pool (returned to it afterwards).

        Raises:
            ValueError, UnknownNamespaceError, GemragError: see :meth:`open`.
        """
        with self._lock:
            idle = self._idle.get(namespace)
            memory = idle.pop() if idle else None
        if memory is None:
            memory = self.open(namespace, readonly=True)
        try:
            yield memory
        except (GemragError, ValueError):
            self._put_back(namespace, memory)  # the library's refusals leave the memory as it was
            raise
        except BaseException:
            memory.close()  # anything else may have left it mid-transaction: do not reuse it
            raise
        self._put_back(namespace, memory)

    def _put_back(self, namespace: str, memory: Memory) -> None:
        with self._lock:
            idle = self._idle.setdefault(namespace, [])
            if len(idle) < self.pool:
                idle.append(memory)
                return
        memory.close()

    @contextmanager
    def writing(self, namespace: str, progress: ProgressFactory | None = None, wait: float = 0.0) -> Iterator[Memory]:
        """A read-write Memory on ``namespace`` (created when new) for one write, closed afterwards.

        Args:
            wait: seconds its writes wait for another writer's build lock (:attr:`Memory.build_wait`).

        Raises:
            ValueError, GemragError: see :meth:`open`.
        """
        memory = self.open(namespace, readonly=False, progress=progress)
        memory.build_wait = wait
        try:
            yield memory
        finally:
            memory.close()

    def close(self) -> None:
        """Close the pooled read-only memories."""
        with self._lock:
            pooled = [m for ms in self._idle.values() for m in ms]
            self._idle.clear()
        for memory in pooled:
            memory.close()
