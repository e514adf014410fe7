"""The command line's shared option types and configuration helper (used by :mod:`gemrag.cli` and the
``cli_<name>`` modules; it imports neither, so that every command module can use it)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from gemrag.config import Config, load_config

__all__ = [
    "ConfigFile",
    "EmbModel",
    "EmbProvider",
    "EmbUrl",
    "ExistingMemory",
    "LLMModel",
    "LLMProvider",
    "LLMUrl",
    "MemoryDir",
    "Quiet",
    "SetOpt",
    "StrategyOpt",
    "Wait",
    "build_config",
]

MemoryDir = Annotated[Path, typer.Option("--memory", "-m", help="Memory directory (created if missing).")]
ExistingMemory = Annotated[Path, typer.Option("--memory", "-m", help="Memory directory (made by `gemrag index`).")]
Wait = Annotated[
    float,
    typer.Option("--wait", min=0.0, help="Seconds to wait while another process builds this memory (default: fail)."),
]
ConfigFile = Annotated[Path | None, typer.Option("--config", help="TOML config file (default ./gemrag.toml).")]
LLMProvider = Annotated[str | None, typer.Option("--llm-provider", help="llama_cpp (embedded) or openai.")]
LLMModel = Annotated[
    str | None,
    typer.Option("--llm-model", help="qwen2.5-coder-1.5b, qwen2.5-coder-0.5b, a .gguf path, or a served name."),
]
LLMUrl = Annotated[str | None, typer.Option("--llm-base-url", help="OpenAI-compatible endpoint for the LLM.")]
EmbProvider = Annotated[str | None, typer.Option("--embedder-provider", help="onnx (embedded MiniLM) or openai.")]
EmbModel = Annotated[str | None, typer.Option("--embedder-model", help="Embedding model name (openai provider).")]
EmbUrl = Annotated[str | None, typer.Option("--embedder-base-url", help="OpenAI-compatible endpoint for embeddings.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars.")]
StrategyOpt = Annotated[
    str | None,
    typer.Option(
        "--strategy",
        "-s",
        help="gem (default), dense, bm25, raptor, full, remem, remem_gist, remem_temporal, unweaver or hlgraph.",
    ),
]
SetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        help="section.key=value, e.g. raptor.summary_tokens=200 or gem.search=rank (repeatable; TOML values, "
        "quote strings that look like numbers). Overrides the config file, GEMRAG_* variables and the other "
        "flags; a strategy's section is validated by that strategy. A bad key or value is a one-line error.",
    ),
]


def build_config(
    config_file: Path | None,
    gem: dict[str, Any] | None = None,
    strategy: str | None = None,
    sets: list[str] | None = None,
    **model_flags: str | None,
) -> Config:
    """The configuration of a command: the file, ``GEMRAG_*`` variables, the model and strategy flags and ``gem``
    options given (None: not given), then ``--set`` (see :func:`gemrag.config.load_config`).

    Raises:
        ConfigError: the file or a value is invalid (one line, naming it).
    """
    overrides: dict[str, Any] = {
        "strategy": strategy,
        "llm": {
            "provider": model_flags.get("llm_provider"),
            "model": model_flags.get("llm_model"),
            "base_url": model_flags.get("llm_base_url"),
            "ray": model_flags.get("llm_ray"),
        },
        "embedder": {
            "provider": model_flags.get("embedder_provider"),
            "model": model_flags.get("embedder_model"),
            "base_url": model_flags.get("embedder_base_url"),
        },
        "gem": gem or {},
    }
    return load_config(config_file, overrides, sets)
