"""The root settings object, :class:`Config`: its typed sections (``[llm]``, ``[embedder]``, ``[answer]``,
``[memory]``), its top-level settings and the strategy sections it keeps raw, and which ``GEMRAG_*`` variables
pydantic-settings reads for it (:func:`typed_env`; :func:`gemrag.config.loading.load_config` reads the others and
the TOML file). Precedence and the strategy sections: :mod:`gemrag.config`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, model_validator
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from gemrag.config.answer import AnswerSettings
from gemrag.config.strategy import DEFAULT_STRATEGY
from gemrag.memory_settings import MemorySettings, move_deprecated
from gemrag.model_settings import EmbedderSettings, LLMSettings

OWN_ENV = ("memory",)
"""Sections whose ``GEMRAG_*`` variables :func:`~gemrag.config.loading.load_config` reads itself rather than
pydantic-settings: ``GEMRAG_MEMORY`` is a string (the memory's location) while ``[memory]`` is a table."""


class _TypedEnv(EnvSettingsSource):
    """pydantic-settings' ``GEMRAG_*`` source for the typed settings except :data:`OWN_ENV`."""

    def prepare_field_value(self, field_name: str, field: Any, value: Any, value_is_complex: bool) -> Any:
        """None (not set here) for the sections of :data:`OWN_ENV`, else pydantic-settings' value."""
        if field_name in OWN_ENV:
            return None
        return super().prepare_field_value(field_name, field, value, value_is_complex)


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
    the strategy's own model validates it (:mod:`gemrag.config`).
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
        the others (:data:`OWN_ENV`, the strategy sections) and the TOML file."""
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


def typed_env() -> dict[str, Any]:
    """The values pydantic-settings reads for :class:`Config`'s typed settings from the ``GEMRAG_*`` variables
    (all but the sections of :data:`OWN_ENV`), as a nested dict (a layer of
    :func:`gemrag.config.loading.load_config`).

    Raises:
        pydantic_settings.SettingsError: a variable pydantic-settings cannot read (malformed JSON); its message
            names the source class, ``_TypedEnv``.
    """
    return _TypedEnv(Config)()
