"""One version everywhere (issue 54, item 6): the installed metadata (built from pyproject.toml), ``gemrag
--version``, ``gemrag.__version__``, the server's health route and the newest entry of CHANGELOG.md."""

from __future__ import annotations

import re
import sys
from importlib.metadata import version
from pathlib import Path

from typer.testing import CliRunner

import gemrag
from gemrag import cli

REPO = Path(__file__).resolve().parents[1]


def _pyproject_version() -> str:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    return str(tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"])


def test_one_version_everywhere() -> None:
    installed = version("gemrag")
    result = CliRunner().invoke(cli.app, ["--version"])
    assert result.exit_code == 0 and result.stdout.strip() == f"gemrag {installed}"
    assert gemrag.__version__ == installed == _pyproject_version()
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    released = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$", changelog, flags=re.M)
    assert released and released[0] == installed, "CHANGELOG.md's newest entry names another version"
    assert "## [Unreleased]" in changelog  # Keep a Changelog: the next version's notes go there
