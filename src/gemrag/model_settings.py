"""The ``[llm]`` and ``[embedder]`` sections: which models a memory runs (re-exported by :mod:`gemrag.config`).

Each is a pydantic model of :class:`gemrag.config.Config`; the providers read them in :mod:`gemrag.models.factory`
(``llm.provider``: the embedded llama.cpp model or an OpenAI-compatible endpoint; ``embedder.provider``: the
embedded ONNX all-MiniLM-L6-v2 or an OpenAI-compatible endpoint). A bad value is a pydantic ``ValidationError``,
which :func:`gemrag.config.load_config` turns into a :class:`~gemrag.errors.ConfigError` naming the key.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field, field_validator

__all__ = ["EmbedderSettings", "LLMSettings"]


class LLMSettings(BaseModel):
    """Which LLM answers, writes utility questions and summaries.

    Attributes:
        provider: ``"llama_cpp"`` (embedded GGUF, default) or ``"openai"`` (any OpenAI-compatible endpoint).
        model: for llama_cpp a known short name (``qwen2.5-coder-1.5b``, ``qwen2.5-coder-0.5b``) or a path to
            a ``.gguf`` file; for openai the served model name.
        base_url: the endpoint for openai (e.g. ``http://127.0.0.1:8080/v1``); None = api.openai.com.
        api_key: the key for openai (or ``$OPENAI_API_KEY``); local servers accept any string.
        n_ctx: llama.cpp context window (tokens).
        n_threads: llama.cpp threads (None = all cores).
        n_gpu_layers: llama.cpp layers offloaded to a GPU (0 = CPU only, -1 = all); needs a GPU build of
            llama-cpp-python (docs/install.md, "A GPU").
        n_parallel: llama.cpp sequences decoded together in one batch when many calls are made at once (the
            per-chunk extraction calls of a build); 1 = one call after another. Each sequence needs KV cache
            cells for its prompt and completion within ``n_ctx`` (shared by all), so the batch shrinks when the
            prompts are long. Not part of the cache keys (benchmarks/bench_llm.py measures the throughput).
            Default 1: on 2 CPU cores llama.cpp is compute-bound even for one sequence, so batching gained
            +12% calls/s (0.5B) and -5% (1.5B) while greedy answers may differ in near-ties (docs/llm_speed.md);
            raise it where decoding is memory-bound (more cores, a GPU).
        json_mode: how structured output is requested from an openai endpoint.
        tool_calling: how an openai endpoint is asked for the agent's tool calls (REMem ``remem_gist``):
            ``"native"`` (default; the API's ``tools`` and ``tool_choice``) or ``"structured"`` (a JSON schema,
            per ``json_mode``, for servers without tool support). The embedded model always uses a grammar.
        timeout: HTTP timeout (seconds, per request and per retry).
        concurrency: HTTP requests in flight at once when a build sends many (extraction passes), >= 1;
            default 4.
        max_retries: retries of one HTTP request on a connection error, HTTP 408/409/429 or 5xx, with
            exponential backoff (0.5 s doubling up to 8 s) or the server's ``Retry-After`` (up to 120 s); default 2.
        requests_per_minute: client-side limit on HTTP requests per minute (None = no limit); requests wait
            (sleep) until they fit.
        tokens_per_minute: client-side limit on tokens per minute, counting each request's estimated prompt
            tokens (about 4 characters per token) plus its ``max_tokens`` (None = no limit).
        ray: send the LLM calls of every build to a pool of Ray actors (``gemrag[cluster]``,
            :mod:`gemrag.models.ray_pool`): ``"auto"`` (the running cluster), an address (``host:port`` or
            ``ray://host:port``), ``"local"`` (a cluster in this process) or None (default: no Ray; nothing imports
            it). Each actor loads the model stack these settings name once; the driver caches every answer.
        ray_actors: actors in the pool, >= 1 (default 2).
        ray_actor_concurrency: calls one actor serves at once, >= 1 (default 1; an HTTP backend's actor may serve
            several, a llama.cpp actor decodes one at a time unless ``n_parallel`` > 1).
        ray_actor_cpus: CPUs Ray reserves per actor when placing it (default None: 1 for llama_cpp, 0 for openai).
    """

    provider: Literal["llama_cpp", "openai"] = "llama_cpp"
    model: str = "qwen2.5-coder-1.5b"
    base_url: str | None = None
    api_key: str | None = None
    n_ctx: int = Field(4096, ge=512)
    n_threads: int | None = Field(None, ge=1)
    n_gpu_layers: int = Field(0, ge=-1)
    n_parallel: int = Field(1, ge=1)
    json_mode: Literal["json_schema", "json_object", "none"] = "json_schema"
    tool_calling: Literal["native", "structured"] = "native"
    timeout: float = Field(600.0, gt=0)
    concurrency: int = Field(4, ge=1)
    max_retries: int = Field(2, ge=0)
    requests_per_minute: int | None = Field(None, ge=1)
    tokens_per_minute: int | None = Field(None, ge=1)
    ray: str | None = None
    ray_actors: int = Field(2, ge=1)
    ray_actor_concurrency: int = Field(1, ge=1)
    ray_actor_cpus: float | None = Field(None, ge=0)

    @field_validator("ray")
    @classmethod
    def _ray_address(cls, value: str | None) -> str | None:
        """``auto``, ``local``, ``host:port`` or ``ray://host:port``: checked here, before any work, since a
        malformed address would only fail when Ray tries to connect (minutes later)."""
        if value is not None and not _RAY_ADDRESS.fullmatch(value):
            raise ValueError(f"{value!r} is not a Ray address: use auto, local, HOST:PORT or ray://HOST:PORT")
        return value


_RAY_ADDRESS = re.compile(r"auto|local|(ray://)?[A-Za-z0-9_.\-\[\]:]*[A-Za-z0-9_.\-\]]:\d{1,5}")


class EmbedderSettings(BaseModel):
    """Which embedder E maps texts to vectors.

    Attributes:
        provider: ``"onnx"`` (embedded all-MiniLM-L6-v2 int8, default) or ``"openai"``.
        model: the model name (openai) — ignored for onnx.
        base_url: the openai-compatible endpoint. api_key: its key.
        timeout: HTTP timeout (seconds, per request).
        concurrency: HTTP requests in flight at once when one call embeds several batches (openai), >= 1.
        max_retries: retries of one HTTP request on a connection error, HTTP 408/409/429 or 5xx (openai).
    """

    provider: Literal["onnx", "openai"] = "onnx"
    model: str = "all-MiniLM-L6-v2"
    base_url: str | None = None
    api_key: str | None = None
    timeout: float = Field(120.0, gt=0)
    concurrency: int = Field(4, ge=1)
    max_retries: int = Field(2, ge=0)
