"""The strategy protocol and registry.

A strategy turns the memory's chunks into whatever structure it retrieves from (``build``) and answers
``retrieve(question, budget)`` with a ranked list of :class:`~gemrag.types.Hit`. Strategies register
themselves by name, so a user can add their own::

    @register("mine")
    class Mine:
        name = "mine"
        def build(self, ctx): ...
        def retrieve(self, ctx, question, budget): ...

Per-strategy configuration: a strategy with settings names a pydantic model (``register("mine",
config=MineConfig)`` or a class attribute ``config_model = MineConfig``) and is constructed with the
validated ``[mine]`` section of the configuration as its one positional argument::

    class MineConfig(BaseModel):
        top: int = Field(3, ge=1)

    @register("mine", config=MineConfig)
    class Mine:
        name = "mine"
        def __init__(self, config: MineConfig | None = None) -> None:
            self.config = config or MineConfig()
        ...

``[mine]`` in the TOML file, ``GEMRAG_MINE__TOP=5`` and ``--set mine.top=5`` then reach ``Mine(config)``
(:func:`get_strategy`; :class:`~gemrag.memory.Memory` passes its configuration). A strategy without a model
is constructed with no argument and must have no section. GEM registers the same way (``[gem]``,
:class:`~gemrag.strategies.gem.settings.GemConfig`); what every method shares (chunk size, default budget, chunk
titles) is the memory's, ``ctx.config.memory`` (:class:`~gemrag.memory_settings.MemorySettings`). Register a user
strategy before opening a memory: :func:`check_config` (run by ``Memory``) rejects a section that names no
registered strategy, so a typo such as ``[raptr]`` is an error, not an ignored section.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from gemrag.config import Config, describe_errors
from gemrag.errors import ConfigError, UnknownStrategyError
from gemrag.models.base import LLM, Embedder
from gemrag.models.meter import UsageMeter
from gemrag.store.parts import BuildReads, StrategyStore
from gemrag.types import Hit


class Advance(Protocol):
    """``advance(n=1, *, tokens=0)``: n more items done, which made the LLM generate ``tokens`` tokens (completion
    tokens of the calls actually made; cache hits cost none), so a bar can show items/s and tokens/s. Factories
    written before the ``tokens`` argument (``advance(n)`` only) keep working: callers that pass tokens go through
    :func:`token_advance`."""

    def __call__(self, n: int = 1, *, tokens: int = 0) -> None: ...


ProgressFactory = Callable[[str, int], AbstractContextManager[Advance]]
"""``progress(description, total)``: a context manager yielding an :class:`Advance` (``total`` items)."""


@contextmanager
def no_progress(description: str, total: int) -> Iterator[Advance]:
    """A progress factory that shows nothing (and ignores the token counts)."""

    def advance(n: int = 1, *, tokens: int = 0) -> None:
        return None

    yield advance


def note_advance(advance: Callable[..., None]) -> Callable[[int, str], None]:
    """``advance`` as a function of ``(n, note)``: it gets ``note=`` (a short status text such as running
    averages, shown next to the bar by :func:`gemrag.progress.rich_progress`) when it accepts that keyword (or
    ``**kwargs``), else only ``n``."""
    try:
        params = inspect.signature(advance).parameters.values()
    except (TypeError, ValueError):  # a builtin or C callable without a signature
        params = ()  # type: ignore[assignment]
    if any(p.name == "note" or p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return lambda n, note: advance(n, note=note)
    return lambda n, note: advance(n)


def token_advance(advance: Callable[..., None]) -> Callable[[int, int], None]:
    """``advance`` as a function of ``(n, tokens)``: it gets ``tokens=`` when it accepts that keyword (or
    ``**kwargs``), else only ``n`` (a factory written before token counts existed)."""
    try:
        params = inspect.signature(advance).parameters.values()
    except (TypeError, ValueError):  # a builtin or C callable without a signature: assume the old form
        params = ()  # type: ignore[assignment]
    if any(p.name == "tokens" or p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return lambda n, tokens: advance(n, tokens=tokens)
    return lambda n, tokens: advance(n)


@dataclass
class StrategyContext:
    """What a strategy may use: the store, the models (cached and metered), the config and progress.

    Attributes:
        store: the memory's store, as the parts a strategy uses (:class:`~gemrag.store.parts.StrategyStore`).
        embedder: the embedder E (cached, metered).
        get_llm: returns the LLM (cached, metered), loading it on first use (it can take seconds).
        config: the full configuration.
        meter: the usage meter (phases ``index`` / ``query``).
        progress: ``progress(description, total)`` context manager yielding ``advance(n, tokens=0)``
            (:class:`Advance`).
        state: per-memory scratch space for a strategy's loaded arrays.
    """

    store: StrategyStore
    embedder: Embedder
    get_llm: Callable[[], LLM]
    config: Config
    meter: UsageMeter
    progress: ProgressFactory = no_progress
    state: dict[str, Any] = field(default_factory=dict)


class Strategy(Protocol):
    """A retrieval method over the memory's chunks."""

    name: str

    def build(self, ctx: StrategyContext) -> None:
        """Build (or incrementally update) the strategy's structures from the chunks in ``ctx.store``."""
        ...

    def retrieve(self, ctx: StrategyContext, question: str, budget: int) -> list[Hit]:
        """Return at most ``budget`` context nodes for ``question``, best first."""
        ...

    def report(self, ctx: StrategyContext) -> dict[str, Any]:
        """Strategy-specific figures for ``gemrag info``."""
        ...

    # Optional: ``kept_kinds: frozenset[str]``, the node kinds each of whose sources states the node's text on its own
    # (an entity's name, a triple): they outlive a removed source (:func:`kept_kinds`); every other derived node
    # leaves with any of its inputs.
    # Optional: ``warm(self, ctx, budget) -> None`` loads what ``retrieve`` reads (its arrays, the LLM it calls at
    # query time) without spending an LLM call; without it :func:`warm_strategy` retrieves :data:`WARM_UP` once.
    # Optional: ``themes(self, store) -> Themes | None``, the themes the memory view colours the chunks by (GEM: its
    # eigenthemes); without it the view shows none (:func:`strategy_themes`).
    # Optional: ``retrieval_settings: frozenset[str]``, the settings of its section that change retrieval alone (GEM's
    # ``search``): an evaluation's ablation of one reuses the build (:func:`retrieval_settings`).


