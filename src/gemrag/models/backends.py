"""The single-process LLM backends a configuration names: the embedded llama.cpp model or an OpenAI-compatible
endpoint (used by :func:`gemrag.models.factory.build_llm` and by each Ray actor, :mod:`gemrag.models.ray_pool`)."""

from __future__ import annotations

import os
from pathlib import Path

from gemrag.config import LLMSettings
from gemrag.errors import ConfigError
from gemrag.models.base import LLM


def build_backend(settings: LLMSettings, cache_dir: Path | None = None) -> LLM:
    """The llama.cpp or OpenAI-compatible backend ``settings`` names (``settings.ray`` is ignored here).

    Raises:
        ModelNotAvailableError: the embedded model or llama-cpp-python is not installed.
        ConfigError: the settings are incomplete (e.g. no model name for an HTTP endpoint).
    """
    if settings.provider == "llama_cpp":
        from gemrag.models.llama.backend import LlamaCppLLM

        models_dir = (cache_dir / "models") if cache_dir else None
        return LlamaCppLLM(
            settings.model,
            n_ctx=settings.n_ctx,
            n_threads=settings.n_threads,
            n_gpu_layers=getattr(settings, "n_gpu_layers", 0),
            n_parallel=settings.n_parallel,
            cache_dir=models_dir,
        )
    from gemrag.models.openai.backend import OpenAILLM

    if not settings.model:
        raise ConfigError("the openai LLM provider needs a model name (--llm-model or GEMRAG_LLM__MODEL)")
    return OpenAILLM(
        settings.model,
        base_url=settings.base_url,
        api_key=settings.api_key or os.environ.get("OPENAI_API_KEY") or "not-needed",
        json_mode=settings.json_mode,
        tool_calling=settings.tool_calling,
        context_window=settings.n_ctx,
        timeout=settings.timeout,
        max_retries=settings.max_retries,
        concurrency=settings.concurrency,
        requests_per_minute=settings.requests_per_minute,
        tokens_per_minute=settings.tokens_per_minute,
    )
