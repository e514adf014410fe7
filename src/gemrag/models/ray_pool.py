"""LLM calls on a pool of Ray actors: many machines (or processes) answering one build's extraction items.

Every LLM pass of every method goes through the one extraction pipeline
(:mod:`gemrag.strategies.platform.extraction`), which sends its items to ``CachedLLM.complete_iter``; the misses
reach this backend's :meth:`RayLLM.complete_iter`, which hands each request to one of ``llm.ray_actors`` Ray actors
(at most ``llm.ray_actor_concurrency`` in flight per actor) and yields each answer as it arrives. So:

* a task is pure: the request (messages, schema, max_tokens, temperature, seed) in, a
  :class:`~gemrag.models.base.Completion` (text, parsed value, usage) out; an actor builds its model stack once
  (:func:`gemrag.models.backends.build_backend` with the same settings minus ``ray``);
* the driver (the process running ``gemrag index``) stores every answer in the memory's LLM cache as it arrives,
  before it is used (``CachedLLM``), so a killed driver resumes from the cache like any build, and the cache keys
  are those of the same backend in one process (:meth:`RayLLM.cache_identity`): a single-process build made
  afterwards from that cache makes no LLM call;
* actors are restarted by Ray when their process dies (``max_restarts=-1``) and the calls they held are retried
  (``max_task_retries=-1``): a lost worker costs only its in-flight items;
* only the driver writes the memory and publishes builds: the store has no new writer.

Ray is imported only when this module's :class:`RayLLM` is constructed (``llm.ray`` set; ``gemrag[cluster]``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
from collections.abc import Generator, Sequence
from pathlib import Path
from typing import Any

from gemrag.config import LLMSettings
from gemrag.errors import ConfigError, GemragError, is_fatal
from gemrag.models.backends import build_backend
from gemrag.models.base import Completion, Message, cache_identity_of
from gemrag.models.batch import CompletionRequest

__all__ = ["CALL_LOG_ENV", "LOCAL_OBJECT_STORE", "RayLLM", "ray_address"]

CALL_LOG_ENV = "GEMRAG_RAY_CALL_LOG"
"""Environment variable naming a file where every actor appends each call it starts (instrumentation)."""

LOCAL_OBJECT_STORE = 200 * 2**20
"""Bytes of shared memory for the object store of a cluster started in this process (``llm.ray = "local"``):
requests and answers are a few KB each; Ray's default, 30% of RAM, would reserve ~7 GB here."""


def ray_address(value: str) -> str:
    """The ``address`` for ``ray.init`` of an ``llm.ray`` value, as given: ``"local"`` starts a new cluster in
    this process (even when another one runs on the machine: ``address=None`` would join that one), ``"auto"`` the
    machine's running cluster, else ``host:port`` or ``ray://host:port``."""
    return value