@dataclass
class Themes:
    """The themes a strategy's published build groups its chunks into, as the memory view colours them (GEM: the
    eigenthemes of GEM-RAG section III.B.1, "Building the Summary Nodes"; :meth:`Strategy.themes` is optional).

    Attributes:
        chunk_theme: store id of each chunk -> 0-based theme index (position in ``eigen_indices``), or absent
            when the build chose no theme (k-means members, too few chunks).
        eigen_indices: (k,) the themes' keys, each the ``eigen_index`` in the meta of the summary node written from
            it (GEM: 0-based positions, in the |lambda| order, of the summarized eigenvectors).
        eigenvalues: (k,) their eigenvalues (float; empty when the themes have none).
        spectrum: the build's spectrum report (GEM: ``n``, ``top_eigenvalues``, ``estimated_themes`` (Remark 2),
            ``spectral_energy`` (Remark 3's Lambda), ``trace``) or None.
        note: why there are no themes, when there are none ("" otherwise).
    """

    chunk_theme: dict[int, int] = field(default_factory=dict)
    eigen_indices: list[int] = field(default_factory=list)
    eigenvalues: list[float] = field(default_factory=list)
    spectrum: dict[str, Any] | None = None
    note: str = ""


#: The question a strategy without a ``warm`` method is warmed with (:func:`warm_strategy`): its answer is discarded.
WARM_UP = "What is this text about?"


def warm_strategy(ctx: StrategyContext, strategy: Strategy, budget: int) -> None:
    """Load what ``strategy.retrieve`` reads, so that the next retrieval's latency is retrieval alone.

    Calls the strategy's optional ``warm(ctx, budget)`` (e.g. ``iterative`` warms its base and loads the LLM, spending
    no LLM call), else retrieves :data:`WARM_UP` once with ``budget`` (nodes) and discards the hits: a strategy that
    calls the LLM at query time without a ``warm`` method spends those calls here.

    Raises:
        MemoryNotIndexedError: the strategy (or its base) has not been built. Whatever its retrieval raises.
    """
    warm = getattr(strategy, "warm", None)
    if callable(warm):
        warm(ctx, budget)
    else:
        strategy.retrieve(ctx, WARM_UP, budget)


