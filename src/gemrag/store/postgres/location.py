"""Where PostgreSQL memories live: a memory URL, and a schema prefix holding one memory per name (``PREFIX_<name>``,
:func:`~gemrag.store.postgres.connect.child_schema`: ``gemrag serve``'s namespaces and ``gemrag eval``'s memories).

Callers outside the store reach these through :mod:`gemrag.store.open`, which chooses the backend.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

from gemrag.errors import GemragError
from gemrag.store.postgres.connect import MAX_IDENTIFIER, MAX_PREFIX, PgLocation, child_schema, connect


def schema_holds_memory(url: str) -> bool:
    """True when the schema of ``url`` holds a memory (gemrag's tables; the server is asked, nothing is created).

    Raises:
        GemragError: the server cannot be reached, or psycopg is missing.
    """
    from gemrag.store.postgres.schema import schema_version

    loc = PgLocation.parse(url)
    conn = connect(loc.conninfo, loc.schema, loc.display, readonly=True)
    try:
        return schema_version(conn, loc.schema) is not None
    finally:
        conn.close()


def schema_problem(url: str, *, existing: bool, hint: str = "") -> str | None:
    """Why the PostgreSQL memory at ``url`` cannot be a read command's memory (it holds none), or None.

    Raises:
        GemragError: the server cannot be reached (only asked when ``existing``).
    """
    if not existing or schema_holds_memory(url):
        return None
    loc = PgLocation.parse(url)
    return f"{loc.display} holds no gemrag memory; " + (
        hint or f"create one with `gemrag index FILE --memory '{loc.display}'`"
    )


class SchemaRoot:
    """The memories under one schema prefix of a PostgreSQL database (``postgresql://...?schema=PREFIX``).

    Args:
        url: the database URL; its ``schema`` is the prefix.
        require_prefix: the URL must name its schema (``schema=PREFIX``; otherwise the default ``gemrag``).

    Raises:
        GemragError: a malformed URL (bad port, bad schema name), no ``schema=`` when required, or a prefix longer
            than :data:`~gemrag.store.postgres.connect.MAX_PREFIX` (44) characters.
    """

    def __init__(self, url: str, *, require_prefix: bool = False) -> None:
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 - raises ValueError on a port that is not a number in 0-65535
            self.location = PgLocation.parse(url)
        except ValueError as exc:
            raise GemragError(f"not a valid PostgreSQL URL: {exc}") from None
        if require_prefix and not any(key == "schema" for key, _ in parse_qsl(parts.query, keep_blank_values=True)):
            raise GemragError("names no schema: add ?schema=PREFIX (memories go to PREFIX_<name>)")
        if len(self.location.schema) > MAX_PREFIX:
            raise GemragError(f"the schema prefix {self.location.schema!r} is longer than {MAX_PREFIX} characters")

    @property
    def display(self) -> str:
        """The URL without its password, for messages."""
        return self.location.display

    def create(self) -> None:
        """Nothing: a memory's schema is created when the memory is opened."""

    def check(self) -> None:
        """Connect once, so that an unreachable server is a one-line error before anything is built.

        Raises:
            GemragError: the server cannot be reached or refuses the login.
        """
        connect(self.location.conninfo, "public", self.location.display).close()

    def _schema(self, name: str, distinct: bool) -> str:
        if not distinct and len(self.location.schema) + 1 + len(name) > MAX_IDENTIFIER:  # unhashed: names() lists it
            raise ValueError(f"{name!r} is too long for a PostgreSQL schema name (63 characters)")
        return child_schema(self.location.schema, name, distinct=distinct)

    def child(self, name: str, *, distinct: bool = False) -> str:
        """The URL of memory ``name``: schema ``PREFIX_<name>`` (see :func:`child_schema`).

        Args:
            distinct: names differing only in case or punctuation get distinct schemas (a hash is added when
                needed); False: the name must fit un-hashed, so that :meth:`names` can list it.

        Raises:
            ValueError: ``distinct`` is False and the schema name would be longer than 63 characters.
        """
        return self.location.with_schema(self._schema(name, distinct))

    def _schemas(self) -> list[str]:
        """The schemas under the prefix holding a gemrag memory (a ``meta`` table)."""
        loc = self.location
        conn = connect(loc.conninfo, "public", loc.display)
        try:
            rows = conn.execute(
                "SELECT table_schema FROM information_schema.tables WHERE table_name = 'meta' AND table_schema LIKE %s",
                (loc.schema.replace("_", "\\_") + "\\_%",),
            ).fetchall()
        finally:
            conn.close()
        return [str(r[0]) for r in rows]

    def exists(self, name: str, *, distinct: bool = False) -> bool:
        """True when the memory ``name`` has been created (its schema holds gemrag's tables).

        Raises:
            GemragError: the server cannot be reached.
        """
        return self._schema(name, distinct) in self._schemas()

    def names(self) -> list[str]:
        """The names holding a memory (schemas ``PREFIX_<name>``, the prefix cut), sorted.

        Raises:
            GemragError: the server cannot be reached.
        """
        skip = len(self.location.schema) + 1
        return sorted(s[skip:] for s in self._schemas())
