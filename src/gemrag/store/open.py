"""Opening a memory by its location: a directory (SQLite, the default) or a PostgreSQL URL. The one place that
chooses the backend.

``Memory.open``, the command line's ``--memory`` (and ``GEMRAG_MEMORY``, ``memory`` in ``gemrag.toml``), ``gemrag
copy``, the server's namespaces and ``gemrag eval``'s memories call the functions here; nothing else needs to know
which backend holds a memory:

* :func:`open_store` opens (or creates) the memory, building its backend's parts (and swapping any given with
  ``parts=``); :func:`memory_exists` / :func:`location_exists` ask whether one is there; :func:`location_problem`
  says why a command cannot use a location;
* :func:`describe_location` / :func:`location_name` name a location in messages (never a password);
  :func:`as_location` turns a command-line string into a location;
* :func:`memory_root` is a place holding one memory per name (:class:`MemoryRoot`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from gemrag.store.base import MemoryStore
from gemrag.store.parts import PART_ROLES, StoreParts
from gemrag.store.postgres.connect import is_postgres_url
from gemrag.store.schema import DEFAULT_BUSY_TIMEOUT
from gemrag.store.sqlite.connection import memory_writable
from gemrag.store.sqlite.location import DirectoryRoot, directory_problem, holds_memory

Location = str | Path
"""A memory directory, or ``postgresql://user@host:port/db?schema=NAME``."""


def _in_database(location: Location) -> bool:
    """True when ``location`` names a memory in a database server (a PostgreSQL URL given as a string)."""
    return is_postgres_url(str(location)) and not isinstance(location, Path)


def as_location(value: str | Path) -> Location:
    """A location from a command-line or configuration string: a database URL stays a string, anything else is a
    directory :class:`~pathlib.Path`."""
    return str(value) if _in_database(value) else Path(value)


PartFactory = Callable[[StoreParts], Any]
"""What ``parts=`` of :func:`open_store` maps a part's name to: a function of the store's parts (the backend's,
already built) returning the part object to use instead (it may wrap the backend's: ``parts.vectors``)."""


def open_store(
    location: Location,
    *,
    readonly: bool | None = None,
    busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
    pool_size: int = 1,
    parts: Mapping[str, PartFactory] | None = None,
) -> MemoryStore:
    """Open (or create) the memory at ``location``.

    Args:
        location: a memory directory (SQLite) or a PostgreSQL URL (one schema per memory).
        readonly: open without writing; None: read-only exactly when a directory memory cannot be written
            (a PostgreSQL memory opens read-write unless asked).
        busy_timeout: seconds to wait for another connection's locks.
        pool_size: PostgreSQL connections in the pool (ignored for SQLite).
        parts: parts to use instead of the backend's, by name (``rows``, ``documents``, ``artifacts``, ``arrays``,
            ``vectors``, ``caches``, ``lock``; :class:`~gemrag.store.parts.StoreParts`): each a
            :data:`PartFactory`, called in order with the parts built so far; every other part reaches a swapped one
            through them.

    Raises:
        GemragError: the location holds no usable memory, or the server cannot be reached.
        ValueError: ``parts`` names no part, or the database part (the backend's own), or a factory returned an
            object without the methods of that part's protocol (:data:`~gemrag.store.parts.PART_ROLES`).
    """
    if _in_database(location):
        from gemrag.store.postgres.backend import pg_parts

        built = pg_parts(str(location), readonly=bool(readonly), busy_timeout=busy_timeout, pool_size=pool_size)
    else:
        from gemrag.store.sqlite.store import sqlite_parts

        if readonly is None:
            readonly = not memory_writable(Path(location))
        built = sqlite_parts(location, readonly=readonly, busy_timeout=busy_timeout)
    try:
        for name, make in (parts or {}).items():
            if name not in PART_ROLES or name == "database":
                raise ValueError(f"no part {name!r} to swap; the parts are {', '.join(list(PART_ROLES)[1:])}")
            part = make(built)
            if not isinstance(part, PART_ROLES[name]):
                raise ValueError(f"the {name} part {part!r} lacks methods of {PART_ROLES[name].__name__}")
            setattr(built, name, part)
    except BaseException:
        built.database.close()
        raise
    return MemoryStore(built)