S = TypeVar("S")


@dataclass(frozen=True)
class Registration:
    """A registered strategy: how to construct it and the pydantic model of its configuration section.

    Attributes:
        factory: the class (or any callable) building the strategy: ``factory(config)`` when ``config_model``
            is set, ``factory()`` otherwise.
        config_model: the model validating the strategy's section, or None (the strategy has no settings).
    """

    factory: Callable[..., Strategy]
    config_model: type[BaseModel] | None = None


_REGISTRY: dict[str, Registration] = {}
_BUILTIN = {
    "gem": "gemrag.strategies.gem.strategy",
    "dense": "gemrag.strategies.baselines.dense",
    "bm25": "gemrag.strategies.baselines.bm25",
    "raptor": "gemrag.strategies.raptor.strategy",
    "full": "gemrag.strategies.baselines.full",
    "remem": "gemrag.strategies.remem.strategy",
    "remem_gist": "gemrag.strategies.remem.episodic",
    "remem_temporal": "gemrag.strategies.remem.temporal",
    "unweaver": "gemrag.strategies.unweaver.strategy",
    "hlgraph": "gemrag.strategies.hlgraph.strategy",
    "fused": "gemrag.strategies.fused.strategy",
    "iterative": "gemrag.strategies.iterative.strategy",
}
"""The built-in strategies: name -> the module that registers it, imported on first use."""


def register(name: str, config: type[BaseModel] | None = None) -> Callable[[S], S]:
    """Class decorator registering a strategy factory under ``name``.

    Args:
        name: the strategy's name, also the name of its configuration section.
        config: the pydantic model of its section; default: the class attribute ``config_model``, if any.

    Raises:
        ValueError: ``name`` is a top-level setting of :class:`~gemrag.config.Config` (such as ``llm``).
        TypeError: the config model is not a pydantic model class.
    """
    if name in Config.model_fields:
        raise ValueError(f"{name!r} cannot name a strategy: it is a top-level configuration setting")

    def deco(cls: S) -> S:
        model = config if config is not None else getattr(cls, "config_model", None)
        if model is not None and not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise TypeError(f"the config model of strategy {name!r} must be a pydantic BaseModel class, not {model!r}")
        _REGISTRY[name] = Registration(cls, model)  # type: ignore[arg-type]
        return cls

    return deco


def available() -> list[str]:
    """Names of the registered (and built-in) strategies."""
    return sorted(set(_REGISTRY) | set(_BUILTIN))


def _registration(name: str) -> Registration:
    if name not in _REGISTRY and name in _BUILTIN:
        importlib.import_module(_BUILTIN[name])
    if name not in _REGISTRY:
        raise UnknownStrategyError(f"unknown strategy {name!r}; choose one of {', '.join(available())}")
    return _REGISTRY[name]


def config_model(name: str) -> type[BaseModel] | None:
    """The pydantic model of strategy ``name``'s configuration section (None: it has no settings).

    Raises:
        UnknownStrategyError: no strategy has that name (a ConfigError and a KeyError).
    """
    return _registration(name).config_model


def title_default(name: str) -> bool | None:
    """Whether strategy ``name`` reads chunk titles by default: its class attribute ``reads_titles``, set after its
    paper's input (docs/papers.md, "Which method reads what"); None: it reads no indexed chunk text (``full``,
    ``remem_gist``, ``fused``, whose parts decide for themselves, or a strategy that does not say).

    Raises:
        UnknownStrategyError: no strategy has that name (a ConfigError and a KeyError).
    """
    value = getattr(_registration(name).factory, "reads_titles", None)
    return None if value is None else bool(value)


def kept_kinds(name: str) -> frozenset[str]:
    """The node kinds of strategy ``name`` that each of their source chunks states on its own (its class attribute
    ``kept_kinds``: REMem's entity names and triples, HLGraphRAG's subjects): such a node stays while any of its
    sources remains when a chunk is removed, without the removed chunk among its sources. Every other derived node
    leaves with any of its inputs (DESIGN.md, "Forgetting";
    :func:`gemrag.strategies.platform.forgetting.forgotten_nodes`). Empty for a
    strategy that does not say, or that is not registered in this process (the safe side: its nodes leave).
    """
    try:
        value = getattr(_registration(name).factory, "kept_kinds", ())
    except UnknownStrategyError:
        return frozenset()
    return frozenset(str(k) for k in value or ())


