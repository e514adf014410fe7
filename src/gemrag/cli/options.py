"""The command line's shared option types, its one model-options group and its configuration helper (used by the
command modules beside it; it imports none of them, so that every command module can use it).

The model and endpoint flags (``--llm-provider``, ``--llm-model``, ``--llm-base-url``, ``--embedder-provider``,
``--embedder-model``, ``--embedder-base-url``) are declared once: a command takes them as one
:class:`ModelOptions` parameter through :func:`model_options`, and hands them to :func:`build_config`.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from gemrag.config import Config, load_config, memory_location
from gemrag.console import fail
from gemrag.errors import GemragError
from gemrag.memory import Memory
from gemrag.memory_settings import DeprecatedSettingWarning
from gemrag.models.factory import check_model_settings
from gemrag.store import location_problem
from gemrag.strategies import available, check_config
from gemrag.strategies.base import ProgressFactory

__all__ = [
    "ConfigFile",
    "EmbModel",
    "EmbProvider",
    "EmbUrl",
    "LLMModel",
    "LLMProvider",
    "LLMUrl",
    "MODEL_FLAGS",
    "NO_MODEL_FLAGS",
    "MemoryOpt",
    "ModelOptions",
    "Quiet",
    "SetOpt",
    "StrategyOpt",
    "Wait",
    "build_config",
    "check_settings",
    "deprecated_sets",
    "memory_target",
    "model_options",
    "open_memory",
    "strategy_help",
]

MemoryOpt = Annotated[
    str | None,
    typer.Option(
        "--memory",
        "-m",
        help="The memory: a directory or postgresql://user@host:port/db?schema=NAME (default: GEMRAG_MEMORY, or "
        "memory in gemrag.toml).",
    ),
]
"""``--memory``, declared once for every command that opens a memory (whether it must exist already is the command's
to say; ``gemrag serve`` keeps one memory per namespace under it)."""
Wait = Annotated[
    float,
    typer.Option("--wait", min=0.0, help="Seconds to wait while another process builds this memory (default: fail)."),
]
ConfigFile = Annotated[
    Path | None, typer.Option("--config", help="TOML config file (default: GEMRAG_CONFIG, else ./gemrag.toml).")
]
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
    included), the configured default first (:data:`gemrag.config.DEFAULT_STRATEGY` unless a file or
    ``GEMRAG_STRATEGY`` names another), e.g. ``"fused (default), bm25, dense, ... or unweaver."``."""
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


@dataclass(frozen=True)
class ModelOptions:
    """The model and endpoint flags of a command, one typed group (None: not given; the configuration's value holds).

    Attributes:
        llm_provider, llm_model, llm_base_url: ``--llm-provider`` (``llama_cpp`` or ``openai``), ``--llm-model``,
            ``--llm-base-url`` (``[llm]``, :class:`gemrag.model_settings.LLMSettings`).
        embedder_provider, embedder_model, embedder_base_url: ``--embedder-provider`` (``onnx`` or ``openai``),
            ``--embedder-model``, ``--embedder-base-url`` (``[embedder]``,
            :class:`gemrag.model_settings.EmbedderSettings`).
    """

    llm_provider: str | None = None
    llm_model: str | None = None
    llm_base_url: str | None = None
    embedder_provider: str | None = None
    embedder_model: str | None = None
    embedder_base_url: str | None = None

    def overrides(self) -> dict[str, dict[str, str | None]]:
        """The flags as configuration overrides, ``{"llm": {...}, "embedder": {...}}`` (None: not given)."""
        return {
            "llm": {"provider": self.llm_provider, "model": self.llm_model, "base_url": self.llm_base_url},
            "embedder": {
                "provider": self.embedder_provider,
                "model": self.embedder_model,
                "base_url": self.embedder_base_url,
            },
        }


NO_MODEL_FLAGS = ModelOptions()
"""The default of a command's ``models`` parameter (:func:`model_options` always passes the flags given)."""

MODEL_FLAGS: Mapping[str, Any] = {
    "llm_provider": LLMProvider,
    "llm_model": LLMModel,
    "llm_base_url": LLMUrl,
    "embedder_provider": EmbProvider,
    "embedder_model": EmbModel,
    "embedder_base_url": EmbUrl,
}
"""The option type of each field of :class:`ModelOptions`."""

F = TypeVar("F", bound=Callable[..., Any])


