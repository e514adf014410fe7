"""Configuration: one pydantic settings object, read from a TOML file, environment variables and flags.

Precedence (highest first): explicit overrides (CLI flags or keyword arguments) > environment variables
(``GEMRAG_`` prefix, ``__`` between levels, e.g. ``GEMRAG_LLM__PROVIDER=openai``,
``GEMRAG_GEM__BUDGET=6``) > the TOML file (``--config FILE``, else ``$GEMRAG_CONFIG``, else
``./gemrag.toml`` when present) > defaults.

Example ``gemrag.toml``::

    [llm]
    provider = "openai"
    base_url = "http://127.0.0.1:8080/v1"
    model = "qwen2.5"

    [gem]
    budget = 4
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from gemrag.errors import ConfigError


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
            llama-cpp-python (README, "A GPU").
        json_mode: how structured output is requested from an openai endpoint.
        timeout: HTTP timeout (seconds).
    """

    provider: Literal["llama_cpp", "openai"] = "llama_cpp"
    model: str = "qwen2.5-coder-1.5b"
    base_url: str | None = None
    api_key: str | None = None
    n_ctx: int = Field(4096, ge=512)
    n_threads: int | None = Field(None, ge=1)
    n_gpu_layers: int = Field(0, ge=-1)
    json_mode: Literal["json_schema", "json_object", "none"] = "json_schema"
    timeout: float = Field(600.0, gt=0)


class EmbedderSettings(BaseModel):
    """Which embedder E maps texts to vectors.

    Attributes:
        provider: ``"onnx"`` (embedded all-MiniLM-L6-v2 int8, default) or ``"openai"``.
        model: the model name (openai) — ignored for onnx.
        base_url: the openai-compatible endpoint. api_key: its key.
    """

    provider: Literal["onnx", "openai"] = "onnx"
    model: str = "all-MiniLM-L6-v2"
    base_url: str | None = None
    api_key: str | None = None
    timeout: float = Field(120.0, gt=0)


class GemSettings(BaseModel):
    """GEM-RAG parameters (paper section IV.E defaults).

    Attributes:
        chunk_tokens: T, tokens per chunk (embedder tokenizer), default 100.
        questions: m, utility questions per chunk (0 = compare chunk embeddings directly), default 5.
        eigen: k, eigenvectors that become summary nodes, default 2.
        eigen_top: e, top components of each eigenvector summarized together, default 5.
        budget: B, context nodes returned by retrieval, default 4 (about 400 tokens).
        search: ``"best_first"`` (section III.B.2), ``"rank"`` (literal Algorithm 1) or ``"fused"`` (no
            graph walk: top-B by ``max(cos(v_p, v_u), max_j cos(v_p, v_uj))``, an ablation measuring what the
            walk adds).
        members: how summary nodes pick their e members: ``"spectral"`` (the top e components of each of
            the top k eigenvectors, section III.B.1) or ``"kmeans"`` (the e chunks nearest each of k
            k-means centroids of the chunk vectors: Table I, "GEM-RAG (k-Means)").
        summary_words: length limit of a summary node (words).
    """

    chunk_tokens: int = Field(100, ge=16, le=2000)
    questions: int = Field(5, ge=0, le=20)
    eigen: int = Field(2, ge=0, le=64)
    eigen_top: int = Field(5, ge=1, le=100)
    budget: int = Field(4, ge=1, le=200)
    search: Literal["best_first", "rank", "fused"] = "best_first"
    members: Literal["spectral", "kmeans"] = "spectral"
    summary_words: int = Field(80, ge=10, le=1000)


class Config(BaseSettings):
    """All of gemrag's settings.

    Attributes:
        strategy: the retrieval strategy name (``gem`` is the default and the only one built so far).
        llm, embedder, gem: see :class:`LLMSettings`, :class:`EmbedderSettings`, :class:`GemSettings`.
        cache_dir: where joined model weights are kept (default ``~/.cache/gemrag``).
        progress: show progress bars.
    """

    model_config = SettingsConfigDict(env_prefix="GEMRAG_", env_nested_delimiter="__", extra="forbid")

    strategy: str = "gem"
    llm: LLMSettings = Field(default_factory=LLMSettings)
    embedder: EmbedderSettings = Field(default_factory=EmbedderSettings)
    gem: GemSettings = Field(default_factory=GemSettings)
    cache_dir: Path | None = None
    progress: bool = True


def _find_config_file(path: str | Path | None) -> Path | None:
    if path is not None:
        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"config file not found: {p}")
        return p
    env = os.environ.get("GEMRAG_CONFIG")
    if env:
        return _find_config_file(env)
    local = Path("gemrag.toml")
    return local if local.is_file() else None


def _deep_drop_none(d: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            v = _deep_drop_none(v)
            if v:
                out[k] = v
        elif v is not None:
            out[k] = v
    return out


def load_config(config_file: str | Path | None = None, overrides: dict[str, Any] | None = None) -> Config:
    """Build the configuration from defaults, a TOML file, ``GEMRAG_*`` variables and overrides.

    Args:
        config_file: a TOML file; None looks at ``$GEMRAG_CONFIG`` then ``./gemrag.toml``.
        overrides: nested dict of explicit values (e.g. ``{"gem": {"budget": 6}}``); ``None`` values are
            ignored so unset CLI flags do not mask lower layers.

    Raises:
        ConfigError: the file is missing or malformed, or a value is invalid.
    """
    toml_path = _find_config_file(config_file)

    class _Config(Config):
        @classmethod
        def settings_customise_sources(
            cls,
            settings_cls: type[BaseSettings],
            init_settings: PydanticBaseSettingsSource,
            env_settings: PydanticBaseSettingsSource,
            dotenv_settings: PydanticBaseSettingsSource,
            file_secret_settings: PydanticBaseSettingsSource,
        ) -> tuple[PydanticBaseSettingsSource, ...]:
            sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
            if toml_path is not None:
                sources.append(TomlConfigSettingsSource(settings_cls, toml_file=toml_path))
            return tuple(sources)

    try:
        built = _Config(**_deep_drop_none(overrides or {}))
    except ValidationError as exc:
        raise ConfigError(f"invalid configuration: {exc}") from exc
    except ValueError as exc:  # malformed TOML surfaces as a ValueError subclass
        raise ConfigError(f"invalid configuration file {toml_path}: {exc}") from exc
    return Config.model_validate(built.model_dump())
