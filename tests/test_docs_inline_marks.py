"""An inline result mark never starts a line of the docs or the README: Markdown reads a line that starts with an HTML
comment as an HTML block, which ends the paragraph or list around it (a figure then shows as a new paragraph, and the
list's items as "- " text). A block mark (``result-rows`` / ``result-table`` of whole rows) stands on its own line."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INLINE_MARK_AT_LINE_START = re.compile(r"^\s*<!-- (result-pair:? |result: |result-rows:? [^>]*as=value)")


def test_no_line_starts_with_an_inline_result_mark() -> None:
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        fenced = False
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            fenced ^= line.lstrip().startswith("```")
            if not fenced and INLINE_MARK_AT_LINE_START.match(line):
                found.append(f"{path.relative_to(ROOT)}:{number}")
    assert found == [], f"join these marks onto the line before: {found}"
