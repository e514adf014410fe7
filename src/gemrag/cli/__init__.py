"""The ``gemrag`` command line (typer): one room for every command.

:mod:`gemrag.cli.main` creates the application :data:`app` and registers the commands; each command is one module
(``index``, ``ask``, ``info``, ``demo``, ``eval``, ``chat``, ``config``, ``copy``, ``delete``, ``doctor``, ``mcp``,
``pg``, ``serve``, ``view``); ``acceptance`` is the ``cmu_dog`` branch of ``eval`` and ``plan`` prints ``index``'s
cost plan; ``options`` holds the option types, the one model-options group (:class:`~gemrag.cli.options.ModelOptions`)
and the configuration helper they all share. The commands only parse and check their arguments;
:class:`gemrag.memory.Memory` does the work. ``[project.scripts] gemrag = "gemrag.cli:app"`` and
``python -m gemrag`` both run :data:`app`.
"""

from gemrag.cli.main import app

__all__ = ["app"]