def validate_section(name: str, model: type[BaseModel], raw: dict[str, Any]) -> BaseModel:
    """Validate the raw section ``[name]`` against ``model``.

    Keys the model does not declare are rejected even when the model would ignore them (unless its
    ``model_config`` has ``extra="allow"``), so a misspelt key is an error rather than a silent default.

    Raises:
        ConfigError: an unknown key or an invalid value; the message names the section and the field.
    """
    if model.model_config.get("extra") != "allow":
        names = set(model.model_fields) | {f.alias for f in model.model_fields.values() if f.alias}
        unknown = [k for k in raw if k not in names]
        if unknown:
            raise ConfigError(
                f"[{name}] has no setting {', '.join(repr(k) for k in unknown)}; "
                f"the settings of strategy {name!r} are "
                f"{', '.join(n for n, f in model.model_fields.items() if not f.exclude) or 'none'}"
            )
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"invalid [{name}] configuration: {describe_errors(exc, name)}") from exc


def strategy_config(name: str, config: Config | None = None) -> BaseModel | None:
    """The validated configuration of strategy ``name`` from ``config`` (defaults when ``config`` is None or
    has no ``[name]`` section); None for a strategy without settings.

    Raises:
        UnknownStrategyError: no strategy has that name (a ConfigError and a KeyError).
        ConfigError: the section is invalid, or it is given for a strategy that has no settings.
    """
    model = config_model(name)
    raw = config.section(name) if config is not None else {}
    if model is None:
        if raw:
            raise ConfigError(f"strategy {name!r} has no settings, but the configuration has a [{name}] section")
        return None
    return validate_section(name, model, raw)


def check_config(config: Config) -> None:
    """Check every strategy section of ``config`` against the registry: each must name a registered strategy
    and be valid for its model. :class:`~gemrag.memory.Memory` runs this when it opens a memory.

    Raises:
        UnknownStrategyError: the default strategy (``config.strategy``) is not registered.
        ConfigError: a section names no registered strategy (register user strategies first), or is invalid.
    """
    _registration(config.strategy)  # the default strategy must exist too
    for name in config.sections:
        if name not in available():
            raise ConfigError(
                f"the configuration has a [{name}] section, but no strategy {name!r} is registered "
                f"(strategies: {', '.join(available())}); fix the section's name, or register the strategy "
                "(gemrag.strategies.register) before opening the memory"
            )
        strategy_config(name, config)


def get_strategy(name: str, config: Config | None = None) -> Strategy:
    """A new instance of the strategy registered as ``name``, constructed with its validated section of
    ``config`` when it has a config model (defaults when ``config`` is None).

    Raises:
        UnknownStrategyError: no strategy has that name (a ConfigError and a KeyError).
        ConfigError: the strategy's section is invalid.
    """
    registration = _registration(name)
    settings = strategy_config(name, config)
    if registration.config_model is None:
        return registration.factory()
    return registration.factory(settings)


def strategy_themes(name: str, store: BuildReads, config: Config | None = None) -> Themes | None:
    """The themes of strategy ``name``'s published build in ``store`` (its optional ``themes(store)`` method,
    constructed with its section of ``config``): None for a strategy without themes, or not registered in this
    process.

    Raises:
        ConfigError: the strategy's section is invalid. ValueError: its published arrays are inconsistent.
    """
    try:
        strategy = get_strategy(name, config)
    except UnknownStrategyError:
        return None
    themes = getattr(strategy, "themes", None)
    return themes(store) if callable(themes) else None


def retrieval_settings(name: str) -> frozenset[str]:
    """The settings of strategy ``name``'s section that change its retrieval alone (its class attribute
    ``retrieval_settings``; GEM's ``search``): changing one reuses the build. Empty for a strategy that does not say
    (the safe side: every setting may change the build).

    Raises:
        UnknownStrategyError: no strategy has that name (a ConfigError and a KeyError).
    """
    return frozenset(str(k) for k in getattr(_registration(name).factory, "retrieval_settings", ()) or ())
