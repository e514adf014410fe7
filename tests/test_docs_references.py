"""Every ``path.py:name`` reference of docs/papers.md (the paper -> code map) names a file that exists and a name
defined in it, so the map cannot silently rot when code moves or is renamed (issue 38).

A reference is ``some/file.py:name`` or ``some/file.py:Class.method``; the path is looked up under ``src/gemrag``
first, then the repository root (``benchmarks/...``, ``tests/...``). The file is parsed with :mod:`ast`, never
imported: a name is defined by a top-level ``def``/``class`` or assignment (an imported name is not: the reference
should name the file that defines it); a dotted name resolves
each further part inside the class before it (methods, properties, class attributes, nested classes).
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ROOTS = (REPO / "src" / "gemrag", REPO)
PAPERS = REPO / "docs" / "papers.md"

REFERENCE = re.compile(r"(?<![\w/.])((?:[\w.-]+/)*\w+\.py):([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)")
"""``path.py:Name`` or ``path.py:Class.attr``; a sentence's full stop after the name is not part of it."""


def references(text: str) -> list[tuple[str, str]]:
    """The distinct ``(path, dotted name)`` references of ``text``, in order of first appearance."""
    return list(dict.fromkeys(m.groups() for m in REFERENCE.finditer(text)))


def _defined(body: list[ast.stmt]) -> dict[str, ast.AST]:
    """The names a module or class body defines, each with its node (a class's node is searched for dotted names)."""
    names: dict[str, ast.AST] = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        names[name.id] = node
        elif isinstance(node, (ast.If, ast.Try)):  # e.g. definitions under ``if TYPE_CHECKING:`` or ``try:``
            inner = node.body + node.orelse + [s for h in getattr(node, "handlers", []) for s in h.body]
            names.update(_defined(inner))
    return names


@cache
def _module(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def unresolved(path: str, name: str, roots: tuple[Path, ...] = ROOTS) -> str | None:
    """Why ``path:name`` does not resolve (None when it does).

    Args:
        path: the file, relative to one of ``roots`` (the first root holding it is used).
        name: a name defined at the file's top level, or ``Class.attr`` (each part inside the class before it).
        roots: the directories tried in order.
    """
    file = next((root / path for root in roots if (root / path).is_file()), None)
    if file is None:
        return f"{path}: no such file under {', '.join(str(r) for r in roots)}"
    scope: dict[str, ast.AST] = _defined(_module(file).body)
    parts = name.split(".")
    for i, part in enumerate(parts):
        node = scope.get(part)
        if node is None:
            where = path if i == 0 else f"{path}:{'.'.join(parts[:i])}"
            return f"{path}:{name}: {part!r} is not defined in {where}"
        if i + 1 < len(parts):
            if not isinstance(node, ast.ClassDef):
                return f"{path}:{name}: {'.'.join(parts[: i + 1])} is not a class"
            scope = _defined(node.body)
    return None


def test_every_reference_of_papers_md_resolves() -> None:
    found = references(PAPERS.read_text(encoding="utf-8"))
    assert len(found) >= 150  # the map's references are found at all (162 when this test was written)
    broken = [why for path, name in found if (why := unresolved(path, name)) is not None]
    assert not broken, "docs/papers.md references that do not resolve:\n" + "\n".join(broken)


def test_the_checker_finds_references_and_rejects_broken_ones(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text(
        "import os\nLIMIT: int = 3\n\n\ndef helper():\n    pass\n\n\n"
        "class Thing:\n    size = 1\n\n    def run(self):\n        pass\n\n    class Inner:\n        def go(self):\n"
        "            pass\n",
        encoding="utf-8",
    )
    text = (
        "See `pkg/mod.py:helper`, pkg/mod.py:Thing.run and pkg/mod.py:Thing.Inner.go. Also pkg/mod.py:LIMIT; "
        "and pkg/mod.py:Thing.size, pkg/mod.py:helper again."
    )
    assert references(text) == [
        ("pkg/mod.py", "helper"),
        ("pkg/mod.py", "Thing.run"),
        ("pkg/mod.py", "Thing.Inner.go"),
        ("pkg/mod.py", "LIMIT"),
        ("pkg/mod.py", "Thing.size"),
    ]
    roots = (tmp_path,)
    assert all(unresolved(p, n, roots) is None for p, n in references(text))
    broken = {
        ("pkg/mod.py", "helpr"): "'helpr' is not defined in pkg/mod.py",
        ("pkg/mod.py", "Thing.stop"): "'stop' is not defined in pkg/mod.py:Thing",
        ("pkg/mod.py", "helper.inner"): "helper is not a class",
        ("pkg/nope.py", "helper"): "no such file",
        ("pkg/mod.py", "run"): "'run' is not defined",  # a method is not a module-level name
        ("pkg/mod.py", "os"): "'os' is not defined",  # imported, defined elsewhere
    }
    for (path, name), message in broken.items():
        why = unresolved(path, name, roots)
        assert why is not None and message in why, (path, name, why)


@pytest.mark.parametrize("line", ["`eval/metrics.py:first_passages`", "`eval/group_runner.py:GroupRunner._ask`"])
def test_references_this_issue_relies_on_resolve(line: str) -> None:
    ((path, name),) = references(line)
    assert unresolved(path, name) is None
