"""The command line's shared option types and configuration helper (used by :mod:`gemrag.cli.main` and the
command modules beside it; it imports neither, so that every command module can use it)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from gemrag.config import Config, load_config, memory_location
from gemrag.console import fail
from gemrag.errors import GemragError
from gemrag.store import location_problem
from gemrag.strategies import available

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
    "memory_target",
    "strategy_help",
]

MemoryDir = Annotated[
    str | None,
    typer.Option(
        "--memory",
        "-m",
        help="Memory: a directory (created if missing) or postgresql://user@host:port/db?schema=NAME "
        "(default: GEMRAG_MEMORY, or memory in gemrag.toml).",
    ),
]
ExistingMemory = Annotated[
    str | None,
    typer.Option(
        "--memory",
        "-m",
        help="Memory (made by `gemrag index`): a directory or postgresql://user@host:port/db?schema=NAME "
        "(default: GEMRAG_MEMORY, or memory in gemrag.toml).",
    ),
]
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


def strategy_help() -> str:
    """The help of ``--strategy``: every registered strategy (:func:`gemrag.strategies.available`, built-in ones
    included), the configured default first, e.g. ``"gem (default), bm25, dense, ... or unweaver."``."""
    default = Config().strategy
    names = [default] + [n for n in available() if n != default]
    shown = [f"{default} (default)", *names[1:]]
    return (", ".join(shown[:-1]) + " or " + shown[-1] if len(shown) > 1 else shown[0]) + "."


StrategyOpt = Annotated[str | None, typer.Option("--strategy", "-s", help=strategy_help())]
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
    memory_overrides: dict[str, Any] | None = None,
    **model_flags: str | None,
) -> Config:
    """The configuration of a command: the file, ``GEMRAG_*`` variables, the model and strategy flags, the ``gem``
    options and the ``[memory]`` options (``memory_overrides``: ``--chunk-tokens``) given (None: not given), then
    ``--set`` (see :func:`gemrag.config.load_config`).

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
        "memory": memory_overrides or {},
    }
    return load_config(config_file, overrides, sets)


def memory_target(option: str | Path | None, config: Config | None, *, existing: bool, hint: str = "") -> str:
    """The memory a command works on (``--memory``, else ``GEMRAG_MEMORY`` or ``memory`` in ``gemrag.toml``),
    checked before any work: a read command's memory must exist (a directory with a ``memory.sqlite``, or a
    PostgreSQL schema holding a memory); a writing command's directory must be able to hold one.

    Args:
        option: ``--memory`` (None: the configuration's).
        config: the configuration naming the memory when ``option`` is None (None: only ``option``).
        existing: True for the read commands (``ask``, ``info``, ``view``, ``delete``, ``chat`` without
            ``--create``), which never create a memory.
        hint: what to do instead when it does not exist (default: index documents into it first).

    Returns:
        The location: a directory path or a ``postgresql://`` URL.

    Raises:
        ConfigError: no memory is named anywhere. typer.Exit: code 2 when the memory is missing or unusable (one
            ``error:`` line); GemragError: the PostgreSQL server cannot be reached.
    """
    location = str(option) if option is not None and str(option) else memory_location(option, config or Config())
    problem = location_problem(location, existing=existing, hint=hint)
    if problem is not None:
        fail(GemragError(problem))
    return location
