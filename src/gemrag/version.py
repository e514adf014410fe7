"""gemrag's version: the installed package's metadata (``importlib.metadata``), the one source of
``gemrag --version`` and ``gemrag.__version__``; pyproject.toml's ``version`` is what the metadata is built from, and
CHANGELOG.md's newest entry names the same version (tests/test_version.py checks all three)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

__all__ = ["UNKNOWN", "package_version"]

UNKNOWN = "0+unknown"
"""The version reported when gemrag runs from a source tree that was never installed."""


def package_version() -> str:
    """The installed gemrag's version (e.g. ``"0.2.0"``), or :data:`UNKNOWN` when it is not installed."""
    try:
        return version("gemrag")
    except PackageNotFoundError:
        return UNKNOWN
