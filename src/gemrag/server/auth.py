"""API keys and the namespaces each key may use.

A :class:`KeyRing` maps keys to namespaces; ``"*"`` in a key's list means every namespace. A request without a
known key gets 401, a known key used on a namespace it may not use gets 403 (:mod:`gemrag.server.app`). Keys
are compared in constant time (:func:`hmac.compare_digest`). With no keyring at all the server is open (the CLI
then binds to loopback, see :mod:`gemrag.cli.serve`).

Key file (JSON or TOML, chosen by the suffix ``.json`` / ``.toml``), one entry per key::

    # keys.toml
    "k-alice-3f9c" = ["alice"]
    "k-admin-77aa" = ["*"]
"""

from __future__ import annotations

import hmac
import json
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from gemrag.errors import ConfigError
from gemrag.server.namespaces import check_namespace

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ALL = "*"
"""The namespace entry meaning every namespace."""


class KeyRing:
    """Which API keys exist and which namespaces each may use.

    Args:
        grants: key -> namespace names (or ``"*"``). Keys must be non-empty strings; names must be valid
            namespace names (:func:`~gemrag.server.namespaces.check_namespace`).

    Raises:
        ConfigError: an empty key, or an invalid namespace name.
    """

    def __init__(self, grants: Mapping[str, Iterable[str]]) -> None:
        self._grants: list[tuple[bytes, frozenset[str]]] = []
        for key, names in grants.items():
            if not isinstance(key, str) or not key.strip():
                raise ConfigError("an API key must be a non-empty string")
            if isinstance(names, str):
                raise ConfigError(f"the namespaces of an API key must be a list, not the string {names!r}")
            allowed = frozenset(str(n) for n in names)
            for name in allowed - {ALL}:
                try:
                    check_namespace(name)
                except ValueError as exc:
                    raise ConfigError(f"API key file: {exc}") from None
            self._grants.append((key.encode("utf-8"), allowed))

    def __len__(self) -> int:
        return len(self._grants)

    def namespaces_of(self, key: str | None) -> frozenset[str] | None:
        """The namespaces ``key`` may use (may contain ``"*"``), or None when the key is unknown or missing."""
        if not key:
            return None
        given = key.encode("utf-8", "surrogatepass")
        found: frozenset[str] | None = None
        for known, allowed in self._grants:  # no early exit: the time taken does not depend on which key matched
            if hmac.compare_digest(known, given):
                found = allowed
        return found

    @staticmethod
    def allows(allowed: frozenset[str], namespace: str) -> bool:
        """True when a key with the namespaces ``allowed`` may use ``namespace``."""
        return ALL in allowed or namespace in allowed


def load_key_file(path: str | Path) -> dict[str, list[str]]:
    """Read a key file (JSON or TOML by suffix): ``{key: [namespace, ...]}``.

    Raises:
        ConfigError: the file is missing, unreadable, of another type, or not a table of lists of strings.
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read the API key file {p}: {exc.strerror or exc}") from None
    try:
        if p.suffix.lower() == ".json":
            data = json.loads(raw.decode("utf-8"))
        elif p.suffix.lower() == ".toml":
            data = tomllib.loads(raw.decode("utf-8"))
        else:
            raise ConfigError(f"the API key file {p} must end in .json or .toml")
    except (UnicodeDecodeError, json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"the API key file {p} is not valid {p.suffix[1:].upper()}: {exc}") from None
    if not isinstance(data, dict) or not all(
        isinstance(v, list) and all(isinstance(n, str) for n in v) for v in data.values()
    ):
        raise ConfigError(f"the API key file {p} must map each key to a list of namespace names")
    return data