def location_exists(location: Location) -> bool:
    """True when ``location`` may hold a memory: a directory with ``memory.sqlite``, or any PostgreSQL URL (the
    server is asked when the memory is opened)."""
    return True if _in_database(location) else holds_memory(Path(location))


def memory_exists(location: Location) -> bool:
    """True when ``location`` holds a memory: a directory with ``memory.sqlite``, or a PostgreSQL schema with
    gemrag's tables (the server is asked; nothing is created).

    Raises:
        GemragError: the PostgreSQL server cannot be reached, or psycopg is missing.
    """
    if _in_database(location):
        from gemrag.store.postgres.location import schema_holds_memory

        return schema_holds_memory(str(location))
    return holds_memory(Path(location))


def location_problem(location: Location, *, existing: bool, hint: str = "") -> str | None:
    """Why a command cannot use ``location`` (one line, ending with what to do), or None when it can.

    Args:
        existing: True for a read command, which never creates a memory (the memory must be there); False for a
            writing command (the location must be able to hold a memory: a new or memory directory, any URL).
        hint: what to do instead when the memory is missing (default: index documents into it first).

    Raises:
        GemragError: the PostgreSQL server cannot be reached (only asked when ``existing``).
    """
    if _in_database(location):
        from gemrag.store.postgres.location import schema_problem

        return schema_problem(str(location), existing=existing, hint=hint)
    return directory_problem(Path(location), existing=existing, hint=hint)


def describe_location(location: Location) -> str:
    """``location`` for messages: a directory as given, a PostgreSQL URL without its password.

    Raises:
        GemragError: a malformed PostgreSQL URL.
    """
    if _in_database(location):
        from gemrag.store.postgres.connect import PgLocation

        return PgLocation.parse(str(location)).display
    return str(location)


def location_name(location: Location) -> str:
    """A short name of ``location`` for titles: a directory's last part, a PostgreSQL URL without its password."""
    return describe_location(location) if _in_database(location) else Path(location).name


class MemoryRoot(Protocol):
    """A place holding one memory per name: a directory of memory directories
    (:class:`~gemrag.store.sqlite.location.DirectoryRoot`) or a PostgreSQL schema prefix, one schema ``PREFIX_<name>``
    per memory (:class:`~gemrag.store.postgres.location.SchemaRoot`)."""

    @property
    def display(self) -> str:
        """The root for messages (no password)."""
        ...

    def create(self) -> None:
        """Make the root itself when it must exist first (a directory). Raises OSError when it cannot."""
        ...

    def check(self) -> None:
        """Reach the root's server once (nothing for a directory). Raises GemragError when it cannot."""
        ...

    def child(self, name: str, *, distinct: bool = False) -> Location:
        """The location of memory ``name`` (not created). ``distinct``: names differing only in case or punctuation
        get distinct locations; False: a name must map as it is (ValueError when it cannot)."""
        ...

    def exists(self, name: str, *, distinct: bool = False) -> bool:
        """True when the memory ``name`` has been created."""
        ...

    def names(self) -> list[str]:
        """The names holding a memory, sorted."""
        ...


def memory_root(location: Location, *, require_prefix: bool = False) -> MemoryRoot:
    """The root at ``location``: a directory of memory directories, or a PostgreSQL URL whose schema is the prefix
    of its memories' schemas.

    Args:
        require_prefix: a PostgreSQL URL must name its schema (``?schema=PREFIX``; else the default ``gemrag``).

    Raises:
        GemragError: a directory root that is a file, a malformed URL, or (with ``require_prefix``) a URL naming
            no schema.
    """
    if _in_database(location):
        from gemrag.store.postgres.location import SchemaRoot

        return SchemaRoot(str(location), require_prefix=require_prefix)
    return DirectoryRoot(Path(location))
