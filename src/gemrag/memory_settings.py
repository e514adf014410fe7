"""The ``[memory]`` section: what belongs to the memory rather than to one retrieval method.

A memory is chunked once, with one chunk size T, and records once whether its chunks carry their document's title;
every method retrieves from those chunks and, when a call gives no budget, returns the same default number of context
nodes. These settings lived in ``[gem]`` while GEM was the only method; they are the memory's now::

    [memory]
    location = "./mem"        # or the top-level shorthand memory = "./mem" (GEMRAG_MEMORY)
    chunk_tokens = 100
    budget = 4
    chunk_titles = true

The old keys (``[gem] chunk_tokens``, ``gem.budget``, ``gem.chunk_titles``; ``GEMRAG_GEM__CHUNK_TOKENS``;
``--set gem.chunk_tokens=...``) keep working: :func:`move_deprecated` moves them to ``[memory]`` with a one-line
:class:`DeprecatedSettingWarning`, and giving an old key and its new key different values in one place is a
:class:`~gemrag.errors.ConfigError`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field

from gemrag.errors import ConfigError

__all__ = [
    "DEPRECATED_KEYS",
    "EARLIER_METHOD",
    "DeprecatedSettingWarning",
    "MemorySettings",
    "deprecated_key",
    "move_deprecated",
    "normalize_memory",
]


class DeprecatedSettingWarning(FutureWarning):
    """A setting was given under its old name; the message names the new one. A :class:`FutureWarning`, so a user
    sees it by default (the command line prints it on one line: :func:`gemrag.console.show_warning`)."""


class MemorySettings(BaseModel):
    """The memory's settings, shared by every retrieval method.

    Attributes:
        location: the memory the command line uses when ``--memory`` is not given: a directory, or
            ``postgresql://user@host:port/db?schema=NAME`` (``GEMRAG_MEMORY``, or the top-level shorthand
            ``memory = "..."`` in ``gemrag.toml``); None: none.
        chunk_tokens: T, tokens per chunk (embedder tokenizer), default 100 (GEM-RAG section IV.E). A memory records
            the value it was chunked with; another value for a memory with chunks is an error.
        budget: B, context nodes a retrieval returns when the call gives none and the method has no default of its
            own (REMem's ``qa_top_k``), default 4 (about 400 tokens at T = 100).
        chunk_titles: whether this memory's chunks have their document's title available to the methods: a method
            that reads titles (its section's ``read_titles``, :class:`gemrag.config.ReadTitles`) reads a chunk as
            ``title\\ntext`` (what it embeds, indexes or extracts from), as HippoRAG 2 indexes passages; the chunk's
            own text (the context given to the LLM, the evidence offsets) is unchanged. False: no method reads
            titles in this memory. Default None: the memory's recorded value, and True for a new memory. A memory
            records the value it was first chunked with and keeps it (a memory chunked before this setting existed
            records False); giving the other value for a memory with chunks is an error.
    """

    location: str | None = None
    chunk_tokens: int = Field(100, ge=16, le=2000)
    budget: int = Field(4, ge=1, le=200)
    chunk_titles: bool | None = None


EARLIER_METHOD = "gem"
"""The method of earlier releases (the only one at first, then the default strategy), which what they wrote names
without saying so: its section held the memory's settings before ``[memory]`` existed (:data:`DEPRECATED_KEYS`), an
evaluation they ran recorded no strategy (:func:`gemrag.eval.aggregates.configured_strategy`), and an evaluation
directory's fingerprint keeps the memory's settings under its name (:func:`gemrag.eval.titles.title_free_fingerprint`),
so that directories begun then can be continued. The one place generic code names a method for history's sake; no
code path chooses by it."""

DEPRECATED_KEYS: dict[tuple[str, str], tuple[str, str]] = {
    (EARLIER_METHOD, "chunk_tokens"): ("memory", "chunk_tokens"),
    (EARLIER_METHOD, "budget"): ("memory", "budget"),
    (EARLIER_METHOD, "chunk_titles"): ("memory", "chunk_titles"),
}
"""Old key -> the key that replaced it (``[gem]``, :data:`EARLIER_METHOD`'s section, held the memory's settings before
``[memory]`` existed)."""


def deprecated_key(path: tuple[str, ...]) -> tuple[str, str] | None:
    """The old key that also sets ``path`` (``("memory", "budget")`` -> ``("gem", "budget")``), or None."""
    return next((old for old, new in DEPRECATED_KEYS.items() if new == tuple(path)), None)


def normalize_memory(tree: Mapping[str, Any]) -> dict[str, Any]:
    """``tree`` with a top-level string ``memory`` (the shorthand ``memory = "./mem"``, ``GEMRAG_MEMORY``) written
    as the table ``{"location": "./mem"}``, so it merges key by key with a ``[memory]`` table of another layer."""
    out = dict(tree)
    if isinstance(out.get("memory"), str):
        out["memory"] = {"location": out["memory"]}
    return out


def _spell(path: tuple[str, str], style: str) -> str:
    if style == "env":
        return "GEMRAG_" + "__".join(p.upper() for p in path)
    if style == "set":
        return "--set " + ".".join(path)
    return f"[{path[0]}] {path[1]}"


def move_deprecated(tree: Mapping[str, Any], where: str, style: str = "toml") -> dict[str, Any]:
    """One configuration layer with its old keys moved to their new place (:data:`DEPRECATED_KEYS`), warning once
    per old key found (:class:`DeprecatedSettingWarning`, one line naming the new key). Also applies
    :func:`normalize_memory`.

    Args:
        tree: the layer as a nested dict (a TOML file, the ``GEMRAG_*`` variables, ``--set`` items, overrides).
        where: the layer's name in messages (``"gemrag.toml"``, ``"the environment"``, ``"--set"``).
        style: how keys are spelt in messages: ``"toml"`` (``[gem] budget``), ``"env"`` (``GEMRAG_GEM__BUDGET``)
            or ``"set"`` (``--set gem.budget``).

    Raises:
        ConfigError: the layer gives an old key and its new key different values.
    """
    out = normalize_memory(tree)
    for old, new in DEPRECATED_KEYS.items():
        section = out.get(old[0])
        if not isinstance(section, Mapping) or old[1] not in section:
            continue
        value = section[old[1]]
        target = out.get(new[0])
        target = dict(target) if isinstance(target, Mapping) else {}
        if new[1] in target and target[new[1]] != value:
            raise ConfigError(
                f"{where} sets both {_spell(old, style)} = {value!r} (deprecated) and {_spell(new, style)} = "
                f"{target[new[1]]!r}: keep only {_spell(new, style)}"
            )
        warnings.warn(
            DeprecatedSettingWarning(
                f"{_spell(old, style)} ({where}) is deprecated: use {_spell(new, style)}, the memory's setting"
            ),
            stacklevel=3,
        )
        target[new[1]] = value
        out[new[0]] = target
        out[old[0]] = {k: v for k, v in section.items() if k != old[1]}
    return out
