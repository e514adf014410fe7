"""Loading an evaluation dataset by kind: the built-in loaders (:mod:`gemrag.eval.loaders`, each registered with
:func:`gemrag.eval.datasets.register_loader`) and any a user registered."""

from __future__ import annotations

import inspect
import os
from pathlib import Path
from typing import Any

import gemrag.eval.loaders  # noqa: F401  (importing the package registers every built-in loader)
from gemrag.errors import ConfigError
from gemrag.eval.datasets import _ALIASES, _LOADERS, Dataset

__all__ = ["available_kinds", "check_kind", "load_dataset"]


def available_kinds() -> list[str]:
    """Return the sorted names of all registered dataset kinds (aliases excluded)."""
    return sorted(_LOADERS)


def check_kind(kind: str, extra: tuple[str, ...] = ()) -> str:
    """The registered dataset kind ``kind`` names (case and aliases resolved), or one of ``extra``.

    Raises:
        ConfigError: no such kind (the message lists the known ones).
    """
    key = kind.strip().lower()
    key = _ALIASES.get(key, key)
    if key not in _LOADERS and key not in extra:
        raise ConfigError(f"unknown dataset kind {kind!r}; known kinds: {', '.join(sorted([*_LOADERS, *extra]))}")
    return key


def load_dataset(kind: str, path: str | os.PathLike[str], **options: Any) -> Dataset:
    """Load the dataset file at ``path`` with the loader registered for ``kind``.

    Kinds: ``quality``, ``qasper``, ``musique``, ``hotpotqa``, ``2wiki``, ``hipporag``, ``covid_qa``,
    ``locomo`` (see :func:`available_kinds`). Options are loader keywords, e.g.
    ``per_question_corpus=True`` and ``corpus_path=...`` for the multi-hop kinds.

    Raises:
        ConfigError: unknown kind, or an option the loader does not accept.
        InputError: the file is missing, unreadable, not JSON, or has the wrong shape (the message names
            the file and, for JSON Lines, the line).
    """
    key = check_kind(kind)
    fn = _LOADERS[key]
    params = inspect.signature(fn).parameters
    for option in options:
        if option not in params or params[option].kind is not inspect.Parameter.KEYWORD_ONLY:
            raise ConfigError(f"dataset kind {key!r} does not accept option {option!r}")
    return fn(Path(path), kind=key, **options)
