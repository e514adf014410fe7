"""The documentation site (mkdocs.yml, docs/) builds strictly, and its pages say what the product does.

- ``mkdocs build --strict`` succeeds: a broken link or anchor, a page missing from the nav, or an API reference
  (``::: gemrag.x``) that mkdocstrings cannot resolve or whose docstring griffe cannot read fails it. The ``docs`` extra
  (in ``test``) installs the tools; without them the build is skipped on a developer's machine and FAILS under
  ``CI=true`` (:func:`realparts.require_real`), so a green CI means the site was built.
- The pages speak of the product: no issue numbers, no paths outside the repository.
- Every block of defaults a page copies from ``gemrag config`` (marked ``<!-- gemrag config -->``) equals what the
  command prints now, every section the command prints is documented in one, and every key of a copied section is named
  on its page (its settings table), so a new or changed setting cannot go undocumented.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

from realparts import require_real

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"

EXEMPT = {
    # A record whose history names the issues that measured or changed things ("issue 38", 19 times when this test
    # was written) and the paper files they were checked against, outside the repository ("../shared/seeds/..."); it
    # is kept as written, like a changelog. (docs/results.md was exempt too until its sections were renamed by the
    # question they answer and its commands read the evaluation data from $DATA.)
    DOCS / "papers.md",
}
ISSUE = re.compile(r"\bissues? \d", re.IGNORECASE)
OUTSIDE = "../shared"
MARKER = "<!-- gemrag config -->"
SECTION = re.compile(r"^\[(\w+)\]$")
TOOLS = {
    "mkdocs": "mkdocs",
    "material": "mkdocs-material",
    "mkdocstrings": "mkdocstrings",
    "mkdocstrings_handlers.python": "mkdocstrings-python",
}


def _pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if p not in EXEMPT)


def _has(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a missing parent package of a dotted name
        return False


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    missing = [dist for module, dist in TOOLS.items() if not _has(module)]
    if missing:
        require_real(f"the documentation tools are not installed ({', '.join(missing)}): pip install -e '.[docs]'")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # mkdocs-material's banner about MkDocs 2.0, not a warning
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, f"mkdocs build --strict failed:\n{run.stdout}\n{run.stderr}"
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "api" / "memory" / "index.html").is_file()


def test_pages_name_no_issue_and_no_path_outside_the_repository() -> None:
    pages = _pages()
    assert len(pages) >= 30  # the site's pages are found at all
    found = []
    for page in pages:
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if ISSUE.search(line) or OUTSIDE in line:
                found.append(f"{page.relative_to(REPO)}:{number}: {line.strip()}")
    assert not found, "pages naming an issue or a path outside the repository:\n" + "\n".join(found)


def _sections(text: str) -> dict[str, list[str]]:
    """The lines of a ``gemrag config`` output (or a copy of part of it) by section; ``""`` is the top level."""
    out: dict[str, list[str]] = {}
    name = ""
    for line in text.splitlines():
        header = SECTION.match(line)
        if header:
            name = header.group(1)
            out[name] = []
        elif line.strip():
            out.setdefault(name, []).append(line)
    return out


def _copied_blocks() -> list[tuple[Path, str]]:
    """Every ``toml`` block right after a :data:`MARKER` line, with its page."""
    blocks = []
    for page in _pages():
        text = page.read_text(encoding="utf-8")
        for m in re.finditer(re.escape(MARKER) + r"\n```toml\n(.*?)\n```", text, re.DOTALL):
            blocks.append((page, m.group(1)))
    return blocks


def test_copied_defaults_match_gemrag_config(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GEMRAG_")}  # no file, no variable: the defaults
    run = subprocess.run(
        [sys.executable, "-m", "gemrag", "config"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    actual = _sections(run.stdout)
    blocks = _copied_blocks()
    assert len(blocks) >= 9  # configuration.md and the strategy pages
    named: dict[str, set[str]] = {}  # section -> the keys named in code spans on some page that copies it
    for page, block in blocks:
        prose = page.read_text(encoding="utf-8").replace(block, "")
        spans = " ".join(re.findall(r"`([^`\n]+)`", prose))
        for name, lines in _sections(block).items():
            where = f"{page.relative_to(REPO)}, [{name or 'top level'}]"
            assert name in actual, f"{where}: gemrag config prints no such section"
            assert lines == actual[name], (
                f"{where} differs from `gemrag config`; paste the command's section:\n" + "\n".join(actual[name])
            )
            keys = {re.match(r"#?\s*(\w+) =", line).group(1) for line in lines}
            named.setdefault(name, set()).update(k for k in keys if re.search(rf"\b{k}\b", spans))
    assert set(named) == set(actual), f"sections without a documented copy: {sorted(set(actual) - set(named))}"
    for name, lines in actual.items():
        keys = [re.match(r"#?\s*(\w+) =", line).group(1) for line in lines]
        unnamed = [key for key in keys if key not in named[name]]
        assert not unnamed, f"[{name or 'top level'}]: keys no page copying the section explains: {', '.join(unnamed)}"