class _Worker:
    """One Ray actor: the model stack of ``settings``, built once, answering one request per call."""

    def __init__(self, settings: dict[str, Any], cache_dir: str | None) -> None:
        self.llm = build_backend(LLMSettings(**settings), Path(cache_dir) if cache_dir else None)

    def complete(self, request: CompletionRequest) -> Completion | GemragError:
        """The backend's answer, or its (non-fatal or fatal) GemragError as a value; the driver decides.

        With ``$GEMRAG_RAY_CALL_LOG`` set (a path every node can write), each call is appended to it as it starts
        (``pid sha256-of-the-request``), so repeated calls across a lost worker can be counted."""
        log = os.environ.get(CALL_LOG_ENV)
        if log:
            digest = hashlib.sha256(
                json.dumps(dataclasses.asdict(request), sort_keys=True, default=str).encode()
            ).hexdigest()
            with open(log, "a", encoding="utf-8") as fh:
                fh.write(f"{os.getpid()} {digest}\n")
        try:
            return request.call(self.llm)
        except GemragError as exc:
            return exc

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` by the backend's own tokenizer."""
        return int(self.llm.count_tokens(text))

    def pid(self) -> int:
        """The actor's process id (tests kill it)."""
        return os.getpid()


class RayLLM:
    """An :class:`~gemrag.models.base.LLM` whose calls run on a pool of Ray actors (module docstring).

    Args:
        settings: the LLM settings; ``settings.ray`` is the cluster address (:func:`ray_address`), the actors run
            the backend the other settings name.
        cache_dir: where the actors find the joined model weights (as :func:`build_llm`).

    Attributes:
        model_id, context_window: those of the backend the actors run.
        actors: the Ray actor handles.

    Raises:
        ConfigError: Ray is not installed (``pip install 'gemrag[cluster]'``) or the cluster cannot be reached.
    """

    def __init__(self, settings: LLMSettings, cache_dir: Path | None = None) -> None:
        try:
            import ray
        except ImportError as exc:
            raise ConfigError("llm.ray needs Ray: pip install 'gemrag[cluster]'") from exc
        self._ray = ray
        inner = settings.model_copy(update={"ray": None})
        self._local = build_backend(inner, cache_dir)  # the same backend in this process: identity only, loads nothing
        self.model_id = self._local.model_id
        self.context_window = self._local.context_window
        self._local_tokens = settings.provider != "llama_cpp"  # counting with llama.cpp needs the weights
        self.concurrency = settings.ray_actor_concurrency
        if not ray.is_initialized():
            try:
                address = ray_address(str(settings.ray))
                local: dict[str, Any] = {"object_store_memory": LOCAL_OBJECT_STORE} if address == "local" else {}
                ray.init(address=address, include_dashboard=False, log_to_driver=False, **local)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise ConfigError(f"cannot reach the Ray cluster {settings.ray!r}: {exc}") from exc
        cpus = settings.ray_actor_cpus
        if cpus is None:
            cpus = 1.0 if settings.provider == "llama_cpp" else 0.0
        worker = ray.remote(_Worker).options(
            max_restarts=-1,
            max_task_retries=-1,
            max_concurrency=self.concurrency,
            num_cpus=cpus,
            scheduling_strategy="SPREAD",
        )
        payload = inner.model_dump()
        # an actor handle proxies _Worker's methods as remote functions (``handle.complete.remote(...)``)
        self.actors: list[Any] = [
            worker.remote(payload, str(cache_dir) if cache_dir else None) for _ in range(settings.ray_actors)
        ]

    @property
    def cache_identity(self) -> dict[str, Any] | None:
        """The backend's own cache identity: answers made on the actors and in one process share cache keys."""
        return cache_identity_of(self._local)

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` (the backend's tokenizer; for llama.cpp asked of an actor, which has the weights)."""
        if self._local_tokens:
            return int(self._local.count_tokens(text))
        return int(self._ray.get(self.actors[0].count_tokens.remote(text)))

    def complete(
        self,
        messages: Sequence[Message],
        *,
        schema: dict[str, Any] | None = None,
        max_tokens: int = 256,
        temperature: float = 0.0,
        seed: int | None = None,
    ) -> Completion:
        """One call on one actor (see :class:`~gemrag.models.base.LLM`).

        Raises:
            GemragError: whatever the backend raised on the actor.
        """
        request = CompletionRequest(list(messages), schema, max_tokens, temperature, seed)
        with contextlib.closing(self.complete_iter([request])) as results:  # closed before returning or raising
            for _, result in results:
                if isinstance(result, GemragError):
                    raise result
                return result
        raise AssertionError("unreachable: one request gives one result")

    def complete_iter(
        self, requests: Sequence[CompletionRequest]
    ) -> Generator[tuple[int, Completion | GemragError], None, None]:
        """Every request on the pool, at most ``ray_actor_concurrency`` per actor at a time, yielded as each answer
        arrives (contract: :mod:`gemrag.models.batch`): ``(index, Completion or GemragError)``, each index once.

        Raises:
            GemragError: a fatal error of the backend (:func:`gemrag.errors.is_fatal`).
        """
        ray = self._ray
        waiting = list(enumerate(requests))[::-1]
        load = [0] * len(self.actors)
        pending: dict[Any, tuple[int, int]] = {}  # object ref -> (request index, actor)

        def submit() -> None:
            while waiting and min(load) < self.concurrency:
                actor = load.index(min(load))
                index, request = waiting.pop()
                pending[self.actors[actor].complete.remote(request)] = (index, actor)
                load[actor] += 1

        submit()
        try:
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                index, actor = pending.pop(done[0])
                load[actor] -= 1
                result = ray.get(done[0])
                submit()
                if isinstance(result, GemragError) and is_fatal(result):
                    raise result
                yield index, result
        finally:
            for ref in pending:  # the caller stopped early: drop what is still queued or running
                with contextlib.suppress(Exception):  # best effort: a task that cannot be cancelled just finishes
                    ray.cancel(ref)
