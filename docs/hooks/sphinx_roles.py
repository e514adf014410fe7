"""An mkdocs hook (mkdocs.yml, ``hooks``): the Sphinx roles of gemrag's docstrings as cross-references.

The docstrings name other objects the Sphinx way, ``:class:`~gemrag.types.Provenance```, which Markdown renders as the
literal role before a code span. This hook turns each into an optional mkdocs-autorefs reference: a link when the
object is documented on the site (the API reference), the plain code span otherwise, never a warning. ``~`` keeps the
last name only and ``Title <target>`` shows the title, as in Sphinx.
"""

from __future__ import annotations

import re
from typing import Any

ROLE = re.compile(
    r":(?:py:)?(?:class|func|meth|mod|data|attr|exc|obj|const):<code>"
    r"(?:(?P<title>[^<&]+?)\s+&lt;(?P<target>[\w.]+)&gt;|(?P<short>~?)(?P<name>[\w.]+)(?P<call>\(\))?)</code>"
)
"""A role as Markdown renders it: ``:class:<code>~a.b.C</code>``, or titled: ``:meth:<code>T &lt;a.b&gt;</code>``."""


def _reference(match: re.Match[str]) -> str:
    if match["target"]:
        name, title = match["target"], " ".join(match["title"].split())
    else:
        name = match["name"]
        title = (name.rsplit(".", 1)[-1] if match["short"] else name) + (match["call"] or "")
    return f'<autoref identifier="{name}" optional><code>{title}</code></autoref>'


def on_page_content(html: str, **kwargs: Any) -> str:
    """The page's HTML with every rendered Sphinx role replaced by an optional cross-reference."""
    return ROLE.sub(_reference, html)
