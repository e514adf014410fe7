"""The ``gemrag`` command line (typer): one room for every command.

:mod:`gemrag.cli.main` holds the application :data:`app` and the core commands (``index``, ``ask``, ``info``,
``demo``); each other command is one module (``chat``, ``config``, ``copy``, ``delete``, ``doctor``, ``mcp``,
``pg``, ``serve``, ``view``) registered by ``main``; ``demo`` runs the shipped example and ``options`` holds the
option types and configuration helper they share. The commands only parse and check their arguments;
:class:`gemrag.memory.Memory` does the work. ``[project.scripts] gemrag = "gemrag.cli:app"`` and
``python -m gemrag`` both run :data:`app`.
"""

from gemrag.cli.main import app

__all__ = ["app"]
