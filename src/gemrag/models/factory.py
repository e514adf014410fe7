"""Build model backends from configuration (:mod:`gemrag.config`)."""

from __future__ import annotations

import os
from pathlib import Path

from gemrag.config import EmbedderSettings, LLMSettings
from gemrag.errors import ConfigError
from gemrag.models.backends import build_backend
from gemrag.models.base import LLM, Embedder


def build_llm(settings: LLMSettings, cache_dir: Path | None = None) -> LLM:
    """The LLM backend the settings name (not yet wrapped in cache or meter); with ``settings.ray`` a pool of Ray
    actors each running that backend (:class:`gemrag.models.ray_pool.RayLLM`).

    Raises:
        ModelNotAvailableError: the embedded model or llama-cpp-python is not installed.
        ConfigError: the settings are incomplete (e.g. no model name for an HTTP endpoint), or ``ray`` is set and
            Ray is missing or its cluster unreachable.
    """
    if settings.ray:
        from gemrag.models.ray_pool import RayLLM  # only here: without llm.ray nothing imports Ray

        return RayLLM(settings, cache_dir)
    return build_backend(settings, cache_dir)


def build_embedder(settings: EmbedderSettings) -> Embedder:
    """The embedder backend the settings name (not yet wrapped in cache or meter).

    Raises:
        ModelNotAvailableError: onnxruntime or the MiniLM model package is not installed.
        ConfigError: the settings are incomplete.
    """
    if settings.provider == "onnx":
        from gemrag.models.onnx_embedder import OnnxMiniLMEmbedder

        return OnnxMiniLMEmbedder()
    from gemrag.models.openai_backend import OpenAIEmbedder

    if not settings.model:
        raise ConfigError("the openai embedder provider needs a model name (--embedder-model)")
    return OpenAIEmbedder(
        settings.model,
        base_url=settings.base_url,
        api_key=settings.api_key or os.environ.get("OPENAI_API_KEY") or "not-needed",
        timeout=settings.timeout,
        max_retries=settings.max_retries,
        concurrency=settings.concurrency,
    )
