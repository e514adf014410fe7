"""Configuration: one pydantic settings object, read from a TOML file, environment variables and flags.

Precedence (highest first): explicit overrides (CLI flags or keyword arguments) > environment variables
(``GEMRAG_`` prefix, ``__`` between levels, e.g. ``GEMRAG_LLM__PROVIDER=openai``,
``GEMRAG_MEMORY__BUDGET=6``) > the TOML file (``--config FILE``, else ``$GEMRAG_CONFIG``, else
``./gemrag.toml`` when present) > defaults.

Example ``gemrag.toml``::

    [llm]
    provider = "openai"
    base_url = "http://127.0.0.1:8080/v1"
    model = "qwen2.5"

    [memory]                  # the memory's own settings (gemrag.memory_settings)
    budget = 4

    [gem]
    questions = 5

    [answer]
    cite = true               # every answer names the passages it uses, [1]..[n] (unset: all but short answers)
    verify = "flag"           # check each answer sentence against its citations: "flag", "drop" or "off"

    [raptor]                  # any strategy's own section, validated by that strategy's model
    summary_tokens = 200

Strategy sections: besides ``llm``, ``embedder`` and ``memory`` (typed fields of :class:`Config`), every
top-level table names a strategy and holds that strategy's settings, kept raw here (this layer does not
know the strategies) and validated by the strategy's own pydantic model when the strategy is constructed
(:func:`gemrag.strategies.base.get_strategy`) or the configuration is checked against the registry
(:func:`gemrag.strategies.base.check_config`, which :class:`~gemrag.memory.Memory` runs when it opens a
memory). So a section naming no registered strategy (a typo such as ``[raptr]``) is a
:class:`~gemrag.errors.ConfigError` at the latest when a memory is opened, not when the file is read: user
strategies register after :func:`load_config` runs. The same sections come from ``GEMRAG_<SECTION>__<KEY>``
variables (``GEMRAG_RAPTOR__SUMMARY_TOKENS=200``) and ``--set section.key=value`` flags; both values are read
with TOML semantics (:func:`parse_value`: ``200`` is an int, ``0.5`` a float, ``true`` a bool, ``[1, 2]`` a
list, a bare word a string; quote a string that looks like a number: ``'"123"'``). The memory's old keys in ``[gem]``
(``chunk_tokens``, ``budget``, ``chunk_titles``) still work in every layer, with a one-line deprecation warning
(:func:`gemrag.memory_settings.move_deprecated`).

The typed sections are defined beside this module and re-exported here: ``[llm]`` and ``[embedder]``
(:mod:`gemrag.model_settings`), ``[memory]`` (:mod:`gemrag.memory_settings`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, model_validator
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
)

from gemrag.errors import ConfigError
from gemrag.memory_settings import MemorySettings, move_deprecated
from gemrag.model_settings import EmbedderSettings, LLMSettings

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


class ReadTitles(BaseModel):
    """The title setting of every strategy that reads the chunks' text (a base of their section models, GEM's
    :class:`gemrag.strategies.gem.settings.GemConfig` too): whether the strategy reads a chunk as its document's
    title, a newline and its text.

    Attributes:
        read_titles: None (default): as the strategy's paper, its class attribute ``reads_titles`` (dense, bm25 and
            remem read titles, as HippoRAG 2 indexes ``title\ntext`` passages; gem, unweaver, hlgraph and raptor do
            not, their papers extract from the chunk alone: docs/papers.md, "Which method reads what"), except that
            a strategy already built keeps what its build read (an older memory's indexes stay as they were).
            True/False: read titles or not, whatever the paper or the build did (a build that read the other way is
            redone: its extractions, questions or vectors of the other input are not reused). Titles exist only
            where the memory records them (``memory.chunk_titles``): True in a memory without them is an error
            (:func:`gemrag.strategies.platform.titles.strategy_reads_titles`).
    """

    read_titles: bool | None = None


class AnswerSettings(BaseModel):
    """How answers are generated (``[answer]``).

    Attributes:
        cite: answers name the context passages they use: the prompt asks for ``[n]`` markers (multiple choice:
            the passages' numbers beside the option letter), and an answer lists the cited passages with their
            sources and spans (:mod:`gemrag.answers.answering`). None (default): cite in sentence answers and multiple
            choice (``ask``, ``chat``, the server, MCP), not in the short form of span-answer benchmarks
            (``Memory.answer(short=True)``, ``gemrag eval`` on COVID-QA, MuSiQue, HotpotQA, LoCoMo), where the
            markers cost answer quality: on 62 COVID-QA questions citing cost the embedded 1.5B 6.1 F1 / 9.7 EM
            points with dense (EM p 0.03) and 7.7 / 11.3 with fused, its answers growing from ~4 to ~10 words
            (docs/results.md, "Cited answers on and off"). True or False applies to every form; False gives the
            prompts of earlier releases (and their cached answers).
        reading: how the model reads the context before it answers (:mod:`gemrag.answers.reading`): ``"plain"``
            (the answer prompt, default), ``"quote"`` (copy the sentences used, then answer; the verified quotes
            become the citations) or ``"notes"`` (chain-of-note, Yu et al. 2023: a note per passage, then answer).
        shape: shape the context before reading (:mod:`gemrag.answers.shaping`; no LLM call): duplicates merged
            (``shape_dedupe``), sentences trimmed to those matching the question with the memory's embedder
            (``shape_trim``, keeping at least ``shape_keep_min`` sentences a passage and every sentence within
            ``shape_margin`` cosine of the best), and ordered (``shape_order``: ``"rank"`` or ``"edges"``, the best
            passages at both ends).
        samples: self-consistency (Wang et al. 2023): ``samples`` > 1 free-form answers sampled at
            ``sample_temperature`` (seeds 1..k), and the one the others agree with most is kept
            (:mod:`gemrag.answers.consistency`); 1 (default) is one greedy answer. Multiple choice stays greedy.
        abstain_below: abstention on weak evidence: when the best cosine between the question and a sentence of the
            context (the memory's embedder) is below this, a free-form answer is "Not found in the memory." with no
            LLM call; None (default) never abstains this way.
        dates: time-aware reading (:mod:`gemrag.answers.dates`): ``"auto"`` (default; measured on LoCoMo's
            temporal questions, docs/reading.md): a question with a time anchor ("when", "before", "in March", "the
            first time") over hits from dated sources (conversation turns with their date stamps, documents with a
            date) is answered from those hits oldest first, each prefixed with its date and its relative time
            expressions resolved (``last Sunday (= 7 May 2023)``), every other question from the context as
            retrieved (the plain prompt, its cached answers); ``"on"``: every question so; ``"off"``: the context as
            retrieved. Not ``"off"``, an index also stores each chunk's dates (rules, no LLM call).
        date_llm: at index time, also ask the LLM (one cached call per expression) to resolve the dated time
            expressions the rules leave ("a few days ago", "next Friday"); only when ``dates`` is not ``"off"``.
        verify: each sentence of an answer given by ``ask`` (CLI, server, MCP, ``Memory.ask``/``ask_stream``/
            ``answer``) checked against the passages it cites (:mod:`gemrag.answers.verification`): ``"flag"``
            (default) marks the unsupported ones, ``"drop"`` removes them from the text with the citations only they
            made, ``"off"`` checks nothing. The default flags: a check costs at most one short LLM call per
            sentence of more than ``verify_overlap_words`` words (the cited passages and the sentence in, ~6 tokens
            out; cached; none when overlap already flags it), no call for shorter ones, and an answer the user reads
            is worth that (docs/verification.md has the measured cost and precision). Evaluation runs never verify
            (they call the answering directly).
        verify_overlap_words: sentences of at most this many words (markers removed) are checked by token overlap,
            with no model call (default 6, the short-answer length); 0 sends every sentence to the LLM, a large
            number checks everything by overlap.
        verify_overlap_first: a sentence longer than ``verify_overlap_words`` is checked by token overlap first:
            when the cited passages do not contain its words it is flagged without a model call, and only the
            others go to the LLM (default True: on 134 hand-labelled sentences, the 0.5B judge's flag recall 44 % ->
            62 % with 19 % fewer calls, the 1.5B's 76 % -> 82 % at precision 83 % -> 77 %; docs/verification.md).
            False sends every longer sentence to the LLM.
        verify_uncited: a sentence without a marker in an answer citing elsewhere: ``"cite"`` (default) cites it
            after the answer (ALCE's post-hoc citation, Gao et al. 2023 section 4): the context passage matching it
            best (the memory's embedder; token overlap for a sentence checked by overlap) is checked as a cited one
            would be, and if it supports the sentence its ``[n]`` is added to the text; otherwise the sentence is
            flagged as uncited. ``"flag"`` flags every uncited sentence without a check. The default cites: it costs
            what the sentence would have cost with a marker (at most one short LLM call, none for a sentence of up
            to ``verify_overlap_words`` words, plus one embedder call per answer over its uncited sentences and the
            passages' sentences), and a true sentence the model forgot to mark is not flagged as unsupported.
    """

    cite: bool | None = None
    reading: Literal["plain", "quote", "notes"] = "plain"
    shape: bool = False
    shape_order: Literal["rank", "edges"] = "edges"
    shape_trim: bool = True
    shape_dedupe: bool = True
    shape_keep_min: int = Field(default=2, ge=1)
    shape_margin: float = Field(default=0.25, ge=0.0, le=2.0)
    samples: int = Field(default=1, ge=1, le=15)
    sample_temperature: float = Field(default=0.7, ge=0.0, le=2.0)
    abstain_below: float | None = Field(default=None, ge=-1.0, le=1.0)
    dates: Literal["auto", "on", "off"] = "auto"
    date_llm: bool = False
    verify: Literal["flag", "drop", "off"] = "flag"
    verify_overlap_words: int = Field(6, ge=0)
    verify_overlap_first: bool = True
    verify_uncited: Literal["cite", "flag"] = "cite"

    def cites(self, *, short: bool = False) -> bool:
        """Whether an answer of this form cites: ``cite`` when set, else True for sentence and multiple-choice
        answers and False for the short (span) form (``short=True``)."""
        return self.cite if self.cite is not None else not short


_OWN_ENV = ("memory",)
"""Sections whose ``GEMRAG_*`` variables :func:`_own_env` reads rather than pydantic-settings: ``GEMRAG_MEMORY`` is a
string (the memory's location) while ``[memory]`` is a table."""


class _TypedEnv(EnvSettingsSource):
    """pydantic-settings' ``GEMRAG_*`` source for the typed settings except :data:`_OWN_ENV`."""

    def prepare_field_value(self, field_name: str, field: Any, value: Any, value_is_complex: bool) -> Any:
        """None (not set here) for the sections of :data:`_OWN_ENV`, else pydantic-settings' value."""
        if field_name in _OWN_ENV:
            return None
        return super().prepare_field_value(field_name, field, value, value_is_complex)


#: The strategy a memory uses when none is named (``strategy`` in a file, ``GEMRAG_STRATEGY``, ``--strategy``).
DEFAULT_STRATEGY = "fused"


class Config(BaseSettings):
    """All of gemrag's settings.

    Attributes:
        strategy: the retrieval strategy name (default :data:`DEFAULT_STRATEGY`).
        llm, embedder: see :class:`LLMSettings`, :class:`EmbedderSettings`. GEM's ``[gem]`` is a strategy section
            like every other (:class:`gemrag.strategies.gem.settings.GemConfig`).
        memory: the memory's settings, :class:`~gemrag.memory_settings.MemorySettings`: its location (the memory
            the command line uses when ``--memory`` is not given: ``GEMRAG_MEMORY``, ``memory = "..."`` or
            ``[memory] location = "..."`` in ``gemrag.toml``; a directory or
            ``postgresql://user@host:port/db?schema=NAME``), chunk size, default budget and chunk titles.
        answer: see :class:`AnswerSettings` (whether answers cite their passages).
        cache_dir: where joined model weights are kept (default ``~/.cache/gemrag``).
        progress: show progress bars.

    Any other top-level key must be a table: a strategy's section, kept as a raw dict (:attr:`sections`) until
    the strategy's own model validates it (module docstring).
    """

    model_config = SettingsConfigDict(env_prefix="GEMRAG_", env_nested_delimiter="__", extra="allow")

    strategy: str = DEFAULT_STRATEGY
    llm: LLMSettings = Field(default_factory=LLMSettings)
    embedder: EmbedderSettings = Field(default_factory=EmbedderSettings)
    answer: AnswerSettings = Field(default_factory=AnswerSettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    cache_dir: Path | None = None
    progress: bool = True

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """The keyword arguments over the ``GEMRAG_*`` variables of the typed settings; :func:`load_config` reads
        the others (:data:`_OWN_ENV`, the strategy sections) and the TOML file."""
        return (init_settings, _TypedEnv(settings_cls))

    @model_validator(mode="before")
    @classmethod
    def _no_unknown_keys(cls, data: Any) -> Any:
        """Reject a key the typed sections (``llm``, ``embedder``, ``memory``, ``answer``) do not have: their models
        would ignore it silently, so a typo such as ``memory.budgte`` would change nothing. First the shorthand
        ``memory = "DIR"`` becomes ``[memory] location``, the memory's old keys in ``[gem]`` move to ``[memory]`` (with
        a warning), and a strategy section given as its model (``gem=GemConfig(...)``) becomes its table."""
        if not isinstance(data, Mapping):
            return data
        data = move_deprecated(data, "the configuration")
        data = {
            k: v.model_dump() if isinstance(v, BaseModel) and k not in cls.model_fields else v for k, v in data.items()
        }
        for name, field in cls.model_fields.items():
            model, given = field.annotation, data.get(name)
            if isinstance(model, type) and issubclass(model, BaseModel) and isinstance(given, Mapping):
                unknown = sorted(str(k) for k in given if k not in model.model_fields)
                if unknown:
                    raise ValueError(
                        f"[{name}] has no setting {', '.join(repr(k) for k in unknown)}; "
                        f"its settings are {', '.join(model.model_fields)}"
                    )
        return data

    @model_validator(mode="after")
    def _sections_are_tables(self) -> Config:
        """Reject a top-level key that is neither a known setting nor a table (a strategy section)."""
        for name, value in (self.model_extra or {}).items():
            if not isinstance(value, dict):
                raise ValueError(
                    f"unknown setting {name!r}: the known settings are {', '.join(type(self).model_fields)}, "
                    f"and any other key must be a strategy's section (a table such as [{name}])"
                )
        return self

    @property
    def sections(self) -> dict[str, dict[str, Any]]:
        """The strategy sections, by name, as raw (unvalidated) dicts."""
        return {name: dict(value) for name, value in (self.model_extra or {}).items()}

    def section(self, name: str) -> dict[str, Any]:
        """The raw settings of the section ``name`` (``{}`` when absent; a typed section such as ``llm`` as its
        dumped values)."""
        if name in type(self).model_fields:
            value = getattr(self, name)
            return value.model_dump() if isinstance(value, BaseModel) else {}
        return dict((self.model_extra or {}).get(name, {}))


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


def find_config_file(path: str | Path | None) -> Path | None:
    """The configuration file :func:`load_config` reads: ``path``, else ``$GEMRAG_CONFIG``, else ``./gemrag.toml``
    when it exists (None: no file).

    Raises:
        ConfigError: ``path`` (or ``$GEMRAG_CONFIG``) names no file.
    """
    return _find_config_file(path)


def _deep_drop_none(d: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, Mapping):
            v = _deep_drop_none(v)
            if v:
                out[k] = v
        elif v is not None:
            out[k] = v
    return out


def _deep_merge(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` updated by ``top``, recursively for tables (``top`` wins)."""
    out = dict(base)
    for k, v in top.items():
        old = out.get(k)
        out[k] = _deep_merge(old, v) if isinstance(old, Mapping) and isinstance(v, Mapping) else v
    return out


def _set_path(target: dict[str, Any], path: Sequence[str], value: Any, origin: str) -> None:
    """Store ``value`` at ``target[path[0]][path[1]]...``.

    Raises:
        ConfigError: a prefix of ``path`` already holds a value that is not a table, or ``path`` a table.
    """
    node = target
    for i, key in enumerate(path[:-1]):
        child = node.setdefault(key, {})
        if not isinstance(child, dict):
            raise ConfigError(f"{origin}: {'.'.join(path[: i + 1])} is already set to a value, not a table")
        node = child
    if isinstance(node.get(path[-1]), dict):
        raise ConfigError(f"{origin}: {'.'.join(path)} is already a table")
    node[path[-1]] = value


def describe_errors(exc: ValidationError, section: str = "") -> str:
    """A pydantic error as one line per problem, each naming its field: ``raptor.summary_tokens: Input should
    be greater than or equal to 1 (got 0)``; ``section`` prefixes every field path."""
    lines = []
    for error in exc.errors():
        where = ".".join(str(part) for part in ((section,) if section else ()) + tuple(error["loc"]))
        message = str(error["msg"]).removeprefix("Value error, ")
        got = "" if error["type"] in ("value_error", "missing") else f" (got {error['input']!r})"
        lines.append(f"{where}: {message}{got}" if where else message)
    return "; ".join(lines)


def parse_value(text: str) -> Any:
    """A ``--set`` or ``GEMRAG_<SECTION>__<KEY>`` value read with TOML semantics.

    ``200`` -> 200, ``0.5`` -> 0.5, ``true`` -> True, ``[1, 2]`` -> [1, 2], ``{a = 1}`` -> {"a": 1},
    ``"123"`` -> "123"; anything that is not one TOML value (a bare word such as ``umap``, a date, an empty
    string) stays the string as given.
    """
    try:
        parsed = tomllib.loads(f"v = {text}")
    except tomllib.TOMLDecodeError:
        return text
    value = parsed.get("v", text)
    if len(parsed) != 1 or not isinstance(value, (bool, int, float, str, list, dict)):  # dates stay strings
        return text
    return value


def parse_sets(items: Sequence[str]) -> dict[str, Any]:
    """Parse ``--set section.key=value`` items (``key=value`` for a top-level setting) into a nested dict.

    Example: ``["raptor.summary_tokens=200", "gem.search=rank"]`` ->
    ``{"raptor": {"summary_tokens": 200}, "gem": {"search": "rank"}}``; values as :func:`parse_value`.

    Raises:
        ConfigError: an item is not ``dotted.key=value``, or two items set a key and a table inside it.
    """
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        path = [p.strip() for p in key.split(".")]
        if not sep or not all(p.replace("_", "a").replace("-", "a").isalnum() for p in path):
            raise ConfigError(f"bad --set {item!r}: use section.key=value (e.g. raptor.summary_tokens=200)")
        _set_path(out, path, parse_value(raw.strip()), f"--set {item!r}")
    return out


def env_sections(environ: Mapping[str, str], known: Sequence[str] = ()) -> dict[str, Any]:
    """The strategy sections given by ``GEMRAG_<SECTION>__<KEY>`` variables (names lower-cased, values as
    :func:`parse_value`), skipping sections in ``known`` (pydantic-settings reads those itself) and variables
    without ``__`` (such as ``GEMRAG_CONFIG``).

    Raises:
        ConfigError: two variables set a key and a table inside it.
    """
    out: dict[str, Any] = {}
    for name in sorted(environ):
        if name[:7].upper() != "GEMRAG_":
            continue
        path = name[7:].lower().split("__")
        if len(path) < 2 or not all(path) or path[0] in known:
            continue
        _set_path(out, path, parse_value(environ[name]), f"environment variable {name}")
    return out


def load_config(
    config_file: str | Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    sets: Sequence[str] | None = None,
) -> Config:
    """Build the configuration from defaults, a TOML file, ``GEMRAG_*`` variables and overrides.

    Precedence, lowest first: defaults < the TOML file < ``GEMRAG_*`` variables < ``overrides`` < ``sets``;
    strategy sections merge key by key across these layers. Strategy sections are only checked to be tables
    here: the strategies' own models validate them later (module docstring). The memory's old keys in ``[gem]``
    move to ``[memory]`` layer by layer, with a one-line :class:`~gemrag.memory_settings.DeprecatedSettingWarning`
    (:func:`~gemrag.memory_settings.move_deprecated`).

    Args:
        config_file: a TOML file; None looks at ``$GEMRAG_CONFIG`` then ``./gemrag.toml``.
        overrides: nested dict of explicit values (e.g. ``{"memory": {"budget": 6}}``); ``None`` values are
            ignored so unset CLI flags do not mask lower layers.
        sets: ``--set`` items, ``section.key=value`` (:func:`parse_sets`).

    Raises:
        ConfigError: the file is missing or malformed, a value is invalid, a typed section (llm, embedder, memory,
            answer) has
            an unknown key, a top-level key is neither a setting nor a table, a ``--set`` is malformed, or one layer
            gives a memory setting under its old and its new key with different values.
    """
    toml_path = _find_config_file(config_file)
    try:
        toml = tomllib.loads(toml_path.read_text(encoding="utf-8")) if toml_path is not None else {}
    except (OSError, ValueError) as exc:  # a malformed file: tomllib.TOMLDecodeError is a ValueError
        raise ConfigError(f"invalid configuration file {toml_path}: {exc}") from exc
    toml = move_deprecated(toml, str(toml_path))
    env = move_deprecated(_own_env(os.environ), "the environment", "env")
    given = move_deprecated(_deep_drop_none(overrides or {}), "the overrides")
    sets_given = move_deprecated(parse_sets(sets or []), "--set", "set")
    try:
        merged: dict[str, Any] = {}
        for layer in (toml, _TypedEnv(Config)(), env, given, sets_given):  # lowest precedence first, tables merged
            merged = _deep_merge(merged, layer)
        return Config(**merged)
    except ValidationError as exc:
        raise ConfigError(f"invalid configuration: {describe_errors(exc)}") from exc
    except SettingsError as exc:  # a GEMRAG_* variable pydantic-settings cannot read (malformed JSON)
        raise ConfigError(f"invalid configuration: {exc}") from exc


def _own_env(environ: Mapping[str, str]) -> dict[str, Any]:
    """The strategy sections and the :data:`_OWN_ENV` sections given by ``GEMRAG_*`` variables
    (:func:`env_sections`), with ``GEMRAG_MEMORY`` as ``memory.location``."""
    typed = [name for name in Config.model_fields if name not in _OWN_ENV]
    out = env_sections(environ, typed)
    location = next((v for k, v in environ.items() if k.upper() == "GEMRAG_MEMORY"), None)
    if location:
        out["memory"] = {"location": location, **out.get("memory", {})}
    return out


def memory_location(option: str | Path | None, config: Config) -> str:
    """The memory a command works on: ``--memory`` when given, else the configuration's ``memory``
    (``config.memory.location``: ``GEMRAG_MEMORY``, or ``memory = "..."`` in ``gemrag.toml``).

    Raises:
        ConfigError: neither names a memory.
    """
    if option is not None and str(option):
        return str(option)
    if config.memory.location:
        return config.memory.location
    raise ConfigError(
        'no memory given: pass --memory DIR (or a postgresql:// URL), set GEMRAG_MEMORY, or put memory = "..." '
        "in gemrag.toml"
    )