def model_options(*only: str) -> Callable[[F], F]:
    """Give a command the model and endpoint flags as one parameter: the command declares ``models: ModelOptions``
    and typer sees the flags in its place (all of :data:`MODEL_FLAGS`, or the ``only`` ones, e.g. ``"llm_model"``;
    the others stay None). typer has no parameter groups, so the command's signature is rewritten, and the flags'
    values are gathered into a :class:`ModelOptions` before the command runs.

    Raises:
        TypeError: the command has no ``models`` parameter, or ``only`` names no model flag.
    """
    names = only or tuple(MODEL_FLAGS)
    unknown = [n for n in names if n not in MODEL_FLAGS]
    if unknown:
        raise TypeError(f"no model flag {', '.join(unknown)}; the flags are {', '.join(MODEL_FLAGS)}")

    def deco(command: F) -> F:
        signature = inspect.signature(command, eval_str=True)
        if "models" not in signature.parameters:
            raise TypeError(f"{command.__name__} takes no `models: ModelOptions` parameter")
        params: list[inspect.Parameter] = []
        for param in signature.parameters.values():
            if param.name != "models":
                params.append(param)
                continue
            params += [inspect.Parameter(n, param.kind, default=None, annotation=MODEL_FLAGS[n]) for n in names]

        @functools.wraps(command)
        def with_models(*args: Any, **kwargs: Any) -> Any:
            models = ModelOptions(**{n: kwargs.pop(n, None) for n in names})
            return command(*args, models=models, **kwargs)

        with_models.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        with_models.__annotations__ = {p.name: p.annotation for p in params} | {"return": signature.return_annotation}
        return with_models  # type: ignore[return-value]

    return deco


@contextlib.contextmanager
def deprecated_sets(section: str, flags: Mapping[str, Any]) -> Iterator[list[str]]:
    """The ``--set`` items of the deprecated flags that were given (None: not given) for settings of ``section``:
    ``deprecated_sets("gem", {"questions": 3, "eigen": None})`` yields ``["gem.questions=3"]``; put them before the
    user's ``--set`` items, which win, as they did over the flags. When the block ends without an error, each flag
    given is named in a one-line :class:`~gemrag.memory_settings.DeprecatedSettingWarning` with the ``--set`` to write
    instead (a failing command prints its one ``error:`` line alone)."""
    items = {
        "--" + key.replace("_", "-"): f"{section}.{key}={value}" for key, value in flags.items() if value is not None
    }
    yield list(items.values())
    for flag, item in items.items():
        warnings.warn(DeprecatedSettingWarning(f"{flag} is deprecated: use --set {item}"), stacklevel=3)


def build_config(
    config_file: Path | None,
    *,
    strategy: str | None = None,
    sets: list[str] | None = None,
    models: ModelOptions | None = None,
    memory: dict[str, Any] | None = None,
    ray: str | None = None,
) -> Config:
    """The configuration of a command: the file, ``GEMRAG_*`` variables, then the flags given (None: not given) of
    the strategy (``--strategy``), the models (:class:`ModelOptions`), ``[memory]`` (``memory``: e.g.
    ``{"chunk_tokens": 100}``) and ``--ray`` (``llm.ray``), then ``--set`` items (``sets``, where every strategy's
    own settings go: ``gem.questions=3``) (see :func:`gemrag.config.load_config`).

    Raises:
        ConfigError: the file or a value is invalid (one line, naming it).
    """
    overrides = (models or ModelOptions()).overrides()
    overrides["llm"]["ray"] = ray
    return load_config(config_file, {"strategy": strategy, **overrides, "memory": memory or {}}, sets)


def check_settings(config: Config) -> None:
    """Check a command's configuration before any work, as :meth:`gemrag.memory.Memory.open` does when it opens a
    memory: every strategy section (:func:`gemrag.strategies.check_config`) and the model names
    (:func:`gemrag.models.factory.check_model_settings`). For the commands that may not open one at once (``view``
    without ``--question``, ``serve``, which opens a namespace's memory at its first request).

    Raises:
        ConfigError: an unknown strategy or section, an invalid value, or a model name not accepted (one line).
    """
    check_config(config)
    check_model_settings(config.llm, config.embedder)


def open_memory(location: str, config: Config, progress: ProgressFactory | None, *, readonly: bool = False) -> Memory:
    """Open the memory at ``location`` for a command (``progress``: its progress bars, None: none; ``readonly``: a
    read-only memory, e.g. ``gemrag view``'s). The one place the commands open a memory, so a harness can give them
    stand-in models (``benchmarks/kill9_index.py``).

    Raises:
        GemragError: the memory cannot be opened (see :meth:`gemrag.memory.Memory.open`).
    """
    return Memory.open(location, config, progress=progress, readonly=readonly or None)


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
