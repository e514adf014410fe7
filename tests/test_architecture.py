"""The layout of docs/architecture.md holds (issues 24, 40): no import cycle anywhere in ``src/gemrag``, imports point
down the layers, no method's package imports another method's, and the two store backends (``store/sqlite/``,
``store/postgres/``) never import each other. Checked by import-linter with the contracts in pyproject.toml
(``[tool.importlinter]``); further tests prove the checker fails on a cycle and on one backend importing the other, on
a copy of the package with one import added. Outside ``store/`` nothing imports a backend or asks which one a memory
has (:mod:`gemrag.store.open` chooses)."""

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


def _with_import(tmp_path: Path, module: str, imported: str) -> Path:
    """A copy of the package and pyproject.toml under ``tmp_path`` with ``import imported`` added to ``module`` (a
    path under ``src/gemrag``); returns the copy's ``src``."""
    shutil.copytree(REPO / "src" / "gemrag", tmp_path / "src" / "gemrag")
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / "src" / "gemrag" / module
    target.write_text(target.read_text(encoding="utf-8") + f"\nimport {imported}  # noqa\n")
    return tmp_path / "src"


def test_a_cycle_breaks_the_contract(tmp_path: Path) -> None:
    src = _with_import(tmp_path, "strategies/raptor/update.py", "gemrag.strategies.raptor.strategy")
    run = _lint(src, tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "No cycles are allowed in gemrag.strategies.raptor" in run.stdout
    assert ".update -> .strategy" in run.stdout


def test_one_backend_importing_the_other_breaks_the_contract(tmp_path: Path) -> None:
    src = _with_import(tmp_path, "store/postgres/store.py", "gemrag.store.sqlite.store")
    run = _lint(src, tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "Store backends: sqlite and postgres never import each other BROKEN" in run.stdout


def test_nothing_outside_the_store_knows_its_backends() -> None:
    package = REPO / "src" / "gemrag"
    found = []
    for path in sorted(package.rglob("*.py")):
        if (package / "store") in path.parents:
            continue
        text = path.read_text(encoding="utf-8")
        found += [
            f"{path.relative_to(package)}: {word}"
            for word in ("gemrag.store.sqlite", "gemrag.store.postgres", "is_postgres_url")
            if word in text
        ]
    assert found == []


def _contract(contract_id: str) -> dict[str, object]:
    import tomllib

    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    return next(c for c in contracts if c["id"] == contract_id)


def test_the_store_contract_covers_every_module_outside_the_store() -> None:
    package = REPO / "src" / "gemrag"
    modules = {f"gemrag.{p.stem}" for p in package.glob("*.py") if p.stem != "__init__"}
    modules |= {f"gemrag.{p.name}" for p in package.iterdir() if (p / "__init__.py").is_file()}
    assert set(_contract("store-backends")["source_modules"]) == modules - {"gemrag.store"}  # type: ignore[arg-type]


def test_a_strategy_naming_a_backend_breaks_the_store_contract(tmp_path: Path) -> None:
    src = _with_import(tmp_path, "strategies/baselines/dense.py", "gemrag.store.sqlite.store")
    run = _lint(src, tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "Nothing outside store/ names a backend or a part class" in run.stdout and "BROKEN" in run.stdout


def test_a_generic_module_importing_gem_breaks_the_contract(tmp_path: Path) -> None:
    src = _with_import(tmp_path, "view/data.py", "gemrag.strategies.gem.settings")
    run = _lint(src, tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "The default method is a setting, not a code path" in run.stdout and "BROKEN" in run.stdout
