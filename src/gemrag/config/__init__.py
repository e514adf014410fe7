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

The package, one module per job, every public name re-exported here (``from gemrag.config import Config``):
:mod:`~gemrag.config.settings` (:class:`Config`, the root settings object, and the ``GEMRAG_*`` variables it reads
itself), :mod:`~gemrag.config.answer` (``[answer]``, :class:`AnswerSettings`), :mod:`~gemrag.config.strategy`
(:data:`DEFAULT_STRATEGY` and :class:`ReadTitles`, the title setting of strategy sections),
:mod:`~gemrag.config.values` (``--set`` items and ``GEMRAG_<SECTION>__<KEY>`` values read with TOML semantics, a
validation error as lines) and :mod:`~gemrag.config.loading` (:func:`load_config`, the layers merged;
:func:`find_config_file`, :func:`memory_location`). The other typed sections are defined beside the package and
re-exported here too: ``[llm]`` and ``[embedder]`` (:mod:`gemrag.model_settings`), ``[memory]``
(:mod:`gemrag.memory_settings`).
"""

from gemrag.config.answer import AnswerSettings
from gemrag.config.loading import find_config_file, load_config, memory_location
from gemrag.config.settings import Config
from gemrag.config.strategy import DEFAULT_STRATEGY, ReadTitles
from gemrag.config.values import describe_errors, env_sections, parse_sets, parse_value
from gemrag.memory_settings import MemorySettings
from gemrag.model_settings import EmbedderSettings, LLMSettings

__all__ = [
    "DEFAULT_STRATEGY",
    "AnswerSettings",
    "Config",
    "EmbedderSettings",
    "LLMSettings",
    "MemorySettings",
    "ReadTitles",
    "describe_errors",
    "env_sections",
    "find_config_file",
    "load_config",
    "memory_location",
    "parse_sets",
    "parse_value",
]
