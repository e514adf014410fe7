"""The layout of docs/architecture.md holds (issue 24): no import cycle anywhere in ``src/gemrag``, imports point down
the layers, and no method's package imports another method's. Checked by import-linter with the contracts in
pyproject.toml (``[tool.importlinter]``); the second test proves the checker fails on a cycle, on a copy of the
package with one import added."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from paths import REPO

pytest.importorskip("importlinter", reason="import-linter 2.17 needs Python >= 3.11 (pyproject.toml, test extra)")


def _lint(src: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run import-linter over the package under ``src`` with the project's contracts, as ``lint-imports`` does."""
    code = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True, no_logo=True))"
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_contracts_kept() -> None:
    run = _lint(REPO / "src", REPO)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


def test_a_cycle_breaks_the_contract(tmp_path: Path) -> None:
    shutil.copytree(REPO / "src" / "gemrag", tmp_path / "src" / "gemrag")
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    update = tmp_path / "src" / "gemrag" / "strategies" / "raptor" / "update.py"
    update.write_text(update.read_text(encoding="utf-8") + "\nimport gemrag.strategies.raptor.strategy  # noqa\n")
    run = _lint(tmp_path / "src", tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "No cycles are allowed in gemrag.strategies.raptor" in run.stdout
    assert ".update -> .strategy" in run.stdout
