"""PostgreSQL memory locations and connections.

A PostgreSQL memory is named by a URL, ``postgresql://user[:password]@host[:port]/database?schema=NAME`` (or
``postgres://``; ``hnsw_above=N`` and ``ef_search=N`` tune the vector search of :mod:`gemrag.store.postgres.vectors`;
every other query parameter, e.g. ``host=/run/postgresql`` or ``sslmode=require``, is passed to
libpq): one memory = one schema (default ``gemrag``). Connections run in autocommit mode (the store's
transactions are explicit) with ``search_path`` = the memory's schema, then ``public`` (where the ``vector``
extension lives), and a ``lock_timeout``, so a write waiting on a builder's rows fails with
:class:`~gemrag.errors.DatabaseLockedError` instead of waiting forever.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from gemrag.errors import GemragError

SCHEMES = ("postgresql://", "postgres://")
SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
DEFAULT_SCHEMA = "gemrag"
GEMRAG_PARAMS = ("schema", "hnsw_above", "ef_search")
"""URL query parameters gemrag reads (the others go to libpq)."""


def is_postgres_url(location: object) -> bool:
    """True when ``location`` (a string or path) names a PostgreSQL memory rather than a directory."""
    return isinstance(location, str) and location.startswith(SCHEMES)


@dataclass(frozen=True)
class PgLocation:
    """A parsed memory URL.

    Attributes:
        conninfo: the URL libpq gets (gemrag's parameters ``schema``, ``hnsw_above``, ``ef_search`` removed).
        schema: the memory's schema (lower-case identifier, at most 63 characters).
        display: the URL without its password, for messages.
        hnsw_above: rows from which a vector table gets an HNSW index (:mod:`gemrag.store.postgres.vectors`).
        ef_search: ``hnsw.ef_search`` of nearest-neighbour queries.
    """

    conninfo: str
    schema: str
    display: str
    hnsw_above: int = 20_000
    ef_search: int = 100

    @classmethod
    def parse(cls, url: str) -> PgLocation:
        """Parse a memory URL.

        Raises:
            GemragError: not a PostgreSQL URL, or a schema name that is not a lower-case SQL identifier.
        """
        if not is_postgres_url(url):
            raise GemragError(f"{url!r} is not a PostgreSQL URL (postgresql://user@host:port/db?schema=NAME)")
        parts = urlsplit(url)
        query = parse_qsl(parts.query, keep_blank_values=True)
        schemas = [v for k, v in query if k == "schema"]
        schema = schemas[-1] if schemas else DEFAULT_SCHEMA
        if not SCHEMA_NAME.match(schema):
            raise GemragError(
                f"schema {schema!r} in {url.split('@')[-1]!r}: use a lower-case SQL identifier ([a-z_][a-z0-9_]*)"
            )
        numbers: dict[str, int] = {}
        for key in ("hnsw_above", "ef_search"):
            values = [v for k, v in query if k == key]
            if values:
                if not values[-1].isdigit() or int(values[-1]) < 1:
                    raise GemragError(f"{key}={values[-1]!r} in the memory URL: give a positive integer")
                numbers[key] = int(values[-1])
        rest = urlencode([(k, v) for k, v in query if k not in GEMRAG_PARAMS])
        conninfo = urlunsplit((parts.scheme, parts.netloc, parts.path, rest, parts.fragment))
        netloc = parts.netloc
        if parts.password is not None:
            netloc = netloc.replace(f":{parts.password}@", ":***@", 1)
        display = urlunsplit((parts.scheme, netloc, parts.path, urlencode([*query]), ""))
        return cls(conninfo, schema, display, **numbers)

    def with_schema(self, schema: str) -> str:
        """The URL of another memory (schema) in the same database (password kept)."""
        parts = urlsplit(self.conninfo)
        query = [*parse_qsl(parts.query, keep_blank_values=True), ("schema", schema)]
        return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query), ""))

    def child(self, name: str, *, distinct: bool = False) -> str:
        """The URL of the memory ``name`` under this URL's schema taken as a prefix: schema
        :func:`child_schema` ``(self.schema, name, distinct=distinct)`` in the same database (``gemrag serve``'s
        namespaces, ``gemrag eval``'s memories)."""
        return self.with_schema(child_schema(self.schema, name, distinct=distinct))


MAX_IDENTIFIER = 63
"""PostgreSQL's longest identifier (bytes; ``NAMEDATALEN - 1``)."""
MAX_PREFIX = MAX_IDENTIFIER - 19
"""The longest prefix of :func:`child_schema` (44 characters: room for ``_``, 9 of the name and a hash)."""


def child_schema(prefix: str, name: str, *, distinct: bool = False) -> str:
    """The schema of memory ``name`` under ``prefix``: ``PREFIX_<name>`` with ``name`` lower-cased and every
    character other than ``a-z 0-9 _`` replaced by ``_`` (so ``Docs`` and ``docs``, ``a-b`` and ``a_b`` are one
    schema, as ``gemrag serve``'s namespaces want). A result longer than :data:`MAX_IDENTIFIER` (63) characters is
    cut to 54 and ends with ``_`` and the first 8 hex digits of the SHA-1 of ``name``, so distinct long names get
    distinct schemas (two collide with odds 2^-32).

    Args:
        prefix: the schema prefix (a lower-case SQL identifier of at most :data:`MAX_PREFIX` characters).
        name: the memory's name (any string).
        distinct: also add the hash when the lower-casing or replacing changed ``name``, so names differing only in
            case or punctuation (``doc.1``, ``doc-1``) get distinct schemas (``gemrag eval``'s memories).

    Raises:
        ValueError: ``prefix`` is not a lower-case SQL identifier of at most 44 characters.
    """
    if not SCHEMA_NAME.match(prefix) or len(prefix) > MAX_PREFIX:
        raise ValueError(
            f"schema prefix {prefix!r}: use a lower-case SQL identifier of at most {MAX_PREFIX} characters"
        )
    clean = re.sub(r"[^a-z0-9_]", "_", name.lower())
    schema = f"{prefix}_{clean}"
    if len(schema) <= MAX_IDENTIFIER and not (distinct and clean != name):
        return schema
    digest = hashlib.sha1(name.encode("utf-8")).hexdigest()[:8]
    return f"{schema[: MAX_IDENTIFIER - 9]}_{digest}"


def options(schema: str, *, readonly: bool = False, lock_timeout: float = 5.0, ef_search: int | None = None) -> str:
    """libpq ``options`` for a memory connection (search path, lock timeout, read-only transactions, and
    pgvector's ``hnsw.ef_search`` for every HNSW search on it, so a search is one statement)."""
    opts = f"-c search_path={schema},public -c lock_timeout={int(lock_timeout * 1000)}"
    if ef_search is not None:
        opts += f" -c hnsw.ef_search={int(ef_search)}"
    if readonly:
        opts += " -c default_transaction_read_only=on"
    return opts


def connect(
    conninfo: str,
    schema: str,
    location: str,
    *,
    readonly: bool = False,
    lock_timeout: float = 5.0,
    application_name: str = "gemrag",
) -> Any:
    """An autocommit psycopg connection to a memory's schema.

    Raises:
        GemragError: psycopg is not installed, or the server cannot be reached or refuses the login.
    """
    psycopg = require_psycopg()
    try:
        return psycopg.connect(
            conninfo,
            autocommit=True,
            options=options(schema, readonly=readonly, lock_timeout=lock_timeout),
            application_name=application_name,
        )
    except psycopg.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise GemragError(f"cannot connect to the PostgreSQL memory {location}: {first}") from exc


def require_psycopg() -> Any:
    """The psycopg module.

    Raises:
        GemragError: psycopg 3 is not installed (``pip install 'gemrag[postgres]'``).
    """
    try:
        import psycopg
    except ImportError as exc:
        raise GemragError("a PostgreSQL memory needs psycopg 3 and pgvector: pip install 'gemrag[postgres]'") from exc
    return psycopg
