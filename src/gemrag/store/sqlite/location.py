"""Where SQLite memories live: a memory directory (its ``memory.sqlite``), and a directory of memory directories
(the root of ``gemrag serve``'s namespaces or of ``gemrag eval``'s memories).

Callers outside the store reach these through :mod:`gemrag.store.open`, which chooses the backend.
"""

from __future__ import annotations

from pathlib import Path

from gemrag.errors import GemragError

SQLITE_HEADER = b"SQLite format 3\x00"
"""The first 16 bytes of every SQLite database file."""

DATABASE = "memory.sqlite"
"""The database file of a memory directory."""


def holds_memory(directory: Path) -> bool:
    """True when ``directory`` has a ``memory.sqlite`` file (not checked further)."""
    return (directory / DATABASE).is_file()


def directory_problem(directory: Path, *, existing: bool, hint: str = "") -> str | None:
    """Why ``directory`` cannot be a command's memory (one line), or None when it can.

    Args:
        directory: the memory directory.
        existing: True for a read command, which never creates a memory: ``memory.sqlite`` must be there and be an
            SQLite database. False: a missing directory (to be created), or one without ``memory.sqlite`` or with a
            real one.
        hint: what to do instead (default: index documents into it first).
    """
    if not existing and directory.exists() and not directory.is_dir():
        return f"{directory} exists and is not a directory; give a memory directory"
    db = directory / DATABASE
    if not existing and not db.exists():
        return None
    try:
        with open(db, "rb") as fh:
            ok = db.is_file() and fh.read(len(SQLITE_HEADER)) in (SQLITE_HEADER, b"")  # SQLite takes an empty file
    except OSError:
        ok = False
    if ok:
        return None
    what = f"no {DATABASE}" if not db.exists() else f"its {DATABASE} is not a readable SQLite database"
    return f"{directory} is not a gemrag memory ({what}); " + (
        hint or f"create one with `gemrag index FILE --memory {directory}`"
    )


class DirectoryRoot:
    """A directory holding one memory directory per name (``ROOT/<name>/``).

    Args:
        path: the root directory (need not exist yet; see :meth:`create`).

    Raises:
        GemragError: ``path`` exists and is not a directory.
    """

    def __init__(self, path: Path) -> None:
        if path.exists() and not path.is_dir():
            raise GemragError(f"{path} is not a directory; give the directory of the memories")
        self.path = path

    @property
    def display(self) -> str:
        """The root, for messages."""
        return str(self.path)

    def create(self) -> None:
        """Create the root directory when missing.

        Raises:
            OSError: it cannot be created.
        """
        self.path.mkdir(parents=True, exist_ok=True)

    def check(self) -> None:
        """Nothing to reach: a directory root has no server."""

    def child(self, name: str, *, distinct: bool = False) -> Path:
        """The memory directory of ``name`` (not created; ``distinct`` changes nothing: names are file names)."""
        return self.path / name

    def exists(self, name: str, *, distinct: bool = False) -> bool:
        """True when the memory ``name`` has been created (its ``memory.sqlite`` exists)."""
        return holds_memory(self.path / name)

    def names(self) -> list[str]:
        """The names holding a memory, sorted (none when the root does not exist)."""
        if not self.path.is_dir():
            return []
        return sorted(p.name for p in self.path.iterdir() if holds_memory(p))
