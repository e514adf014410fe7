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
    from gemrag.models.openai.embedder import OpenAIEmbedder

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


ONNX_EMBEDDER_NAMES = ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2")
"""The names the embedded onnx embedder answers to (its model is fixed; other names are for the openai provider)."""


def check_model_settings(llm: LLMSettings | None, embedder: EmbedderSettings | None) -> None:
    """Check the model names before anything is loaded or created, so a misspelt model is a one-line error even
    for a command that would not load it (``ask --retrieve-only``): a llama_cpp model must be a known name or an
    existing file; the onnx embedder takes no other model name; an openai provider needs a model name.

    Args:
        llm, embedder: the settings to check (None: not checked, e.g. a backend given by the caller).

    Raises:
        ConfigError: a model name that is not accepted (the message names it and what is accepted).
    """
    from gemrag.models.llama.weights import KNOWN_MODELS

    if llm is not None and llm.provider == "llama_cpp" and llm.model not in KNOWN_MODELS:
        path = Path(llm.model).expanduser()
        if not path.is_file():
            raise ConfigError(
                f"unknown model {llm.model!r}: the llama_cpp provider takes a known model "
                f"({', '.join(sorted(KNOWN_MODELS))}) or the path of an existing .gguf file"
            )
    if llm is not None and llm.provider == "openai" and not llm.model:
        raise ConfigError("the openai LLM provider needs a model name (--llm-model or GEMRAG_LLM__MODEL)")
    if embedder is not None and embedder.provider == "onnx" and embedder.model not in ONNX_EMBEDDER_NAMES:
        raise ConfigError(
            f"unknown embedder model {embedder.model!r} for the onnx provider: it embeds with all-MiniLM-L6-v2 "
            "(other names need --embedder-provider openai)"
        )
