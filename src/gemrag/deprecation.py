"""Old import paths of moved public names: a module that moved leaves a thin module behind whose ``__getattr__``
(:func:`forwarding`) hands out each name from its new home with a :class:`DeprecationWarning`.

The new home is imported by name when a name is first asked for (:func:`importlib.import_module`), so an old path
adds no import edge between the layers (``[tool.importlinter]`` in pyproject.toml) and costs nothing until used.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any


def forwarding(old: str, homes: Mapping[str, str], advice: str | None = None) -> Callable[[str], Any]:
    """A module ``__getattr__`` for the old module ``old``: each name of ``homes`` (name -> the module that now
    defines it) is imported from there, with a :class:`DeprecationWarning` naming where to import it from
    (``advice``, e.g. ``"gemrag"``; default: its new module).

    Raises (from the returned function):
        AttributeError: a name ``homes`` does not list.
    """

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        warnings.warn(
            f"{old} is deprecated: import {name} from {advice or home} (from {advice or home} import {name})",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(home), name)

    return __getattr__
