"""The layout of docs/architecture.md holds (issues 24, 40): no import cycle anywhere in ``src/gemrag``, imports point
down the layers, no method's package imports another method's, and the two store backends (``store/sqlite/``,
``store/postgres/``) never import each other. Checked by import-linter with the contracts in pyproject.toml
(``[tool.importlinter]``); further tests prove the checker fails on a cycle and on one backend importing the other, on
a copy of the package with one import added. Outside ``store/`` nothing imports a backend or asks which one a memory
has (:mod:`gemrag.store.open` chooses)."""

from __future__ import annotations

import ast
import os
import re
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


def _children(package: Path, name: str) -> set[str]:
    """The modules and subpackages directly inside ``package`` (named ``name``), as dotted names."""
    modules = {f"{name}.{p.stem}" for p in package.glob("*.py") if p.stem != "__init__"}
    return modules | {f"{name}.{p.name}" for p in package.iterdir() if (p / "__init__.py").is_file()}


def test_the_store_contract_covers_every_module_outside_the_store() -> None:
    modules = _children(REPO / "src" / "gemrag", "gemrag")
    assert set(_contract("store-backends")["source_modules"]) == modules - {"gemrag.store"}  # type: ignore[arg-type]


def test_the_default_method_contract_covers_every_generic_module() -> None:
    """Every module of gemrag but the methods' packages (the top layer of the ``methods`` contract: gem, raptor, ...)
    is a source of ``default-method``, so a new module cannot import GEM's package unnoticed."""
    package = REPO / "src" / "gemrag"
    top = _contract("methods")["layers"][0]  # type: ignore[index]
    methods = {f"gemrag.strategies.{name.strip()}" for name in str(top).split("|")}
    assert "gemrag.strategies.gem" in methods and "gemrag.strategies.platform" not in methods
    generic = (_children(package, "gemrag") - {"gemrag.strategies"}) | (
        _children(package / "strategies", "gemrag.strategies") - methods
    )
    assert set(_contract("default-method")["source_modules"]) == generic  # type: ignore[arg-type]


NAMES_GEM = {
    "cli.ask": "`--search`, GEM's flag of earlier releases, deprecated: it becomes `--set gem.search=...`",
    "cli.index": "`--questions`, `--eigen`, `--eigen-top`, GEM's flags of earlier releases, deprecated: `--set gem.*`",
    "cli.demo": "the demo always shows GEM-RAG, the seed method, whatever the configured default (its choice)",
    "cli.eval": "the default strategy list of `gemrag eval`: GEM-RAG's rows (gem and the baselines its paper compares)",
    "memory_settings": "EARLIER_METHOD: what earlier releases wrote names GEM implicitly (old keys, fingerprints)",
    "store.sqlite.migrations": "migrations of memories written when GEM was the only method (their rows are GEM's)",
    "strategies.base": "the registry's table of built-in strategies: every method's name and module",
}
"""The generic modules that may name GEM in code, and why: history (data, keys and flags of earlier releases), the
registry's table, and surfaces that show or compare GEM by choice. No code path of these chooses by the name."""


def _names_gem(value: str) -> bool:
    """Whether a string constant is a strategy name or list naming GEM: ``"gem"``, ``"gem[questions=3]"``,
    ``"gem,dense"``; prose (help, docstrings, messages: anything with a space) may speak of GEM."""
    return not re.search(r"\s", value) and any(i == "gem" or i.startswith("gem[") for i in value.split(","))


def test_no_generic_module_privileges_gem_by_name() -> None:
    """GEM's privileges live in strategies/gem/: outside it, code that names the strategy ``gem`` (a default
    argument, ``strategy == "gem"``, a fallback, a key) is only in :data:`NAMES_GEM`, each for its reason; the list
    holds no module that no longer names it."""
    package = REPO / "src" / "gemrag"
    found: dict[str, list[int]] = {}
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package)
        if relative.parts[:2] == ("strategies", "gem"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and _names_gem(node.value):
                found.setdefault(".".join(relative.with_suffix("").parts), []).append(node.lineno)
    unexplained = {module: lines for module, lines in found.items() if module not in NAMES_GEM}
    assert unexplained == {}, "generic code names gem: move it to strategies/gem/ or make it strategy-neutral"
    assert set(NAMES_GEM) == set(found), f"no longer naming gem: {sorted(set(NAMES_GEM) - set(found))}"
    assert _names_gem("gem[search=rank]") and _names_gem("dense,gem") and not _names_gem("fused, gem or dense")


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
