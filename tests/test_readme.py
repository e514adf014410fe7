"""The README is the front door: short, every link in it leads somewhere, it speaks of the product, and its two
commands are the ones CI runs.

- At most 250 lines; the rest lives in the documentation site (docs/, tested by test_docs_site.py).
- Every relative link and image resolves to a file of the repository, and every ``#anchor`` to a heading of the
  target Markdown file, slugged as GitHub renders it (lower case, punctuation removed, spaces to hyphens), since the
  README is read on GitHub and on the package index rather than in the site.
- No issue numbers ("issue 42") and no paths outside the repository ("../shared/...").
- Both commands are there byte for byte, and command 2 is the line ``.ci/run`` runs.
- Every example under ``examples/`` is linked (test_examples.py runs them).
"""

from __future__ import annotations

import re
from pathlib import Path

from paths import REPO

README = REPO / "README.md"
MAX_LINES = 250
COMMAND_1 = 'python3 -m venv .venv && . .venv/bin/activate && pip install -r requirements.txt ".[local]" && gemrag demo'
COMMAND_2 = 'python3 -m venv .venv && . .venv/bin/activate && pip install -r requirements.txt -e ".[test]" && pytest'
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
ISSUE = re.compile(r"\bissues? \d", re.IGNORECASE)


def prose_lines(text: str) -> list[tuple[int, str]]:
    """``(line number, line)`` of the lines outside fenced code blocks."""
    out, fenced = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if not fenced:
            out.append((number, line))
    return out


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its text (links as their text, no code marks), lower case, every character
    but letters, digits, ``_``, ``-`` and spaces removed, spaces turned into hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of every heading of a Markdown file (a repeated one also as ``slug-1``, ``slug-2``, ...)."""
    seen: dict[str, int] = {}
    found = set()
    for _, line in prose_lines(path.read_text(encoding="utf-8")):
        match = HEADING.match(line)
        if not match:
            continue
        slug = github_slug(match.group(2))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def links(text: str) -> list[tuple[int, str]]:
    """``(line number, target)`` of every Markdown link and image outside code blocks, also one whose text runs over
    two lines (inline code is blanked first, keeping every offset)."""
    kept = dict(prose_lines(text))
    prose = "\n".join(kept.get(n, "") for n in range(1, len(text.splitlines()) + 1))
    prose = re.sub(r"`[^`\n]*`", lambda m: " " * len(m.group()), prose)
    return [(prose.count("\n", 0, m.start()) + 1, m.group(1)) for m in LINK.finditer(prose)]


def test_the_slug_rule_matches_githubs() -> None:
    assert github_slug("When the model crashes") == "when-the-model-crashes"
    assert github_slug("Where things moved (0.2)") == "where-things-moved-02"
    assert github_slug("`fused`: the window (each part's top B)") == "fused-the-window-each-parts-top-b"
    assert github_slug("MuSiQue: Recall@2 / Recall@5") == "musique-recall2--recall5"  # GitHub keeps both hyphens


def test_readme_is_at_most_250_lines() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines; move detail to docs/ (at most {MAX_LINES})"


def test_every_relative_link_and_anchor_resolves() -> None:
    text = README.read_text(encoding="utf-8")
    found = links(text)
    assert len(found) >= 20  # the links are found at all
    broken = []
    for number, target in found:
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:: not checked offline
            continue
        path_part, _, anchor = target.partition("#")
        path = (README.parent / path_part).resolve() if path_part else README
        if REPO.resolve() not in path.parents and path != REPO.resolve():
            broken.append(f"line {number}: {target} leads outside the repository")
        elif not path.exists():
            broken.append(f"line {number}: {target}: no such file")
        elif anchor and (path.suffix != ".md" or anchor not in anchors(path)):
            broken.append(f"line {number}: {target}: no heading #{anchor} in {path.relative_to(REPO.resolve())}")
    assert not broken, "\n".join(broken)


def test_readme_names_no_issue_and_no_path_outside_the_repository() -> None:
    found = [
        f"line {number}: {line.strip()}"
        for number, line in enumerate(README.read_text(encoding="utf-8").splitlines(), 1)
        if ISSUE.search(line) or "../shared" in line
    ]
    assert not found, "\n".join(found)


def test_the_two_commands_are_there_and_ci_runs_the_second() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert COMMAND_1 in lines and COMMAND_2 in lines  # each on its own line, byte for byte
    assert COMMAND_2 in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()


def test_every_example_is_linked() -> None:
    targets = {target for _, target in links(README.read_text(encoding="utf-8"))}
    examples = sorted(p.name for p in (REPO / "examples").glob("*.py"))
    assert {"custom_llm.py", "custom_store.py", "custom_strategy.py"} <= set(examples)
    assert [name for name in examples if f"examples/{name}" not in targets] == []
